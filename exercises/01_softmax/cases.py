"""The cases of exercise 01 (softmax): one generator per part, for the visible checks and the grade.

Released with the notebook. The visible self-checks (``check.run`` in each test cell) draw these
cases with the public visible seed; the hidden tests draw the same cases, kind for kind and shape
for shape, with the course's own seed, and check them with the same code, tolerances and memory
budgets (``attngrade.spec``). Expected values come from ``attnmath`` in float64, computed before
your function runs; your function gets its own copies of the inputs.

Parts 1-3 depend on your variant (``VARIANTS``): the temperature your notebook states, which
``variant.json`` next to this file records for the visible checks. Without that file (the public
copy of the course), the temperature is 1.
"""

import numpy as np

import attnmath.softmax as ref
from attngrade.spec import Case, Part
from attngrade.variants import Param, Variants
from attngrade.visible import factor_hint, like

VARIANTS = Variants("01_softmax", (
    # powers of two: x / T is exact in every floating precision, so float16 rounding stays as it was
    Param("temperature", default=1.0, choices=(0.25, 0.5, 2.0, 4.0),
          says="the temperature $T$ of your softmax"),
))

# ----------------------------------------------------------------------------- Part 1


def _extreme_rows(rng, dtype):
    """Rows of ±1e4 in one array: a near tie at the top, a row far below the others, an exact tie."""
    x = np.array([[1e4, -1e4, 0.0, 1e4], [-1e4, -1e4, -1e4, -1e4], [0.0, 0.0, 0.0, 0.0]])
    x[0, 3] -= 8.0 * rng.integers(1, 3)             # 8 apart: float16 tells them apart at 1e4
    x[1] += 8.0 * rng.integers(0, 3, size=4)
    x[2] += rng.integers(-5, 6)                     # equal entries: a uniform row
    return x.astype(dtype)


def softmax_cases(rng, variant):
    T = variant["temperature"]
    cases = []
    for shape, axis in [((7,), -1), ((5,), 0), ((4, 9), -1), ((3, 3), -1), ((3, 3), 0), ((4, 9), 0),
                        ((2, 3, 5), 1), ((3, 4, 2), -3), ((2, 3, 4), -2), ((1, 1), -1)]:
        x = rng.normal(scale=8.0, size=shape)
        kind = "another shape, last axis" if axis in (-1, len(shape) - 1) else "another axis"
        cases.append(Case((x,), {"axis": axis}, f"shape {shape} axis {axis}", ref.softmax(x / T, axis=axis),
                          kind=kind))
    for dtype, tol in [(np.float16, 5e-3), (np.float32, 1e-3), (np.float64, 1e-9)]:
        x = _extreme_rows(rng, dtype)
        cases.append(Case((x,), {"axis": -1}, f"extreme {dtype.__name__}", ref.softmax(x.astype(np.float64) / T), tol,
                          kind=f"{dtype.__name__} input, rows of ±1e4"))
    # near ties at 1e4 that float16 cannot tell apart: a float32 input computed in float16 fails
    x = np.array([[1e4, 1e4, -1e4, -1e4], [-1e4, -1e4, 5e3, -5e3]])
    x[0, 1] -= rng.integers(1, 5)
    x[0, 3] += rng.integers(1, 3)
    x[1, 0] += rng.integers(1, 4)
    x = x.astype(np.float32)
    cases.append(Case((x,), {"axis": -1}, "float32 near ties", ref.softmax(x.astype(np.float64) / T), 1e-3,
                      kind="float32 input, rows of ±1e4"))
    return cases


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _temperature(x, axis, expected):
    """The temperature of ``expected`` among the variant's values (the case's own), or None."""
    param = VARIANTS.param("temperature")
    found = [t for t in (param.default, *param.choices) if np.allclose(_softmax(x / t, axis), expected, atol=1e-9)]
    return found[0] if len(found) == 1 else None


def diagnose_softmax(case, out):
    x, axis = np.asarray(case.args[0], dtype=np.float64), case.kwargs.get("axis", -1)
    T = _temperature(x, axis, case.expected)
    if T is None:
        return None
    for other in range(x.ndim):
        if other != axis % x.ndim and like(out, _softmax(x / T, other), case.expected):
            return f"normalised along axis {other}, not along axis={axis}: every reduction runs along `axis`"
    if like(out, np.exp((x - x.max()) / T) / np.exp((x - x.max()) / T).sum(), case.expected):
        return "normalised over the whole array: the maximum and the sum run along `axis` only"
    param = VARIANTS.param("temperature")
    for t in (param.default, *param.choices):
        if t != T and like(out, _softmax(x / t, axis), case.expected):
            return (f"computed with the temperature {param.text(t)}, not yours, T = {param.text(T)}: "
                    "divide the scores by your own T")
    return None


HINTS_SOFTMAX = {
    "float16 input, rows of ±1e4": "subtract each row's own maximum (np.max(..., axis=axis, keepdims=True)) "
                                   "before exp; in float16, compute in float32 and convert back",
    "float32 input, rows of ±1e4": "subtract each row's own maximum before exp, and compute in at least float32",
    "float64 input, rows of ±1e4": "subtract each row's own maximum before exp, so that no exponent is positive",
    "another axis": "the maximum, the exponentials and the sum all run along `axis` (keepdims=True to broadcast)",
    "another shape, last axis": "the output has the input's shape; every row along `axis` is normalised on its own",
}

# ----------------------------------------------------------------------------- Part 2


def jacobian_cases(rng, variant):
    T = variant["temperature"]  # the Jacobian of softmax(z / T): J(z / T) / T
    zs = [rng.normal(scale=3.0, size=n) for n in (1, 2, 3, 5, 17)]
    z = np.array([800.0, -800.0, 800.0])
    z[2] -= rng.uniform(0.2, 2.0)
    zs.append(z)
    kinds = ["a vector of length 1"] + ["another length"] * 4 + ["logits of ±800"]
    labels = [f"n={z.size}" for z in zs[:-1]] + ["n=3, logits of ±800"]  # one label, one case
    return [Case((z,), {}, label, ref.softmax_jacobian(z / T) / T, kind=kind) for z, label, kind in zip(zs, labels, kinds)]


def _temperature_factors():
    """(ratio, words) for an answer computed with another temperature than the case's own."""
    param = VARIANTS.param("temperature")
    values = (param.default, *param.choices)
    ratios = sorted({a / b for a in values for b in values if a != b})
    return [(r, f"{r:g} times the expected values: use your own temperature T, and divide by it once")
            for r in ratios]


def diagnose_jacobian(case, out):
    return factor_hint(out, case.expected, [(-1.0, "the sign is flipped: J = (diag(p) - p p^T) / T"),
                                            *_temperature_factors()])


HINTS_JACOBIAN = {
    "logits of ±800": "compute p with a stable softmax (subtract the maximum) before forming the Jacobian",
    "a vector of length 1": "a vector of length 1 has the (1, 1) Jacobian [[0.0]]",
}

# ----------------------------------------------------------------------------- Part 3


def vjp_cases(rng, variant):
    T = variant["temperature"]  # p = softmax(z / T): J^T g = p * (g - sum(p * g)) / T
    cases = []
    for shape in [(3,), (6,), (3, 7), (2, 4, 5), (1, 1)]:
        p = ref.softmax(rng.normal(scale=2.0, size=shape))
        g = rng.normal(size=shape)
        cases.append(Case((p, g), {}, f"shape {shape}", ref.softmax_vjp(p, g) / T,
                          kind="one row" if len(shape) == 1 else "a batch of rows"))
    p = ref.softmax(rng.normal(size=(4, 4096)))
    g = rng.normal(size=(4, 4096))
    # Building the (4096, 4096) Jacobian of one row takes 128 MiB; the product needs O(n).
    cases.append(Case((p, g), {}, "n=4096, memory", ref.softmax_vjp(p, g) / T, max_peak_bytes=8 * 2**20,
                      kind="memory limit on long rows"))
    return cases


def diagnose_vjp(case, out):
    return factor_hint(out, case.expected, [(-1.0, "the sign is flipped: J^T g = p * (g - sum(p * g)) / T"),
                                            *_temperature_factors()])


HINTS_VJP = {
    "memory limit on long rows": "do not build the (n, n) Jacobian: p * (g - sum(p * g)) / T needs O(n) per row",
    "a batch of rows": "every row on its own: sum over the last axis only, with keepdims=True",
}

PARTS = [
    Part("test_stable_softmax", function="stable_softmax", cases=softmax_cases, hints=HINTS_SOFTMAX,
         diagnose=diagnose_softmax, variants=VARIANTS),
    Part("test_softmax_jacobian", function="softmax_jacobian", cases=jacobian_cases, hints=HINTS_JACOBIAN,
         diagnose=diagnose_jacobian, variants=VARIANTS),
    Part("test_softmax_vjp", function="softmax_vjp", cases=vjp_cases, hints=HINTS_VJP, diagnose=diagnose_vjp,
         variants=VARIANTS),
]
