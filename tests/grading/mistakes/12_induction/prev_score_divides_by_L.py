# bug: previous-token score averages the sub-diagonal over L queries instead of the L-1 queries that have a previous token
# part: previous_token_score
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    seg = np.asarray(segment, dtype=np.int64)
    T = len(seg)
    out = np.zeros(L, dtype=np.int64)
    i = np.arange(1, L)
    out[1:] = seg[(i - 1) % T]
    return out
# %% grade_id: previous_token_score
def previous_token_score(probs):
    probs = np.asarray(probs, dtype=np.float64)
    L = probs.shape[-1]
    d = np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)
    return d.sum(axis=-1) / L
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
