# The student kept a small timing cell of their own below Part 5 (the closing note suggests timing chunked and linear attention in a cell of your own, and to keep it fast): a scratch cell that belongs to no part and costs none.
# expect: test_chunked_attention=3, test_linear_attention=2, test_causal_linear_attention=3, test_decode_step_window=2, test_attention_costs=2
# status: graded
# kind: honest
# assignment: 07_efficiency
# base: solution
# mutate: add-cell-after test_attention_costs import time; _x = np.random.default_rng(1).standard_normal((512, 16)); _t0 = time.perf_counter(); chunked_attention(_x, _x, _x, 64); _t1 = time.perf_counter(); linear_attention(_x, _x, _x); print(f"chunked {_t1 - _t0:.4f} s, linear {time.perf_counter() - _t1:.4f} s")
