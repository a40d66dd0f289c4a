"""Named mistakes for 14_long_context: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("14_long_context", "interpolation that ignores the base", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("return base ** (", "return 10000.0 ** (")}),
    ("14_long_context", "NTK scaling that ignores the base", "test_ntk_frequencies",
     {"ntk_frequencies": ("new_base = base * ", "new_base = 10000.0 * ")}),
    ("14_long_context", "YaRN that ignores the base", "test_yarn",
     {"yarn": ("theta = base ** (", "theta = 10000.0 ** (")}),
    ("14_long_context", "YaRN with fixed ramp thresholds", "test_yarn",
     {"yarn": ("np.clip((turns - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0)", "np.clip((turns - 1.0) / 31.0, 0.0, 1.0)")}),
    ("14_long_context", "a window that may overlap the sinks", "test_sink_cache_kept",
     {"sink_cache_kept": ("np.arange(max(min(n_sink, S), S - window), S)", "np.arange(max(0, S - window), S)")}),
    ("14_long_context", "a cache that always keeps one sink", "test_sink_cache_kept",
     {"sink_cache_kept": ("sinks = np.arange(min(n_sink, S))", "sinks = np.arange(max(1, min(n_sink, S)))")}),
    ("14_long_context", "sinks kept past the end of the stream", "test_sink_cache_kept",
     {"sink_cache_kept": ("sinks = np.arange(min(n_sink, S))", "sinks = np.arange(n_sink)")}),
    ("14_long_context", "interpolation with exponents -i/D", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("base ** (-2.0 * i / D)", "base ** (-i / D)")}),
    ("14_long_context", "interpolation by a whole-number factor", "test_interpolated_frequencies",
     {"interpolated_frequencies": ("/ scale", "/ int(scale)")}),
    ("14_long_context", "NTK scaling by a whole-number factor", "test_ntk_frequencies",
     {"ntk_frequencies": ("new_base = base * scale **", "new_base = base * int(scale) **")}),
    ("14_long_context", "YaRN interpolating by a whole-number factor", "test_yarn",
     {"yarn": ("theta / scale + gamma", "theta / int(scale) + gamma")}),
    ("14_long_context", "a ring of one step", "test_ring_attention",
     {"ring_attention": ("for t in range(P):", "for t in range(1):")}),
    ("14_long_context", "a ring mask without the diagonal", "test_ring_attention",
     {"ring_attention": ("mask = np.arange(j0, j1)[None, :] <= np.arange(i0, i1)[:, None]",
                         "mask = np.arange(j0, j1)[None, :] < np.arange(i0, i1)[:, None]")}),
    ("14_long_context", "ring blocks of L // P tokens", "test_ring_attention",
     {"ring_attention": ("bounds = np.concatenate([[0], np.cumsum([len(b) for b in np.array_split(np.arange(L), P)])])",
                         "bounds = np.arange(P + 1) * (L // P)")}),
    ("14_long_context", "a float32 ring computed in float16", "test_ring_attention",
     {"ring_attention": ("    L = q.shape[0]\n",
                         "    if q.dtype != np.float64:\n        q, k, v = (a.astype(np.float16) for a in (q, k, v))\n"
                         "    L = q.shape[0]\n")}),
    ("14_long_context", "an NTK exponent without its brackets", "test_ntk_frequencies",
     {"ntk_frequencies": ("scale ** (D / (D - 2))", "scale ** D / (D - 2)")}),
    ("14_long_context", "a YaRN factor as a 0-d array", "test_yarn",
     {"yarn": ("return inv_freq, 0.1 * math.log(scale) + 1.0", "return inv_freq, np.array(0.1 * math.log(scale) + 1.0)")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
