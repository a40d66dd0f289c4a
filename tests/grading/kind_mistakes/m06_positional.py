"""Named mistakes for 06_positional: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("06_positional", "offsets read from a full encoding", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("return np.cos(k[..., None] * omega).sum(axis=-1)",
                           "E = sinusoidal_encoding(int(np.abs(k).max()) + 1, C, base)\n"
                           "    return (E[np.abs(k).astype(int)] @ E[0]).reshape(k.shape)")}),
    ("06_positional", "an encoding that ignores the base", "test_sinusoidal_encoding",
     {"sinusoidal_encoding": ("omega = base ** (", "omega = 10000.0 ** (")}),
    ("06_positional", "RoPE that ignores the base", "test_apply_rope",
     {"apply_rope": ("theta = base ** (", "theta = 10000.0 ** (")}),
    ("06_positional", "ALiBi slopes counted from h = 0", "test_alibi_slopes",
     {"alibi_slopes": ("2.0 ** (-c * (h + 1) / n)", "2.0 ** (-c * h / n)")}),
    ("06_positional", "ALiBi slopes of one geometric sequence", "test_alibi_slopes",
     {"alibi_slopes": ("slopes = geometric(n) + geometric(2 * n)[0::2][: H - n]", "slopes = geometric(H)")}),
    ("06_positional", "an ALiBi bias with S = L", "test_alibi_bias",
     {"alibi_bias": ("    if S is None:\n        S = L\n", "    S = L\n")}),
    ("06_positional", "a PE dot product that ignores the base", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("omega = base ** (", "omega = 10000.0 ** (")}),
    ("06_positional", "angles divided by the frequencies", "test_sinusoidal_encoding",
     {"sinusoidal_encoding": ("angles = np.arange(L)[:, None] * omega[None, :]", "angles = np.arange(L)[:, None] / omega[None, :]")}),
    ("06_positional", "a PE dot product summed over the offsets", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("np.cos(k[..., None] * omega).sum(axis=-1)", "np.cos(k[..., None] * omega).sum(axis=0)")}),
    ("06_positional", "an encoding stored in float32", "test_sinusoidal_encoding",
     {"sinusoidal_encoding": ("pe = np.zeros((L, C))", "pe = np.zeros((L, C), dtype=np.float32)")}),
    ("06_positional", "ALiBi slopes by the power-of-two formula for any head count", "test_alibi_bias",
     {"alibi_bias": ("return -alibi_slopes(H)[:, None, None]",
                     "return -(2.0 ** (-8.0 * np.arange(1, H + 1) / H))[:, None, None]")}),
    ("06_positional", "PE frequencies in float32", "test_pe_dot_by_offset",
     {"pe_dot_by_offset": ("omega = base ** (-np.arange(0, C, 2) / C)",
                           "omega = base ** (-np.arange(0, C, 2, dtype=np.float32) / C)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
