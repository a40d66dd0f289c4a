"""Named mistakes for 12_induction: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("12_induction", "a sequence of whole copies only", "test_repeated_sequence",
     {"repeated_sequence": ("tokens[1:] = segment[np.arange(L - 1) % T]", "tokens[1:] = np.tile(segment, (L - 1) // T)")}),
    ("12_induction", "a previous-token score on the first two axes", "test_previous_token_score",
     {"previous_token_score": ("np.diagonal(probs, offset=-1, axis1=-2, axis2=-1)", "np.diagonal(probs, offset=-1)")}),
    ("12_induction", "induction scores indexed on the first axis", "test_induction_score",
     {"induction_score": (".sum(axis=-1)[..., queries]", ".sum(axis=-1)[queries]")}),
    ("12_induction", "a phase change measured from the highest loss", "test_phase_change",
     {"phase_change": ("hi, lo = loss[0], loss.min()", "hi, lo = loss.max(), loss.min()")}),
    ("12_induction", "a repeated sequence shifted by one", "test_repeated_sequence",
     {"repeated_sequence": ("segment[np.arange(L - 1) % T]", "segment[np.arange(1, L) % T]")}),
    ("12_induction", "a segment squeezed to a scalar", "test_repeated_sequence",
     {"repeated_sequence": ("segment = np.asarray(segment, dtype=np.int64)",
                            "segment = np.asarray(segment, dtype=np.int64).squeeze()")}),
    ("12_induction", "one whole copy first, then the earlier tokens", "test_repeated_sequence",
     {"repeated_sequence": ("tokens[1:] = segment[np.arange(L - 1) % T]",
                            "tokens[1:T + 1] = segment\n    for i in range(T + 1, L):\n        tokens[i] = tokens[i - T]")}),
    ("12_induction", "a period of the distinct tokens", "test_repeated_sequence",
     {"repeated_sequence": ("T = segment.shape[0]", "T = len(np.unique(segment))")}),
    ("12_induction", "the queries whose strongest key is the previous one", "test_previous_token_score",
     {"previous_token_score": ("return np.diagonal(probs, offset=-1, axis1=-2, axis2=-1).mean(axis=-1)",
                               "L = probs.shape[-1]\n"
                               "    return (np.argmax(probs, axis=-1)[..., 1:] == np.arange(L - 1)).mean(axis=-1)")}),
    ("12_induction", "the largest weight on any earlier key", "test_previous_token_score",
     {"previous_token_score": ("np.diagonal(probs, offset=-1, axis1=-2, axis2=-1).mean(axis=-1)",
                               "np.tril(probs, -1).max(axis=-1)[..., 1:].mean(axis=-1)")}),
    ("12_induction", "only the latest earlier occurrence", "test_induction_score",
     {"induction_score": ("        for j in range(i):\n            if tokens[j] == tokens[i]:\n"
                          "                target[i, j + 1] = True\n",
                          "        for j in range(i - 1, -1, -1):\n            if tokens[j] == tokens[i]:\n"
                          "                target[i, j + 1] = True\n                break\n")}),
    ("12_induction", "earlier occurrences from position 1 only", "test_induction_score",
     {"induction_score": ("for j in range(i):", "for j in range(1, i):")}),
    ("12_induction", "steps assumed evenly spaced", "test_phase_change",
     {"phase_change": ("crossings.append(int(steps[n]))", "crossings.append(int(n * (steps[1] - steps[0])))")}),
    ("12_induction", "levels as a fraction of the first loss", "test_phase_change",
     {"phase_change": ("n = int(np.argmax(loss <= lo + q * (hi - lo)))", "n = int(np.argmax(loss <= q * hi))")}),
    ("12_induction", "induction queries from position 2 on", "test_induction_score",
     {"induction_score": ("    for i in range(L):\n", "    for i in range(2, L):\n")}),
    ("12_induction", "the copies written to the last L - 1 places by a negative slice", "test_repeated_sequence",
     {"repeated_sequence": ("tokens[1:] = segment[np.arange(L - 1) % T]", "tokens[-(L - 1):] = segment[np.arange(L - 1) % T]")}),
    ("12_induction", "phase steps as floats", "test_phase_change",
     {"phase_change": ("crossings.append(int(steps[n]))", "crossings.append(float(steps[n]))")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
