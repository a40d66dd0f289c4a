"""Input checks shared by every mechanism.

Each helper raises ``TypeError`` for a wrong kind of object or dtype and ``ValueError`` for a
wrong shape or value, and the message names the argument, what was expected and what arrived.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_array",
    "check_positive_int",
    "check_probability",
    "check_axis",
    "check_qkv",
    "check_scale",
]


def as_array(x, name: str, *, ndim: int | tuple[int, ...] | None = None, allow_int: bool = False):
    """Return ``x`` as a floating NumPy array, or raise a clear error.

    Parameters
    ----------
    x : array_like
        The input. Lists and scalars are converted; booleans, strings and objects are rejected.
    name : str
        The argument's name, used in error messages.
    ndim : int or tuple of int, optional
        The accepted number(s) of dimensions.
    allow_int : bool
        Accept integer input (converted to float64). Default: only floating input is accepted
        from arrays; Python lists of numbers are always converted to float64.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}")
    if not isinstance(x, np.ndarray):
        if hasattr(x, "detach") and hasattr(x, "numpy"):
            raise TypeError(
                f"{name} must be a NumPy array, got a torch tensor; pass tensor.detach().numpy()"
            )
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric array: {exc}") from None
    if x.dtype == np.bool_ or not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    if np.issubdtype(x.dtype, np.integer):
        if not allow_int:
            raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
        x = x.astype(np.float64)
    if ndim is not None:
        accepted = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.ndim not in accepted:
            want = " or ".join(str(a) for a in accepted)
            raise ValueError(f"{name} must have {want} dimensions, got shape {x.shape}")
    return x


def check_positive_int(value, name: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an ``int`` if it is a positive (or non-negative) integer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else ">= 1"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_probability(value, name: str, *, allow_one: bool = False) -> float:
    """Return ``value`` as a float in ``[0, 1)`` (or ``[0, 1]``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    upper_ok = value <= 1.0 if allow_one else value < 1.0
    if not (value >= 0.0 and upper_ok):
        interval = "[0, 1]" if allow_one else "[0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return value


def check_axis(axis, ndim: int, name: str = "axis") -> int:
    """Return ``axis`` normalised to ``0 <= axis < ndim``."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} dimensions")
    return int(axis) % ndim


def check_qkv(q, k, v):
    """Validate ``q (..., H, L, D)``, ``k (..., H_kv, S, D)``, ``v (..., H_kv, S, D_v)``."""
    q = as_array(q, "q")
    k = as_array(k, "k")
    v = as_array(v, "v")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.ndim < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., length, dim), got shape {x.shape}"
            )
    if not (q.ndim == k.ndim == v.ndim):
        raise ValueError(
            "q, k and v must have the same number of dimensions, "
            f"got shapes {q.shape}, {k.shape}, {v.shape}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share the head dim D: q has D={q.shape[-1]} (shape {q.shape}), "
            f"k has D={k.shape[-1]} (shape {k.shape})"
        )
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"k and v must agree on every axis but the last (..., H_kv, S): got k {k.shape}, v {v.shape}"
        )
    if q.ndim >= 3:
        if q.shape[:-3] != k.shape[:-3]:
            raise ValueError(f"q and k must have the same batch axes, got q {q.shape}, k {k.shape}")
        H, H_kv = q.shape[-3], k.shape[-3]
        if H % H_kv != 0:
            raise ValueError(
                f"the number of query heads H={H} must be a multiple of the key/value heads H_kv={H_kv}"
            )
    return q, k, v


def check_scale(scale, D: int) -> float:
    """``1/sqrt(D)`` by default; otherwise a finite real number."""
    if scale is None:
        # A Python float: a NumPy float64 scalar would promote float32 scores to float64.
        return 1.0 / float(np.sqrt(D))
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__}")
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    return float(scale)
