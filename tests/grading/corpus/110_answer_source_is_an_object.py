# Tampering in the file: the source of one answer cell is a JSON object instead of text. That cell
# reads as unanswered (its stub runs) and the submission is flagged; the parts that do not use it keep their points.
# expect: test_stable_softmax=0, test_softmax_jacobian=0, test_softmax_vjp=3
# status: flagged
# reason: unreadable source
# base: solution
# mutate: source-json stable_softmax {"code": "def stable_softmax(x, axis=-1): return x"}
