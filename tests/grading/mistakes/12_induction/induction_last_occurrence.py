# bug: only the most recent earlier occurrence counts, so with several copies the other targets' weights are dropped
# part: induction_score
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    segment = np.asarray(segment, dtype=np.int64).reshape(-1)
    out = np.zeros(L, dtype=np.int64)
    i = np.arange(1, L)
    out[1:] = segment[(i - 1) % len(segment)]
    return out
# %% grade_id: previous_token_score
def previous_token_score(probs):
    below = np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)     # (..., L - 1)
    return below.mean(axis=-1)
# %% grade_id: induction_score
def induction_score(probs, tokens):
    tokens = np.asarray(tokens)
    last_seen, target = {}, {}
    for i, t in enumerate(tokens.tolist()):
        if t in last_seen:
            target[i] = last_seen[t] + 1
        last_seen[t] = i
    rows = np.array(sorted(target))
    cols = np.array([target[i] for i in rows])
    return probs[..., rows, cols].mean(axis=-1)
# %% grade_id: phase_change
def phase_change(steps, loss):
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=np.float64)
    hi, lo = loss[0], loss.min()
    found = []
    for q in (0.9, 0.5, 0.1):
        first = int(np.argmax(loss <= lo + q * (hi - lo)))
        found.append(int(steps[first]))
    return tuple(found)
