# A module written to a temp folder and imported: it imports torch by a name that no static check
# sees. torch does not exist in the sandbox, so the part fails (nothing to flag: it is just graded 0).
# kind: cheat
# expect: test_stable_softmax=0, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# %% grade_id: stable_softmax
import os
import sys
import tempfile

_dir = tempfile.mkdtemp()
with open(os.path.join(_dir, "helper_mod.py"), "w") as _fh:
    _fh.write("import importlib\nimport numpy as np\ndef run(x, axis):\n    t = importlib.import_module('to' + 'rch')\n"
              "    return t.softmax(t.from_numpy(np.asarray(x, dtype=float)), dim=axis).numpy()\n")
sys.path.insert(0, _dir)
import helper_mod


def stable_softmax(x, axis=-1):
    return helper_mod.run(x, axis)
# %% grade_id: softmax_jacobian
def softmax_jacobian(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max())
    p = e / e.sum()
    return np.diag(p) - np.outer(p, p)
