# Honest code, odd text: the written answer holds unpaired UTF-16 surrogates (\ud800 escapes in the
# JSON, left by a broken copy and paste). The code parts are graded; the rebuilt notebook and the
# feedback are written with the characters escaped instead of stopping the student's reports.
# kind: honest
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# base: solution
# mutate: json-sub SURROGATES \udcff\ud800
# %% grade_id: jacobian_proof
The Jacobian is diag(p) - p p^T SURROGATES because each output depends on every input.
