"""The cases of exercise 16 (programmable and learned-sparse attention): one generator per part,
for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code and tolerances
(``attngrade.spec``). Expected values come from ``attnmath.programmable`` and
``attnmath.long_context`` in float64, computed before your function runs; your function gets its
own copies of the inputs.
"""

import numpy as np

import attnmath.programmable as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import like
from attnmath.long_context import sink_window_mask

# ----------------------------------------------------------------------------- shared checks


def _exact_array(name, got, expected, kind):
    """``got`` equals the array ``expected`` entry by entry, with a dtype of ``kind`` ("b" or "iu")."""
    assert got is not None, f"{name}: returned None"
    got, expected = np.asarray(got), np.asarray(expected)
    what = "boolean" if kind == "b" else "integer"
    assert got.dtype.kind in kind, f"{name} must be {what}, got dtype {got.dtype}"
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != expected {expected.shape}"
    wrong = int((got != expected).sum())
    assert wrong == 0, f"{name}: {wrong} of {expected.size} entries differ from the expected ones"


def tuple_check(names, checks):
    """Check a tuple output item by item: ``checks[n](name, got, expected, case)``."""

    def check(case, out):
        assert isinstance(out, (tuple, list)), f"expected a tuple {tuple(names)}, got {type(out).__name__}"
        assert len(out) == len(names), f"expected {len(names)} items {tuple(names)}, got {len(out)}"
        for name, item_check, got, expected in zip(names, checks, out, case.expected):
            item_check(name, got, expected, case)

    return check


def _close(name, got, expected, case):
    try:
        allclose_check(Case(expected=expected, tol=case.tol), got)
    except AssertionError as exc:
        raise AssertionError(f"{name}: {exc}") from None


# ----------------------------------------------------------------------------- Part 1


def _grids(B, H, L, S):
    """FlexAttention's index grids b (B,1,1,1), h (1,H,1,1), q_idx (1,1,L,1), kv_idx (1,1,1,S)."""
    return (np.arange(B).reshape(B, 1, 1, 1), np.arange(H).reshape(1, H, 1, 1),
            np.arange(L).reshape(1, 1, L, 1), np.arange(S).reshape(1, 1, 1, S))


def _sink_case(L, S, n_sink, window, kind):
    """The grids of one batch entry and head (b and h are 0): the mask's shape is then (1, 1, L, S)
    whether or not the answer broadcasts over b and h."""
    B = H = 1
    offset = S - L
    alignment = "top_left" if offset == 0 else "bottom_right"
    mask = sink_window_mask(L, S, n_sink=n_sink, window=window, alignment=alignment)  # (L, S)
    return Case(_grids(B, H, L, S), {"n_sink": n_sink, "window": window, "offset": offset},
                f"L={L} S={S}",  # no drawn value in a label: labels are structure
                np.broadcast_to(mask, (B, H, L, S)).copy(), kind=kind)


def _pair_case(rng, n_sink, window, where):
    """One query-key pair, as torch's vmap calls a mask function: 0-d integer arrays."""
    i = int(rng.integers(n_sink + window + 2, 60))
    j = {"a sink": int(rng.integers(0, n_sink)), "the diagonal": i, "the window's oldest key": i - window + 1,
         "just before the window": i - window, "a later key": i + 1}[where]
    allowed = where in ("a sink", "the diagonal", "the window's oldest key")
    args = (np.array(int(rng.integers(0, 2))), np.array(int(rng.integers(0, 4))), np.array(i), np.array(j))
    return Case(args, {"n_sink": n_sink, "window": window, "offset": 0}, f"pair: {where}", np.array(allowed),
                kind="one query-key pair at a time, as torch calls it")


def sink_cases(rng):
    cases = []
    for L, S, n_sink, window in [(12, 12, 3, 4), (9, 9, 1, 3), (16, 16, 4, 6)]:
        cases.append(_sink_case(L, S, n_sink, window, "top-left, as many keys as queries"))
    for L, S, n_sink, window in [(4, 20, 2, 5), (1, 15, 3, 4), (6, 11, 1, 3)]:
        cases.append(_sink_case(L, S, n_sink, window, "decoding: bottom-right, more keys than queries"))
    cases.append(_sink_case(10, 14, 0, int(rng.integers(2, 5)), "no sinks: a sliding window"))
    cases.append(_sink_case(8, 8, 2, 8 + int(rng.integers(0, 5)), "a window as long as the sequence"))
    cases.append(_sink_case(7, 7, 7, int(rng.integers(1, 3)), "every key a sink"))
    start, n_sink, window = int(rng.integers(10, 40)), 3, int(rng.integers(3, 8))
    grids = _grids(1, 1, 48, 48)
    q_idx = np.arange(start, start + 8).reshape(1, 1, 8, 1)  # the queries of one tile, as a kernel calls it
    mask = sink_window_mask(48, 48, n_sink=n_sink, window=window)[start:start + 8][None, None]
    cases.append(Case((grids[0], grids[1], q_idx, grids[3]), {"n_sink": n_sink, "window": window, "offset": 0},
                      "a tile of queries", mask, kind="the grids of one tile of queries"))
    n_sink, window = int(rng.integers(1, 4)), int(rng.integers(2, 6))
    for where in ("a sink", "the diagonal", "the window's oldest key", "just before the window", "a later key"):
        cases.append(_pair_case(rng, n_sink, window, where))
    return cases


def _sink_variant(b, h, i, j, n_sink, window, offset, wide=False, sinks_causal=True, flip=False, causal=True):
    position = i - offset if flip else i + offset
    distance = position - j
    in_window = (distance >= 0) & (distance <= window) if wide else (distance >= 0) & (distance < window)
    if not causal:
        in_window = distance < window
    sink = (j < n_sink) & (j <= position) if sinks_causal else (j < n_sink)
    return np.broadcast_to(sink | in_window, np.broadcast_shapes(*(np.shape(a) for a in (b, h, i, j))))


def diagnose_sink(case, out):
    out, expected = np.asarray(out), np.asarray(case.expected)
    try:
        out = np.broadcast_to(out, expected.shape)
    except ValueError:
        return None
    if out.dtype != np.bool_:
        return None
    for options, words in [
            ({"wide": True}, "the window holds exactly `window` keys, the query's own position included"),
            ({"sinks_causal": False}, "a sink that lies after the query is hidden too: the mask stays causal"),
            ({"flip": True}, "the query's position among the keys is q_idx + offset, not q_idx - offset"),
            ({"causal": False}, "keys after the query's position are hidden, whatever the window")]:
        if like(out, _sink_variant(*case.args, **case.kwargs, **options), case.expected):
            return words
    return None


def sink_check(case, out):
    """Booleans that broadcast to the expected shape and equal the expected mask there."""
    assert out is not None, "returned None"
    got = np.asarray(out)
    assert got.dtype == np.bool_, f"the mask must be boolean, got dtype {got.dtype}"
    expected = np.asarray(case.expected)
    try:
        got = np.broadcast_to(got, expected.shape)
    except ValueError:
        raise AssertionError(f"shape {got.shape} does not broadcast to {expected.shape}, the shape of the "
                             f"index grids broadcast together") from None
    _exact_array("the mask", got, expected, "b")


HINTS_SINK = {
    "top-left, as many keys as queries": "key j is allowed when j <= i and (j < n_sink or j > i - window): "
                                         "combine the comparisons with & and |, not `and` and `or`",
    "decoding: bottom-right, more keys than queries": "with S > L the query q_idx sits at position "
                                                      "q_idx + offset among the keys",
    "no sinks: a sliding window": "with n_sink = 0 this is the causal sliding window of `window` keys",
    "a window as long as the sequence": "a window at least as long as the sequence leaves the causal mask",
    "every key a sink": "sinks stay causal: a sink after the query's position is hidden",
    "the grids of one tile of queries": "a kernel may call the function on the indices of one tile: q_idx need "
                                        "not start at 0, so use the indices, not the grid's shape",
    "one query-key pair at a time, as torch calls it": "torch calls the function with one index of each "
                                                        "kind at a time: write it with operators only",
}

# ----------------------------------------------------------------------------- Part 2


def _tiles(mask, block_q, block_k):
    bm = ref.create_block_mask(lambda b, h, i, j: mask[i, j], 1, 1, *mask.shape, block_q=block_q, block_k=block_k)
    L, S = mask.shape
    zeros_q, zeros_kv = np.zeros((1, 1, L, 1)), np.zeros((1, 1, S, 1))
    _, work = ref.block_sparse_attention(zeros_q, zeros_kv, zeros_kv, bm)
    return bm.kinds[0, 0].astype(np.int64), int(work.scores)


def _documents(rng, n, parts):
    """Document ids of n tokens cut into ``parts`` documents at drawn places (none empty)."""
    cuts = np.sort(rng.choice(np.arange(1, n), size=parts - 1, replace=False))
    return np.searchsorted(cuts, np.arange(n), side="right")


def block_cases(rng):
    cases = []

    def add(mask, bq, bk, label, kind):
        cases.append(Case((mask, bq, bk), {}, label, _tiles(mask, bq, bk), kind=kind))

    causal = np.tri(16, 16, dtype=bool)
    add(causal, 4, 4, "causal 16 by 4", "causal, tiles that divide the lengths")
    add(np.tri(16, 24, 8, dtype=bool), 4, 8, "causal bottom-right 16x24 by 4x8", "tiles of another height and width")
    i, j = np.arange(13)[:, None], np.arange(10)[None, :]
    w = int(rng.integers(2, 5))
    add((j <= i) & (i - j < w), 4, 3, "window 13x10 by 4x3", "a short last tile")
    n = 24
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    w = int(rng.integers(3, 7))
    add((j <= i) & (i - j < w), 4, 4, "window by 4", "a sliding window")
    docs = _documents(rng, n, 3)
    add((j <= i) & (docs[:, None] == docs[None, :]), 4, 4, "documents by 4", "packed documents")
    add(rng.random((12, 12)) < 0.5, 3, 3, "random", "a random mask")
    add(np.zeros((10, 12), dtype=bool), 4, 4, "none", "every pair hidden")
    add(np.ones((10, 12), dtype=bool), 4, 5, "all", "every pair allowed")
    add(np.tri(6, 6, dtype=bool), 8, 8, "one tile", "one tile larger than the mask")
    add(rng.random((5, 7)) < 0.5, 1, 1, "pairs", "tiles of one pair")
    return cases


def _tile_variant(mask, bq, bk, swap=False, dense=False, tiles=False, whole=False):
    L, S = mask.shape
    rows, cols = range(0, L, bq), range(0, S, bk)
    kinds = np.array([[2 if mask[a:a + bq, c:c + bk].all() else 1 if mask[a:a + bq, c:c + bk].any() else 0
                       for c in cols] for a in rows], dtype=np.int64).reshape(len(rows), len(cols))
    sizes = np.array([[min(bq, L - a) * min(bk, S - c) for c in cols] for a in rows]).reshape(kinds.shape)
    computed = int(sizes[kinds > 0].sum())
    if swap:
        kinds = np.where(kinds == 0, 0, 3 - kinds)
    if dense:
        computed = L * S
    if tiles:
        computed = int((kinds > 0).sum())
    if whole:
        computed = int((kinds > 0).sum()) * bq * bk
    return kinds, computed


def diagnose_block(case, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    mask, bq, bk = case.args
    for options, words in [({"swap": True}, "2 is a full tile (every pair allowed), 1 a partial one"),
                           ({"dense": True}, "empty tiles are skipped: count the scores of the non-empty tiles"),
                           ({"tiles": True}, "`computed` counts scores, the sizes of the non-empty tiles, "
                                             "not the tiles"),
                           ({"whole": True}, "a last tile is shorter when the block does not divide the length")]:
        variant = _tile_variant(mask, bq, bk, **options)
        if any(like(got, wrong, right) for got, wrong, right in zip(out, variant, case.expected)
               if np.shape(got) == np.shape(right)):
            return words
    return None


def _kinds_check(name, got, expected, case):
    _exact_array(name, got, expected, "iu")


def _count_check(name, got, expected, case):
    assert isinstance(got, (int, np.integer)) and not isinstance(got, bool), \
        f"{name} must be an int, got {type(got).__name__}"
    assert got == expected, f"{name} is not the number of scores the non-empty tiles hold"


HINTS_BLOCK = {
    "causal, tiles that divide the lengths": "tile (a, c) holds queries a*block_q ... and keys c*block_k ...: "
                                             "0 if no pair is allowed, 2 if every pair is, 1 otherwise",
    "tiles of another height and width": "block_q cuts the queries (rows), block_k the keys (columns)",
    "a short last tile": "the last tile of a length holds what is left over: ceil(L / block_q) rows of tiles",
    "a sliding window": "a tile is full only when every one of its pairs is allowed",
    "packed documents": "the tiles between two documents are empty and skipped",
    "a random mask": "classify each tile by its own pairs only",
    "every pair hidden": "every tile empty: nothing is computed",
    "every pair allowed": "every tile full: every score is computed",
    "one tile larger than the mask": "a tile larger than the mask is one tile holding the whole mask",
    "tiles of one pair": "a tile of one pair is empty or full, never partial",
}

# ----------------------------------------------------------------------------- Part 3


def _moba(q, k, block, top_k):
    q64, k64 = (np.asarray(x, dtype=np.float64)[None, None] for x in (q, k))
    return ref.moba_attention(q64, k64, k64, block=block, top_k=top_k).keys[0, 0]


#: How far apart (in float64) any two scores that decide a choice of blocks are, unless equal on purpose.
MOBA_MARGIN = 1e-3


def _decided(q, k, block, top_k) -> bool:
    """Whether every query's choice among its earlier blocks is decided by scores at least
    :data:`MOBA_MARGIN` apart: float32 arithmetic or another order of summation then picks the
    same blocks as the float64 reference."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    means = np.stack([k[s:s + block].mean(axis=0) for s in range(0, len(k), block)])
    scores = q @ means.T
    for t in range(len(q)):
        earlier = np.sort(scores[t, :t // block])[::-1]
        if 1 < top_k <= len(earlier) and earlier[top_k - 2] - earlier[top_k - 1] < MOBA_MARGIN:
            return False
    return True


def _moba_inputs(rng, L, D, block, top_k, dtype=np.float64):
    """Random q and k whose choices no rounding can change (drawn again until they are decided)."""
    while True:
        q, k = (rng.standard_normal((L, D)).astype(dtype) for _ in range(2))
        if _decided(q, k, block, top_k):
            return q, k


def _eighths(rng, shape):
    """Multiples of 1/8 in [-2, 2]: sums of a few of them, and their products, are exact in float32."""
    return rng.integers(-16, 17, shape) / 8.0


def moba_cases(rng):
    cases = []

    def add(q, k, block, top_k, label, kind):
        cases.append(Case((q, k, block, top_k), {}, label, _moba(q, k, block, top_k), kind=kind))

    for L, D, block, top_k in [(24, 4, 4, 3), (16, 8, 4, 2), (30, 3, 5, 4)]:
        add(*_moba_inputs(rng, L, D, block, top_k), block, top_k, f"L={L} block={block}",
            "blocks that divide the length")
    add(*_moba_inputs(rng, 22, 4, 5, 3), 5, 3, "L=22 block=5", "a short last block")
    add(*_moba_inputs(rng, 12, 4, 4, 6), 4, 6, "top_k 6 of 3 blocks", "more blocks wanted than there are")
    add(*_moba_inputs(rng, 12, 4, 3, 1), 3, 1, "top_k 1", "top-1: the own block only")
    add(*_moba_inputs(rng, 10, 3, 1, 4), 1, 4, "block 1", "blocks of one key")
    # Three earlier blocks with identical keys, multiples of 1/8 as q is: their scores are exact and
    # equal whatever the order of summation, so the tie is real in any precision.
    one = _eighths(rng, (4, 4))
    k = np.concatenate([one, one, one, _eighths(rng, (4, 4))])
    add(_eighths(rng, (16, 4)), k, 4, 3, "ties", "equal scores: ties go to the earlier block")
    add(*_moba_inputs(rng, 20, 8, 4, 3, np.float32), 4, 3, "float32", "float32 input")
    return cases


def _moba_variant(q, k, block, top_k, own_whole=False, extra=False, later=False, reverse=False, low=False):
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    L = len(q)
    n = -(-L // block)
    means = np.stack([k[s:s + block].mean(axis=0) for s in range(0, L, block)])
    keys = np.zeros((L, L), dtype=bool)
    for t in range(L):
        own = t // block
        earlier = list(range(n)) if later else list(range(own))  # later: every block competes
        scores = q[t] @ means[earlier].T if earlier else np.zeros(0)
        order = np.argsort(scores if low else -scores, kind="stable")
        if reverse:  # ties to the later block
            order = np.lexsort((-np.array(earlier, dtype=np.int64), -scores))
        chosen = [earlier[m] for m in order[:top_k - (0 if extra else 1)]]
        for c in chosen:
            keys[t, c * block:(c + 1) * block] = True
        keys[t, own * block:(t + 1) if not own_whole else (own + 1) * block] = True
    return keys


def diagnose_moba(case, out):
    out = np.asarray(out)
    if out.dtype != np.bool_:
        return None
    for options, words in [({"own_whole": True}, "inside its own block a query sees only the keys up to itself"),
                           ({"extra": True}, "the own block takes one of the top_k places: choose top_k - 1 "
                                             "earlier blocks"),
                           ({"later": True}, "only blocks wholly before the query's block compete"),
                           ({"reverse": True}, "on equal scores the earlier block wins"),
                           ({"low": True}, "choose the blocks with the highest scores q . mean key")]:
        if like(out, _moba_variant(*case.args, **options), case.expected):
            return words
    return None


def moba_check(case, out):
    _exact_array("the selected keys", out, case.expected, "b")


HINTS_MOBA = {
    "blocks that divide the length": "block c's score is q_t . (mean of its keys); query t reads its own block "
                                     "up to itself and the top_k - 1 best earlier blocks",
    "a short last block": "the last block holds the L % block keys left over",
    "more blocks wanted than there are": "with fewer earlier blocks than top_k - 1, take all of them",
    "top-1: the own block only": "top_k = 1 leaves the own block only, causal inside",
    "blocks of one key": "with blocks of one key the mean key is the key itself",
    "equal scores: ties go to the earlier block": "sort with a stable sort on minus the score, or break ties "
                                                  "by the block index",
    "float32 input": "float32 input: compute the scores in at least float32",
}

# ----------------------------------------------------------------------------- Part 4

E4M3_MAX = 448.0


def _fp8(x, block):
    x_hat, scales = ref.fp8_quantize(np.asarray(x, dtype=np.float64), "e4m3", block=block)
    return x_hat, scales


def _tie_block(rng, d):
    """A block whose scale is 1 (its largest entry is 448) and whose other entries lie halfway between
    two neighbours of the E4M3 grid: normal ones and subnormal ones."""
    halfway = np.array([1.0625, 1.1875, 2.125, 17.0, 13.5, 0.5 * 2.0**-9, 1.5 * 2.0**-9, 2.5 * 2.0**-9])
    rows = rng.choice(halfway, size=(3, d)) * rng.choice([-1.0, 1.0], size=(3, d))
    rows[0, 0] = E4M3_MAX
    return rows


def _entries(rng, shape, scale=1.0):
    """Entries of magnitude between scale/4 and 2 scale, random signs: no entry falls among the
    subnormals of its block by chance (the subnormals have a kind of their own)."""
    return rng.uniform(0.25, 2.0, shape) * rng.choice([-1.0, 1.0], size=shape) * scale


def fp8_cases(rng):
    cases = []

    def add(x, block, label, kind):
        cases.append(Case((x, block), {}, label, _fp8(x, block), tol=1e-12, kind=kind))

    add(_entries(rng, (8, 4)), 4, "8 rows by 4", "blocks that divide the rows")
    add(_entries(rng, (12, 3), 5.0), 3, "12 rows by 3", "blocks that divide the rows")
    add(_entries(rng, (10, 4)), 4, "10 rows by 4", "a short last block")
    add(_entries(rng, (5, 6)), 8, "one block", "one block for every row")
    x = _entries(rng, (12, 4))
    x[int(rng.integers(0, 4)), int(rng.integers(0, 4))] = 1e3
    add(x, 4, "outlier", "an outlier in one block")
    x = rng.standard_normal((8, 4)) * np.where(np.arange(8) < 4, 1.0, 1e-3)[:, None]
    x[0, 0] = 100.0
    add(x, 8, "small entries", "small entries: subnormals")
    add(np.concatenate([_tie_block(rng, 4), _entries(rng, (3, 4))]), 3, "ties", "values halfway between "
        "two FP8 numbers")
    x = _entries(rng, (9, 3))
    x[3:6] = 0.0
    add(x, 3, "zero block", "a block of zeros")
    return cases


def _e4m3(y, subnormals=True, half_up=False, mantissa=3):
    a = np.minimum(np.abs(y), E4M3_MAX)
    _, e = np.frexp(a)
    exponent = np.maximum(e - 1, -6) if subnormals else e - 1
    spacing = np.ldexp(1.0, exponent - mantissa)
    r = np.floor(a / spacing + 0.5) if half_up else np.round(a / spacing)
    return np.copysign(np.minimum(r * spacing, E4M3_MAX), y)


def _fp8_variant(x, block, per_tensor=False, **rounding):
    x = np.asarray(x, dtype=np.float64)
    starts = [0] if per_tensor else list(range(0, len(x), block))
    x_hat, scales = np.empty_like(x), []
    for s in starts:
        rows = slice(0, len(x)) if per_tensor else slice(s, s + block)
        amax = np.abs(x[rows]).max(initial=0.0)
        sigma = amax / E4M3_MAX if amax > 0 else 1.0
        scales.append(sigma)
        x_hat[rows] = _e4m3(x[rows] / sigma, **rounding) * sigma
    if per_tensor:
        scales = scales * (-(-len(x) // block))
    return x_hat, np.array(scales)


def diagnose_fp8(case, out):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    x, block = case.args
    for options, words in [({"half_up": True}, "a value halfway between two FP8 numbers goes to the one with an "
                                               "even last mantissa bit (np.round does this)"),
                           ({"subnormals": False}, "below 2^-6 the spacing stays 2^-9: E4M3's subnormals"),
                           ({"mantissa": 2}, "E4M3 keeps 3 mantissa bits: the spacing is 2^(e - 3)"),
                           ({"per_tensor": True}, "one scale per block of `block` rows, not one for the "
                                                  "whole array")]:
        variant = _fp8_variant(x, block, **options)
        if any(like(got, wrong, right) for got, wrong, right in zip(out, variant, case.expected)
               if np.shape(got) == np.shape(right)):
            return words
    return None


HINTS_FP8 = {
    "blocks that divide the rows": "sigma = (largest |x| of the block) / 448, x_hat = sigma * fl(x / sigma) with "
                                   "fl the rounding to the E4M3 grid",
    "a short last block": "the last block holds the rows left over and has a scale of its own",
    "one block for every row": "a block longer than the array is one block: one scale",
    "an outlier in one block": "each block's scale comes from its own largest entry",
    "small entries: subnormals": "below 2^-6 the E4M3 grid is evenly spaced by 2^-9 (subnormals), and values "
                                 "under 2^-10 become 0",
    "values halfway between two FP8 numbers": "round half to even, as np.round does",
    "a block of zeros": "an all-zero block has scale 1 and stays zero",
}

# ----------------------------------------------------------------------------- Part 5


def _gated(q, k, v, gate_logits, causal):
    q, k, v, g = (np.asarray(x, dtype=np.float64)[None, None] for x in (q, k, v, gate_logits))
    return ref.gated_attention(q, k, v, g, causal=causal)[0][0, 0]


def gated_cases(rng):
    cases = []

    def add(L, S, D, D_v, width, causal, kind, low=-4.0, high=4.0, q_scale=1.0, dtype=np.float64, tol=1e-10):
        q = rng.standard_normal((L, D)) * q_scale
        k, v = rng.standard_normal((S, D)), rng.standard_normal((S, D_v))
        if q_scale > 1.0:  # the first query's score on the first key is 2000: e^2000 overflows
            q[0] = 2000.0 * np.sqrt(D) * k[0] / (k[0] @ k[0])
        g = rng.uniform(low, high, (L, width))
        q, k, v, g = (x.astype(dtype) for x in (q, k, v, g))
        cases.append(Case((q, k, v, g, causal), {}, f"L={L} S={S} gate width {width} causal={causal}: {kind}",
                          _gated(q, k, v, g, causal), tol=tol, kind=kind))

    add(6, 6, 4, 3, 3, False, "an elementwise gate")
    add(9, 7, 8, 5, 5, False, "an elementwise gate")
    add(8, 8, 4, 4, 1, False, "a headwise gate: one per token")
    add(10, 10, 4, 3, 3, True, "causal")
    add(7, 7, 4, 2, 1, True, "causal")
    add(5, 12, 4, 3, 3, False, "more keys than queries")
    add(6, 6, 4, 3, 3, False, "closed gates: logits far below zero", low=-1000.0, high=-700.0)
    add(6, 6, 4, 3, 3, False, "open gates: logits far above zero", low=700.0, high=1000.0)
    add(6, 6, 4, 3, 3, True, "large scores", q_scale=300.0)
    add(8, 8, 8, 4, 4, True, "float32 input", dtype=np.float32, tol=1e-5)
    return cases


def _gated_variant(q, k, v, g, causal, sigmoid=True, scale=True, gate_scores=False):
    q, k, v, g = (np.asarray(x, dtype=np.float64) for x in (q, k, v, g))
    z = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
    if causal:
        z = np.where(np.tri(*z.shape, dtype=bool), z, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    gate = 0.5 * (1 + np.tanh(0.5 * g)) if sigmoid else g
    return p @ v * gate


def diagnose_gated(case, out):
    for options, words in [({"sigmoid": False}, "the gate is sigmoid(gate_logits), not the logits themselves"),
                           ({"scale": False}, "the scores are q . k / sqrt(D)")]:
        if like(out, _gated_variant(*case.args, **options), case.expected):
            return words
    return None


HINTS_GATED = {
    "an elementwise gate": "out = softmax(q k^T / sqrt(D)) v, then times sigmoid(gate_logits) entry by entry",
    "a headwise gate: one per token": "a gate of shape (L, 1) multiplies every channel of its token's output",
    "causal": "with causal=True query i sees keys j <= i",
    "more keys than queries": "the scores are (L, S): one row per query, one column per key",
    "closed gates: logits far below zero": "1 / (1 + exp(-x)) overflows for x far below 0: compute the sigmoid "
                                          "without overflow, e.g. 0.5 * (1 + tanh(x / 2))",
    "open gates: logits far above zero": "exp(x) / (1 + exp(x)) is inf / inf for large x: write the sigmoid "
                                        "without overflow",
    "large scores": "subtract each row's largest score before the exponential",
    "float32 input": "float32 input: compute in at least float32",
}

PARTS = [
    Part("test_sink_window_mod", function="sink_window_mod", cases=sink_cases, check=sink_check,
         precision="Exact: booleans (`True` = may attend) that broadcast to the index grids' shape and equal the "
                   "expected mask there entry by entry.",
         hints=HINTS_SINK, diagnose=diagnose_sink),
    Part("test_block_mask_kinds", function="block_mask_kinds", cases=block_cases,
         check=tuple_check(("kinds", "computed"), (_kinds_check, _count_check)), outputs=("kinds", "computed"),
         precision="Exact: the integer tile kinds equal the expected ones, and `computed` is the expected int.",
         hints=HINTS_BLOCK, diagnose=diagnose_block),
    Part("test_moba_selection", function="moba_selection", cases=moba_cases, check=moba_check,
         precision="Exact: a boolean `(L, L)` array equal to the expected selection entry by entry. The expected "
                   "selection ranks the scores in float64 (from float32 inputs converted first). In every case "
                   "equal scores are exactly equal (the tied blocks hold identical keys, multiples of 1/8, as "
                   "are the queries) and any two other scores that decide a choice differ by at least 0.001: "
                   "float32 or float64 scores, summed in any order, choose the same blocks.",
         hints=HINTS_MOBA, diagnose=diagnose_moba),
    Part("test_fp8_quantize_blocks", function="fp8_quantize_blocks", cases=fp8_cases,
         check=tuple_check(("x_hat", "scales"), (_close, _close)), outputs=("x_hat", "scales"),
         hints=HINTS_FP8, diagnose=diagnose_fp8),
    Part("test_gated_attention_output", function="gated_attention_output", cases=gated_cases, no_warnings=True,
         hints=HINTS_GATED, diagnose=diagnose_gated),
]
