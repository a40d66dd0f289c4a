"""Hidden tests of exercise 01 (softmax). Not released to students.

Each part's cases include the visible self-checks' inputs, so the notebook runner and the grading
pipeline agree on every submission. Expected values come from ``attnmath`` in float64.
"""

import numpy as np

import attnmath.softmax as ref
from attngrade.spec import Case, Part


def softmax_cases(rng):
    cases = [Case((z,), {}, "visible", ref.softmax(z), kind="a visible self-check")
             for z in (np.array([1.0, 2.0, 3.0]), np.array([1000.0, 0.0]))]
    rows = np.array([[1.0, 2.0], [3.0, 5.0]])
    cases.append(Case((rows,), {"axis": 0}, "visible axis 0", ref.softmax(rows, axis=0),
                      kind="a visible self-check"))
    for shape, axis in [((7,), -1), ((4, 9), -1), ((4, 9), 0), ((2, 3, 5), 1), ((3, 4, 2), -3), ((1, 1), -1)]:
        x = rng.normal(scale=8.0, size=shape)
        kind = "another shape, last axis" if axis in (-1, len(shape) - 1) else "another axis"
        cases.append(Case((x,), {"axis": axis}, f"shape {shape} axis {axis}", ref.softmax(x, axis=axis),
                          kind=kind))
    for dtype, tol in [(np.float16, 5e-3), (np.float32, 1e-3)]:
        x = np.array([[1e4, -1e4, 0.0, 9990.0], [-1e4, -1e4, -1e4, -1e4], [3.0, 3.0, 3.0, 3.0]], dtype=dtype)
        cases.append(Case((x,), {"axis": -1}, f"extreme {dtype.__name__}", ref.softmax(x.astype(np.float64)), tol,
                          kind=f"{dtype.__name__} input, rows of ±1e4"))
    # near ties at 1e4 that float16 cannot tell apart: a float32 input computed in float16 fails
    x = np.array([[1e4, 1e4 - 3.0, -1e4, -1e4 + 1.0], [-1e4 + 2.0, -1e4, 5e3, -5e3]], dtype=np.float32)
    cases.append(Case((x,), {"axis": -1}, "float32 near ties", ref.softmax(x.astype(np.float64)), 1e-3,
                      kind="float32 input, rows of ±1e4"))
    return cases


def jacobian_cases(rng):
    zs = [np.array([1.0, 2.0, 3.0])] + [rng.normal(scale=3.0, size=n) for n in (1, 2, 5, 17)]
    zs.append(np.array([800.0, -800.0, 799.0]))
    kinds = ["a visible self-check", "a vector of length 1", "another length", "another length", "another length",
             "logits of ±800"]
    return [Case((z,), {}, f"n={z.size}", ref.softmax_jacobian(z), kind=kind) for z, kind in zip(zs, kinds)]


def vjp_cases(rng):
    cases = []
    for shape in [(3,), (6,), (3, 7), (2, 4, 5), (1, 1)]:
        p = ref.softmax(rng.normal(scale=2.0, size=shape))
        g = rng.normal(size=shape)
        cases.append(Case((p, g), {}, f"shape {shape}", ref.softmax_vjp(p, g),
                          kind="one row" if len(shape) == 1 else "a batch of rows"))
    p = ref.softmax(rng.normal(size=(4, 4096)))
    g = rng.normal(size=(4, 4096))
    # Building the (4096, 4096) Jacobian of one row takes 128 MiB; the product needs O(n).
    cases.append(Case((p, g), {}, "n=4096, memory", ref.softmax_vjp(p, g), max_peak_bytes=8 * 2**20,
                      kind="memory limit on long rows"))
    return cases


PARTS = [
    Part("test_stable_softmax", function="stable_softmax", cases=softmax_cases),
    Part("test_softmax_jacobian", function="softmax_jacobian", cases=jacobian_cases),
    Part("test_softmax_vjp", function="softmax_vjp", cases=vjp_cases),
]
