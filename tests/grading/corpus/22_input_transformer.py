# Cheating in the kernel: an IPython input transformer that deletes the hidden tests; Part 3 wrong.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=0
# status: flagged
# reason: get_ipython
# base: solution
# %% grade_id: softmax_vjp
def softmax_vjp(p, g):
    return p * g

def _drop_hidden(lines):
    return [line for line in lines if "run_hidden_tests" not in line]

get_ipython().input_transformers_cleanup.append(_drop_hidden)
