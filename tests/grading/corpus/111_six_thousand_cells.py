# Malformed size: 6000 empty cells appended (a runaway script that wrote cells). Past the limit of
# cells the grader reads, it stops with the count as the reason.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: (limit 5000)
# base: solution
# mutate: many-cells 6000
