# Honest but unusual text: comments and strings that a spreadsheet would read as formulas, and a
# right-to-left override character. Nothing of it reaches a report unescaped; the answers count.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: add-cell print('=HYPERLINK("http://example.com","open")', '+1+1', '@SUM(A1)', '-2+3', 'abc\u202edef')
# %% grade_id: stable_softmax
# =cmd|' /C calc'!A0  +SUM(1,1)  @A1  (formula-looking comment) ‮ reversed
def stable_softmax(x, axis=-1):
    x = np.asarray(x)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    e = np.exp(work - work.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
