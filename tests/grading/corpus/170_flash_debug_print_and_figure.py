# Honest work in 08_flash with a lot of tooling: a scratch cell after Part 2 prints every tile's
# running maximum (megabytes of text), draws the tiling with matplotlib, and keeps 80 MB of test
# inputs alive. Output past the cap is discarded; the memory-limited cases charge the calls only.
# kind: honest
# assignment: 08_flash
# expect: test_online_softmax=2, test_flash_forward=4, test_flash_backward=4
# status: graded
# base: solution
# mutate: add-cell-after test_flash_forward import matplotlib.pyplot as plt\nbig_q = np.random.default_rng(4).normal(size=(10_000_000 // 8, 8))\nfor t in range(60000):\n    print("tile", t, "running max", float(t % 97), "." * 60)\nplt.imshow(np.tril(np.ones((16, 16))))\nplt.show()
