# Missing: the notebook was saved under another name (a browser download's "Softmax (1).ipynb").
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: missing
# reason: 01_softmax/Softmax (1).ipynb
# base: solution
# mutate: name Softmax (1).ipynb
