r"""Linear attention: kernel feature maps in place of the softmax.

Replacing the similarity :math:`\exp(q^\top k)` by a kernel :math:`\phi(q)^\top \phi(k)` with a
positive feature map :math:`\phi : \mathbb{R}^D \to \mathbb{R}^{D_\phi}_{>0}` lets the product be
re-associated:

.. math::

    O_i = \frac{\sum_j \phi(q_i)^\top \phi(k_j)\, v_j^\top}{\sum_j \phi(q_i)^\top \phi(k_j)}
        = \frac{\phi(q_i)^\top \bigl(\phi(K)^\top V\bigr)}{\phi(q_i)^\top \bigl(\phi(K)^\top \mathbf 1\bigr)},

which costs :math:`O(L D_\phi D_v)` after an :math:`O(S D_\phi D_v)` summary of the keys, instead
of the :math:`O(L S (D + D_v))` of softmax attention.

Inputs follow the rules of :mod:`attnmath.core`: shapes and grouped heads as in softmax
attention, NaN or an infinity in ``q``, ``k``, ``v`` raises ``ValueError``, float16 is computed
in float32 and every output has the inputs' dtype (float32 stays float32). With ``S = 0`` the
output is zeros.

Two feature maps are provided:

* :func:`elu_feature_map`, :math:`\phi(x) = \operatorname{elu}(x) + 1`, the map of the linear
  transformer (Katharopoulos et al., 2020, "Transformers are RNNs"). It defines a different
  kernel, not an approximation of the softmax.
* :func:`random_feature_map`, the positive random features of the Performer (Choromanski et al.,
  2021, FAVOR+), whose inner products are an unbiased estimate of :math:`\exp(q^\top k)`, so
  :func:`performer_attention` approximates softmax attention.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._validate import as_array, check_positive_int, check_seed
from .core import check_finite, prepare, work_dtype

__all__ = [
    "elu_feature_map",
    "linear_attention",
    "linear_attention_quadratic",
    "causal_linear_attention",
    "draw_gaussian_features",
    "draw_orthogonal_features",
    "random_feature_map",
    "performer_attention",
    "attention_flops",
    "linear_attention_flops",
]


def elu_feature_map(x) -> np.ndarray:
    r"""The linear transformer's feature map :math:`\phi(x) = \operatorname{elu}(x) + 1`.

    .. math::

        \phi(x) = \begin{cases} x + 1 & x > 0 \\ e^{x} & x \le 0 \end{cases}

    Parameters
    ----------
    x : array_like, shape (..., D)

    Returns
    -------
    ndarray, shape (..., D)
        Strictly positive, elementwise; :math:`D_\phi = D`.

    Notes
    -----
    Katharopoulos et al. (2020) chose ELU + 1 over ReLU because it is positive everywhere (so
    the normaliser of :func:`linear_attention` never vanishes) and has a non-zero gradient for
    negative inputs. ReLU + 1, :math:`\max(0, x) + 1`, is a different map: it is constant for
    every :math:`x \le 0`. The exponential is evaluated on :math:`\min(x, 0)` so that large
    positive entries do not overflow in the unused branch. Oracle: ``torch.nn.functional.elu(x) + 1``.
    """
    x = as_array(x, "x", allow_int=True)
    check_finite(x, "x")
    xw = x.astype(work_dtype(x), copy=False)
    return np.where(xw > 0, xw + 1.0, np.exp(np.minimum(xw, 0.0))).astype(x.dtype, copy=False)


def _features(feature_map: Callable, x: np.ndarray, name: str) -> np.ndarray:
    """Apply ``feature_map`` and check that it keeps the leading axes and gives finite values."""
    if not callable(feature_map):
        raise TypeError(f"feature_map must be callable, got {type(feature_map).__name__}")
    phi = as_array(feature_map(x), f"feature_map({name})", allow_int=True)
    phi = phi.astype(work_dtype(phi, x), copy=False)
    if phi.shape[:-1] != x.shape[:-1]:
        raise ValueError(
            f"feature_map must map {name} of shape {x.shape} to shape {x.shape[:-1] + ('D_phi',)}, "
            f"got {phi.shape}"
        )
    if not np.isfinite(phi).all():
        raise ValueError(f"feature_map gave non-finite features for {name}")
    return phi



def _mapped(feature_map: Callable, prob):
    """``phi(q) (B, H_kv, g, L, D_phi)`` and ``phi(k) (B, H_kv, 1, S, D_phi)`` of a grouped problem."""
    phi_q = _features(feature_map, prob.q5, "q")  # (B, H_kv, g, L, D_phi)
    phi_k = _features(feature_map, prob.k5, "k")  # (B, H_kv, 1, S, D_phi)
    if phi_q.shape[-1] != phi_k.shape[-1]:
        raise ValueError(f"feature_map gave D_phi={phi_q.shape[-1]} for q but {phi_k.shape[-1]} for k")
    if (phi_q < 0).any() or (phi_k < 0).any():
        raise ValueError("feature_map must return non-negative features (it defines a kernel)")
    return phi_q, phi_k

def _check_denominator(den: np.ndarray) -> None:
    if not (den > 0).all():
        raise ValueError(
            "the normaliser phi(q) . sum_j phi(k_j) must be positive; feature_map must return "
            f"positive features (smallest normaliser {den.min():.3e})"
        )


def linear_attention(q, k, v, *, feature_map: Callable = elu_feature_map) -> np.ndarray:
    r"""Non-causal linear attention in :math:`O((L + S) D_\phi D_v)`.

    .. math::

        O = \frac{\phi(Q)\,\bigl(\phi(K)^\top V\bigr)}{\phi(Q)\,\bigl(\phi(K)^\top \mathbf 1_S\bigr)}
        \quad \text{(row-wise division)}

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
        Queries (any leading axes; ``(L, D)`` works).
    k : ndarray, shape (B, H_kv, S, D)
        Keys; ``H_kv`` divides ``H`` (grouped heads as in
        :func:`attnmath.attention.scaled_dot_product_attention`).
    v : ndarray, shape (B, H_kv, S, D_v)
        Values.
    feature_map : callable
        ``(..., D) -> (..., D_phi)`` with positive entries. Default :func:`elu_feature_map`.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)

    Notes
    -----
    The :math:`L \times S` matrix is never formed: the keys are summarised once into
    ``kv (B, H, D_phi, D_v)`` and ``z (B, H, D_phi)``. There is no :math:`\varepsilon` in the
    denominator: a positive feature map makes it positive, and a map that does not raises
    ``ValueError`` rather than being silently regularised (the textbook chapter's ``+ 1e-6`` changes every
    output slightly and hides a wrong feature map). The paper's formula has no :math:`1/\sqrt{D}`
    score scale, and neither does this function. Oracle: :func:`linear_attention_quadratic`
    (the same kernel in :math:`O(LS)` form), and ``torch`` with the same two products.
    """
    prob = prepare(q, k, v)
    phi_q, phi_k = _mapped(feature_map, prob)  # (B, H_kv, g, L, D_phi), (B, H_kv, 1, S, D_phi)
    kv = np.swapaxes(phi_k, -1, -2) @ prob.v5  # (B, H_kv, 1, D_phi, D_v)
    z = phi_k.sum(axis=-2)  # (B, H_kv, 1, D_phi)
    num = phi_q @ kv  # (B, H_kv, g, L, D_v)
    if prob.S == 0:  # no key: zeros, as softmax attention
        return prob.finish(num)
    den = np.einsum("...lf,...f->...l", phi_q, z)  # (B, H_kv, g, L)
    _check_denominator(den)
    return prob.finish(num / den[..., None])  # (B, H, L, D_v)


def linear_attention_quadratic(q, k, v, *, feature_map: Callable = elu_feature_map,
                               mask=None) -> np.ndarray:
    r"""Linear-attention kernel evaluated the quadratic way, :math:`O(L S D_\phi)`.

    .. math::

        A_{ij} = \frac{M_{ij}\,\phi(q_i)^\top \phi(k_j)}{\sum_{j'} M_{ij'}\,\phi(q_i)^\top \phi(k_{j'})},
        \qquad O = A V .

    Parameters
    ----------
    q, k, v, feature_map
        As in :func:`linear_attention`.
    mask : ndarray of bool, optional
        ``True`` = may attend, broadcasting to ``(B, H, L, S)``; e.g. the causal mask.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)
        A fully masked row gives zeros.

    Notes
    -----
    The reference for :func:`linear_attention` (no mask) and :func:`causal_linear_attention`
    (lower-triangular mask): the same numbers, associated the other way. Unlike softmax weights,
    :math:`A` is a ratio of kernel values, not of exponentials.
    """
    prob = prepare(q, k, v, mask=mask)
    phi_q, phi_k = _mapped(feature_map, prob)  # (B, H_kv, g, L, D_phi), (B, H_kv, 1, S, D_phi)
    scores = phi_q @ np.swapaxes(phi_k, -1, -2)  # (B, H_kv, g, L, S)
    allowed = prob.allowed(slice(None), slice(None), scores.shape)
    if allowed is not None:
        scores = np.where(allowed, scores, 0.0)  # (B, H_kv, g, L, S)
    den = scores.sum(axis=-1, keepdims=True)  # (B, H_kv, g, L, 1)
    return prob.finish((scores / np.where(den == 0.0, 1.0, den)) @ prob.v5)  # (B, H, L, D_v)


def causal_linear_attention(q, k, v, *, feature_map: Callable = elu_feature_map) -> np.ndarray:
    r"""Causal linear attention as a recurrence (the "transformer as RNN" form).

    .. math::

        S_t = S_{t-1} + \phi(k_t)\, v_t^\top, \qquad z_t = z_{t-1} + \phi(k_t), \qquad
        o_t = \frac{\phi(q_t)^\top S_t}{\phi(q_t)^\top z_t},

    with :math:`S_0 = 0 \in \mathbb{R}^{D_\phi \times D_v}` and :math:`z_0 = 0`.

    Parameters
    ----------
    q : ndarray, shape (B, H, L, D)
    k : ndarray, shape (B, H_kv, L, D)
        Self-attention: ``S == L``.
    v : ndarray, shape (B, H_kv, L, D_v)
    feature_map : callable
        Positive map, default :func:`elu_feature_map`.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)

    Notes
    -----
    The state ``(S_t, z_t)`` has a fixed size :math:`D_\phi (D_v + 1)` per head whatever
    :math:`t`, so decoding one token costs :math:`O(D_\phi D_v)`, against the :math:`O(t D)` of
    softmax attention over a growing KV cache. The loop over :math:`t` is the recurrence itself;
    each step is vectorised over batch and heads. Oracle: :func:`linear_attention_quadratic`
    with the lower-triangular mask.
    """
    prob = prepare(q, k, v)
    L, S = prob.L, prob.S
    if L != S:
        raise ValueError(f"causal_linear_attention needs q and k of one length (L == S, self-attention), "
                         f"got L={L}, S={S}")
    phi_q, phi_k = _mapped(feature_map, prob)  # (B, H_kv, g, L, D_phi), (B, H_kv, 1, L, D_phi)
    v = prob.v5  # (B, H_kv, 1, L, D_v)
    D_phi, D_v = phi_q.shape[-1], v.shape[-1]
    state = np.zeros(phi_k.shape[:-2] + (D_phi, D_v), dtype=prob.dtype)  # (B, H_kv, 1, D_phi, D_v)
    z = np.zeros(phi_k.shape[:-2] + (D_phi,), dtype=prob.dtype)  # (B, H_kv, 1, D_phi)
    out = np.empty(phi_q.shape[:-1] + (D_v,), dtype=prob.dtype)  # (B, H_kv, g, L, D_v)
    for t in range(L):
        state = state + phi_k[..., t, :, None] * v[..., t, None, :]  # (B, H_kv, 1, D_phi, D_v)
        z = z + phi_k[..., t, :]  # (B, H_kv, 1, D_phi)
        num = np.einsum("...f,...fv->...v", phi_q[..., t, :], state)  # (B, H_kv, g, D_v)
        den = np.einsum("...f,...f->...", phi_q[..., t, :], z)  # (B, H_kv, g)
        _check_denominator(den)
        out[..., t, :] = num / den[..., None]
    return prob.finish(out)  # (B, H, L, D_v)


def draw_gaussian_features(m: int, D: int, seed: int) -> np.ndarray:
    r"""Independent Gaussian projections :math:`\omega_1, \dots, \omega_m \sim \mathcal N(0, I_D)`.

    Returns
    -------
    ndarray, shape (m, D)
    """
    m = check_positive_int(m, "m")
    D = check_positive_int(D, "D")
    return np.random.default_rng(check_seed(seed)).standard_normal((m, D))  # (m, D)


def draw_orthogonal_features(m: int, D: int, seed: int) -> np.ndarray:
    r"""Block-orthogonal Gaussian projections (the Performer's "ORF").

    Rows come in blocks of ``D`` exactly orthogonal directions (the ``Q`` factor of the QR
    decomposition of a Gaussian matrix, sign-corrected so that it is Haar distributed), each row
    rescaled by the norm of an independent :math:`\mathcal N(0, I_D)` vector. Each row is then
    marginally :math:`\mathcal N(0, I_D)`, so every estimator that is unbiased with
    :func:`draw_gaussian_features` stays unbiased, while the orthogonality within a block lowers
    its variance. The last block is truncated when ``D`` does not divide ``m``.

    Returns
    -------
    ndarray, shape (m, D)
    """
    m = check_positive_int(m, "m")
    D = check_positive_int(D, "D")
    rng = np.random.default_rng(check_seed(seed))
    n_blocks = -(-m // D)
    g = rng.standard_normal((n_blocks, D, D))  # (n_blocks, D, D)
    qmat, r = np.linalg.qr(g)  # (n_blocks, D, D) each, batched
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))  # (n_blocks, D)
    qmat = qmat * signs[:, None, :]  # Haar: fix the sign of each column
    directions = np.swapaxes(qmat, -1, -2).reshape(n_blocks * D, D)[:m]  # (m, D), rows orthonormal per block
    norms = np.linalg.norm(rng.standard_normal((m, D)), axis=1)  # (m,)
    return directions * norms[:, None]  # (m, D)


def _log_random_features(x: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``omega . x - |x|^2 / 2 - log(m) / 2``, the log of the positive random features."""
    m = omega.shape[0]
    return x @ omega.T - 0.5 * np.sum(x * x, axis=-1, keepdims=True) - 0.5 * float(np.log(m))  # (..., m)


def _check_omega(x: np.ndarray, omega) -> np.ndarray:
    omega = as_array(omega, "omega", ndim=2)
    if omega.shape[1] != x.shape[-1]:
        raise ValueError(
            f"omega must have shape (m, D) with x's D={x.shape[-1]} (x has shape {x.shape}), "
            f"got omega {omega.shape}"
        )
    check_finite(omega, "omega")
    return omega


def random_feature_map(x, omega) -> np.ndarray:
    r"""Positive random features of the softmax kernel (FAVOR+).

    .. math::

        \phi(x) = \frac{1}{\sqrt m}\Bigl(e^{\omega_1^\top x - \|x\|^2/2}, \dots,
                  e^{\omega_m^\top x - \|x\|^2/2}\Bigr),
        \qquad \mathbb{E}_\omega\bigl[\phi(x)^\top \phi(y)\bigr] = e^{x^\top y}

    for :math:`\omega_i \sim \mathcal N(0, I_D)`, because
    :math:`\mathbb{E}[e^{\omega^\top (x + y)}] = e^{\|x + y\|^2 / 2}`.

    Parameters
    ----------
    x : array_like, shape (..., D)
    omega : array_like, shape (m, D)
        Projections, from :func:`draw_gaussian_features` or :func:`draw_orthogonal_features`.

    Returns
    -------
    ndarray, shape (..., m)
        Strictly positive.

    Notes
    -----
    Positivity is the point of FAVOR+: the trigonometric features :math:`(\sin, \cos)` of
    random Fourier features estimate the same kernel but can give negative estimates of
    attention weights and a normaliser near zero. Each single estimate has variance
    :math:`e^{2x^\top y}\,(e^{\|x+y\|^2} - 1)/m` (with independent rows), which the Monte Carlo
    test uses as its margin. Oracle: the identity above, checked by Monte Carlo.
    """
    x = as_array(x, "x", allow_int=True)
    check_finite(x, "x")
    omega = _check_omega(x, omega)
    dtype = work_dtype(x, omega)
    features = np.exp(_log_random_features(x.astype(dtype, copy=False), omega.astype(dtype, copy=False)))
    return features.astype(np.result_type(x, omega), copy=False)  # (..., m)


def performer_attention(q, k, v, *, n_features: int, seed: int, scale=None) -> np.ndarray:
    r"""Softmax attention approximated with positive orthogonal random features (Performer).

    .. math::

        \operatorname{softmax}(s\, Q K^\top) V \approx
        \frac{\phi(\sqrt{s}\,Q)\bigl(\phi(\sqrt{s}\,K)^\top V\bigr)}
             {\phi(\sqrt{s}\,Q)\bigl(\phi(\sqrt{s}\,K)^\top \mathbf 1\bigr)},
        \qquad s = 1/\sqrt{D} \text{ by default},

    with :math:`\phi` = :func:`random_feature_map` on :func:`draw_orthogonal_features`.

    Parameters
    ----------
    q, k, v : ndarray, shapes (B, H, L, D), (B, H_kv, S, D), (B, H_kv, S, D_v)
    n_features : int
        :math:`m`, the number of random features (:math:`D_\phi`).
    seed : int
        Seed of the projections; one ``(m, D)`` draw is shared by every head.
    scale : float, optional
        Score scale :math:`s`; queries and keys are each multiplied by :math:`\sqrt{s}`
        (:math:`D^{-1/4}` by default) so that :math:`\phi(q)^\top\phi(k)` estimates
        :math:`e^{s\, q^\top k}`.

    Returns
    -------
    ndarray, shape (B, H, L, D_v)

    Notes
    -----
    Non-causal. The features are computed in the log domain and shifted before the
    exponential: by the maximum over features for each query (a per-query constant, which
    cancels between numerator and denominator) and by the maximum over all keys and features of
    a head (a per-head constant, which also cancels). The result is the same ratio without
    overflow. Numerator and denominator are each unbiased; their ratio is not exactly unbiased,
    and its error shrinks like :math:`1/\sqrt m` only asymptotically, with a constant that grows
    with :math:`\|q + k\|^2`; for smaller ``m`` it falls more slowly. The relative variance of one feature,
    :math:`e^{s\|q + k\|^2} - 1`, grows quickly with the norms: for unit-normal entries in
    :math:`D = 8` thousands of features still leave errors of order 0.1. Oracle:
    :func:`attnmath.attention.scaled_dot_product_attention`, approached as ``n_features`` grows.
    """
    n_features = check_positive_int(n_features, "n_features")
    seed = check_seed(seed)
    prob = prepare(q, k, v, scale=scale)
    if prob.scale <= 0:
        raise ValueError(f"scale must be positive for the softmax kernel estimate, got {prob.scale}")
    omega = draw_orthogonal_features(n_features, prob.q5.shape[-1], seed).astype(prob.dtype)  # (m, D)
    root = np.sqrt(prob.scale)
    log_q = _log_random_features(prob.q5 * root, omega)  # (B, H_kv, g, L, m)
    log_k = _log_random_features(prob.k5 * root, omega)  # (B, H_kv, 1, S, m)
    if prob.S == 0:  # no key: zeros, as softmax attention
        return prob.finish(np.zeros(prob.q5.shape[:-1] + (prob.v5.shape[-1],), dtype=prob.dtype))
    phi_q = np.exp(log_q - log_q.max(axis=-1, keepdims=True))  # (B, H_kv, g, L, m)
    phi_k = np.exp(log_k - log_k.max(axis=(-2, -1), keepdims=True))  # (B, H_kv, 1, S, m)
    kv = np.swapaxes(phi_k, -1, -2) @ prob.v5  # (B, H_kv, 1, m, D_v)
    z = phi_k.sum(axis=-2)  # (B, H_kv, 1, m)
    num = phi_q @ kv  # (B, H_kv, g, L, D_v)
    den = np.einsum("...lf,...f->...l", phi_q, z)  # (B, H_kv, g, L)
    return prob.finish(num / den[..., None])  # (B, H, L, D_v)


def attention_flops(L: int, S: int, D: int, D_v: int) -> int:
    r"""Floating-point operations of the two products of softmax attention, for one head.

    .. math:: F = \underbrace{2 L S D}_{Q K^\top} + \underbrace{2 L S D_v}_{P V}

    Notes
    -----
    Convention: an ``(a, b) @ (b, c)`` product costs :math:`2abc` (one multiply and one add per
    term), the count of ``torch.utils.flop_counter.FlopCounterMode``, which is the oracle. The
    softmax (:math:`O(LS)`) and the scaling are lower order and not counted. Quadratic in the
    length: :math:`4 n^2 d` for :math:`L = S = n`, :math:`D = D_v = d`.
    """
    L, S, D, D_v = (check_positive_int(x, n) for x, n in ((L, "L"), (S, "S"), (D, "D"), (D_v, "D_v")))
    return 2 * L * S * D + 2 * L * S * D_v


def linear_attention_flops(L: int, S: int, D_phi: int, D_v: int) -> int:
    r"""Floating-point operations of the products of :func:`linear_attention`, for one head.

    .. math::

        F = \underbrace{2 S D_\phi D_v}_{\phi(K)^\top V}
          + \underbrace{2 S D_\phi}_{\phi(K)^\top \mathbf 1}
          + \underbrace{2 L D_\phi D_v}_{\phi(Q)\,(\phi(K)^\top V)}
          + \underbrace{2 L D_\phi}_{\phi(Q)\,z}

    Notes
    -----
    Same convention as :func:`attention_flops` (feature maps and the final division are
    lower order and not counted). Linear in the length: :math:`4 n d (d + 1)` for
    :math:`L = S = n` and :math:`D_\phi = D_v = d`, so it is cheaper than softmax attention
    exactly when :math:`n > d + 1`. In general this is :math:`O(n\, D_\phi D_v)`, i.e.
    :math:`O(n d^2)`, not :math:`O(n d)`. Oracle: ``FlopCounterMode`` on the same products.
    """
    L, S, D_phi, D_v = (check_positive_int(x, n)
                        for x, n in ((L, "L"), (S, "S"), (D_phi, "D_phi"), (D_v, "D_v")))
    return 2 * S * D_phi * D_v + 2 * S * D_phi + 2 * L * D_phi * D_v + 2 * L * D_phi
