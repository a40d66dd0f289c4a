# Writing the gradebook: Part 3's cell tries to give itself full marks in gradebook.db.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: gradebook
# base: solution
# %% grade_id: softmax_vjp
import glob
import sqlite3

for _path in glob.glob("/work/*/gradebook.db") + glob.glob("../../gradebook.db"):
    try:
        _db = sqlite3.connect(_path)
        _db.execute("UPDATE grade SET auto_score = 100")
        _db.commit()
    except Exception:
        pass

def softmax_vjp(p, g):
    return p * (g - (p * g).sum(axis=-1, keepdims=True))
