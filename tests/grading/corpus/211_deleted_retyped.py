# The student deleted the answer cell of Part 1 by mistake and typed the answer again in a new cell at the same place (under the task), as a one-line function: the work is the student's and complete; a deleted cell is worth a flag for review, never the points of a correct answer.
# expect: test_causal_mask=2, test_padding_mask=1, test_combined_mask=2, test_masked_attention=4
# status: flagged
# kind: honest
# assignment: 04_masking
# base: solution
# mutate: delete causal_mask
# mutate: add-cell-after task_causal_mask def causal_mask(L, S=None, alignment="top_left"): return np.arange(L if S is None else S)[None, :] <= np.arange(L)[:, None] + (0 if alignment == "top_left" else (L if S is None else S) - L)
