# The student showed the combined mask of a small batch as a Markdown table with `IPython.display` inside the answer cell, to check it by eye: output for the student, while the function is plain NumPy.
# expect: test_causal_mask=2, test_padding_mask=1, test_combined_mask=2, test_masked_attention=4
# status: graded
# kind: honest
# assignment: 04_masking
# base: solution
# %% grade_id: combined_mask
from IPython.display import Markdown, display


def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    return padding_mask(lengths, S) & causal_mask(L, S, alignment)[None, None]


_m = combined_mask([3, 1], 3, 4)
display(Markdown("\n".join(["| query | keys |", "| --- | --- |"] + [f"| {i} | {' '.join('x' if a else '.' for a in row)} |" for i, row in enumerate(_m[0, 0])])))
