"""The cases of exercise 15 (attention as a recurrence): one generator per part, for the visible
checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath.recurrence`` in float64
(for float32 inputs too), computed before your function runs; your function gets its own copies
of the inputs. The memory case of Part 3 runs 4096 tokens in chunks of 64 and allows less than
one ``(4096, 4096)`` float64 matrix, so the whole mask does not fit.
"""

import math

import numpy as np

import attnmath.recurrence as ref
from attngrade.spec import Case, Part, allclose_check
from attngrade.visible import like

MiB = 2**20


def tuple_check(names):
    """Check an output that must be a tuple (or list) of arrays, one per name."""

    def check(case, out):
        assert isinstance(out, (tuple, list)), f"expected a tuple {tuple(names)}, got {type(out).__name__}"
        assert len(out) == len(names), f"expected {len(names)} arrays {tuple(names)}, got {len(out)}"
        for name, got, expected in zip(names, out, case.expected):
            try:
                allclose_check(Case(expected=expected, tol=case.tol), got)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None

    return check


def _layer(rng, L, D, D_v, low=-1.0, dtype=np.float64):
    """q, k, v of one head and log decays drawn in [low, 0]."""
    q, k, v = rng.standard_normal((L, D)), rng.standard_normal((L, D)), rng.standard_normal((L, D_v))
    log_alpha = rng.uniform(low, 0.0, L)
    return q.astype(dtype), k.astype(dtype), v.astype(dtype), log_alpha


def _as64(*arrays):
    return tuple(np.asarray(a, dtype=np.float64) for a in arrays)


def _scan(q, k, v, log_alpha, write="after decay", read="after write", scale=None):
    """What a recurrence computes, right or with one of the common mistakes."""
    q, k, v, la = _as64(q, k, v, log_alpha)
    L, D = q.shape
    s = 1.0 / math.sqrt(D) if scale is None else scale
    S, out = np.zeros((D, v.shape[1])), np.zeros((L, v.shape[1]))
    for t in range(L):
        before = S
        S = np.exp(la[t]) * (S + np.outer(k[t], v[t])) if write == "before decay" else \
            np.exp(la[t]) * S + np.outer(k[t], v[t])
        out[t] = s * (before if read == "before write" else S).T @ q[t]
    return out, S


# ----------------------------------------------------------------------------- Part 1


def mask_cases(rng):
    cases = []
    for L in (1, 2, 5, 9, 16):
        la = rng.uniform(-1.0, 0.0, L)
        cases.append(Case((la,), {}, f"L={L}", ref.semiseparable_mask(la), tol=1e-10,
                          kind="another length" if L > 1 else "a single token"))
    cases.append(Case((np.zeros(7),), {}, "no decay", ref.semiseparable_mask(np.zeros(7)), tol=1e-10,
                      kind="no decay: the causal mask"))
    la = rng.uniform(-6.0, -2.0, 400)  # products of the decays underflow long before the end
    cases.append(Case((la,), {}, "strong decays L=400", ref.semiseparable_mask(la), tol=1e-10,
                      kind="strong decays over a long sequence"))
    cases.append(Case((np.zeros(0),), {}, "empty", np.zeros((0, 0)), tol=1e-10, kind="an empty sequence"))
    return cases


def diagnose_mask(case, out):
    la = np.asarray(case.args[0], dtype=np.float64)
    L = la.size
    if L == 0 or L > 50:
        return None
    cs = np.cumsum(la)
    full = np.exp(cs[:, None] - cs[None, :])  # (L, L): the ratio everywhere
    lower = np.tri(L, L, dtype=bool)
    for variant, words in [
            (np.where(lower, full, 1.0), "above the diagonal (j > i) the mask is 0: a query sees no later key"),
            (np.where(lower, full * np.exp(la)[None, :], 0.0), "the product runs over m = j+1 .. i: key j's own "
                                                                "decay is not applied"),
            (np.where(lower, full, 0.0).T, "rows are queries i, columns keys j: G[i, j] for j <= i"),
            (np.where(lower, np.exp(la)[:, None] * np.ones(L), 0.0), "G[i, j] multiplies every decay from "
                                                                     "j+1 to i, not only alpha_i")]:
        if like(out, variant, case.expected):
            return words
    return None


HINTS_MASK = {
    "another length": "G[i, j] = alpha_{j+1} ... alpha_i = exp(sum of log_alpha[j+1 .. i]) for j <= i, 0 above",
    "a single token": "one token: the mask is [[1]]",
    "no decay: the causal mask": "with every log decay 0 the mask is the lower triangle of ones, diagonal included",
    "strong decays over a long sequence": "do not divide products of decays: they underflow to 0. Add the logs of "
                                          "the decays between j and i and take one exponential",
    "an empty sequence": "no token: an empty (0, 0) array",
}

# ----------------------------------------------------------------------------- Part 2


def _ssd(q, k, v, la):
    r = ref.ssd_recurrent(*_as64(q, k, v, la))
    return r.out, r.state


def recurrent_cases(rng):
    cases = []
    for L, D, D_v in [(6, 4, 3), (11, 2, 5), (9, 8, 8), (16, 3, 1)]:
        q, k, v, la = _layer(rng, L, D, D_v)
        cases.append(Case((q, k, v, la), {}, f"L={L} D={D} D_v={D_v}", _ssd(q, k, v, la), tol=1e-10,
                          kind="another length and size"))
    q, k, v, _ = _layer(rng, 10, 4, 3)
    cases.append(Case((q, k, v, np.zeros(10)), {}, "no decay", _ssd(q, k, v, np.zeros(10)), tol=1e-10,
                      kind="no decay: linear attention"))
    q, k, v, la = _layer(rng, 30, 4, 4, low=-8.0)
    cases.append(Case((q, k, v, la), {}, "strong decays", _ssd(q, k, v, la), tol=1e-10, kind="strong decays"))
    q, k, v, la = _layer(rng, 1, 3, 2)
    cases.append(Case((q, k, v, la), {}, "one token", _ssd(q, k, v, la), tol=1e-10, kind="a single token"))
    q, k, v, la = _layer(rng, 0, 3, 2)
    cases.append(Case((q, k, v, la), {}, "empty", _ssd(q, k, v, la), tol=1e-10, kind="an empty sequence"))
    q, k, v, la = _layer(rng, 12, 8, 4, dtype=np.float32)
    cases.append(Case((q, k, v, la), {}, "float32", _ssd(q, k, v, la), tol=1e-5, kind="float32 input"))
    return cases


def _first_pair(out, case, variants):
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        return None
    for variant, words in variants:
        if any(like(got, wrong, right) for got, wrong, right in zip(out, variant, case.expected)):
            return words
    return None


def diagnose_recurrent(case, out):
    q, k, v, la = case.args
    D = np.asarray(q).shape[1]
    if D == 0 or np.asarray(q).shape[0] == 0:
        return None
    return _first_pair(out, case, [
        (_scan(q, k, v, la, scale=1.0), "the query is scaled by s = 1/sqrt(D)"),
        (_scan(q, k, v, la, scale=1.0 / D), "the scale is 1/sqrt(D), not 1/D"),
        (_scan(q, k, v, la, write="before decay"), "decay the old state first, then add k_t v_t^T: the new pair "
                                                   "is not decayed in its own step"),
        (_scan(q, k, v, la, read="before write"), "the output of step t reads the state after writing pair t")])


HINTS_RECURRENT = {
    "another length and size": "S_t = alpha_t S_{t-1} + outer(k_t, v_t), o_t = S_t^T q_t / sqrt(D); return "
                               "(out, S_L)",
    "no decay: linear attention": "with log_alpha = 0 the state is the running sum of outer(k_t, v_t)",
    "strong decays": "alpha_t = exp(log_alpha[t]) multiplies the whole state before the new pair is added",
    "a single token": "one token: out = (k v^T)^T q / sqrt(D), and the state is outer(k, v)",
    "an empty sequence": "no token: out has shape (0, D_v) and the state is the zero (D, D_v) matrix",
    "float32 input": "float32 input: compute in at least float32",
}

# ----------------------------------------------------------------------------- Part 3


def chunked_cases(rng):
    cases = []
    for L, D, D_v, c, kind in [(12, 4, 3, 4, "chunks that divide the length"),
                               (16, 2, 2, 8, "chunks that divide the length"),
                               (13, 4, 3, 4, "a short last chunk"), (10, 3, 5, 3, "a short last chunk"),
                               (7, 4, 2, 1, "chunks of one token"),
                               (6, 3, 3, 16, "one chunk longer than the sequence")]:
        q, k, v, la = _layer(rng, L, D, D_v)
        cases.append(Case((q, k, v, la, c), {}, f"L={L} c={c}", _ssd(q, k, v, la), tol=1e-10, kind=kind))
    q, k, v, la = _layer(rng, 40, 4, 4, low=-8.0)
    cases.append(Case((q, k, v, la, 16), {}, "strong decays", _ssd(q, k, v, la), tol=1e-9,
                      kind="strong decays"))
    q, k, v, la = _layer(rng, 4096, 4, 4, low=-0.05)
    cases.append(Case((q, k, v, la, 64), {}, "memory", _ssd(q, k, v, la), tol=1e-9,
                      max_peak_bytes=16 * MiB, kind="a long sequence in little memory"))
    return cases


def _chunks(q, k, v, la, c, carry=True, local_mask=False):
    """What a chunked form computes, right or with a common mistake."""
    q, k, v, la = _as64(q, k, v, la)
    L, D = q.shape
    S, out = np.zeros((D, v.shape[1])), np.zeros((L, v.shape[1]))
    for a in range(0, L, c):
        e = min(a + c, L)
        cs = np.cumsum(la[a:e])
        G = np.tril(np.exp(cs[:, None] - cs[None, :]))
        if local_mask:
            G = np.tril(np.ones_like(G))
        qs = q[a:e] / math.sqrt(D)
        out[a:e] = (qs @ k[a:e].T * G) @ v[a:e] + (np.exp(cs)[:, None] * (qs @ S) if carry else 0.0)
        S = np.exp(cs[-1]) * S + k[a:e].T @ (np.exp(cs[-1] - cs)[:, None] * v[a:e])
    return out, S


def diagnose_chunked(case, out):
    q, k, v, la, c = case.args
    if np.asarray(q).shape[0] > 100:
        return None
    return _first_pair(out, case, [
        (_chunks(q, k, v, la, c, carry=False), "each chunk also reads the state the earlier chunks left, decayed "
                                               "to each query: b_i S^T q_i"),
        (_chunks(q, k, v, la, c, local_mask=True), "inside a chunk the scores are multiplied by the decay mask, "
                                                   "not by the plain causal mask")])


HINTS_CHUNKED = {
    "chunks that divide the length": "inside a chunk: (G * (q k^T / sqrt(D))) v plus the carried state read by "
                                     "each query; then pass the state on",
    "a short last chunk": "the last chunk holds the L % chunk_size tokens left over",
    "chunks of one token": "chunks of one token are the recurrence",
    "one chunk longer than the sequence": "a chunk longer than the sequence is the whole quadratic form",
    "strong decays": "decay the carried state by the product of the chunk's decays, and each query's read by "
                     "the decays up to it",
    "a long sequence in little memory": "hold one chunk's (c, c) mask and scores at a time, never an (L, L) array",
}

# ----------------------------------------------------------------------------- Part 4


def _delta(q, k, v, beta, la):
    r = ref.delta_rule_recurrent(*_as64(q, k, v), np.asarray(beta, dtype=np.float64),
                                 log_alpha=np.asarray(la, dtype=np.float64))
    return r.out, r.state


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def delta_cases(rng):
    cases = []
    for L, D, D_v in [(6, 4, 3), (12, 3, 5), (9, 8, 2)]:
        q, k, v, la = _layer(rng, L, D, D_v, low=-0.5)
        k, beta = _unit(k), rng.uniform(0.1, 1.0, L)
        cases.append(Case((q, k, v, beta, la), {}, f"L={L} D={D}", _delta(q, k, v, beta, la), tol=1e-10,
                          kind="another length and size"))
    q, k, v, _ = _layer(rng, 10, 4, 3)
    k, beta = _unit(k), rng.uniform(0.1, 1.0, 10)
    cases.append(Case((q, k, v, beta, np.zeros(10)), {}, "no gate", _delta(q, k, v, beta, np.zeros(10)),
                      tol=1e-10, kind="no gate: DeltaNet"))
    q, k, v, la = _layer(rng, 8, 4, 4, low=-0.5)
    k = _unit(k)
    cases.append(Case((q, k, v, np.ones(8), la), {}, "beta 1", _delta(q, k, v, np.ones(8), la), tol=1e-10,
                      kind="steps of one"))
    q, k, v, la = _layer(rng, 1, 3, 2)
    k, beta = _unit(k), rng.uniform(0.1, 1.0, 1)
    cases.append(Case((q, k, v, beta, la), {}, "one token", _delta(q, k, v, beta, la), tol=1e-10,
                      kind="a single token"))
    q, k, v, la = _layer(rng, 10, 8, 4, low=-0.5, dtype=np.float32)
    k, beta = _unit(k).astype(np.float32), rng.uniform(0.1, 1.0, 10).astype(np.float32)
    cases.append(Case((q, k, v, beta, la), {}, "float32", _delta(q, k, v, beta, la), tol=1e-5,
                      kind="float32 input"))
    return cases


def _delta_variant(q, k, v, beta, la, gate="before", linear=False):
    q, k, v, beta, la = _as64(q, k, v, beta, la)
    L, D = q.shape
    S, out = np.zeros((D, v.shape[1])), np.zeros((L, v.shape[1]))
    for t in range(L):
        a = np.exp(la[t])
        if linear:
            S = a * S + beta[t] * np.outer(k[t], v[t])
        elif gate == "after":
            S = a * (S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t]))
        else:  # the error read from the state before its decay
            S = a * S + beta[t] * np.outer(k[t], v[t] - S.T @ k[t])
        out[t] = S.T @ q[t] / math.sqrt(D)
    return out, S


def diagnose_delta(case, out):
    q, k, v, beta, la = case.args
    return _first_pair(out, case, [
        (_delta_variant(q, k, v, beta, la, gate="undecayed"), "the error v_t - S^T k_t is read from the decayed "
                                                              "state alpha_t S_{t-1}"),
        (_delta_variant(q, k, v, beta, la, gate="after"), "decay first, then correct: the step on pair t is not "
                                                          "decayed in its own step"),
        (_delta_variant(q, k, v, beta, la, linear=True), "the delta rule writes beta_t k_t (v_t - S^T k_t)^T, the "
                                                         "error, not the value")])


HINTS_DELTA = {
    "another length and size": "S <- alpha_t S, then S <- S + beta_t outer(k_t, v_t - S^T k_t), "
                               "then o_t = S^T q_t / sqrt(D)",
    "no gate: DeltaNet": "with log_alpha = 0 this is DeltaNet: every step corrects the state's recall of v_t",
    "steps of one": "with beta = 1 and a unit key the state recalls v_t from k_t exactly after step t",
    "a single token": "one token from a zero state: S = beta outer(k, v)",
    "float32 input": "float32 input: compute in at least float32",
}

# ----------------------------------------------------------------------------- Part 5


def _wy(k, v, beta):
    w, u = ref.wy_representation(*_as64(k, v, beta))
    return w, u


def wy_cases(rng):
    cases = []
    for c, D, D_v in [(4, 4, 3), (6, 3, 2), (8, 8, 5), (5, 2, 4)]:
        k, v, beta = _unit(rng.standard_normal((c, D))), rng.standard_normal((c, D_v)), rng.uniform(0.1, 1.0, c)
        cases.append(Case((k, v, beta), {}, f"c={c} D={D}", _wy(k, v, beta), tol=1e-10, kind="another chunk"))
    k, v, beta = _unit(rng.standard_normal((1, 3))), rng.standard_normal((1, 2)), rng.uniform(0.1, 1.0, 1)
    cases.append(Case((k, v, beta), {}, "one token", _wy(k, v, beta), tol=1e-10, kind="a chunk of one token"))
    basis = np.linalg.qr(rng.standard_normal((5, 5)))[0][:4]  # (4, 5): orthonormal keys
    v, beta = rng.standard_normal((4, 3)), rng.uniform(0.1, 1.0, 4)
    cases.append(Case((basis, v, beta), {}, "orthogonal", _wy(basis, v, beta), tol=1e-10,
                      kind="orthogonal keys"))
    key = _unit(rng.standard_normal(4))
    k = np.stack([key, _unit(rng.standard_normal(4)), key, key])  # a key written three times
    v, beta = rng.standard_normal((4, 2)), rng.uniform(0.5, 1.5, 4)
    cases.append(Case((k, v, beta), {}, "repeated key", _wy(k, v, beta), tol=1e-10, kind="a repeated key"))
    return cases


def _wy_variant(k, v, beta, first_order=False, upper=False, no_beta=False):
    k, v, beta = _as64(k, v, beta)
    c = len(k)
    A = beta[:, None] * (k @ k.T)
    A = np.triu(A, 1) if upper else np.tril(A, -1)
    if first_order:
        T = np.eye(c) - A
    else:
        T = np.linalg.inv(np.eye(c) + A)
    scale = np.ones(c) if no_beta else beta
    return T @ (scale[:, None] * k), T @ (scale[:, None] * v)


def diagnose_wy(case, out):
    k, v, beta = case.args
    return _first_pair(out, case, [
        (_wy_variant(k, v, beta, first_order=True), "T is the inverse of I + A, not I - A: solve row by row "
                                                    "(forward substitution)"),
        (_wy_variant(k, v, beta, upper=True), "A is strictly lower triangular: A[t, s] = beta_t k_t . k_s for "
                                              "s < t"),
        (_wy_variant(k, v, beta, no_beta=True), "W = T diag(beta) K and U = T diag(beta) V")])


HINTS_WY = {
    "another chunk": "A[t, s] = beta_t (k_t . k_s) for s < t, T = (I + A)^-1, W = T diag(beta) K, "
                     "U = T diag(beta) V",
    "a chunk of one token": "one token: w = beta k and u = beta v",
    "orthogonal keys": "orthogonal keys give A = 0, so W = diag(beta) K",
    "a repeated key": "a key written again: A has entries beta_t k_t . k_s for every earlier s, the same key too",
}

PARTS = [
    Part("test_decay_mask", function="decay_mask", cases=mask_cases, hints=HINTS_MASK, diagnose=diagnose_mask),
    Part("test_ssd_recurrent", function="ssd_recurrent", cases=recurrent_cases, check=tuple_check(("out", "state")),
         outputs=("out", "state"), hints=HINTS_RECURRENT, diagnose=diagnose_recurrent),
    Part("test_ssd_chunked", function="ssd_chunked", cases=chunked_cases, check=tuple_check(("out", "state")),
         outputs=("out", "state"), hints=HINTS_CHUNKED, diagnose=diagnose_chunked),
    Part("test_delta_rule", function="delta_rule", cases=delta_cases, check=tuple_check(("out", "state")),
         outputs=("out", "state"), hints=HINTS_DELTA, diagnose=diagnose_delta),
    Part("test_wy_representation", function="wy_representation", cases=wy_cases, check=tuple_check(("w", "u")),
         outputs=("w", "u"), hints=HINTS_WY, diagnose=diagnose_wy),
]
