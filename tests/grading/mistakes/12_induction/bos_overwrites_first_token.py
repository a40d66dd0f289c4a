# bug: repeated sequence built as np.tile(segment)[:L] with x[0] set to BOS, so BOS overwrites s_1 instead of being prepended (the whole sequence is shifted by one)
# part: repeated_sequence
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    seg = np.asarray(segment, dtype=np.int64)
    reps = L // len(seg) + 1
    out = np.tile(seg, reps)[:L].copy()
    out[0] = 0  # BOS
    return out
# %% grade_id: previous_token_score
def previous_token_score(probs):
    probs = np.asarray(probs, dtype=np.float64)
    d = np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)
    return d.mean(axis=-1)
# %% grade_id: induction_score
def induction_score(probs, tokens):
    probs = np.asarray(probs, dtype=np.float64)
    tokens = np.asarray(tokens)
    L = tokens.shape[0]
    target = np.zeros((L, L), dtype=bool)
    for i in range(L):
        for jp in range(i):
            if tokens[jp] == tokens[i]:
                target[i, jp + 1] = True
    rows = target.any(axis=1)
    per_query = (probs * target).sum(axis=-1)
    return per_query[..., rows].mean(axis=-1)
# %% grade_id: phase_change
def phase_change(steps, loss):
    steps = np.asarray(steps)
    loss = np.asarray(loss, dtype=np.float64)
    hi, lo = loss[0], loss.min()
    out = []
    for q in (0.9, 0.5, 0.1):
        level = lo + q * (hi - lo)
        idx = int(np.nonzero(loss <= level)[0][0])
        out.append(int(steps[idx]))
    return tuple(out)
