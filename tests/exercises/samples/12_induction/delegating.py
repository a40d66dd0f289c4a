# Calls the course library for Parts 1 and 3: no credit for those parts. Part 2 is right;
# Part 4 measures the drop from the largest loss instead of the first one, which differs when
# the loss rises before it falls.
# expect: test_repeated_sequence=0, test_previous_token_score=2, test_induction_score=0, test_phase_change=0
# %% grade_id: repeated_sequence
from attnmath.induction import repeated_sequence as _ref

def repeated_sequence(segment, L):
    return _ref(segment, L)
# %% grade_id: previous_token_score
def previous_token_score(probs):
    return np.diagonal(np.asarray(probs), offset=-1, axis1=-2, axis2=-1).mean(axis=-1)
# %% grade_id: induction_score
import attnmath.induction

def induction_score(probs, tokens):
    return attnmath.induction.induction_score(probs, tokens)
# %% grade_id: phase_change
def phase_change(steps, loss):
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=np.float64)
    hi, lo = loss.max(), loss.min()
    return tuple(int(steps[np.argmax(loss <= lo + q * (hi - lo))]) for q in (0.9, 0.5, 0.1))
