# Missing: the submission folder holds only its timestamp.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: missing
# reason: no softmax.ipynb
# mutate: no-notebook
