# Malformed: the file is a JSON array of cells, not a notebook object.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: not a JSON object
# mutate: text [{"cell_type": "code", "source": "def stable_softmax(x): return x"}]
