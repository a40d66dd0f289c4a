# The student ran the notebook in a kernel of their own conda environment, so the file names the kernel "conda-env-attn-course-py", which the grading machine does not have: the notebook metadata says where it ran, not what it computes, and every answer is the solution's.
# expect: test_sinusoidal_encoding=2, test_apply_rope=3, test_alibi_slopes=2, test_alibi_bias=2, test_pe_dot_by_offset=2
# status: graded
# kind: honest
# assignment: 06_positional
# base: solution
# mutate: json-sub "python3" "conda-env-attn-course-py"
