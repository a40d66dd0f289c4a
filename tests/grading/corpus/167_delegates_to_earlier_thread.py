# Memory moved out of the measured call: a thread started by an earlier cell computes the full
# Jacobian for the function, which only passes the inputs over a queue. A memory case runs in a
# process of its own where that thread does not exist: the call gets no answer and fails.
# kind: cheat
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: graded
# base: solution
# mutate: add-cell-after softmax_jacobian import queue, threading\n_jobs, _answers = queue.Queue(), queue.Queue()\ndef _serve():\n    while True:\n        p, g = _jobs.get()\n        J = p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]\n        _answers.put(np.einsum("...i,...ij->...j", g, J))\nthreading.Thread(target=_serve, daemon=True).start()
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    _jobs.put((p, g))
    return _answers.get(timeout=3)
