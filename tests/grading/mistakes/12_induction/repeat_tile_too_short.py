# bug: the segment is tiled max(L // T, 1) times, which is too short whenever L - 1 > T * (L // T)
# part: repeated_sequence
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    segment = np.asarray(segment)
    body = np.tile(segment, max(L // len(segment), 1))[: L - 1]
    return np.concatenate([[0], body]).astype(int)
# %% grade_id: previous_token_score
def previous_token_score(probs):
    below = np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)     # (..., L - 1)
    return below.mean(axis=-1)
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
