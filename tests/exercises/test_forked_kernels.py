"""The autograde of every assignment (``stock_autograde``) gives nbgrader kernels forked from the
kernel server (``forked_kernels``). nbgrader's own executor, configured as the course configures
it, must then do what it does with a kernel started on its own: the same outputs, and the same
outcome for a notebook that kills its kernel or runs past the cell timeout."""

from __future__ import annotations

import os

import nbformat
import pytest

from attngrade.course import run_nbgrader
from conftest import forked_kernels

pytestmark = pytest.mark.slow

#: The cell timeout of these runs (the course's is 120 s): only the cell that runs past it waits for it.
TIMEOUT = 4


def _notebook(*cells: str):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nb


def _execute(nb, folder) -> tuple[list, str | None]:
    """Each cell's outputs (stream text, or an error's name) after nbgrader's executor ran ``nb``
    in ``folder``, and the exception it raised, if any."""
    from nbgrader.preprocessors import Execute

    executor = Execute(timeout=TIMEOUT)  # as nbgrader autograde runs it: errors allowed, interrupt on timeout
    try:
        executor.preprocess(nb, {"metadata": {"path": str(folder)}})
        raised = None
    except Exception as exc:  # noqa: BLE001  what is raised is part of the outcome compared
        raised = type(exc).__name__
    return [[out.get("text") or out.get("ename") for out in cell.get("outputs", [])] for cell in nb.cells], raised


@pytest.fixture(scope="module")
def forked_env(tmp_path_factory):
    """One kernel server for this module's tests, as ``stock_autograde`` has one for its run."""
    with forked_kernels(tmp_path_factory.mktemp("jupyter")) as env:
        assert env, "the kernel server did not start"
        yield env


@pytest.fixture
def _both(tmp_path, monkeypatch, forked_env):
    """``_both(*cells)``: the outcome of ``cells`` with a fresh kernel, then with a forked one."""

    def both(*cells: str) -> tuple[tuple, tuple]:
        fresh = _execute(_notebook(*cells), tmp_path)
        with monkeypatch.context() as patch:
            patch.setenv("JUPYTER_PATH", forked_env["JUPYTER_PATH"])
            forked = _execute(_notebook(*cells), tmp_path)
        return fresh, forked

    return both


def test_a_forked_kernel_gives_the_outputs_of_a_fresh_one(tmp_path, _both):
    (fresh, raised), (forked, raised_forked) = _both(
        "import os, sys\nx = 3\nprint(os.getcwd(), x)", "print(1 / 0)", "print(x * 2)",
        "print('torch' in sys.modules)")
    assert forked[:-1] == fresh[:-1] and raised_forked == raised
    assert fresh[:-1] == [[f"{tmp_path} 3\n"], ["ZeroDivisionError"], ["6\n"]] and raised is None
    # the one difference, and the sign that the forked kernel came from the server: torch preloaded
    assert (fresh[-1], forked[-1]) == (["False\n"], ["True\n"])


def test_a_kernel_that_dies_fails_the_notebook_as_a_fresh_one_does(tmp_path, _both):
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    fresh, forked = _both("print('before')", crash, "print('after')")
    assert forked == fresh
    assert fresh[0][0] == ["before\n"] and fresh[0][2] == [] and fresh[1] == "DeadKernelError"


def test_a_cell_past_the_timeout_is_interrupted_as_in_a_fresh_kernel(tmp_path, _both):
    fresh, forked = _both("x = 1", "import time\ntime.sleep(600)", "print(x + 1)")
    assert forked == fresh
    assert fresh[0][1] and fresh[0][2] == ["2\n"] and fresh[1] is None  # the notebook goes on


def test_run_nbgrader_refuses_an_environment_that_is_not_text(tmp_path):
    for env in (["JUPYTER_PATH"], {"JUPYTER_PATH": 1}):
        with pytest.raises(TypeError, match="env"):
            run_nbgrader(tmp_path, "--version", env=env)


def test_without_fork_nbgrader_starts_its_kernels_as_usual(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "fork")
    with forked_kernels(tmp_path) as env:
        assert env == {}  # nothing added to nbgrader's environment: its own python3 kernelspec
    assert not (tmp_path / "kernels").exists()
