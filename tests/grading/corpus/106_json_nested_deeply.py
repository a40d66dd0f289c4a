# Malformed: the file is 200000 nested JSON arrays; the parser's recursion ends in the grader's
# reading child, as that student's reason.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=0
# status: malformed
# reason: nested too deeply
# mutate: nest 200000
