"""Named mistakes for 03_gradients: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("03_gradients", "a central difference that steps the same way twice", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": ("x[idx] = old + eps", "x[idx] = old - eps")}),
    ("03_gradients", "dropout scaled by 1/p instead of 1/(1 - p)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("factor = keep / (1.0 - p)", "factor = keep / p")}),
    ("03_gradients", "a backward with its own softmax, without the maximum", "test_attention_backward",
     {"attention_backward": ("_, P = attention_forward(q, k, v)",
                             "s = q @ k.T * scale\n    P = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)")}),
    ("03_gradients", "gradients squeezed", "test_attention_backward",
     {"attention_backward": ("return dq, dk, dv", "return np.squeeze(dq), np.squeeze(dk), np.squeeze(dv)")}),
    ("03_gradients", "a masked backward that forgets the mask in the forward", "test_masked_attention_backward",
     {"masked_attention_backward": ("_, P = attention_forward(q, k, v, mask)", "_, P = attention_forward(q, k, v)")}),
    ("03_gradients", "a masked softmax with NaN on fully masked rows", "test_masked_attention_backward",
     {"masked_attention_backward": ("_, P = attention_forward(q, k, v, mask)",
                                    "s = np.where(mask, q @ k.T * scale, -np.inf)\n"
                                    "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
                                    "    P = e / e.sum(axis=-1, keepdims=True)")}),
    ("03_gradients", "a masked softmax shifted by the largest allowed score of the matrix", "test_masked_attention_backward",
     {"masked_attention_backward": ("_, P = attention_forward(q, k, v, mask)",
                                    "s = np.where(mask, q @ k.T * scale, -np.inf)\n"
                                    "    e = np.exp(s - s[mask].max())\n    total = e.sum(axis=-1, keepdims=True)\n"
                                    "    P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)")}),
    ("03_gradients", "a masked softmax without the maximum", "test_masked_attention_backward",
     {"masked_attention_backward": ("_, P = attention_forward(q, k, v, mask)",
                                    "e = np.where(mask, np.exp(q @ k.T * scale), 0.0)\n"
                                    "    total = e.sum(axis=-1, keepdims=True)\n"
                                    "    P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)")}),
    ("03_gradients", "a gradient array shaped like v", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": ("grad = np.zeros_like(x)", "grad = np.zeros_like(args[\"v\"])")}),
    ("03_gradients", "a loss evaluated at the unperturbed q", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": [
         ('f_plus = np.sum(w * attention_forward(args["q"],', 'f_plus = np.sum(w * attention_forward(q,'),
         ('f_minus = np.sum(w * attention_forward(args["q"],', 'f_minus = np.sum(w * attention_forward(q,')]}),
    ("03_gradients", "a loss evaluated at the unperturbed k", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": [
         ('f_plus = np.sum(w * attention_forward(args["q"], args["k"],', 'f_plus = np.sum(w * attention_forward(args["q"], k,'),
         ('f_minus = np.sum(w * attention_forward(args["q"], args["k"],', 'f_minus = np.sum(w * attention_forward(args["q"], k,')]}),
    ("03_gradients", "a central difference without the eps argument", "test_numerical_attention_gradient",
     {"numerical_attention_gradient": ("def numerical_attention_gradient(q, k, v, w, wrt, eps=1e-6):",
                                       "def numerical_attention_gradient(q, k, v, w, wrt):\n    eps = 1e-6")}),
    ("03_gradients", "dropout scaled by the kept fraction instead of 1/(1 - p)", "test_dropout_attention_backward",
     {"dropout_attention_backward": ("factor = keep / (1.0 - p)", "factor = keep / keep.mean()")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
