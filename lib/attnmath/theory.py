r"""Attention seen from outside: kernel smoothing, in-context regression, symmetry and rank.

* **Kernel smoother.** Softmax attention is a Nadaraya-Watson estimator with the kernel
  :math:`\kappa(q, k) = e^{q\cdot k/\sqrt D}`; with keys of equal norm it *is* a Gaussian
  kernel smoother of bandwidth :math:`h = D^{1/4}`.
* **In-context learning.** One linear self-attention layer can output the prediction of one
  gradient-descent step on a least-squares loss over the context (von Oswald et al., 2022).
  One step is not the least-squares solution, except when :math:`X^\top X/N` is a multiple of
  the identity and the step size matches it.
* **Symmetry.** Without a mask attention is *equivariant* under a permutation of the sequence
  (rows of the output are permuted, not left unchanged) and *invariant* under a joint
  permutation of the keys and values alone; a causal mask breaks both.
* **Rank.** :math:`\operatorname{rank}(PV) \le \min(L, S, D_v)`; concatenating ``H`` heads and
  applying :math:`W_O` reaches :math:`\min(L, C, H\min(S, D_v), 1 + H(S-1))`: each head's
  column space holds the all-ones vector.

Shape legend: ``B`` batch, ``H`` heads, ``L`` query length, ``S`` key/value length, ``D`` head
dim, ``D_v`` value dim, ``C`` model width; ``N`` context examples and ``d`` input dim for the
regression of the in-context section (tokens have width ``d + 1``).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import FloatArray, as_array, check_positive_int, check_real, work_dtype
from .attention import scaled_dot_product_attention
from .softmax import masked_softmax

__all__ = [
    "dot_product_log_kernel",
    "gaussian_log_kernel",
    "nadaraya_watson",
    "kernel_smoother",
    "gaussian_kernel_smoother",
    "LinearAttentionWeights",
    "gd_one_step_prediction",
    "gd_prediction",
    "least_squares_prediction",
    "gd_linear_attention_weights",
    "in_context_tokens",
    "linear_self_attention",
    "linear_self_attention_gd_step",
    "permutation_equivariance_gap",
    "permutation_invariance_gap",
    "key_value_permutation_gap",
    "is_permutation_equivariant",
    "attention_output_rank",
    "attention_rank_bound",
    "multi_head_output_rank",
    "multi_head_rank_bound",
]


# ----------------------------------------------------------------------------------------------
# Attention as a kernel smoother
# ----------------------------------------------------------------------------------------------

def _check_points(
    x_query: ArrayLike, x_keys: ArrayLike, names: tuple[str, str] = ("x_query", "x_keys")
) -> tuple[FloatArray, FloatArray]:
    x_query = as_array(x_query, names[0], allow_int=True, finite=True)
    x_keys = as_array(x_keys, names[1], allow_int=True, finite=True)
    for name, x in zip(names, (x_query, x_keys)):
        if x.ndim < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., length, dim), got shape {x.shape}"
            )
    if x_query.shape[-1] != x_keys.shape[-1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must share the last dim D: got shapes {x_query.shape} "
            f"and {x_keys.shape}"
        )
    try:
        np.broadcast_shapes(x_query.shape[:-2], x_keys.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the batch axes of {names[0]} {x_query.shape} and {names[1]} {x_keys.shape} do not broadcast"
        ) from None
    return x_query, x_keys


def _check_values(values: ArrayLike, x_keys: FloatArray, name: str, key_name: str) -> FloatArray:
    values = as_array(values, name, allow_int=True, finite=True)
    if values.ndim != x_keys.ndim or values.shape[:-1] != x_keys.shape[:-1]:
        raise ValueError(
            f"{name} must have shape (..., S, D_v) matching {key_name} {x_keys.shape} on every axis "
            f"but the last, got {values.shape}"
        )
    return values


def dot_product_log_kernel(
    x_query: ArrayLike, x_keys: ArrayLike, *, scale: float | None = None
) -> FloatArray:
    r"""Log of the exponential dot-product kernel, :math:`\log\kappa(q, k) = s\, q\cdot k`.

    .. math:: \kappa(q_i, k_j) = \exp(s\, q_i\cdot k_j), \qquad s = 1/\sqrt D \text{ by default}.

    Parameters
    ----------
    x_query : array_like, shape (..., L, D)
    x_keys : array_like, shape (..., S, D)
    scale : float, optional
        :math:`s`; ``1/sqrt(D)`` by default.

    Returns
    -------
    ndarray, shape (..., L, S)

    Notes
    -----
    Working with :math:`\log\kappa` lets :func:`nadaraya_watson` normalise with a stable
    softmax. Oracle: ``q @ k.T * scale`` written out in the tests.
    """
    x_query, x_keys = _check_points(x_query, x_keys)
    D = x_query.shape[-1]
    scale = 1.0 / math.sqrt(D) if scale is None else check_real(scale, "scale")
    return scale * (x_query @ np.swapaxes(x_keys, -1, -2))  # (..., L, S)


def gaussian_log_kernel(
    x_query: ArrayLike, x_keys: ArrayLike, *, bandwidth: float
) -> FloatArray:
    r"""Log of the Gaussian kernel, :math:`-\lVert x - x'\rVert^2 / (2h^2)`.

    .. math:: \kappa_h(x, x') = \exp\!\Bigl(-\frac{\lVert x - x'\rVert^2}{2h^2}\Bigr).

    Parameters
    ----------
    x_query : array_like, shape (..., L, D)
    x_keys : array_like, shape (..., S, D)
    bandwidth : float
        :math:`h > 0`.

    Returns
    -------
    ndarray, shape (..., L, S)

    Notes
    -----
    The squared distances are formed from differences (memory :math:`O(LSD)`), not from
    :math:`\lVert x\rVert^2 + \lVert x'\rVert^2 - 2x\cdot x'`, which cancels for close points.
    Dividing by :math:`2h` and then by :math:`h` (never by :math:`h^2`, which underflows to 0
    for :math:`h < 10^{-154}`) keeps a distance of zero at log-kernel 0. Oracle: a loop over
    pairs with ``numpy.linalg.norm`` in the tests.
    """
    x_query, x_keys = _check_points(x_query, x_keys)
    h = check_real(bandwidth, "bandwidth", positive=True)
    with np.errstate(over="ignore"):  # a kernel value below the float range is 0: log -inf
        return -_squared_distances(x_query, x_keys) / (2.0 * h) / h  # (..., L, S)


def _squared_distances(x_query: np.ndarray, x_keys: np.ndarray) -> np.ndarray:
    diff = x_query[..., :, None, :] - x_keys[..., None, :, :]  # (..., L, S, D)
    return np.sum(diff * diff, axis=-1)  # (..., L, S)


def nadaraya_watson(
    x_query: ArrayLike, x_keys: ArrayLike, values: ArrayLike, *,
    log_kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> FloatArray:
    r"""Nadaraya-Watson estimator: a kernel-weighted average of the values.

    .. math::

        \hat f(x_i) = \frac{\sum_{j=1}^{S} \kappa(x_i, x'_j)\, v_j}{\sum_{j=1}^{S} \kappa(x_i, x'_j)}
        = \sum_j \operatorname{softmax}_j\bigl(\log\kappa(x_i, x'_\cdot)\bigr)\, v_j .

    Parameters
    ----------
    x_query : array_like, shape (..., L, D)
        Points where the estimate is evaluated (the queries).
    x_keys : array_like, shape (..., S, D)
        Sample locations (the keys).
    values : array_like, shape (..., S, D_v)
        Sample responses (the values).
    log_kernel : callable
        ``log_kernel(x_query, x_keys) -> (..., L, S)``, the log of a non-negative kernel;
        ``-inf`` marks a zero kernel value.

    Returns
    -------
    ndarray, shape (..., L, D_v)

    Notes
    -----
    The ratio is computed as a softmax of :math:`\log\kappa`: numerator and denominator are both
    divided by :math:`\max_j\kappa(x_i, x'_j)`, which changes nothing mathematically and keeps
    ``exp`` from overflowing. A query whose kernel vanishes at every sample (``0/0``) gets a
    zero estimate, the masked-row convention of attention. Oracle: the literal ratio of sums,
    evaluated where it does not overflow.
    """
    x_query, x_keys = _check_points(x_query, x_keys)
    values = _check_values(values, x_keys, "values", "x_keys")
    return _smooth(x_query, x_keys, values, log_kernel)


def _smooth(
    x_query: FloatArray, x_keys: FloatArray, values: FloatArray,
    log_kernel: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> FloatArray:
    """The Nadaraya-Watson ratio of checked inputs, in their working dtype (float32 for half)."""
    if not callable(log_kernel):
        raise TypeError(f"log_kernel must be callable, got {type(log_kernel).__name__}")
    dtype = np.result_type(x_query, x_keys, values)
    work = work_dtype(dtype)
    logk = np.asarray(log_kernel(x_query, x_keys)).astype(work, copy=False)  # (..., L, S)
    want = np.broadcast_shapes(x_query.shape[:-2], x_keys.shape[:-2]) + (x_query.shape[-2], x_keys.shape[-2])
    if logk.shape != want:
        raise ValueError(f"log_kernel must return shape {want} (..., L, S), got {logk.shape}")
    if np.isnan(logk).any() or np.isposinf(logk).any():
        raise ValueError("log_kernel returned NaN or +inf")
    weights = masked_softmax(logk, axis=-1)  # (..., L, S)
    return (weights @ values.astype(work, copy=False)).astype(dtype, copy=False)  # (..., L, D_v)


def kernel_smoother(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, *, scale: float | None = None
) -> FloatArray:
    r"""Softmax attention written as a Nadaraya-Watson estimator with an exponential kernel.

    .. math::

        o_i = \frac{\sum_j \exp(s\, q_i\cdot k_j)\, v_j}{\sum_j \exp(s\, q_i\cdot k_j)}
            = \Bigl[\operatorname{softmax}(s\,QK^\top)\,V\Bigr]_i,
        \qquad s = 1/\sqrt D .

    Parameters
    ----------
    q : array_like, shape (..., L, D)
    k : array_like, shape (..., S, D)
    v : array_like, shape (..., S, D_v)
    scale : float, optional
        :math:`s`; ``1/sqrt(D)`` by default.

    Returns
    -------
    ndarray, shape (..., L, D_v)

    Notes
    -----
    The kernel :math:`e^{q\cdot k/\sqrt D}` is positive but neither symmetric in general (queries
    and keys come from different projections) nor a function of :math:`q - k` alone: it is a
    smoother with a learned, input-dependent kernel, not a density estimator (the weights sum
    to one per query, they do not integrate to one over space). The result has the inputs'
    dtype (half precision is computed in float32). Oracles:
    :func:`attnmath.attention.scaled_dot_product_attention` and
    ``torch.nn.functional.scaled_dot_product_attention``.
    """
    q, k = _check_points(q, k, names=("q", "k"))
    v = _check_values(v, k, "v", "k")
    D = q.shape[-1]
    scale = 1.0 / math.sqrt(D) if scale is None else check_real(scale, "scale")
    return _smooth(q, k, v, lambda a, b: dot_product_log_kernel(a, b, scale=scale))


def gaussian_kernel_smoother(
    x_query: ArrayLike, x_keys: ArrayLike, y: ArrayLike, bandwidth: float
) -> FloatArray:
    r"""Nadaraya-Watson regression with a Gaussian kernel of bandwidth :math:`h`.

    .. math::

        \hat y(x_i) = \frac{\sum_j \exp(-\lVert x_i - x_j\rVert^2/2h^2)\, y_j}
                           {\sum_j \exp(-\lVert x_i - x_j\rVert^2/2h^2)} .

    Parameters
    ----------
    x_query : array_like, shape (..., L, D)
    x_keys : array_like, shape (..., S, D)
    y : array_like, shape (..., S, D_v)
    bandwidth : float
        :math:`h > 0`.

    Returns
    -------
    ndarray, shape (..., L, D_v)

    Notes
    -----
    Expanding the square,

    .. math::

        -\frac{\lVert q - k_j\rVert^2}{2h^2} = \frac{q\cdot k_j}{h^2}
            - \frac{\lVert q\rVert^2}{2h^2} - \frac{\lVert k_j\rVert^2}{2h^2}.

    The :math:`\lVert q\rVert^2` term is the same for every ``j`` and cancels in the ratio, so
    this smoother equals attention with scale :math:`1/h^2` and the additive bias
    :math:`-\lVert k_j\rVert^2/2h^2`. When all keys have the same norm the bias cancels too,
    and :math:`h = D^{1/4}` gives exactly softmax attention with the usual
    :math:`1/\sqrt D`. Oracles: that identity against
    :func:`attnmath.attention.scaled_dot_product_attention` (with ``bias``) and the literal
    ratio of sums. As :math:`h \to 0` the estimate tends to the value of the nearest key (the
    average over tied nearest keys): each query's smallest distance is subtracted before
    dividing by :math:`h`, so a tiny bandwidth never underflows every weight to zero.
    """
    x_query, x_keys = _check_points(x_query, x_keys)
    y = _check_values(y, x_keys, "y", "x_keys")
    h = check_real(bandwidth, "bandwidth", positive=True)

    def shifted_log_kernel(a, b):
        # The ratio ignores a per-query constant: subtract each row's smallest distance before
        # dividing by h, so the nearest key keeps log-kernel 0 however small h is.
        sq = _squared_distances(a, b)  # (..., L, S)
        m = sq.min(axis=-1, keepdims=True, initial=np.inf)  # inf only for a row without keys
        sq = sq - np.where(np.isinf(m), 0.0, m)
        with np.errstate(over="ignore"):
            return -(sq / (2.0 * h)) / h  # (..., L, S)

    return _smooth(x_query, x_keys, y, shifted_log_kernel)


# ----------------------------------------------------------------------------------------------
# In-context learning: one linear self-attention layer = one gradient-descent step
# ----------------------------------------------------------------------------------------------

class LinearAttentionWeights(NamedTuple):
    r"""Weights of one linear self-attention layer acting on tokens :math:`z \in \mathbb R^{d+1}`.

    ``w_q``, ``w_k``, ``w_v``, ``p`` : ndarray, each of shape ``(d + 1, d + 1)``; a token ``z``
    (a column vector) is mapped to :math:`W_Q z`, :math:`W_K z`, :math:`W_V z`, and ``p``
    projects the attention output back to the residual stream.
    """

    #: Query weight ``(d + 1, d + 1)``, mapping a token ``z`` to :math:`W_Q z`.
    w_q: np.ndarray
    #: Key weight ``(d + 1, d + 1)``, mapping ``z`` to :math:`W_K z`.
    w_k: np.ndarray
    #: Value weight ``(d + 1, d + 1)``, mapping ``z`` to :math:`W_V z`.
    w_v: np.ndarray
    #: Projection ``(d + 1, d + 1)`` of the attention output back to the residual stream.
    p: np.ndarray


def _check_regression(
    X: ArrayLike, y: ArrayLike, x_query: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    X = as_array(X, "X", ndim=2, allow_int=True, finite=True)
    N, d = X.shape
    if N == 0 or d == 0:
        raise ValueError(f"X must hold at least one example and one feature (N, d >= 1), got {X.shape}")
    y = as_array(y, "y", ndim=1, allow_int=True, finite=True)
    if y.shape != (N,):
        raise ValueError(f"y must have shape (N,) = ({N},) to match X {X.shape}, got {y.shape}")
    x_query = as_array(x_query, "x_query", ndim=(1, 2), allow_int=True, finite=True)
    if x_query.shape[-1] != d:
        raise ValueError(f"x_query must have shape (d,) or (M, d) with d={d}, got {x_query.shape}")
    return X, y, x_query


def _check_lr(lr) -> float:
    return check_real(lr, "lr", positive=True)


def gd_one_step_prediction(
    X: ArrayLike, y: ArrayLike, x_query: ArrayLike, lr: float
) -> FloatArray | float:
    r"""Prediction after one gradient-descent step from :math:`w = 0` on the mean squared loss.

    .. math::

        \begin{aligned}
        &\mathcal L(w) = \frac{1}{2N}\sum_{i=1}^{N} (w\cdot x_i - y_i)^2, \qquad w_1 = -\eta\,\nabla\mathcal
          L(0) = \frac{\eta}{N} X^\top y, \\
        &\hat y(x_q) = w_1\cdot x_q = \frac{\eta}{N}\sum_i y_i\, x_i\cdot x_q .
        \end{aligned}

    Parameters
    ----------
    X : array_like, shape (N, d)
        Context inputs, one example per row.
    y : array_like, shape (N,)
        Context targets.
    x_query : array_like, shape (d,) or (M, d)
        Query input(s).
    lr : float
        Step size :math:`\eta > 0`.

    Returns
    -------
    float, or ndarray of shape (M,)

    Notes
    -----
    Oracle: :func:`linear_self_attention_gd_step` (the attention layer) and
    :func:`gd_prediction` with one step.
    """
    X, y, x_query = _check_regression(X, y, x_query)
    N = X.shape[0]
    w1 = _check_lr(lr) / N * (X.T @ y)  # (d,)
    out = x_query @ w1  # () or (M,)
    return float(out) if np.ndim(out) == 0 else out


def gd_prediction(
    X: ArrayLike, y: ArrayLike, x_query: ArrayLike, *, lr: float, n_steps: int
) -> FloatArray | float:
    r"""Prediction after ``n_steps`` gradient-descent steps from :math:`w = 0`.

    .. math::

        w_{t+1} = w_t - \frac{\eta}{N} X^\top (X w_t - y), \qquad \hat y(x_q) = w_T\cdot x_q .

    Parameters
    ----------
    X : array_like, shape (N, d)
    y : array_like, shape (N,)
    x_query : array_like, shape (d,) or (M, d)
    lr : float
        Step size :math:`\eta`; the iteration converges iff
        :math:`\eta < 2N/\lambda_{\max}(X^\top X)` (on the column space of :math:`X^\top`).
    n_steps : int
        Number of steps :math:`T \ge 0`.

    Returns
    -------
    float, or ndarray of shape (M,)

    Notes
    -----
    From :math:`w_0 = 0` the iterates stay in the row space of ``X`` and converge to the
    minimum-norm least-squares solution, so for a convergent step size
    ``gd_prediction -> least_squares_prediction`` as ``n_steps`` grows. Oracle:
    :func:`gd_one_step_prediction` for one step and :func:`least_squares_prediction` in the limit.
    """
    X, y, x_query = _check_regression(X, y, x_query)
    N, d = X.shape
    lr = _check_lr(lr)
    n_steps = check_positive_int(n_steps, "n_steps", allow_zero=True)
    w = np.zeros(d)  # (d,)
    for _ in range(n_steps):
        w = w - lr / N * (X.T @ (X @ w - y))  # (d,)
    out = x_query @ w
    return float(out) if np.ndim(out) == 0 else out


def least_squares_prediction(
    X: ArrayLike, y: ArrayLike, x_query: ArrayLike
) -> FloatArray | float:
    r"""Prediction of the (minimum-norm) least-squares fit, :math:`x_q\cdot X^{+}y`.

    .. math::

        \begin{aligned}
        &\hat w = \arg\min_w \lVert Xw - y\rVert^2 = (X^\top X)^{-1}X^\top y \ \text{(full column rank)}, \\
        &\hat y(x_q) = \hat w\cdot x_q .
        \end{aligned}

    Parameters
    ----------
    X : array_like, shape (N, d)
    y : array_like, shape (N,)
    x_query : array_like, shape (d,) or (M, d)

    Returns
    -------
    float, or ndarray of shape (M,)

    Notes
    -----
    Uses ``numpy.linalg.lstsq`` (SVD), never the normal equations. Note that
    :math:`X(X^\top X)^{-1}X^\top y` is the vector of *fitted values at the context inputs* (the
    projection of :math:`y` on the column space of :math:`X`), not a prediction at a new query.
    Oracle: ``numpy.linalg.solve`` on the normal equations for well-conditioned ``X`` and the
    orthogonality of the residual, :math:`X^\top(X\hat w - y) = 0`.
    """
    X, y, x_query = _check_regression(X, y, x_query)
    dtype = np.result_type(X, y, x_query)
    work = work_dtype(dtype)  # numpy.linalg has no float16
    w, *_ = np.linalg.lstsq(X.astype(work), y.astype(work), rcond=None)  # (d,)
    out = (x_query.astype(work) @ w).astype(dtype)
    return float(out) if np.ndim(out) == 0 else out


def gd_linear_attention_weights(
    d: int, n_context: int, *, lr: float
) -> LinearAttentionWeights:
    r"""Weights of a linear self-attention layer that performs one gradient-descent step.

    On tokens :math:`z = [x; y] \in \mathbb R^{d+1}`:

    .. math::

        W_Q = W_K = \begin{pmatrix} I_d & 0 \\ 0 & 0 \end{pmatrix}, \quad
        W_V = \begin{pmatrix} 0 & 0 \\ 0 & 1 \end{pmatrix}, \quad
        P = \frac{\eta}{N} I_{d+1},

    so that :math:`(W_K z_i)\cdot(W_Q z_j) = x_i\cdot x_j` and :math:`P W_V z_i = (0, \eta y_i/N)`.

    Parameters
    ----------
    d : int
        Input dim.
    n_context : int
        ``N``, the number of context examples (the :math:`1/N` of the loss lives in ``P``).
    lr : float
        Step size :math:`\eta > 0`.

    Returns
    -------
    LinearAttentionWeights

    Notes
    -----
    This is the construction of von Oswald et al. (2022), "Transformers learn in-context by
    gradient descent", up to sign: they negate ``P`` so that the context tokens' labels become
    residuals :math:`y_i - w_1\cdot x_i` and read the prediction as minus the query's label slot;
    here the query's label slot holds :math:`+\hat y` directly. Oracle:
    :func:`gd_one_step_prediction`.
    """
    d = check_positive_int(d, "d")
    N = check_positive_int(n_context, "n_context")
    lr = _check_lr(lr)
    w_qk = np.zeros((d + 1, d + 1))
    w_qk[:d, :d] = np.eye(d)
    w_v = np.zeros((d + 1, d + 1))
    w_v[d, d] = 1.0
    return LinearAttentionWeights(w_q=w_qk.copy(), w_k=w_qk.copy(), w_v=w_v, p=lr / N * np.eye(d + 1))


def in_context_tokens(X: ArrayLike, y: ArrayLike, x_query: ArrayLike) -> FloatArray:
    r"""Token sequence :math:`[(x_1, y_1), \dots, (x_N, y_N), (x_q, 0)]` of width ``d + 1``.

    Parameters
    ----------
    X : array_like, shape (N, d)
    y : array_like, shape (N,)
    x_query : array_like, shape (d,) or (M, d)
        One query token per row, each with label slot 0.

    Returns
    -------
    ndarray, shape (N + M, d + 1)
        Context tokens first, query tokens last.

    Notes
    -----
    Oracle: ``numpy.concatenate`` written out in the tests.
    """
    X, y, x_query = _check_regression(X, y, x_query)
    xq = np.atleast_2d(x_query)  # (M, d)
    context = np.concatenate([X, y[:, None]], axis=1)  # (N, d + 1)
    queries = np.concatenate([xq, np.zeros((xq.shape[0], 1), dtype=xq.dtype)], axis=1)  # (M, d + 1)
    return np.concatenate([context, queries], axis=0)  # (N + M, d + 1)


def linear_self_attention(z: ArrayLike, weights: LinearAttentionWeights) -> FloatArray:
    r"""One residual linear self-attention layer (no softmax, no mask, no normalisation).

    .. math::

        \begin{aligned}
        &z_j' = z_j + P \sum_{i} (W_V z_i)\,(W_K z_i)^\top (W_Q z_j), \qquad Z' = Z + A\,(Z W_V^\top) P^\top,
          \\
        &A = (Z W_Q^\top)(Z W_K^\top)^\top\ (T, T) .
        \end{aligned}

    Parameters
    ----------
    z : array_like, shape (T, C)
        Tokens, one per row.
    weights : LinearAttentionWeights
        Matrices of shape ``(C, C)``.

    Returns
    -------
    ndarray, shape (T, C)

    Notes
    -----
    Every token attends to every token, itself included. Oracle: the double loop over
    :math:`i, j` of the first formula, and :func:`gd_one_step_prediction` with the weights of
    :func:`gd_linear_attention_weights`.
    """
    z = as_array(z, "z", ndim=2, allow_int=True, finite=True)
    T, C = z.shape
    if not isinstance(weights, LinearAttentionWeights):
        raise TypeError(f"weights must be a LinearAttentionWeights, got {type(weights).__name__}")
    mats = []
    for name, w in zip(weights._fields, weights):
        w = as_array(w, f"weights.{name}", ndim=2, allow_int=True, finite=True)
        if w.shape != (C, C):
            raise ValueError(
                f"weights.{name} must have shape (C, C) = ({C}, {C}) for z of width C={C}, got {w.shape}"
            )
        mats.append(w)
    w_q, w_k, w_v, p = mats
    queries = z @ w_q.T  # (T, C)
    keys = z @ w_k.T  # (T, C)
    vals = z @ w_v.T  # (T, C)
    scores = queries @ keys.T  # (T, T), scores[j, i] = (W_Q z_j) . (W_K z_i)
    return z + (scores @ vals) @ p.T  # (T, C)


def linear_self_attention_gd_step(
    X: ArrayLike, y: ArrayLike, x_query: ArrayLike, *, lr: float
) -> FloatArray | float:
    r"""In-context prediction of a linear self-attention layer built to do one GD step.

    Builds the tokens :math:`[(x_i, y_i)_{i\le N}, (x_q, 0)]`, applies
    :func:`linear_self_attention` with :func:`gd_linear_attention_weights`, and reads the
    query token's label slot:

    .. math::

        z_q' = (x_q,\ 0) + \frac{\eta}{N}\sum_i (0,\ y_i)\, x_i\cdot x_q
             = \Bigl(x_q,\ \frac{\eta}{N}\sum_i y_i\, x_i\cdot x_q\Bigr).

    Parameters
    ----------
    X : array_like, shape (N, d)
    y : array_like, shape (N,)
    x_query : array_like, shape (d,) or (M, d)
    lr : float
        Step size :math:`\eta > 0`.

    Returns
    -------
    float, or ndarray of shape (M,)

    Notes
    -----
    The query tokens carry label 0, so their values :math:`W_V z_q = 0` add nothing and several
    queries do not see each other: each gets its own one-step prediction. Oracle:
    :func:`gd_one_step_prediction`.
    """
    X, y, x_query = _check_regression(X, y, x_query)
    N, d = X.shape
    tokens = in_context_tokens(X, y, x_query)  # (N + M, d + 1)
    out = linear_self_attention(tokens, gd_linear_attention_weights(d, N, lr=lr))  # (N + M, d + 1)
    pred = out[N:, d]  # (M,)
    return float(pred[0]) if x_query.ndim == 1 else pred


# ----------------------------------------------------------------------------------------------
# Permutation symmetry
# ----------------------------------------------------------------------------------------------

def _check_perm(perm, n: int, name: str = "perm") -> np.ndarray:
    perm_arr = np.asarray(perm)
    if perm_arr.dtype == np.bool_ or not np.issubdtype(perm_arr.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {perm_arr.dtype}")
    if perm_arr.shape != (n,) or not np.array_equal(np.sort(perm_arr), np.arange(n)):
        raise ValueError(f"{name} must be a permutation of range({n}), got {perm_arr.tolist()}")
    return perm_arr


def _self_attention_inputs(
    q: ArrayLike, k: ArrayLike, v: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    q, k = _check_points(q, k, names=("q", "k"))
    L, S = q.shape[-2], k.shape[-2]
    _check_nonempty(q, "q", "L")
    if L != S:
        raise ValueError(
            f"a permutation of the sequence acts on queries and keys alike, so L must equal S; "
            f"got q {q.shape} (L={L}) and k {k.shape} (S={S})"
        )
    return q, k, _check_gap_values(v)


def _check_nonempty(x: FloatArray, name: str, length: str) -> None:
    """A gap is a maximum over outputs: refuse an empty sequence, which has none."""
    if x.shape[-2] == 0:
        raise ValueError(f"{name} must hold at least one position ({length} >= 1), got shape {x.shape}")


def _check_gap_values(v: ArrayLike) -> FloatArray:
    """Values of a gap: at least one value dim, else there is no output to compare."""
    v = as_array(v, "v", allow_int=True)
    if v.ndim < 2 or v.shape[-1] == 0:
        raise ValueError(f"v must have shape (..., S, D_v) with D_v >= 1, got shape {v.shape}")
    return v


def _attend(q: FloatArray, k: FloatArray, v: FloatArray, mask: ArrayLike | None) -> FloatArray:
    return scaled_dot_product_attention(q, k, v, mask=mask)[0]  # (..., L, D_v)


def permutation_equivariance_gap(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, perm: ArrayLike, *,
    mask: ArrayLike | None = None
) -> float:
    r"""Largest violation of the equivariance :math:`\operatorname{Attn}(\Pi X) = \Pi\operatorname{Attn}(X)`.

    .. math::

        \operatorname{gap} = \max\bigl|\operatorname{Attn}(\Pi Q, \Pi K, \Pi V; M)
            - \Pi\,\operatorname{Attn}(Q, K, V; M)\bigr|, \qquad (\Pi X)_i = X_{\pi(i)} .

    Parameters
    ----------
    q : array_like, shape (..., L, D)
    k : array_like, shape (..., S, D), with ``S == L``
    v : array_like, shape (..., S, D_v)
    perm : array_like of int, shape (L,)
        :math:`\pi`, applied to the sequence axis of ``q``, ``k`` and ``v``.
    mask : array_like of bool, optional
        Broadcasts to ``(..., L, S)``. It belongs to the *positions*, so it is not permuted.

    Returns
    -------
    float
        About machine epsilon without a mask, for every permutation. With a causal mask, positive
        for every non-identity permutation and generic inputs: the query now at position
        :math:`i` sees the tokens :math:`\pi(0..i)` instead of :math:`0..\pi(i)`.

    Notes
    -----
    Permuting the mask along with the tokens (:math:`M \mapsto \Pi M \Pi^\top`) would restore
    equivariance; a causal mask tied to positions does not move. Oracle: the identity itself,
    with :func:`attnmath.attention.scaled_dot_product_attention` on both sides.
    """
    q, k, v = _self_attention_inputs(q, k, v)
    perm = _check_perm(perm, q.shape[-2])
    out = _attend(q, k, v, mask)  # (..., L, D_v)
    out_perm = _attend(q[..., perm, :], k[..., perm, :], v[..., perm, :], mask)  # (..., L, D_v)
    return float(np.max(np.abs(out_perm - out[..., perm, :])))


def permutation_invariance_gap(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, perm: ArrayLike, *,
    mask: ArrayLike | None = None
) -> float:
    r"""Largest violation of the *invariance* :math:`\operatorname{Attn}(\Pi X) = \operatorname{Attn}(X)`.

    .. math::

        \operatorname{gap} = \max\bigl|\operatorname{Attn}(\Pi Q, \Pi K, \Pi V; M)
            - \operatorname{Attn}(Q, K, V; M)\bigr| .

    Parameters
    ----------
    q, k, v, perm, mask
        As in :func:`permutation_equivariance_gap`.

    Returns
    -------
    float
        Positive for a non-identity permutation and generic inputs: the output rows are
        permuted, not left unchanged. Self-attention is permutation-*equivariant*, not
        permutation-invariant.

    Notes
    -----
    Oracle: :func:`permutation_equivariance_gap` (zero) together with distinct output rows.
    """
    q, k, v = _self_attention_inputs(q, k, v)
    perm = _check_perm(perm, q.shape[-2])
    out = _attend(q, k, v, mask)  # (..., L, D_v)
    out_perm = _attend(q[..., perm, :], k[..., perm, :], v[..., perm, :], mask)  # (..., L, D_v)
    return float(np.max(np.abs(out_perm - out)))


def key_value_permutation_gap(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, perm: ArrayLike, *,
    mask: ArrayLike | None = None
) -> float:
    r"""Largest violation of :math:`\operatorname{Attn}(Q, \Pi K, \Pi V) = \operatorname{Attn}(Q, K, V)`.

    Reordering the key-value pairs (and not the queries) leaves every output unchanged: each
    output is a weighted average over the *set* of pairs.

    .. math::

        \operatorname{gap} = \max\bigl|\operatorname{Attn}(Q, \Pi K, \Pi V; M)
            - \operatorname{Attn}(Q, K, V; M)\bigr| .

    Parameters
    ----------
    q : array_like, shape (..., L, D)
    k : array_like, shape (..., S, D)
    v : array_like, shape (..., S, D_v)
    perm : array_like of int, shape (S,)
    mask : array_like of bool, optional
        Broadcasts to ``(..., L, S)``; tied to key positions, not permuted.

    Returns
    -------
    float
        About machine epsilon without a mask; positive in general with one.

    Notes
    -----
    This invariance is the precise sense in which attention "ignores order": over the keys,
    for a fixed query. Oracle: the identity itself.
    """
    q, k = _check_points(q, k, names=("q", "k"))
    _check_nonempty(q, "q", "L")
    _check_nonempty(k, "k", "S")
    v = _check_gap_values(v)
    perm = _check_perm(perm, k.shape[-2])
    out = _attend(q, k, v, mask)  # (..., L, D_v)
    out_perm = _attend(q, k[..., perm, :], v[..., perm, :], mask)  # (..., L, D_v)
    return float(np.max(np.abs(out_perm - out)))


def is_permutation_equivariant(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, perm: ArrayLike, *,
    mask: ArrayLike | None = None, rtol: float | None = None
) -> bool:
    r"""Whether :math:`\operatorname{Attn}(\Pi Q,\Pi K,\Pi V) = \Pi\operatorname{Attn}(Q,K,V)` to rounding.

    .. math:: \operatorname{gap} \le \mathrm{rtol}\cdot\max\bigl(1, \max|V|\bigr).

    Parameters
    ----------
    q, k, v, perm, mask
        As in :func:`permutation_equivariance_gap`.
    rtol : float, optional
        Tolerance relative to the size of the values (outputs are averages of values). Default
        :math:`\epsilon^{3/4}` of the inputs' dtype (float64: ``1.8e-12``, float32: ``6.5e-6``,
        float16: ``3.1e-3``), far above rounding and far below a real violation.

    Returns
    -------
    bool

    Notes
    -----
    Oracle: :func:`permutation_equivariance_gap`.
    """
    if rtol is not None:
        rtol = check_real(rtol, "rtol", positive=True)
    gap = permutation_equivariance_gap(q, k, v, perm, mask=mask)
    dtype = np.result_type(as_array(q, "q", allow_int=True), as_array(k, "k", allow_int=True),
                           as_array(v, "v", allow_int=True))
    if rtol is None:
        rtol = float(np.finfo(dtype).eps) ** 0.75
    v = np.asarray(v, dtype=np.float64)
    return gap <= rtol * max(1.0, float(np.max(np.abs(v))) if v.size else 1.0)


# ----------------------------------------------------------------------------------------------
# Rank
# ----------------------------------------------------------------------------------------------

def _check_tol(tol: object) -> float | None:
    if tol is None:
        return None
    return check_real(tol, "tol", positive=True)


def _check_probs_values(probs: ArrayLike, v: ArrayLike) -> tuple[FloatArray, FloatArray]:
    probs = as_array(probs, "probs", allow_int=True, finite=True)
    v = as_array(v, "v", allow_int=True, finite=True)
    if probs.ndim < 2 or v.ndim < 2:
        raise ValueError(
            f"probs and v must have at least 2 dimensions, got shapes {probs.shape} and {v.shape}"
        )
    if probs.shape[-1] != v.shape[-2]:
        raise ValueError(
            f"probs (..., L, S) and v (..., S, D_v) must agree on S: got probs {probs.shape}, v {v.shape}"
        )
    return probs, v


def attention_output_rank(
    probs: ArrayLike, v: ArrayLike, *, tol: float | None = None
) -> int | NDArray[np.int64]:
    r"""Numerical rank of the attention output :math:`PV` (per leading index).

    .. math::

        \operatorname{rank}(PV) \le \min\bigl(\operatorname{rank}P, \operatorname{rank}V\bigr)
        \le \min(L, S, D_v) .

    Parameters
    ----------
    probs : array_like, shape (..., L, S)
        Attention weights :math:`P`.
    v : array_like, shape (..., S, D_v)
        Values.
    tol : float, optional
        Singular values at or below ``tol`` count as zero; default as
        ``numpy.linalg.matrix_rank`` (:math:`\sigma_{\max}\max(L, D_v)\,\epsilon`).

    Returns
    -------
    int, or ndarray of int with the leading shape ``(...)``

    Notes
    -----
    Softmax weights are entrywise positive, yet :math:`P` is generically of full rank
    :math:`\min(L, S)` even when :math:`QK^\top` has rank 1: the exponential is applied entry by
    entry, and :math:`e^{q_i k_j}` is a generalised Vandermonde matrix. The bottleneck of one
    head is therefore :math:`D_v` (and :math:`L`, :math:`S`), not :math:`D`. Oracle:
    ``numpy.linalg.matrix_rank`` of the product and of the factors.
    """
    probs, v = _check_probs_values(probs, v)
    product = probs @ v  # (..., L, D_v)
    ranks = np.linalg.matrix_rank(product.astype(work_dtype(product)), tol=_check_tol(tol))  # (...)
    return int(ranks) if np.ndim(ranks) == 0 else ranks


def attention_rank_bound(L: int, S: int, D_v: int) -> int:
    r"""Upper bound :math:`\min(L, S, D_v)` on the rank of one head's output.

    .. math::

        \begin{aligned}
        &\operatorname{rank}(PV) \le \min(\operatorname{rank}P, \operatorname{rank}V), \quad
          \operatorname{rank}P \le \min(L, S), \\
        &\operatorname{rank}V \le \min(S, D_v).
        \end{aligned}

    Parameters
    ----------
    L, S, D_v : int

    Returns
    -------
    int

    Notes
    -----
    For self-attention (:math:`L = S = n`) this is the familiar :math:`\min(n, D_v)`; with
    :math:`L \ne S` the smaller of the two lengths enters. The bound is attained by generic
    inputs. Oracle: :func:`attention_output_rank` on random inputs.
    """
    return min(check_positive_int(L, "L"), check_positive_int(S, "S"), check_positive_int(D_v, "D_v"))


def multi_head_output_rank(
    probs: ArrayLike, v: ArrayLike, w_o: ArrayLike, *, tol: float | None = None
) -> int | NDArray[np.int64]:
    r"""Numerical rank of :math:`\operatorname{Concat}(P_1V_1, \dots, P_HV_H)\,W_O`.

    .. math::

        Y = \bigl[P_1V_1 \;\big|\; \cdots \;\big|\; P_HV_H\bigr] W_O, \qquad
        \operatorname{rank} Y \le \min\Bigl(L,\ \sum_h \operatorname{rank}(P_hV_h),\ C\Bigr).

    Parameters
    ----------
    probs : array_like, shape (..., H, L, S)
    v : array_like, shape (..., H, S, D_v)
    w_o : array_like, shape (H * D_v, C)
        Output projection; rows ``h*D_v:(h+1)*D_v`` act on head ``h``.
    tol : float, optional
        As in :func:`attention_output_rank`.

    Returns
    -------
    int, or ndarray of int with the leading shape ``(...)``

    Notes
    -----
    Each head alone is capped at :math:`D_v`; the concatenation is not. Every head's column space
    contains the all-ones vector, so the rank is at most :math:`\min(L, C, 1 + H(S-1))` for
    :math:`C = HD_v` (:func:`multi_head_rank_bound`). One head of the full width :math:`C` is
    capped at :math:`\min(L, S, C)`: the same when :math:`S \ge C`, lower when there are
    fewer keys than the model width. Oracle: ``numpy.linalg.matrix_rank`` of the product
    written out in the tests.
    """
    probs, v = _check_probs_values(probs, v)
    if probs.ndim < 3 or probs.shape[:-2] != v.shape[:-2]:
        raise ValueError(
            f"probs (..., H, L, S) and v (..., H, S, D_v) must share the head and batch axes, "
            f"got {probs.shape} and {v.shape}"
        )
    w_o = as_array(w_o, "w_o", ndim=2, allow_int=True, finite=True)
    *batch, H, L, S = probs.shape
    D_v = v.shape[-1]
    if w_o.shape[0] != H * D_v:
        raise ValueError(f"w_o must have shape (H * D_v, C) = ({H * D_v}, C), got {w_o.shape}")
    heads = probs @ v  # (..., H, L, D_v)
    concat = np.moveaxis(heads, -3, -2).reshape(*batch, L, H * D_v)  # (..., L, H * D_v)
    product = concat @ w_o  # (..., L, C)
    ranks = np.linalg.matrix_rank(product.astype(work_dtype(product)), tol=_check_tol(tol))  # (...)
    return int(ranks) if np.ndim(ranks) == 0 else ranks


def multi_head_rank_bound(L: int, S: int, H: int, D_v: int, C: int) -> int:
    r"""Upper bound :math:`\min(L, C, H\min(S, D_v), 1 + H(S-1))` on the rank of a multi-head output.

    .. math:: \operatorname{rank}\bigl(\operatorname{Concat}_h(P_hV_h)W_O\bigr)
              \le \min\Bigl(L,\ C,\ \sum_h \min(S, D_v),\ 1 + H(S - 1)\Bigr).

    Parameters
    ----------
    L, S, H, D_v, C : int

    Returns
    -------
    int

    Notes
    -----
    The last term holds because every :math:`P_h` is row-stochastic: its column space (of
    dimension at most :math:`S`) contains the all-ones vector :math:`P_h\mathbf{1} = \mathbf{1}`,
    so the column spaces of the :math:`H` heads share it and span at most :math:`1 + H(S-1)`
    dimensions. With :math:`C = HD_v` the bound is :math:`\min(L, C, 1 + H(S-1))`, against
    :math:`\min(L, S, C)` for one head of width :math:`C`: the two agree when :math:`S \ge C`
    and :math:`H` heads reach more when :math:`1 < S < C` and :math:`L > S`. Attained by generic
    inputs and weights. Oracle: :func:`multi_head_output_rank` on random inputs.
    """
    L, S, H = (check_positive_int(x, n) for x, n in ((L, "L"), (S, "S"), (H, "H")))
    D_v, C = check_positive_int(D_v, "D_v"), check_positive_int(C, "C")
    return min(L, C, H * min(S, D_v), 1 + H * (S - 1))
