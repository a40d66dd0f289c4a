# Honest work with a plotting cell of its own: `%matplotlib inline` and a figure of the Jacobian
# drawn with imshow in an added cell between the parts.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell-after test_softmax_jacobian %matplotlib inline\nimport matplotlib.pyplot as plt\nplt.imshow(softmax_jacobian(np.linspace(-2, 2, 8)))\nplt.colorbar()\nplt.show()
