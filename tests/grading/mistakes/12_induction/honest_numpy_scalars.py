# honest: np.resize for the repeated segment, np.float64 / np.int64 scalars in the results, a broadcast comparison for the induction targets
# part: none
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    body = np.resize(np.asarray(segment, dtype=np.int64), max(L - 1, 0))
    return np.concatenate([np.zeros(1, dtype=np.int64), body])[:L]
# %% grade_id: previous_token_score
def previous_token_score(probs):
    probs = np.asarray(probs, dtype=np.float64)
    L = probs.shape[-1]
    total = sum(probs[..., i, i - 1] for i in range(1, L))
    return total / np.float64(L - 1)
# %% grade_id: induction_score
def induction_score(probs, tokens):
    t = np.asarray(tokens)
    L = t.size
    same = (t[:, None] == t[None, :]) & np.tri(L, L, -1, dtype=bool)    # same[i, j'] for j' < i
    targets = np.zeros((L, L), dtype=np.float64)
    targets[:, 1:] = same[:, :-1]                                      # j = j' + 1
    has = targets.any(axis=1)
    scores = np.einsum("...ij,ij->...i", probs, targets)
    return np.sum(scores[..., has], axis=-1) / np.int64(has.sum())
# %% grade_id: phase_change
def phase_change(steps, loss):
    steps, loss = np.asarray(steps), np.asarray(loss)
    lo = np.min(loss)
    levels = lo + np.array([0.9, 0.5, 0.1]) * (loss[0] - lo)
    first = [np.flatnonzero(loss <= level)[0] for level in levels]
    return tuple(steps[first])          # np.int64 steps
