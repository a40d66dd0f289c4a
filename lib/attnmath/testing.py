"""Checking helpers shared by the test suite, the chapters and the hidden exercise tests.

One piece of code, three users: ``pytest`` imports these, the book's executable contracts call
them, and the nbgrader hidden tests use them to compare a student's answer with the library.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ._validate import as_array, check_bool, check_float_dtype, check_positive_int, check_real, check_seed
from .core import check_dout, prepare
from .masking import causal_offset

__all__ = [
    "assert_close",
    "numerical_gradient",
    "check_gradient",
    "random_qkv",
    "to_torch",
    "sdpa_oracle",
    "TritonProcess",
    "triton_child_env",
    "uses_reference",
]


def assert_close(actual, expected, *, rtol: float = 1e-10, atol: float = 1e-12, name: str = "value") -> None:
    """Raise ``AssertionError`` unless ``actual`` matches ``expected`` elementwise.

    The test is ``|actual - expected| <= atol + rtol * |expected|``, shapes must be equal (no
    broadcasting), and NaN only matches NaN. The message names the value, the worst index, both
    entries there and the largest absolute and relative errors. ``actual`` and ``expected`` are
    NumPy arrays, Python numbers or torch tensors (bfloat16 included, compared through float32)
    of integers or floats; another dtype is a ``TypeError``.
    """
    rtol = check_real(rtol, "rtol", nonnegative=True)
    atol = check_real(atol, "atol", nonnegative=True)
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    actual = _real_numbers(actual, "actual")
    expected = _real_numbers(expected, "expected")
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
    ``f`` must return one finite real number (a ``ValueError`` names ``f`` otherwise).
    """
    if not callable(f):
        raise TypeError(f"f must be a callable (x -> float), got {type(f).__name__}")
    eps = check_real(eps, "eps", positive=True)
    x = np.array(as_array(x, "x", allow_int=True, finite=True), dtype=np.float64, copy=True)
    grad = np.empty_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = _scalar_value(f(x))
        flat[i] = old - eps
        fm = _scalar_value(f(x))
        flat[i] = old
        gflat[i] = (fp - fm) / (2.0 * eps)
    return grad


def _scalar_value(value: Any) -> float:
    """``f(x)`` as a float: one finite real number, or a ``ValueError`` naming ``f``."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().double().numpy()
    if isinstance(value, (str, bytes)) or np.ndim(value) != 0 or np.iscomplexobj(value):
        raise ValueError(f"f must return one real number (a scalar loss), got {type(value).__name__} "
                         f"of shape {np.shape(value)}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"f must return one real number, got {type(value).__name__}") from None
    if not np.isfinite(result):
        raise ValueError(f"f returned {result}; it must be finite near x")
    return result


def _real_numbers(x: object, name: str) -> np.ndarray:
    """``x`` (array, number or torch tensor) as a NumPy array of integers or floats."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        t = x.detach().cpu()
        x = (t.float() if str(t.dtype) == "torch.bfloat16" else t).numpy()
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}")
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of integers or floats, got dtype {arr.dtype}")
    return arr


def check_gradient(f: Callable[[np.ndarray], float], x, analytic, *, name: str = "x",
                   eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7) -> None:
    """Compare an analytic gradient of scalar ``f`` at ``x`` with central differences.

    Raises ``AssertionError`` naming the argument and the worst index.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    analytic = _real_numbers(analytic, "analytic")
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
    B, H, D = (check_positive_int(v, n) for v, n in ((B, "B"), (H, "H"), (D, "D")))
    L = check_positive_int(L, "L", allow_zero=True)
    S = L if S is None else check_positive_int(S, "S", allow_zero=True)  # empty lengths are fine
    D_v = D if D_v is None else check_positive_int(D_v, "D_v")
    H_kv = H if H_kv is None else check_positive_int(H_kv, "H_kv")  # any H_kv: bad inputs too
    check_float_dtype(dtype)
    rng = np.random.default_rng(check_seed(seed))
    q = rng.standard_normal((B, H, L, D)).astype(dtype)
    k = rng.standard_normal((B, H_kv, S, D)).astype(dtype)
    v = rng.standard_normal((B, H_kv, S, D_v)).astype(dtype)
    return q, k, v


def to_torch(*arrays, requires_grad: bool = False):
    """NumPy arrays to torch tensors (same dtype, CPU); one array gives one tensor.

    Each array must hold booleans, integers or floats (a ``TypeError`` names ``arrays``)."""
    import torch

    requires_grad = check_bool(requires_grad, "requires_grad")
    out = []
    for i, a in enumerate(arrays):
        a = np.asarray(a) if not isinstance(a, (str, bytes)) else np.asarray(a, dtype=object)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"arrays[{i}] must hold booleans, integers or floats, got dtype {a.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(a))
        if requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def sdpa_oracle(q, k, v, *, mask=None, bias=None, scale=None, causal: bool = False,
                causal_alignment: str | int = "top_left", window: int | None = None, dout=None,
                dtype=np.float64):
    r"""The one torch oracle of attention: ``torch.nn.functional.scaled_dot_product_attention``.

    .. math:: O = \operatorname{softmax}\!\left(s\, Q K^\top + \text{bias} + \mathrm{bias}_M\right) V

    Parameters
    ----------
    q, k, v : array_like
        ``(..., H, L, D)``, ``(..., H_kv, S, D)``, ``(..., H_kv, S, D_v)`` or plain ``(L, D)``
        matrices; grouped heads by ``enable_gqa`` (``repeat_interleave``).
    mask, bias, scale : optional
        Boolean mask (``True`` = may attend) and additive bias (``-inf`` = masked), each
        broadcasting to ``(..., H, L, S)``; the score scale, ``1/sqrt(D)`` by default.
    causal, causal_alignment : bool, str or int
        The causal mask: ``"top_left"`` (torch's ``is_causal``, key ``j <= i``),
        ``"bottom_right"`` (``j <= i + S - L``) or an integer offset ``j <= i + offset``
        (:func:`attnmath.masking.causal_offset`).
    window : int, optional
        Also hide keys ``j <= i + offset - window`` (a sliding window of ``window`` keys ending
        at the query's diagonal; needs ``causal``).
    dout : array_like, optional
        If given, also return the gradients ``(dq, dk, dv)`` by ``torch.autograd``.
    dtype : NumPy dtype
        The dtype torch computes in (float64 by default: the inputs are converted exactly).

    Returns
    -------
    out : ndarray, shape (..., H, L, D_v), or ``(out, (dq, dk, dv))`` with ``dout``
        In ``dtype``. A fully masked row and ``S = 0`` give zeros, and zero gradients.

    Notes
    -----
    Every test of an exact attention variant compares with this one function. A causal mask
    alone is passed as torch's own (``is_causal``, ``causal_lower_right``), anything else as
    one float ``attn_mask``. Fully masked rows are set to zero here, whatever torch does.
    """
    dtype = check_float_dtype(dtype)
    problem = prepare(q, k, v, mask=mask, bias=bias, scale=scale, causal=causal,
                      causal_alignment=causal_alignment, window=window)  # the core's checks
    if dout is not None:
        dout = check_dout(dout, problem.out_shape)
    tq, tk, tv, plain = _oracle_tensors(q, k, v, dtype, dout is not None)
    float_mask, dead = _oracle_float_mask(tq, tk, mask, bias, plain, causal, causal_alignment,
                                          window, dtype)
    attn_mask, is_causal = _oracle_torch_mask(
        float_mask, causal_alignment, tq.dim() == 4 and tk.dim() == 4,
        causal and mask is None and bias is None and window is None and not bool(dead.any()))
    gqa = tq.dim() >= 3 and tq.shape[-3] != tk.shape[-3]
    out = _torch().nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=attn_mask, is_causal=is_causal, scale=scale, enable_gqa=gqa
    ).masked_fill(dead, 0.0)
    result = out.detach().numpy()[0] if plain else out.detach().numpy()
    if dout is None:
        return result
    g = _torch().from_numpy(np.ascontiguousarray(np.asarray(dout).astype(dtype)))
    out.backward(g[None] if plain else g)
    grads = tuple(_grad_of(x)[0] if plain else _grad_of(x) for x in (tq, tk, tv))
    return result, grads


def _torch():
    import torch

    return torch


def _oracle_tensors(q, k, v, dtype, requires_grad: bool):
    """``q, k, v`` as torch tensors in ``dtype`` (a plain ``(n, d)`` matrix gets a batch axis)
    and whether they were plain."""
    torch = _torch()
    arrays = [np.asarray(x).astype(dtype) for x in (q, k, v)]
    plain = arrays[0].ndim == 2
    if plain:
        arrays = [x[None] for x in arrays]
    tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(requires_grad)
                  for x in arrays)
    return tq, tk, tv, plain


def _oracle_float_mask(tq, tk, mask, bias, plain: bool, causal: bool, causal_alignment,
                       window, dtype):
    """The float ``attn_mask (..., H, L, S)``: ``-inf`` where masked, plus the bias; and the
    fully masked rows ``(..., L, 1)``, whose entries are set to 0 to keep torch away from rows
    of ``-inf`` only."""
    torch = _torch()
    L, S = tq.shape[-2], tk.shape[-2]
    score_shape = tuple(tq.shape[:-1]) + (S,)
    allowed = torch.ones(score_shape, dtype=torch.bool)
    if mask is not None:
        m = np.asarray(mask)
        allowed = allowed & torch.from_numpy(np.ascontiguousarray(m[None] if plain and m.ndim > 2 else m))
    i = torch.arange(L)[:, None] + causal_offset(L, S, causal_alignment)
    j = torch.arange(S)[None, :]
    if causal:
        allowed = allowed & (j <= i)
    if window is not None:
        allowed = allowed & (j > i - window)
    float_mask = torch.zeros(score_shape, dtype=tq.dtype).masked_fill(~allowed, -torch.inf)
    if bias is not None:
        b = np.asarray(bias).astype(dtype)
        float_mask = float_mask + torch.from_numpy(np.ascontiguousarray(b))
    dead = torch.isneginf(float_mask).all(dim=-1, keepdim=True)  # (..., L, 1) fully masked rows
    return float_mask.masked_fill(dead, 0.0), dead


def _oracle_torch_mask(float_mask, causal_alignment, four_dims: bool, causal_alone: bool
                       ) -> tuple[Any, bool]:
    """``(attn_mask, is_causal)`` for torch: a causal mask alone as torch's own causal masks
    (``is_causal`` for top-left, ``causal_lower_right`` for bottom-right on 4-d inputs), else
    the float mask."""
    if causal_alone and causal_alignment == "top_left":
        return None, True
    if causal_alone and causal_alignment == "bottom_right" and four_dims:
        from torch.nn.attention.bias import causal_lower_right

        return causal_lower_right(*float_mask.shape[-2:]), False
    return float_mask, False


def _grad_of(x) -> np.ndarray:
    assert x.grad is not None, "no gradient reached the input"
    return x.grad.numpy()


_TRITON_CHILD = r"""
import pickle, sys, types
requests, replies = sys.stdin.buffer, sys.stdout.buffer
sys.stdout = sys.stderr  # nothing printed may reach the reply channel
import torch
import attnmath.flash_triton as ft


def _plain(value):
    # A TritonFlashCache travels as a plain tuple: the parent never imports attnmath.flash_triton.
    if isinstance(value, ft.TritonFlashCache):
        return tuple(value)
    if type(value) is tuple:
        return tuple(_plain(x) for x in value)
    return value


def flash_attention_triton_backward(dout, cache, **kwargs):
    if type(cache) is tuple:
        cache = ft.TritonFlashCache(*cache)
    return ft.flash_attention_triton_backward(dout, cache, **kwargs)


calls = {name: getattr(ft, name) for name in ft.__all__ if callable(getattr(ft, name))}
calls.update(flash_attention_triton_backward=flash_attention_triton_backward,
             interpreted=lambda: ft.INTERPRETED)
helpers = {"ft": ft, "torch": torch}
exec(sys.argv[1], helpers)
calls.update({name: f for name, f in helpers.items()
              if isinstance(f, types.FunctionType) and f.__globals__ is helpers})
while True:
    try:
        name, args, kwargs = pickle.load(requests)
    except EOFError:
        break
    try:
        reply = pickle.dumps((True, _plain(calls[name](*args, **kwargs))))
    except Exception as exc:
        try:
            reply = pickle.dumps((False, exc))
        except Exception:
            reply = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    replies.write(reply)
    replies.flush()
"""


def triton_child_env(interpret: bool) -> dict:
    """This process's environment for a child, ``TRITON_INTERPRET=1`` only if ``interpret``.

    ``PYTHONPATH`` starts with the folder holding :mod:`attnmath`, so the child imports this
    checkout's library.
    """
    interpret = check_bool(interpret, "interpret")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    lib = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([lib, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


class TritonProcess:
    """:mod:`attnmath.flash_triton` in a child process: ``proc.NAME(*args, **kwargs)`` runs there.

    ``TRITON_INTERPRET=1`` must be set before ``triton`` is first imported, and in a pytest
    process torch may already have imported it; a child is the one place where the variable can
    be set reliably, without reaching the parent or other tests. The child serves the public
    functions of the module; ``helpers`` is Python source run in the child whose functions
    (``ft`` is the module, ``torch`` is torch) are served too. Arguments and results travel by
    pickle; a :class:`~attnmath.flash_triton.TritonFlashCache` travels as a plain tuple (and is
    rebuilt for ``flash_attention_triton_backward``), so the parent never imports the module.
    An exception raised in the child is raised again here with its type and message.
    """

    def __init__(self, interpret: bool, helpers: str = ""):
        if not isinstance(helpers, str):
            raise TypeError(f"helpers must be Python source (str), got {type(helpers).__name__}")
        self._proc = subprocess.Popen([sys.executable, "-c", _TRITON_CHILD, helpers],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env=triton_child_env(interpret))
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout

    def _call(self, name, *args, **kwargs):
        pickle.dump((name, args, kwargs), self._stdin)
        self._stdin.flush()
        try:
            ok, value = pickle.load(self._stdout)
        except EOFError:
            raise RuntimeError(f"the kernel process exited (code {self._proc.wait()}); "
                               "its stderr is in the captured output") from None
        if not ok:
            raise value
        return value

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, *args, **kwargs)

    def close(self):
        """End the child: its stdin closes and it is terminated at once.

        Every call has had its reply by then (calls wait for it), and the child keeps nothing
        between calls, so there is nothing to finish; a child still importing torch and Triton
        (one closed right after it was started) is not left to finish that first.
        """
        self._stdin.close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self._proc.kill()
            self._proc.wait()


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

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {type(fn).__name__}")
    if isinstance(forbidden, str) or not isinstance(forbidden, (tuple, list, set, frozenset)) \
            or not all(isinstance(p, str) for p in forbidden):
        raise TypeError(f"forbidden must be a tuple of package names, got {forbidden!r}")

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
