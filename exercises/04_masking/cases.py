"""The cases of exercise 04 (masking): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.
"""

import numpy as np

import attnmath.masking as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import like
from attnmath.attention import scaled_dot_product_attention

MASK_CONTRACT = "Exact: a boolean array (`True` = may attend) equal to the expected mask entry by entry."


def mask_check(case, out):
    """A boolean mask (True = may attend) of the expected shape, equal entry by entry."""
    assert out is not None, "returned None"
    out = np.asarray(out)
    assert out.dtype == np.bool_, f"the mask must be boolean, got dtype {out.dtype}"
    allclose_check(case, out)


def _causal_kind(L, S, alignment):
    """The kind of a causal case, for the student's feedback: no sizes."""
    keys = "as many keys as queries" if S in (None, L) else ("more keys" if S > L else "fewer keys") + " than queries"
    return f"causal, {alignment.replace('_', '-')}, {keys}"


def _triangle(L, S, delta, strict=False, inverted=False):
    """The causal mask a mistake computes: ``j <= i + delta`` (``<`` where ``strict``, ``>=`` where
    ``inverted``)."""
    i, j = np.arange(L)[:, None] + delta, np.arange(S)[None, :]
    return j >= i if inverted else (j < i if strict else j <= i)


def _as_mask(out):
    return np.asarray(out).astype(bool) if np.asarray(out).dtype.kind in "biuf" else None

# ----------------------------------------------------------------------------- Part 1


def causal_cases(rng):
    cases = []
    for L, S in [(3, None), (5, 5), (2, 4), (3, 8), (4, 2), (8, 3), (1, 1), (1, 9), (9, 1), (12, 30), (30, 12),
                 (7, None)]:
        for alignment in ("top_left", "bottom_right"):
            args = (L,) if S is None else (L, S)
            cases.append(Case(args, {"alignment": alignment}, f"L={L} S={S} {alignment}",
                              ref.causal_mask(L, S, alignment=alignment), kind=_causal_kind(L, S, alignment)))
    return cases


def diagnose_causal(case, out):
    L = case.args[0]
    S = case.args[1] if len(case.args) > 1 else L
    right = case.kwargs.get("alignment") == "bottom_right"
    delta = S - L if right else 0
    mask = _as_mask(out)
    if mask is None:
        return None
    variants = [
        (_triangle(L, S, delta, inverted=True), "the mask is inverted: True marks the keys a query may attend to "
                                                "(the past and itself)"),
        (~case.expected, "the mask is inverted: True marks the keys a query may attend to"),
        (_triangle(L, S, delta, strict=True), "off by one: every query may attend to its own position "
                                              "(j <= i + delta, the diagonal is True)"),
        (_triangle(L, S, delta + 1), "off by one: no query may attend to a later position"),
    ]
    if right:
        variants += [
            (_triangle(L, S, abs(S - L)), "bottom-right with fewer keys than queries: the shift S - L is negative, "
                                          "the first L - S queries see no key"),
            (_triangle(L, S, L - S), "bottom-right is shifted the wrong way: the last query sits on the last key, "
                                     "delta = S - L"),
            (_triangle(L, S, 0), "the alignment is ignored: bottom-right shifts every query by S - L"),
        ]
    else:
        variants.append((_triangle(L, S, S - L), "top-left is the default: query i sits on key i (shift 0)"))
    for variant, words in variants:
        if like(mask, variant, case.expected):
            return words
    return None


HINTS_CAUSAL = {
    "causal, top-left, as many keys as queries": "S=None means S = L; query i may see keys 0..i",
    "causal, bottom-right, as many keys as queries": "S defaults to L before the shift S - L is computed; with as "
                                                     "many keys as queries both alignments agree",
    "causal, bottom-right, fewer keys than queries": "the shift S - L is negative: the first L - S rows allow no key",
    "causal, bottom-right, more keys than queries": "bottom-right: the last query sits on the last key, "
                                                    "delta = S - L",
    "causal, top-left, fewer keys than queries": "the shape is (L, S): compare a column of L query positions with a "
                                                 "row of S key positions",
    "causal, top-left, more keys than queries": "the shape is (L, S): compare a column of L query positions with a "
                                                "row of S key positions",
}

# ----------------------------------------------------------------------------- Part 2


def _lengths(rng, B, S):
    """B lengths in [1, S]: a sequence of length zero is a kind of its own."""
    return [int(n) for n in rng.integers(1, S + 1, size=B)]


def padding_cases(rng):
    cases = []
    for B, S in [(2, 4), (3, 5), (1, 7), (4, 1), (3, 2)]:
        lengths = _lengths(rng, B, S)
        cases.append(Case((lengths, S), {}, f"B={B} S={S}", ref.padding_mask(lengths, S), kind="several lengths"))
    for B, S, zero in [(2, 3, 0), (1, 4, 0), (3, 3, 1)]:
        lengths = _lengths(rng, B, S)
        lengths[zero] = 0
        cases.append(Case((lengths, S), {}, f"B={B} S={S} a zero length", ref.padding_mask(lengths, S),
                          kind="lengths including zero"))
    lengths = rng.integers(0, 10, size=6)
    lengths[rng.integers(0, 6)] = 0
    cases.append(Case((lengths, 9), {}, "int64 array", ref.padding_mask(lengths, 9), kind="lengths as an int64 array"))
    lengths32 = rng.integers(1, 7, size=3).astype(np.int32)
    lengths32[1] = 0
    cases.append(Case((lengths32, 6), {}, "int32 array", ref.padding_mask(lengths32, 6),
                      kind="lengths as an int32 array"))
    return cases


def diagnose_padding(case, out):
    lengths, S = np.asarray(case.args[0]), case.args[1]
    mask = _as_mask(out)
    if mask is None:
        return None
    keys = np.arange(S)[None, None, None, :]
    n = lengths.reshape(-1, 1, 1, 1)
    for variant, words in [(keys < np.maximum(n, 1), "a sequence of length 0 has no valid key at all"),
                           (keys <= n, "off by one: a sequence of length n has exactly n valid keys, 0..n-1"),
                           (keys >= n, "the mask is inverted: True marks the real (not padded) keys")]:
        if like(mask, variant, case.expected):
            return words
    return None


HINTS_PADDING = {
    "several lengths": "key j of sequence b is real when j < lengths[b]; the shape is (B, 1, 1, S)",
    "lengths including zero": "a sequence of length 0 has no valid key at all",
    "lengths as an int64 array": "lengths may be a NumPy array of integers: np.asarray(lengths)",
    "lengths as an int32 array": "lengths may be a NumPy array of int32: np.asarray(lengths)",
}

# ----------------------------------------------------------------------------- Part 3


def _combined(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    return ref.combine_masks(ref.padding_mask(lengths, S), ref.causal_mask(L, S, alignment=alignment))


def combined_cases(rng):
    cases = []
    for B, L, S, alignment, zero in [(2, 3, None, "top_left", None), (3, 6, None, "top_left", None),
                                     (2, 5, None, "top_left", 0), (2, 2, 4, "top_left", None),
                                     (2, 2, 4, "bottom_right", None), (2, 3, 5, "bottom_right", None),
                                     (2, 3, 5, "top_left", None), (2, 6, 3, "bottom_right", None),
                                     (2, 3, 2, "bottom_right", None), (2, 5, 3, "top_left", None),
                                     (1, 1, 4, "bottom_right", None),
                                     (3, 3, 3, "bottom_right", 1), (4, 7, 7, "bottom_right", 3)]:
        lengths = _lengths(rng, B, L if S is None else S)
        if zero is not None:
            lengths[zero] = 0
        args = (lengths, L) if S is None else (lengths, L, S)
        cases.append(Case(args, {"alignment": alignment}, f"B={B} L={L} S={S} {alignment} zero={zero}",
                          _combined(lengths, L, S, alignment), kind="padding and " + _causal_kind(L, S, alignment)))
    return cases


def diagnose_combined(case, out):
    lengths, L = case.args[0], case.args[1]
    S = case.args[2] if len(case.args) > 2 else L
    alignment = case.kwargs.get("alignment", "top_left")
    mask = _as_mask(out)
    if mask is None:
        return None
    pad, causal = ref.padding_mask(lengths, S), ref.causal_mask(L, S, alignment=alignment)
    other = "top_left" if alignment == "bottom_right" else "bottom_right"
    with_key_0 = case.expected.copy()
    with_key_0[..., 0] = True
    for variant, words in [
        (pad | causal, "padding and causal combine by AND, not OR: a key is visible only if every rule allows it"),
        (np.broadcast_to(causal, case.expected.shape), "the padding is ignored: AND the causal mask with "
                                                       "padding_mask(lengths, S)"),
        (np.broadcast_to(pad, case.expected.shape), "the causal rule is ignored: AND the padding mask with "
                                                    "causal_mask(L, S, alignment)"),
        (_combined(lengths, L, S, other), "the alignment is not passed on to the causal mask"),
        (with_key_0, "a sequence of length 0 sees no key at all, and a bottom-right row may see none"),
    ]:
        if like(mask, variant, case.expected):
            return words
    return None


HINTS_COMBINED = {
    "padding and causal, top-left, as many keys as queries": "S=None means S = L; combine padding_mask(lengths, S) "
                                                             "and causal_mask(L, S) by AND",
    "padding and causal, top-left, more keys than queries": "the shape is (B, 1, L, S): pass S on to both masks",
    "padding and causal, bottom-right, more keys than queries": "pass the alignment on to the causal mask",
    "padding and causal, bottom-right, fewer keys than queries": "the first L - S queries see no key at all",
    "padding and causal, bottom-right, as many keys as queries": "a sequence of length 0 sees no key at all",
}

# ----------------------------------------------------------------------------- Part 4


def _attention(q, k, v, mask):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    return scaled_dot_product_attention(q, k, v, mask=mask)[0]


def _some_key_allowed(rng, mask):
    """``mask`` with one random key allowed in each row, so that no row is empty by chance."""
    mask = mask.copy()
    rows = mask.reshape(-1, mask.shape[-1])
    rows[np.arange(len(rows)), rng.integers(0, mask.shape[-1], size=len(rows))] = True
    return mask


def _small_cases(rng):
    # a 2-D case: a query that sees part of the keys, one that sees nothing, one that sees all
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    m = np.ones((3, 5), dtype=bool)
    m[0, 3:] = False
    m[1, :] = False
    cases = [Case((q, k, v, m), {}, "small 2-D", _attention(q, k, v, m), tol=1e-9,
                  kind="a small mask with a fully masked row")]
    # padding mask over a (B, H, L, S) batch, one sequence of length zero
    q, k, v = rng.normal(size=(3, 2, 5, 8)), rng.normal(size=(3, 2, 5, 8)), rng.normal(size=(3, 2, 5, 3))
    pad = ref.padding_mask([5, 0, int(rng.integers(1, 5))], 5)
    cases.append(Case((q, k, v, pad), {}, "padding (B,1,1,S)", _attention(q, k, v, pad),
                      kind="a padding mask that broadcasts"))
    # causal (L, S) masks of both alignments, with empty rows for bottom-right L > S
    q, k, v = rng.normal(size=(2, 6, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    for alignment in ("top_left", "bottom_right"):
        m = ref.causal_mask(6, 3, alignment=alignment)
        cases.append(Case((q, k, v, m), {}, f"causal 6x3 {alignment}", _attention(q, k, v, m),
                          kind=_causal_kind(6, 3, alignment)))
    # combined decoder mask (B, 1, L, S)
    q, k, v = rng.normal(size=(2, 3, 7, 6)), rng.normal(size=(2, 3, 7, 6)), rng.normal(size=(2, 3, 7, 6))
    m = ref.combine_masks(ref.padding_mask([7, int(rng.integers(1, 7))], 7), ref.causal_mask(7))
    cases.append(Case((q, k, v, m), {}, "combined (B,1,L,S)", _attention(q, k, v, m),
                      kind="padding and causal combined"))
    # random mask, larger sizes, one fully masked row
    q, k, v = rng.normal(size=(2, 2, 33, 16)), rng.normal(size=(2, 2, 47, 16)), rng.normal(size=(2, 2, 47, 16))
    m = _some_key_allowed(rng, rng.random((2, 1, 33, 47)) < 0.3)
    m[0, 0, 5] = False
    cases.append(Case((q, k, v, m), {}, "random mask", _attention(q, k, v, m), kind="random mask"))
    return cases


def _edge_cases(rng):
    # every allowed score far below -1e9: a finite sentinel lets the masked keys win
    q = np.full((3, 4), 1e5) + rng.uniform(0.0, 1e-6, size=(3, 4))
    k = np.concatenate([(-1e5 + np.array([[0.0], [1e-5], [-2e-5]])) * np.ones((3, 4)),
                        rng.normal(size=(2, 4))])
    v = rng.normal(size=(5, 3))
    m = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 0, 0], [0, 0, 1, 0, 0]], dtype=bool)
    cases = [Case((q, k, v, m), {}, "scores below -1e9", _attention(q, k, v, m), tol=1e-4,
                  kind="scores below the mask fill value")]
    # float32 and float16: finite and accurate, fully masked rows included
    for dtype, tol, scale in [(np.float32, 1e-4, 6.0), (np.float16, 2e-2, 3.0)]:
        q = (scale * rng.normal(size=(2, 2, 6, 16))).astype(dtype)
        k = (scale * rng.normal(size=(2, 2, 9, 16))).astype(dtype)
        v = rng.normal(size=(2, 2, 9, 4)).astype(dtype)
        m = ref.combine_masks(ref.padding_mask([9, 0], 9), ref.causal_mask(6, 9, alignment="bottom_right"))
        cases.append(Case((q, k, v, m), {}, f"{np.dtype(dtype).name}", _attention(q, k, v, m), tol=tol,
                          kind=f"{np.dtype(dtype).name} input"))
    # float16 scores of a few dozen: exp overflows float16 above 11 unless the row maximum is subtracted
    q, k = (6 * rng.normal(size=(4, 8))).astype(np.float16), (6 * rng.normal(size=(6, 8))).astype(np.float16)
    v = rng.normal(size=(6, 2)).astype(np.float16)
    m = np.tril(np.ones((4, 6), dtype=bool), 2)
    cases.append(Case((q, k, v, m), {}, "float16 2-D", _attention(q, k, v, m), tol=2e-2, kind="float16 input"))
    # scores of several hundred, then thousands: exp overflows unless the row maximum is subtracted
    for spread, label in [(30.0, "large scores"), (1000.0, "overflowing scores")]:
        q, k, v = spread * rng.normal(size=(2, 5, 16)), rng.normal(size=(2, 6, 16)), rng.normal(size=(2, 6, 3))
        m = ref.causal_mask(5, 6, alignment="bottom_right")
        cases.append(Case((q, k, v, m), {}, label, _attention(q, k, v, m), tol=1e-6, kind="scores in the thousands"))
    return cases


def attention_cases(rng):
    return _small_cases(rng) + _edge_cases(rng)


def _variant(q, k, v, mask, scale=None, axis=-1, fill=-np.inf, shift=True):
    """Masked attention as a mistake computes it: another scale, fill value or softmax axis, or no
    row maximum subtracted (a row whose exponentials all vanish gives zeros)."""
    scores = (q @ np.swapaxes(k, -1, -2)) * (1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, scores, fill)
    top = np.max(scores, axis=axis, keepdims=True) if shift else np.zeros(1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=axis, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0) @ v


def diagnose_attention(case, out):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in case.args[:3])
    mask, D = np.asarray(case.args[3]), q.shape[-1]
    for change, words in [(dict(scale=1.0), "the scores are not scaled: divide them by sqrt(D)"),
                          (dict(scale=1.0 / D), "the scores are divided by D instead of sqrt(D)"),
                          (dict(scale=-1.0 / np.sqrt(D)), "the scores have the wrong sign"),
                          (dict(mask=~mask), "the mask is inverted: True marks the keys a query may attend to"),
                          (dict(mask=None), "the mask is not applied"),
                          (dict(fill=-1e9), "masked keys must get exactly zero weight: fill with -inf, not a large "
                                            "negative number, and give a fully masked row zeros"),
                          (dict(shift=False), "the row maximum is not subtracted: exp of scores far from 0 "
                                              "under- or overflows; subtract each row's maximum over its allowed "
                                              "keys"),
                          (dict(axis=-2), "the softmax runs over the queries: each query's weights sum to one over "
                                          "the keys")]:
        if like(out, _variant(q, k, v, **{"mask": mask, **change}), case.expected):
            return words
    return None


HINTS_ATTENTION = {
    "a small mask with a fully masked row": "a masked key gets weight 0 and a query with no allowed key returns "
                                            "zeros, not NaN",
    "a padding mask that broadcasts": "the leading axes (B, H) stay: transpose only the last two axes of k "
                                      "(np.swapaxes(k, -1, -2)), and let the (B, 1, 1, S) mask broadcast to the "
                                      "(B, H, L, S) scores (np.where(mask, scores, -np.inf), not boolean indexing)",
    "causal, top-left, fewer keys than queries": "transpose only the last two axes of k (np.swapaxes(k, -1, -2))",
    "causal, bottom-right, fewer keys than queries": "the first queries see nothing: zeros, no NaN",
    "padding and causal combined": "a (B, 1, L, S) mask broadcasts over the heads",
    "random mask": "a scattered mask with a fully masked row: zeros for that row, no NaN",
    "scores below the mask fill value": "every allowed score of a row may be far below -1e9: fill the masked "
                                        "scores with -inf (not a large negative number) and subtract the row's "
                                        "maximum over its allowed keys before exp",
    "float32 input": "compute in at least float32",
    "float16 input": "exp overflows float16 above 11: subtract the row maximum, or compute in float32",
    "scores in the thousands": "subtract each row's maximum (over its allowed keys) before exp",
}

PARTS = [
    Part("test_causal_mask", function="causal_mask", cases=causal_cases, check=mask_check, precision=MASK_CONTRACT,
         hints=HINTS_CAUSAL, diagnose=diagnose_causal),
    Part("test_padding_mask", function="padding_mask", cases=padding_cases, check=mask_check, precision=MASK_CONTRACT,
         hints=HINTS_PADDING, diagnose=diagnose_padding),
    Part("test_combined_mask", function="combined_mask", cases=combined_cases, check=mask_check,
         precision=MASK_CONTRACT, hints=HINTS_COMBINED, diagnose=diagnose_combined),
    Part("test_masked_attention", function="masked_attention", cases=attention_cases, hints=HINTS_ATTENTION,
         diagnose=diagnose_attention),
]
