"""Checking helpers shared by the test suite, the chapters and the hidden exercise tests.

One piece of code, three users: ``pytest`` imports these, the book's executable contracts call
them, and the nbgrader hidden tests use them to compare a student's answer with the library.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._validate import check_positive_int

__all__ = [
    "assert_close",
    "numerical_gradient",
    "check_gradient",
    "random_qkv",
    "to_torch",
    "uses_reference",
]


def assert_close(actual, expected, *, rtol: float = 1e-10, atol: float = 1e-12, name: str = "value") -> None:
    """Raise ``AssertionError`` unless ``actual`` matches ``expected`` elementwise.

    The test is ``|actual - expected| <= atol + rtol * |expected|``, shapes must be equal (no
    broadcasting), and NaN only matches NaN. The message names the value, the worst index, both
    entries there and the largest absolute and relative errors.
    """
    actual = _to_numpy(actual)
    expected = _to_numpy(expected)
    if actual.shape != expected.shape:
        raise AssertionError(f"{name}: shape {actual.shape} != expected {expected.shape}")
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        idx = tuple(int(i) for i in np.argwhere(nan_a != nan_e)[0])
        raise AssertionError(f"{name}: NaN mismatch at index {idx}: {a[idx]!r} vs expected {e[idx]!r}")
    with np.errstate(invalid="ignore"):
        same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
        err = np.where(nan_a | same_inf, 0.0, np.abs(a - e))
        bound = atol + rtol * np.where(np.isinf(e) | nan_e, 0.0, np.abs(e))
    bad = ~(err <= bound)
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, err - bound, -np.inf))), a.shape) if a.ndim else ()
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            rel = np.nanmax(np.where(np.isfinite(e), err / np.maximum(np.abs(e), np.finfo(np.float64).tiny), np.inf))
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {a.size} entries differ; worst at index "
            f"{tuple(int(i) for i in worst)}: {a[worst]!r} vs expected {e[worst]!r} "
            f"(max abs err {np.max(err):.3e}, max rel err {rel:.3e}, rtol={rtol}, atol={atol})"
        )


def numerical_gradient(f: Callable[[np.ndarray], float], x, *, eps: float = 1e-6) -> np.ndarray:
    r"""Central-difference gradient of a scalar function.

    .. math:: \frac{\partial f}{\partial x_i} \approx \frac{f(x + \varepsilon e_i) - f(x - \varepsilon e_i)}{2\varepsilon}

    The error is :math:`O(\varepsilon^2)` from truncation plus :math:`O(\epsilon_{mach}/\varepsilon)`
    from rounding; ``eps=1e-6`` in float64 gives about eight correct digits. ``x`` is not modified.
    """
    x = np.array(x, dtype=np.float64, copy=True)
    grad = np.empty_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = float(f(x))
        flat[i] = old - eps
        fm = float(f(x))
        flat[i] = old
        gflat[i] = (fp - fm) / (2.0 * eps)
    return grad


def check_gradient(f: Callable[[np.ndarray], float], x, analytic, *, name: str = "x",
                   eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """Compare an analytic gradient of scalar ``f`` at ``x`` with central differences.

    Raises ``AssertionError`` naming the argument and the worst index.
    """
    numeric = numerical_gradient(f, x, eps=eps)
    assert_close(analytic, numeric, rtol=rtol, atol=atol, name=f"gradient with respect to {name}")


def random_qkv(B: int = 2, H: int = 2, L: int = 5, S: int | None = None, D: int = 8,
               D_v: int | None = None, *, H_kv: int | None = None, seed: int = 0,
               dtype=np.float64):
    """Random queries, keys and values with standard normal entries.

    Returns
    -------
    q : ndarray, shape (B, H, L, D)
    k : ndarray, shape (B, H_kv, S, D)
    v : ndarray, shape (B, H_kv, S, D_v)
        ``S`` defaults to ``L``, ``D_v`` to ``D``, ``H_kv`` to ``H``.
    """
    B, H, L, D = (check_positive_int(v, n) for v, n in ((B, "B"), (H, "H"), (L, "L"), (D, "D")))
    S = L if S is None else check_positive_int(S, "S")
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    H_kv = H if H_kv is None else check_positive_int(H_kv, "H_kv")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, L, D)).astype(dtype)
    k = rng.standard_normal((B, H_kv, S, D)).astype(dtype)
    v = rng.standard_normal((B, H_kv, S, D_v)).astype(dtype)
    return q, k, v


def to_torch(*arrays, requires_grad: bool = False):
    """NumPy arrays to torch tensors (same dtype, CPU); one array gives one tensor."""
    import torch

    out = []
    for a in arrays:
        t = torch.from_numpy(np.ascontiguousarray(a))
        if requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _to_numpy(x) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def uses_reference(fn, *, forbidden=("attnmath", "torch", "scipy", "jax"), _depth: int = 3) -> bool:
    """Whether ``fn`` reaches a forbidden library through the names its code uses.

    Used by exercise tests to deny credit to an answer that merely calls the reference
    implementation. It looks at the global names, attributes and closure cells of ``fn``'s code
    (nested functions included) and follows other plain Python functions it calls, up to
    ``_depth`` levels. A name that resolves to a module, function or class from one of the
    ``forbidden`` top-level packages counts. This is a static check of honest code paths, not a
    sandbox; the grading pipeline adds process isolation on top.
    """
    import inspect
    import types

    def forbidden_obj(obj) -> bool:
        mod = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
        if not isinstance(mod, str):
            return False
        return mod.split(".")[0] in forbidden

    seen: set[int] = set()

    def visit(f, depth: int) -> bool:
        f = inspect.unwrap(f) if callable(f) else f
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen:
            return False
        seen.add(id(code))
        glb = getattr(f, "__globals__", {})
        cells = [c.cell_contents for c in (getattr(f, "__closure__", None) or ()) if _cell_filled(c)]
        stack = [code]
        candidates = list(cells)
        while stack:
            co = stack.pop()
            for name in co.co_names:
                if name in glb:
                    candidates.append(glb[name])
                elif name.split(".")[0] in forbidden:
                    return True
            stack.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
        for obj in candidates:
            if forbidden_obj(obj):
                return True
            if depth > 0 and isinstance(obj, types.FunctionType) and visit(obj, depth - 1):
                return True
        return False

    return visit(fn, _depth)


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True
