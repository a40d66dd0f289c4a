"""The output dtype follows the input: float32 in, float32 out; float16 computed in float32.

Every public function of the NumPy modules of ``test_bad_input`` is called with its valid call,
every floating array (parameters inside NamedTuples included) converted to one dtype; each
floating array it returns must have that dtype. Backward passes take a forward's cache and are
checked where their forward is tested (``test_moe``, ``test_multihead``).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_bad_input import VALID

BACKWARDS = {"multihead_attention_backward", "self_attention_backward", "moe_backward"}
# Results in FLOP/s (about 1e15) are float64 whatever the input: float16 would overflow to inf.
FLOAT64_RESULTS = {"roofline"}
# Documented otherwise: the core's problem and its tiles (working dtype), the mergeable state
# (float32 for float16), and testing helpers that compute in float64 or in their ``dtype``.
OWN_DTYPE = {"prepare", "scores", "finish", "attention_state", "numerical_gradient", "sdpa_oracle",
             # chapter 16 studies low precision: the FP8 emulation returns float64 values on the FP8
             # grid, and errors measured against float64 (its docstrings say so)
             "fp8_round", "fp8_quantize", "fp8_attention", "fp8_attention_error_bound"}
# Scores of a block or key no query may use are -inf by design (a log of zero weight), and MoBA
# marks a query's own block +inf: these may hold infinities, never NaN.
MASKED_SCORES = {"moba_attention", "dsa_index_scores", "dsa_attention", "segment_sum"}


def _convert(value, dtype):
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return value.astype(dtype)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_convert(v, dtype) for v in value))
    return value


def _float_dtypes(result) -> set:
    if isinstance(result, np.ndarray):
        return {result.dtype} if np.issubdtype(result.dtype, np.floating) else set()
    if isinstance(result, tuple):
        return set().union(*(_float_dtypes(r) for r in result)) if result else set()
    return set()


def _float_arrays(result) -> list:
    if isinstance(result, np.ndarray):
        return [result] if np.issubdtype(result.dtype, np.floating) else []
    if isinstance(result, tuple):
        return [a for r in result for a in _float_arrays(r)]
    return []


def _has_float_input(values) -> bool:
    return any(_float_dtypes(v) for v in values)


# Functions of floating arrays (constructors and position tables take only integers).
CALLS = [fn for fn, (args, kwargs) in VALID.items()
         if fn.__name__ not in BACKWARDS | OWN_DTYPE and _has_float_input(list(args) + list(kwargs.values()))]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("fn", CALLS, ids=lambda f: f"{f.__module__.split('.')[-1]}.{f.__name__}")
def test_floating_outputs_have_the_dtype_of_the_inputs(fn, dtype):
    args, kwargs = VALID[fn]
    args = tuple(_convert(a, dtype) for a in args)
    kwargs = {k: _convert(v, dtype) for k, v in kwargs.items()}
    result = fn(*args, **kwargs)
    if isinstance(result, tuple) and type(result[-1]).__name__.endswith("Cache"):
        result = result[0]  # (out, cache): the cache keeps the working (float32) arrays of a float16 call
    expected = np.dtype(np.float64) if fn.__name__ in FLOAT64_RESULTS else np.dtype(dtype)
    assert _float_dtypes(result) <= {expected}, f"{fn.__name__}: {_float_dtypes(result)}"
    if fn.__name__ in MASKED_SCORES:
        assert not any(np.isnan(r).any() for r in _float_arrays(result)), f"{fn.__name__}: NaN"
    else:
        assert all(np.isfinite(r).all() for r in _float_arrays(result)), f"{fn.__name__}: inf or NaN"
