"""Hidden tests of exercise 04 (masking). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.masking as ref
from attngrade.spec import Case, Part, allclose_check
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


def causal_cases(rng):
    cases = [Case((3,), {}, "visible L=3", ref.causal_mask(3), kind="a visible self-check"),
             Case((2, 4), {}, "visible 2x4 top-left", ref.causal_mask(2, 4), kind="a visible self-check"),
             Case((2, 4), {"alignment": "bottom_right"}, "visible 2x4 bottom-right",
                  ref.causal_mask(2, 4, alignment="bottom_right"), kind="a visible self-check")]
    for L, S in [(1, 1), (5, 5), (3, 8), (8, 3), (1, 9), (9, 1), (12, 30), (30, 12), (7, None)]:
        for alignment in ("top_left", "bottom_right"):
            cases.append(Case((L, S), {"alignment": alignment}, f"L={L} S={S} {alignment}",
                              ref.causal_mask(L, S, alignment=alignment), kind=_causal_kind(L, S, alignment)))
    return cases


def padding_cases(rng):
    cases = [Case(([3, 1], 4), {}, "visible", ref.padding_mask([3, 1], 4), kind="a visible self-check")]
    for lengths, S in [([4, 2, 5], 5), ([0, 3], 3), ([7], 7), ([0], 4), ([1, 1, 1, 1], 1)]:
        cases.append(Case((lengths, S), {}, f"lengths {lengths} S={S}", ref.padding_mask(lengths, S),
                          kind="lengths including zero" if 0 in lengths else "several lengths"))
    lengths = rng.integers(0, 10, size=6)
    cases.append(Case((lengths, 9), {}, "int64 array", ref.padding_mask(lengths, 9),
                      kind="lengths as an int64 array"))
    lengths32 = np.array([2, 0, 5], dtype=np.int32)
    cases.append(Case((lengths32, 6), {}, "int32 array", ref.padding_mask(lengths32, 6),
                      kind="lengths as an int32 array"))
    return cases


def _combined(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    return ref.combine_masks(ref.padding_mask(lengths, S), ref.causal_mask(L, S, alignment=alignment))


def combined_cases(rng):
    cases = [Case(([3, 2], 3), {}, "visible", _combined([3, 2], 3), kind="a visible self-check")]
    for lengths, L, S, alignment in [([6, 4, 1], 6, None, "top_left"), ([0, 5], 5, None, "top_left"),
                                     ([5, 2], 3, 5, "bottom_right"), ([5, 2], 3, 5, "top_left"),
                                     ([2, 3], 6, 3, "bottom_right"), ([4], 1, 4, "bottom_right"),
                                     ([1, 7, 3, 0], 7, 7, "bottom_right")]:
        kwargs = {"alignment": alignment}
        args = (lengths, L) if S is None else (lengths, L, S)
        cases.append(Case(args, kwargs, f"{lengths} L={L} S={S} {alignment}",
                          _combined(lengths, L, S, alignment),
                          kind="padding and " + _causal_kind(L, S, alignment)))
    return cases


def _attention(q, k, v, mask):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    return scaled_dot_product_attention(q, k, v, mask=mask)[0]


def attention_cases(rng):
    cases = []
    # the visible checks, drawn in the same order
    vis = np.random.default_rng(0)
    Q, K, V = vis.normal(size=(3, 4)), vis.normal(size=(5, 4)), vis.normal(size=(5, 2))
    M = np.ones((3, 5), dtype=bool)
    M[0, 3:] = False
    M[1, :] = False
    cases.append(Case((Q, K, V, M), {}, "visible", _attention(Q, K, V, M), kind="a visible self-check"))
    q16, k16, v16 = 4 * Q.astype(np.float16), 4 * K.astype(np.float16), V.astype(np.float16)
    cases.append(Case((q16, k16, v16, M), {}, "visible float16", _attention(q16, k16, v16, M), tol=2e-2,
                      kind="a visible self-check"))

    # padding mask over a (B, H, L, S) batch, one sequence of length zero
    q, k, v = rng.normal(size=(3, 2, 5, 8)), rng.normal(size=(3, 2, 5, 8)), rng.normal(size=(3, 2, 5, 3))
    pad = ref.padding_mask([5, 0, 2], 5)
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
    m = ref.combine_masks(ref.padding_mask([7, 4], 7), ref.causal_mask(7))
    cases.append(Case((q, k, v, m), {}, "combined (B,1,L,S)", _attention(q, k, v, m),
                      kind="padding and causal combined"))
    # random mask, larger sizes
    q, k, v = rng.normal(size=(2, 2, 33, 16)), rng.normal(size=(2, 2, 47, 16)), rng.normal(size=(2, 2, 47, 16))
    m = rng.random((2, 1, 33, 47)) < 0.3
    m[0, 0, 5] = False
    cases.append(Case((q, k, v, m), {}, "random mask", _attention(q, k, v, m), kind="random mask"))
    # every allowed score far below -1e9: a finite sentinel lets the masked keys win
    q = np.full((3, 4), 1e5)
    k = np.concatenate([(-1e5 + np.array([[0.0], [1e-5], [-2e-5]])) * np.ones((3, 4)),
                        rng.normal(size=(2, 4))])
    v = rng.normal(size=(5, 3))
    m = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 0, 0], [0, 0, 1, 0, 0]], dtype=bool)
    cases.append(Case((q, k, v, m), {}, "scores below -1e9", _attention(q, k, v, m), tol=1e-4,
                      kind="scores below the mask fill value"))
    # scores of several hundred: exp overflows unless the row maximum is subtracted
    q, k, v = 30 * rng.normal(size=(2, 5, 16)), rng.normal(size=(2, 6, 16)), rng.normal(size=(2, 6, 3))
    m = ref.causal_mask(5, 6, alignment="bottom_right")
    cases.append(Case((q, k, v, m), {}, "large scores", _attention(q, k, v, m), tol=1e-6,
                      kind="scores in the thousands"))
    # float32 and float16: finite and accurate, fully masked rows included
    for dtype, tol, scale in [(np.float32, 1e-4, 6.0), (np.float16, 2e-2, 3.0)]:
        q = (scale * rng.normal(size=(2, 2, 6, 16))).astype(dtype)
        k = (scale * rng.normal(size=(2, 2, 9, 16))).astype(dtype)
        v = rng.normal(size=(2, 2, 9, 4)).astype(dtype)
        m = ref.combine_masks(ref.padding_mask([9, 0], 9), ref.causal_mask(6, 9, alignment="bottom_right"))
        cases.append(Case((q, k, v, m), {}, f"{np.dtype(dtype).name}", _attention(q, k, v, m), tol=tol,
                          kind=f"{np.dtype(dtype).name} input"))
    # scores in the thousands: exp overflows in float64 unless the row maximum is subtracted
    q, k, v = 1000 * rng.normal(size=(2, 4, 16)), rng.normal(size=(2, 5, 16)), rng.normal(size=(2, 5, 3))
    m = ref.causal_mask(4, 5, alignment="bottom_right")
    cases.append(Case((q, k, v, m), {}, "overflowing scores", _attention(q, k, v, m), tol=1e-6,
                      kind="scores in the thousands"))
    return cases


PARTS = [
    Part("test_causal_mask", function="causal_mask", cases=causal_cases, check=mask_check, precision=MASK_CONTRACT),
    Part("test_padding_mask", function="padding_mask", cases=padding_cases, check=mask_check, precision=MASK_CONTRACT),
    Part("test_combined_mask", function="combined_mask", cases=combined_cases, check=mask_check,
         precision=MASK_CONTRACT),
    Part("test_masked_attention", function="masked_attention", cases=attention_cases),
]
