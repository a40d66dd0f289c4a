# bug: np.diagonal(probs, -1) is called without axis1/axis2, which takes the diagonal of the first two axes on stacked patterns
# part: previous_token_score
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    segment = np.asarray(segment, dtype=np.int64).reshape(-1)
    out = np.zeros(L, dtype=np.int64)
    i = np.arange(1, L)
    out[1:] = segment[(i - 1) % len(segment)]
    return out
# %% grade_id: previous_token_score
def previous_token_score(probs):
    return np.diagonal(probs, -1).mean(axis=-1)
# %% grade_id: induction_score
def induction_score(probs, tokens):
    tokens = np.asarray(tokens)
    L = tokens.shape[0]
    targets = np.zeros((L, L), dtype=bool)
    for i in range(L):
        for earlier in range(i):
            if tokens[earlier] == tokens[i]:
                targets[i, earlier + 1] = True
    queries = targets.any(axis=1)
    per_query = np.sum(probs * targets, axis=-1)                  # (..., L)
    return per_query[..., queries].mean(axis=-1)
# %% grade_id: phase_change
def phase_change(steps, loss):
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=np.float64)
    hi, lo = loss[0], loss.min()
    found = []
    for q in (0.9, 0.5, 0.1):
        first = int(np.argmax(loss <= lo + q * (hi - lo)))
        found.append(int(steps[first]))
    return tuple(found)
