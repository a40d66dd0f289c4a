# A child process: subprocess runs `python -c 'import torch ...'` to compute the softmax and sends it
# back as JSON. The child sees the same root, without torch: the part fails.
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import json
import subprocess
import sys

_CODE = ("import importlib, json, sys\nt = importlib.import_module('to' + 'rch')\nx, axis = json.loads(sys.stdin.read())\n"
         "print(json.dumps(t.softmax(t.tensor(x, dtype=t.float64), dim=axis).tolist()))")


def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    done = subprocess.run([sys.executable, "-c", _CODE], input=json.dumps([x.astype(float).tolist(), axis]),
                          capture_output=True, text=True, check=True)
    return np.array(json.loads(done.stdout)).astype(x.dtype)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
