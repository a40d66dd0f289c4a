"""Named mistakes for 09_moe: each fails one kind of hidden case, and the visible check that stops it
names that kind (see tests/grading/test_visible_checks.py)."""

KIND_MISTAKES = [
    ("09_moe", "gating without the maximum", "test_top_k_gating",
     {"top_k_gating": ("e = np.exp(logits - logits.max(axis=1, keepdims=True))", "e = np.exp(logits)")}),
    ("09_moe", "ties sent to the highest expert index", "test_top_k_gating",
     {"top_k_gating": ('order = np.argsort(-probs, axis=1, kind="stable")',
                      'order = np.argsort(probs, axis=1, kind="stable")[:, ::-1]')}),
    ("09_moe", "a capacity rounded down", "test_capacity_keep",
     {"capacity_keep": ("math.ceil(", "math.floor(")}),
    ("09_moe", "expert fractions over the tokens instead of the choices", "test_load_balancing_loss",
     {"load_balancing_loss": ("/ expert_index.size", "/ N")}),
    ("09_moe", "renormalised gates from unshifted logits", "test_renormalized_gates",
     {"renormalized_gates": ("expert_index, gate = top_k_gating(x, w_g, k)\n    return expert_index, gate / gate.sum(axis=1, keepdims=True)",
                             "expert_index, _ = top_k_gating(x, w_g, k)\n"
                             "    z = np.take_along_axis(np.asarray(x) @ np.asarray(w_g), expert_index, axis=1)\n"
                             "    return expert_index, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)")}),
    ("09_moe", "a capacity one slot too large", "test_capacity_keep",
     {"capacity_keep": ("if used[e] < capacity:", "if used[e] <= capacity:")}),
    ("09_moe", "a balancing loss without the factor E", "test_load_balancing_loss",
     {"load_balancing_loss": ("float(E * np.dot(", "float(np.dot(")}),
    ("09_moe", "gates multiplied by their sum", "test_renormalized_gates",
     {"renormalized_gates": ("gate / gate.sum(axis=1, keepdims=True)", "gate * gate.sum(axis=1, keepdims=True)")}),
    ("09_moe", "renormalised experts by a reversed ascending sort", "test_renormalized_gates",
     {"renormalized_gates": ("expert_index, gate = top_k_gating(x, w_g, k)",
                             "logits = np.asarray(x) @ np.asarray(w_g)\n"
                             "    expert_index = np.argsort(logits, axis=1)[:, ::-1][:, :k]\n"
                             "    gate = np.take_along_axis(np.exp(logits - logits.max(axis=1, keepdims=True)), expert_index, axis=1)")}),
    ("09_moe", "expert counts from np.unique", "test_load_balancing_loss",
     {"load_balancing_loss": ("f = np.bincount(expert_index.ravel(), minlength=E) / expert_index.size",
                              "_, counts = np.unique(expert_index, return_counts=True)\n    f = counts / expert_index.size")}),
    ("09_moe", "k = 1 answered with argmax and max", "test_top_k_gating",
     {"top_k_gating": ("    order = np.argsort(", "    if k == 1:\n        return np.argmax(probs, axis=1), np.max(probs, axis=1)\n"
                                             "    order = np.argsort(")}),
    ("09_moe", "renormalised k = 1 gates as a vector of ones", "test_renormalized_gates",
     {"renormalized_gates": ("    return expert_index, gate / gate.sum(axis=1, keepdims=True)",
                             "    if k == 1:\n        return expert_index, np.ones(len(gate))\n"
                             "    return expert_index, gate / gate.sum(axis=1, keepdims=True)")}),
    ("09_moe", "a capacity over the experts in use", "test_capacity_keep",
     {"capacity_keep": ("capacity = math.ceil(capacity_factor * N * K / num_experts)",
                        "capacity = math.ceil(capacity_factor * N * K / len(np.unique(expert_index)))")}),
    ("09_moe", "a single expert answered with a vector of True", "test_capacity_keep",
     {"capacity_keep": ("    used = np.zeros(",
                        "    if num_experts == 1:\n        return np.ones(N, dtype=bool)\n    used = np.zeros(")}),
    ("09_moe", "a balancing loss as a 0-d array", "test_load_balancing_loss",
     {"load_balancing_loss": ("return float(E * np.dot(f, probs.mean(axis=0)))",
                              "return np.array(E * np.dot(f, probs.mean(axis=0)))")}),
]

# Hidden kinds that no named mistake covers yet: test cell -> kinds.
GAPS: dict[tuple[str, str], set[str]] = {}
