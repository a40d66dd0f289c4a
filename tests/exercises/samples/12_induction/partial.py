# Part 1 is right; Part 2 averages over all L queries (query 0 included); Part 3 is right;
# Part 4 returns the indices of the crossings instead of the logged steps.
# expect: test_repeated_sequence=2, test_previous_token_score=0, test_induction_score=3, test_phase_change=0
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    segment = list(segment)
    return np.array([0] + [segment[(i - 1) % len(segment)] for i in range(1, L)], dtype=np.int64)
# %% grade_id: previous_token_score
def previous_token_score(probs):
    probs = np.asarray(probs, dtype=np.float64)
    return np.diagonal(probs, offset=-1, axis1=-2, axis2=-1).sum(axis=-1) / probs.shape[-1]
# %% grade_id: induction_score
def induction_score(probs, tokens):
    probs = np.asarray(probs, dtype=np.float64)
    L = len(tokens)
    total, count = 0.0, 0
    for i in range(L):
        targets = sorted({j + 1 for j in range(i) if tokens[j] == tokens[i]})
        if targets:
            total = total + probs[..., i, targets].sum(axis=-1)
            count += 1
    return total / count
# %% grade_id: phase_change
def phase_change(steps, loss):
    loss = np.asarray(loss, dtype=np.float64)
    hi, lo = loss[0], loss.min()
    return tuple(int(np.argmax(loss <= lo + q * (hi - lo))) for q in (0.9, 0.5, 0.1))
