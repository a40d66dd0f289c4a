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
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {
    ("14_long_context", "test_interpolated_frequencies"): {
        "a factor of 1, no extension", "another head dim and factor",
    },
    ("14_long_context", "test_ntk_frequencies"): {
        "a factor of 1, no extension", "another head dim and factor",
    },
    ("14_long_context", "test_yarn"): {"another head dim, factor and context"},
    ("14_long_context", "test_sink_cache_kept"): {"a long stream"},
    ("14_long_context", "test_ring_attention"): {
        "a causal mask", "an uneven split", "another length and number of workers", "float32 input",
        "large scores", "one worker",
    },
}
