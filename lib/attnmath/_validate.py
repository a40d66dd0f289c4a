"""Input checks shared by every mechanism.

Each helper raises ``TypeError`` for a wrong kind of object or dtype and ``ValueError`` for a
wrong shape or value, and the message names the argument, what was expected and what arrived.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ALIGNMENTS",
    "BoolArray",
    "FloatArray",
    "as_array",
    "as_rng",
    "check_alignment",
    "check_causal_alignment",
    "check_bool",
    "check_bool_mask",
    "check_finite",
    "check_logits",
    "check_float_dtype",
    "check_int",
    "check_int_array",
    "check_heads",
    "check_kv_heads",
    "check_positive_int",
    "check_real",
    "check_seed",
    "work_dtype",
    "check_probability",
    "check_axis",
    "check_qkv",
    "check_scale",
]

FloatArray = NDArray[np.floating[Any]]
"""The type of a floating-point array returned by the library (float16, float32 or float64)."""
BoolArray = NDArray[np.bool_]
"""The type of a boolean mask (``True`` = may attend)."""


def as_array(
    x: object, name: str, *, ndim: int | tuple[int, ...] | None = None, allow_int: bool = False,
    finite: bool = False,
) -> FloatArray:
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
    finite : bool
        Refuse NaN and infinities (:func:`check_finite`).
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
    if finite:
        check_finite(x, name)
    return x


def check_finite(x: object, name: str, *, hint: str = "") -> None:
    """Raise ``ValueError`` naming ``name`` if the numeric array ``x`` holds NaN or an infinity.

    ``hint`` is appended to the message (what to do instead).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real numeric NumPy array, got {type(x).__name__} "
                        f"{getattr(x, 'dtype', '')}".rstrip())
    if x.size and not np.isfinite(x).all():
        kind = "NaN" if np.isnan(x).any() else "an infinity"
        raise ValueError(f"{name} contains {kind}; it must be finite{hint}")


def check_logits(x: FloatArray, name: str) -> None:
    """Logits may be ``-inf`` (a masked entry) but never NaN or ``+inf``: raise naming ``name``."""
    if np.isnan(x).any():
        raise ValueError(f"{name} contains NaN")
    if np.isposinf(x).any():
        raise ValueError(f"{name} contains +inf; only -inf (a masked entry) is allowed")


def check_int(value: object, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an ``int`` (``bool`` is refused); ``minimum`` is the smallest allowed."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_positive_int(value: object, name: str, *, allow_zero: bool = False) -> int:
    """Return ``value`` as an ``int`` if it is a positive (or non-negative) integer."""
    return check_int(value, name, minimum=0 if allow_zero else 1)


def check_seed(seed: object, name: str = "seed") -> int:
    """A seed of ``numpy.random.default_rng``: an integer ``>= 0``."""
    return check_int(seed, name, minimum=0)


def as_rng(seed: object, name: str = "seed") -> np.random.Generator:
    """A ``numpy.random.Generator`` passed through, or a new one from an integer seed ``>= 0``."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer or a numpy.random.Generator, got {type(seed).__name__}"
        )
    return np.random.default_rng(check_seed(seed, name))


def check_real(value: object, name: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    """Return ``value`` as a finite ``float`` (``bool`` is refused), ``> 0`` or ``>= 0`` if asked."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if nonnegative and value < 0.0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_bool(value: object, name: str) -> bool:
    """A flag must be a real ``bool`` (``"no"``, ``0`` or ``None`` are refused, not read as truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


ALIGNMENTS = ("top_left", "bottom_right")


def check_alignment(alignment: object, name: str = "alignment") -> str:
    """Where the causal diagonal sits when ``L != S``: ``"top_left"`` or ``"bottom_right"``."""
    if not isinstance(alignment, str) or alignment not in ALIGNMENTS:
        raise ValueError(f"{name} must be one of {ALIGNMENTS}, got {alignment!r}")
    return alignment


def check_causal_alignment(alignment: object, name: str = "alignment") -> str | int:
    """``"top_left"``, ``"bottom_right"`` or an integer offset, else an error naming ``name``."""
    if isinstance(alignment, (int, np.integer)) and not isinstance(alignment, (bool, np.bool_)):
        return int(alignment)
    if isinstance(alignment, str):
        if alignment not in ALIGNMENTS:
            raise ValueError(f"{name} must be one of {ALIGNMENTS} or an integer offset, got "
                             f"{alignment!r}")
        return alignment
    raise TypeError(f"{name} must be one of {ALIGNMENTS} or an integer offset, got "
                    f"{type(alignment).__name__} {alignment!r}")


def check_kv_heads(H: int, H_kv: object, name: str = "H_kv") -> int:
    """Key/value heads: ``H`` when ``None``, else a positive divisor of ``H``."""
    if H_kv is None:
        return H
    H_kv = check_positive_int(H_kv, name)
    if H % H_kv != 0:
        raise ValueError(
            f"the number of query heads H={H} must be a multiple of the key/value heads {name}={H_kv}"
        )
    return H_kv


def check_heads(C: object, H: object, H_kv: object = None) -> tuple[int, int, int]:
    """Model width ``C``, query heads ``H`` dividing it, and key/value heads ``H_kv`` dividing ``H``."""
    C = check_positive_int(C, "C")
    H = check_positive_int(H, "H")
    H_kv = check_kv_heads(H, H_kv)
    if C % H != 0:
        raise ValueError(f"the model width C={C} must be divisible by the number of heads H={H}")
    return C, H, H_kv


def _refuse_non_arrays(x: object, name: str, what: str) -> None:
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}")
    if hasattr(x, "detach") and hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got a torch tensor; pass tensor.detach().numpy()")


def check_bool_mask(mask: object, name: str = "mask") -> BoolArray:
    """A boolean array (``True`` = may attend); any other dtype is a ``TypeError``."""
    _refuse_non_arrays(mask, name, "a boolean array")
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"{name} must be boolean (True = may attend), got dtype {mask.dtype}")
    return mask


def check_int_array(
    x: object, name: str, *, ndim: int | None = None, minimum: int | None = None
) -> NDArray[np.int64]:
    """An integer array as ``int64`` (lists of Python ints accepted); ``TypeError`` for other dtypes."""
    _refuse_non_arrays(x, name, "an array of integers")
    x = np.asarray(x)
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.integer):
        if x.size == 0 and x.dtype == np.float64:  # an empty Python list
            x = x.astype(np.int64)
        else:
            raise TypeError(f"{name} must have an integer dtype, got {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {x.shape}")
    if minimum is not None and x.size and x.min() < minimum:
        raise ValueError(f"every entry of {name} must be >= {minimum}, got {x.min()}")
    return x.astype(np.int64)


def work_dtype(*arrays: Any) -> np.dtype:
    """The dtype to compute in: NumPy's promotion of the inputs' dtypes, half precision raised to
    float32. Return the result in ``np.result_type(*arrays)`` (the input's own precision)."""
    return np.promote_types(np.result_type(*arrays), np.float32)


def check_probability(value: object, name: str, *, allow_one: bool = False) -> float:
    """Return ``value`` as a float in ``[0, 1)`` (or ``[0, 1]``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    upper_ok = value <= 1.0 if allow_one else value < 1.0
    if not (value >= 0.0 and upper_ok):
        interval = "[0, 1]" if allow_one else "[0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return value


def check_axis(axis: object, ndim: int, name: str = "axis") -> int:
    """Return ``axis`` normalised to ``0 <= axis < ndim``."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(axis).__name__}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} dimensions")
    return axis % ndim


def check_qkv(q: object, k: object, v: object) -> tuple[FloatArray, FloatArray, FloatArray]:
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
        if H_kv == 0 or H % H_kv != 0:
            raise ValueError(
                f"the number of query heads H={H} must be a multiple of the key/value heads "
                f"H_kv={H_kv} (k has shape {k.shape}), and H_kv >= 1"
            )
    return q, k, v


def check_scale(scale: object, D: int) -> float:
    """``1/sqrt(D)`` by default; otherwise a finite real number."""
    if scale is None:
        # A Python float: a NumPy float64 scalar would promote float32 scores to float64.
        return 1.0 / float(np.sqrt(D))
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__}")
    scale = float(scale)
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    return scale


def check_float_dtype(dtype: object, name: str = "dtype") -> np.dtype:
    """A floating NumPy dtype (``None``, ``bool``, integers and unknown names are refused)."""
    if dtype is None or isinstance(dtype, bool):
        raise TypeError(f"{name} must be a floating dtype, got {dtype!r}")
    try:
        result = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{name} must be a floating dtype, got {dtype!r}") from None
    if not np.issubdtype(result, np.floating):
        raise TypeError(f"{name} must be a floating dtype, got {result}")
    return result
