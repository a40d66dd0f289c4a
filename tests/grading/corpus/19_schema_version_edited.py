# Tampering: schema_version of an answer cell edited (stock nbgrader stopped the batch); answers right.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: flagged
# reason: schema_version
# base: solution
# mutate: meta stable_softmax schema_version=99
