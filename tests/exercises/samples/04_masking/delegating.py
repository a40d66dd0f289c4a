# Calls the course library (Parts 1 and 3) or torch (Part 4) instead of implementing the
# mechanism: no credit for those parts. Part 2 is a correct NumPy answer.
# expect: test_causal_mask=0, test_padding_mask=1, test_combined_mask=0, test_masked_attention=0
# %% grade_id: causal_mask
from attnmath.masking import causal_mask as _library_causal_mask

def causal_mask(L, S=None, alignment="top_left"):
    return _library_causal_mask(L, S, alignment=alignment)
# %% grade_id: padding_mask
def padding_mask(lengths, S):
    return (np.arange(S)[None, :] < np.asarray(lengths)[:, None])[:, None, None, :]
# %% grade_id: combined_mask
import attnmath.masking

def combined_mask(lengths, L, S=None, alignment="top_left"):
    S = L if S is None else S
    return attnmath.masking.combine_masks(padding_mask(lengths, S),
                                          attnmath.masking.causal_mask(L, S, alignment=alignment))
# %% grade_id: masked_attention
import torch

def masked_attention(q, k, v, mask):
    t = [torch.from_numpy(np.asarray(x, dtype=np.float64)) for x in (q, k, v)]
    m = torch.from_numpy(np.broadcast_to(mask, np.broadcast_shapes(np.shape(mask), q.shape[:-1] + (k.shape[-2],))).copy())
    return torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=m).numpy()
