# Every answer raises or returns nothing: no points, and the notebook still grades.
# expect: test_repeated_sequence=0, test_previous_token_score=0, test_induction_score=0, test_phase_change=0
# %% grade_id: repeated_sequence
def repeated_sequence(segment, L):
    raise NotImplementedError()
# %% grade_id: previous_token_score
raise RuntimeError("this cell crashes at definition time")
# %% grade_id: induction_score
def induction_score(probs, tokens):
    return None
# %% grade_id: phase_change
def phase_change(steps, loss):
    return (float("nan"),) * 3
