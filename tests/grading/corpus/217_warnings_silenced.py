# The student silenced NumPy's warnings in the answer cell (`warnings.filterwarnings("ignore")` and `np.seterr(all="ignore")`) because their masked attention makes NaN on purpose for fully masked rows and then zeroes them: standard-library calls, honest code.
# expect: test_causal_mask=2, test_padding_mask=1, test_combined_mask=2, test_masked_attention=4
# status: graded
# kind: honest
# assignment: 04_masking
# base: solution
# %% grade_id: masked_attention
import warnings
warnings.filterwarnings("ignore")
np.seterr(all="ignore")


def masked_attention(q, k, v, mask):
    q, k, v = (np.asarray(a, dtype=np.result_type(a, np.float32)) for a in (q, k, v))
    s = np.matmul(q, np.swapaxes(k, -1, -2)) / np.sqrt(q.shape[-1])
    s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))     # a fully masked row: -inf - -inf = NaN
    w = e / e.sum(axis=-1, keepdims=True)
    w[np.isnan(w)] = 0.0                               # ... and those rows become zeros
    return w @ v
