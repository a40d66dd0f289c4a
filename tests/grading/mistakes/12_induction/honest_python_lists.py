# honest: plain Python lists and loops, a helper that builds the target sets as Python sets, explicit walk for the crossings, batch axes handled by reshaping to (-1, L, L)
# part: none
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    seg = [int(t) for t in segment]
    seq = [0]
    pos = 0
    while len(seq) < L:
        seq.append(seg[pos])
        pos = (pos + 1) % len(seg)
    return np.array(seq[:L], dtype=int)
# %% grade_id: previous_token_score
def previous_token_score(probs):
    A = np.array(probs, dtype=np.float64)
    lead, L = A.shape[:-2], A.shape[-1]
    flat = A.reshape(-1, L, L)
    scores = np.empty(flat.shape[0])
    for b in range(flat.shape[0]):
        scores[b] = sum(flat[b, i, i - 1] for i in range(1, L)) / (L - 1)
    return scores.reshape(lead)
# %% grade_id: induction_score
def induction_targets(tokens):
    toks = [int(t) for t in tokens]
    return {i: {jp + 1 for jp in range(i) if toks[jp] == toks[i]} for i in range(len(toks))}


def induction_score(probs, tokens):
    A = np.array(probs, dtype=np.float64)
    L = A.shape[-1]
    lead = A.shape[:-2]
    targets = {i: js for i, js in induction_targets(tokens).items() if js}
    flat = A.reshape(-1, L, L)
    scores = np.zeros(flat.shape[0])
    for b in range(flat.shape[0]):
        total = 0.0
        for i, js in targets.items():
            total += sum(flat[b, i, j] for j in js)
        scores[b] = total / len(targets)
    return scores.reshape(lead)
# %% grade_id: phase_change
def phase_change(steps, loss):
    values = [float(v) for v in loss]
    hi = values[0]
    lo = min(values)
    result = []
    for q in (0.9, 0.5, 0.1):
        level = lo + q * (hi - lo)
        for n, value in enumerate(values):
            if value <= level:
                result.append(int(steps[n]))
                break
    return tuple(result)
