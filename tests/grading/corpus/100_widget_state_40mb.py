# Honest work in a notebook carrying 40 MiB of widget state in its metadata (an interactive plot's
# saved state). The grader uses none of the notebook's own metadata: it is dropped before any size
# limit applies, so the answers are graded.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: metadata-mb widgets 40
