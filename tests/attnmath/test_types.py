"""The library's types: every public function is annotated, and mypy passes on the package.

mypy runs with the ``[tool.mypy]`` settings of ``pyproject.toml`` (the files it checks and the
modules still exempted are listed there). Its cache goes to ``.mypy_cache/`` in the repository,
so only the first run (about 15 s of CPU) pays for reading numpy's and torch's stubs.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Modules whose public functions must be fully annotated with numpy.typing types.
TYPED_MODULES = (
    "softmax", "masking", "multihead", "counting", "encoder", "positional", "moe", "theory", "scaling",
    "serving", "long_context", "induction", "recurrence",
)


def _public_functions():
    for name in TYPED_MODULES:
        module = importlib.import_module(f"attnmath.{name}")
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj


@pytest.mark.parametrize("qualname, fn", list(_public_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_function_annotates_its_arguments_and_its_result(qualname, fn):
    signature = inspect.signature(fn)
    missing = [p for p, param in signature.parameters.items() if param.annotation is inspect.Parameter.empty]
    assert not missing, f"{qualname}: arguments without a type: {missing}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{qualname}: no return type"
    assert "np.ndarray" not in str(signature.return_annotation), (
        f"{qualname}: return a numpy.typing type (FloatArray, BoolArray, NDArray[...]), not a bare np.ndarray"
    )


def test_the_package_passes_mypy(monkeypatch):
    api = pytest.importorskip("mypy.api", reason="mypy is not installed: pip install -r requirements.txt")
    monkeypatch.chdir(ROOT)  # the [tool.mypy] paths are relative to the repository root
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
    assert "Success" in stdout
