# Calls the course library (Parts 1, 2, 3 and 5) instead of implementing the mechanism: no
# credit for those parts. Part 4 is a correct NumPy answer built on the library's slopes, so it
# reaches the library too and earns nothing either.
# expect: test_sinusoidal_encoding=0, test_apply_rope=0, test_alibi_slopes=0, test_alibi_bias=0, test_pe_dot_by_offset=0
# %% grade_id: sinusoidal_encoding
from attnmath.positional import sinusoidal_encoding as _library_encoding

def sinusoidal_encoding(L, C, base=10000.0):
    return _library_encoding(L, C, base=base)
# %% grade_id: apply_rope
import attnmath.positional

def apply_rope(x, positions, base=10000.0):
    return attnmath.positional.apply_rope(x, positions, base=base)
# %% grade_id: alibi_slopes
def alibi_slopes(H):
    return attnmath.positional.alibi_slopes(H)
# %% grade_id: alibi_bias
def alibi_bias(H, L, S=None):
    S = L if S is None else S
    d = np.maximum(np.arange(L)[:, None] - np.arange(S)[None, :], 0)
    return -alibi_slopes(H)[:, None, None] * d
# %% grade_id: pe_dot_by_offset
import torch

def pe_dot_by_offset(C, offsets, base=10000.0):
    k = torch.as_tensor(np.asarray(offsets, dtype=np.float64))
    omega = torch.as_tensor(base ** (-np.arange(0, C, 2) / C))
    return torch.cos(k[..., None] * omega).sum(-1).numpy()
