# Forging results: Part 1's cell writes fake "passed" frames into every open file descriptor.
# The breach costs Part 1 (and Part 2, which calls it); the next worker skips that cell, so Part 3 counts.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=3
# status: flagged
# reason: result channel
# base: solution
# %% grade_id: stable_softmax
import json
import os
import struct

def stable_softmax(x, axis=-1):
    return x

_head = json.dumps({"ev": "part", "part": "test_stable_softmax", "defined": True, "score": 3}).encode()
_frame = struct.pack(">II", 4 + len(_head), len(_head)) + _head
for _fd in range(3, 64):
    try:
        os.write(_fd, _frame)
    except OSError:
        pass
for _name in ("result.json", "results.npz", "grades.csv"):
    with open(_name, "w") as _fh:
        _fh.write('{"test_stable_softmax": 3, "test_softmax_jacobian": 2, "test_softmax_vjp": 3}')
