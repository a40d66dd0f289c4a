# The student's notebook ends with 6000 empty code cells (a key held down, or a cell-adding extension gone wrong); they hold nothing, and the answers above them are the solution's, so every part keeps its points.
# expect: test_attention=4, test_additive_scores=2, test_dot_product_stats=2, test_row_entropy=2
# status: graded
# kind: honest
# assignment: 02_attention
# base: solution
# mutate: many-cells 6000
