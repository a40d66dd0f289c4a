# The student's written proof (Part 4) is in its cell, but the cell's type became "raw" (a stray key in Jupyter's command mode); the text is all there, and the three autograded parts are untouched and correct.
# expect: test_stable_softmax=3, test_softmax_jacobian=2, test_softmax_vjp=3
# status: graded
# kind: honest
# assignment: 01_softmax
# base: solution
# mutate: retype jacobian_proof raw
# %% grade_id: jacobian_proof
Let $Z = \sum_k e^{z_k}$ and $p_i = e^{z_i} / Z$. Differentiating,
$\frac{\partial p_i}{\partial z_j} = \frac{\delta_{ij} e^{z_i} Z - e^{z_i} e^{z_j}}{Z^2} = p_i \delta_{ij} - p_i p_j$,
so $J = \mathrm{diag}(p) - p p^\top$. Row $i$ sums to $p_i - p_i \sum_j p_j = p_i (1 - 1) = 0$.
The probabilities always add up to 1, so moving the logits can only move probability between
entries: the total change, the row sum of $J$, is zero.
