# A timestamp that cannot be read: graded all the same, the timestamp is noted as unreadable.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: timestamp the day before yesterday, around noon
