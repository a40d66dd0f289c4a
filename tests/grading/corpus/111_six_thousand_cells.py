# Limits degrade: 6000 empty cells appended (a runaway script that wrote cells). Past the limit of
# cells the grader reads, it reads the first 5000 and the cells with a grade id after them, and
# grades the answers it found, with a note of what it left out (not malformed).
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: many-cells 6000
