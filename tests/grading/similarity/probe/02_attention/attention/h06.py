# %% grade_id: attention
def attention(q, k, v, mask=None):
    dk = q.shape[-1]
    att = q @ k.swapaxes(-2, -1) * (1.0 / np.sqrt(dk))
    if mask is not None:
        att = np.where(mask, att, -np.inf)
    with np.errstate(invalid="ignore"):
        att = att - att.max(-1, keepdims=True)   # a row that is all -inf turns into NaN here
        att = np.exp(att)
        att = att / att.sum(-1, keepdims=True)
    att = np.nan_to_num(att, nan=0.0)            # ...and those NaN rows become zeros
    return att @ v
