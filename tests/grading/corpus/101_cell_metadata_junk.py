# Honest work whose answer cell carries 8 MB of editor metadata (a collapsed-output cache). Only the
# nbgrader metadata and tags of a cell matter to the grader; the rest is dropped unread.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: cell-metadata-mb stable_softmax jupyter 8
