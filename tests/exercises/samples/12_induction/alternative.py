# A correct answer written differently: Part 1 with np.resize, Part 2 with fancy indexing,
# Part 3 with an einsum over a boolean target matrix built by broadcasting, Part 4 with a loop
# over the curve.
# expect: test_repeated_sequence=2, test_previous_token_score=2, test_induction_score=3, test_phase_change=3
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    body = np.resize(np.asarray(segment, dtype=np.int64), L - 1)
    return np.concatenate([np.zeros(1, dtype=np.int64), body])
# %% grade_id: previous_token_score
def previous_token_score(probs):
    probs = np.asarray(probs, dtype=np.float64)
    i = np.arange(1, probs.shape[-1])
    return probs[..., i, i - 1].sum(axis=-1) / len(i)
# %% grade_id: induction_score
def induction_score(probs, tokens):
    tokens = np.asarray(tokens)
    L = len(tokens)
    same = (tokens[:, None] == tokens[None, :]) & (np.arange(L)[None, :] < np.arange(L)[:, None])
    target = np.zeros((L, L), dtype=np.float64)
    target[:, 1:] = same[:, :-1]
    q = target.sum(axis=1) > 0
    w = np.einsum("...ij,ij->...i", np.asarray(probs, dtype=np.float64), target)
    return w[..., q].sum(axis=-1) / q.sum()
# %% grade_id: phase_change
def phase_change(steps, loss):
    hi, lo = float(loss[0]), float(min(loss))
    out = []
    for q in (0.9, 0.5, 0.1):
        level = lo + q * (hi - lo)
        out.append(next(int(s) for s, value in zip(steps, loss) if value <= level))
    return tuple(out)
