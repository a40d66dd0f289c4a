r"""Position information for attention: sinusoidal encodings, rotary embeddings (RoPE) and ALiBi.

Attention without positions is permutation-equivariant: permuting the tokens permutes the
output rows the same way. Three ways of breaking that symmetry live here.

* **Sinusoidal encoding** (Vaswani et al., 2017), added to the token embeddings:

  .. math::

      PE_{p,2i} = \sin(\omega_i p), \qquad PE_{p,2i+1} = \cos(\omega_i p), \qquad
      \omega_i = \text{base}^{-2i/C}.

* **Rotary embedding** (Su et al., RoFormer), applied to queries and keys: each pair of
  coordinates is rotated by the angle :math:`m\theta_i`, so that the score
  :math:`(R_m q)\cdot(R_n k) = q \cdot R_{n-m} k` depends on the positions only through
  :math:`n - m`.

* **ALiBi** (Press et al., 2022), added to the scores: query :math:`i` and key :math:`j` get the
  bias :math:`-m_h (i - j)`, a per-head linear penalty on the distance.

Shape legend: ``B`` batch, ``H`` query heads, ``L`` query length, ``S`` key/value length,
``D`` head dim, ``C`` model width.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ._validate import (
    FloatArray,
    as_array,
    check_finite,
    check_alignment,
    check_int,
    check_int_array,
    check_positive_int,
    check_real,
    work_dtype,
)

__all__ = [
    "alibi_bias",
    "alibi_bias_symmetric",
    "alibi_slopes",
    "apply_rope",
    "apply_rope_half",
    "apply_rope_half_inverse",
    "apply_rope_inverse",
    "half_to_interleaved",
    "interleaved_to_half",
    "relative_rotation_matrix",
    "rope_angles",
    "sinusoidal_dot_product",
    "sinusoidal_encoding",
    "sinusoidal_frequencies",
]


# ----------------------------------------------------------------------------------------------
# input checks
# ----------------------------------------------------------------------------------------------


def _check_even(value, name: str) -> int:
    value = check_positive_int(value, name)
    if value % 2:
        raise ValueError(
            f"{name} must be even (coordinates are rotated in pairs), got {name}={value}"
        )
    return value


# ----------------------------------------------------------------------------------------------
# sinusoidal encoding
# ----------------------------------------------------------------------------------------------


def sinusoidal_frequencies(C: int, *, base: float = 10000.0) -> FloatArray:
    r"""The angular frequencies of the sinusoidal encoding (and of RoPE).

    .. math:: \omega_i = \text{base}^{-2i/C}, \qquad i = 0, 1, \dots, C/2 - 1 .

    Parameters
    ----------
    C : int
        Model width (or head dim ``D`` for RoPE); positive and even.
    base : float
        The wavelength scale; the wavelengths :math:`2\pi/\omega_i` run geometrically from
        :math:`2\pi` to almost :math:`2\pi\,\text{base}`. Default 10000 as in the paper.

    Returns
    -------
    ndarray, shape (C/2,)
        Decreasing from :math:`\omega_0 = 1`.

    Notes
    -----
    Tested against the paper's formula evaluated term by term with ``math.pow``.
    """
    C = _check_even(C, "C")
    base = check_real(base, "base", positive=True)
    two_i = np.arange(0, C, 2, dtype=np.float64)  # (C/2,)
    return base ** (-two_i / C)  # (C/2,)


def sinusoidal_encoding(L: int, C: int, *, base: float = 10000.0) -> FloatArray:
    r"""The sinusoidal position encoding of Vaswani et al. (2017) for positions ``0 .. L-1``.

    .. math::

        PE_{p,\,2i} = \sin(\omega_i p), \qquad PE_{p,\,2i+1} = \cos(\omega_i p), \qquad
        \omega_i = \text{base}^{-2i/C}.

    Parameters
    ----------
    L : int
        Number of positions (>= 1).
    C : int
        Model width; positive and even.
    base : float
        See :func:`sinusoidal_frequencies`.

    Returns
    -------
    ndarray, shape (L, C)
        Row ``p`` is the encoding of position ``p``; sine and cosine of the same frequency are
        interleaved in columns ``2i, 2i+1``.

    Notes
    -----
    An odd ``C`` raises ``ValueError``. The formula itself could be evaluated for odd ``C``
    (the last column would be a sine without its cosine), but then the shift
    :math:`PE_{p+k} = T_k PE_p` is no longer linear in :math:`PE_p` (the missing cosine is
    needed by :math:`\sin(a+b) = \sin a\cos b + \cos a \sin b`), so the property the encoding is
    chosen for is lost. Implementations that interleave with ``pe[:, 1::2] = cos(...)`` fail on
    odd ``C`` with a broadcasting error; here the error says what is wrong.

    Oracle: the paper's formula evaluated entry by entry with ``math.sin``/``math.cos``.
    """
    L = check_positive_int(L, "L")
    omega = sinusoidal_frequencies(C, base=base)  # (C/2,)
    C = 2 * omega.shape[0]
    angles = np.arange(L, dtype=np.float64)[:, None] * omega[None, :]  # (L, C/2)
    pe = np.empty((L, C), dtype=np.float64)  # (L, C)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def relative_rotation_matrix(k: int, C: int, *, base: float = 10000.0) -> FloatArray:
    r"""The matrix :math:`T_k` that shifts a sinusoidal encoding by ``k`` positions.

    .. math::

        \begin{aligned}
        &PE_{p+k} = T_k\, PE_p \quad \text{(column vectors)}, \\
        &T_k = \operatorname{blockdiag}_i \begin{pmatrix} \cos\omega_i k & \sin\omega_i k \\ -\sin\omega_i k &
          \cos\omega_i k \end{pmatrix}.
        \end{aligned}

    Derivation, for one frequency with :math:`(s, c) = (\sin\omega p, \cos\omega p)`:

    .. math::

        \sin\omega(p+k) &= s\cos\omega k + c\sin\omega k, \\
        \cos\omega(p+k) &= c\cos\omega k - s\sin\omega k .

    Parameters
    ----------
    k : int
        The shift (any sign).
    C : int
        Model width; positive and even.
    base : float
        See :func:`sinusoidal_frequencies`.

    Returns
    -------
    ndarray, shape (C, C)
        Block diagonal, orthogonal, independent of the position ``p``. For rows of
        :func:`sinusoidal_encoding`: ``pe[p + k] == pe[p] @ T_k.T``.

    Notes
    -----
    Each block is a rotation by :math:`-\omega_i k` (clockwise), not the counter-clockwise
    :math:`\begin{pmatrix}\cos & -\sin\\ \sin & \cos\end{pmatrix}` used by RoPE: the pair is
    stored in the order (sin, cos), i.e. (y, x), and swapping the two coordinates reverses the
    orientation. With the counter-clockwise block one gets :math:`PE_{p-k}` instead. In matrix
    form :math:`T_a T_b = T_{a+b}`, :math:`T_{-k} = T_k^\top = T_k^{-1}`, :math:`T_0 = I`.

    Oracle: the rows of :func:`sinusoidal_encoding` (``pe[p + k] = T_k pe[p]`` for all ``p``).
    """
    k = check_int(k, "k")
    omega = sinusoidal_frequencies(C, base=base)  # (C/2,)
    C = 2 * omega.shape[0]
    cos, sin = np.cos(omega * k), np.sin(omega * k)  # (C/2,) each
    T = np.zeros((C, C), dtype=np.float64)  # (C, C)
    idx = np.arange(0, C, 2)
    T[idx, idx] = cos
    T[idx, idx + 1] = sin
    T[idx + 1, idx] = -sin
    T[idx + 1, idx + 1] = cos
    return T


def sinusoidal_dot_product(
    C: int, offsets: ArrayLike, *, base: float = 10000.0
) -> FloatArray:
    r"""The inner product of two sinusoidal encodings as a function of their offset.

    .. math::

        \begin{aligned}
        PE_p \cdot PE_{p+k} &= \sum_{i=0}^{C/2-1} \bigl(\sin\omega_i p\,\sin\omega_i (p+k) \\
        &\qquad + \cos\omega_i p\,\cos\omega_i (p+k)\bigr) \\
        &= \sum_{i=0}^{C/2-1} \cos(\omega_i k).
        \end{aligned}

    Parameters
    ----------
    C : int
        Model width; positive and even.
    offsets : array_like of int, any shape
        The offsets :math:`k`.
    base : float
        See :func:`sinusoidal_frequencies`.

    Returns
    -------
    ndarray, same shape as ``offsets``

    Notes
    -----
    The product depends only on :math:`k`, not on :math:`p`; it is even in :math:`k` (so it
    cannot tell whether a token lies before or after another); it equals :math:`C/2` at
    :math:`k = 0`, its strict maximum over integers, and decays on average with :math:`|k|`
    but not monotonically, and can become negative for large :math:`|k|`.

    Oracle: dot products of rows of :func:`sinusoidal_encoding` at several positions.
    """
    omega = sinusoidal_frequencies(C, base=base)  # (C/2,)
    k = check_int_array(offsets, "offsets").astype(np.float64)  # (...)
    return np.cos(k[..., None] * omega).sum(axis=-1)  # (...)


# ----------------------------------------------------------------------------------------------
# rotary position embedding
# ----------------------------------------------------------------------------------------------


def rope_angles(positions: ArrayLike, D: int, *, base: float = 10000.0) -> FloatArray:
    r"""The rotation angles of RoPE, :math:`m\,\theta_i` for each position and pair.

    .. math:: \text{angle}_{m,i} = m\,\theta_i, \qquad \theta_i = \text{base}^{-2i/D}, \quad
              i = 0, \dots, D/2 - 1 .

    Parameters
    ----------
    positions : array_like of int, shape (L,)
        Token positions :math:`m` (any integers; they need not start at 0 or be sorted); shape
        ``(B, L)`` gives every sequence its own positions.
    D : int
        Head dim; positive and even.
    base : float
        Default 10000 as in RoFormer.

    Returns
    -------
    ndarray, shape (L, D/2), or (B, L, D/2) for positions (B, L)

    Notes
    -----
    The frequencies are those of the sinusoidal encoding with ``C = D``.
    Oracle: the formula evaluated with ``math.pow`` entry by entry.
    """
    D = _check_even(D, "D")
    pos = check_int_array(positions, "positions")  # (..., L)
    if pos.ndim == 0:
        raise ValueError(f"positions must have shape (L,) or (B, L), got a scalar {int(pos)}")
    theta = sinusoidal_frequencies(D, base=base)  # (D/2,)
    return pos.astype(np.float64)[..., None] * theta  # (..., L, D/2)


def _rope_inputs(
    x: ArrayLike, positions: ArrayLike, base: float
) -> tuple[FloatArray, FloatArray, np.dtype]:
    """``x`` in its working dtype, the float64 angles shaped to broadcast against it ((L, D/2)
    or (B, 1, .., L, D/2)), and the dtype of the result."""
    x = as_array(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., L, D) with at least 2 dimensions, got shape {x.shape}")
    L, D = x.shape[-2:]
    if D == 0 or D % 2:
        raise ValueError(f"the last dimension D of x must be even and >= 2 for RoPE, got D={D} (x.shape={x.shape})")
    check_finite(x, "x")
    pos = check_int_array(positions, "positions")
    if pos.ndim == 1:
        if pos.shape[0] != L:
            raise ValueError(f"positions must have length L={L} (x.shape[-2]), got shape {pos.shape}")
    elif pos.ndim == 2:
        if x.ndim < 3 or pos.shape != (x.shape[0], L):
            raise ValueError(
                f"per-sequence positions must have shape (B, L) = (x.shape[0], x.shape[-2]) for x of "
                f"shape (B, ..., L, D), got positions {pos.shape} and x {x.shape}"
            )
    else:
        raise ValueError(f"positions must have shape (L,) or (B, L), got shape {pos.shape}")
    angles = rope_angles(pos, D, base=base)  # (L, D/2) or (B, L, D/2)
    if pos.ndim == 2:  # one axis per axis of x between the batch and L (heads): (B, 1, .., L, D/2)
        angles = angles.reshape(angles.shape[0], *([1] * (x.ndim - 3)), L, D // 2)
    work = work_dtype(x)  # half precision is rotated in float32, returned in float16
    return x.astype(work, copy=False), angles, x.dtype


def _rotate_interleaved(x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # (L, D/2) each
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., L, D/2) each
    out = np.empty_like(x)  # (..., L, D)
    out[..., 0::2] = x_even * cos - x_odd * sin
    out[..., 1::2] = x_even * sin + x_odd * cos
    return out


def _rotate_half(x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    D = x.shape[-1]
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # (L, D/2) each
    x1, x2 = x[..., : D // 2], x[..., D // 2 :]  # (..., L, D/2) each
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)  # (..., L, D)


def apply_rope(
    x: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:
    r"""Rotary position embedding, interleaved pairing ``(2i, 2i+1)`` as in RoFormer.

    .. math::

        \begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
        \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
        \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}, \qquad \theta_i = \text{base}^{-2i/D},

    i.e. :math:`x' = R_m x` with :math:`R_m` block diagonal. Then
    :math:`(R_m q)\cdot(R_n k) = q^\top R_{n-m} k`, a function of :math:`n - m` only.

    Parameters
    ----------
    x : array_like, shape (..., L, D)
        Queries or keys, e.g. ``(B, H, L, D)``; ``D`` even.
    positions : array_like of int, shape (L,) or (B, L)
        The position :math:`m` of each row; ``(B, L)`` gives each sequence its own positions
        (left padding, packed sequences), broadcast over the axes between ``B`` and ``L``
        (the heads), as Hugging Face's ``position_ids``.
    base : float
        Default 10000.

    Returns
    -------
    ndarray, shape (..., L, D)

    Notes
    -----
    Convention: coordinates ``2i`` and ``2i+1`` form pair ``i`` (RoFormer, and the complex view
    :math:`z_i = x_{2i} + \mathrm{i}\,x_{2i+1} \mapsto e^{\mathrm{i} m\theta_i} z_i`).
    GPT-NeoX and the Hugging Face LLaMA code pair ``i`` with ``i + D/2`` instead: see :func:`apply_rope_half`
    and :func:`interleaved_to_half`; the two differ by a fixed permutation of the coordinates,
    which a learned projection absorbs, but weights trained under one convention give wrong
    scores under the other.

    The result has the dtype of ``x``; float16 is rotated in float32, and the angles
    :math:`m\theta_i` and their cosines are always formed in float64.

    RoPE is an orthogonal linear map of ``x``, so its vector-Jacobian product is the rotation
    by the opposite angle, :func:`apply_rope_inverse` applied to the output gradient; no cache
    is needed.

    Oracle: complex multiplication :math:`e^{\mathrm{i} m\theta_i}(x_{2i} + \mathrm{i}\,x_{2i+1})`
    in the tests, and the gradient from ``torch.autograd``.
    """
    base = check_real(base, "base", positive=True)
    x, angles, dtype = _rope_inputs(x, positions, base)  # (..., L, D), (.., L, D/2)
    return _rotate_interleaved(x, angles).astype(dtype, copy=False)  # (..., L, D)


def apply_rope_inverse(
    x: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:
    r"""Undo :func:`apply_rope`: rotate each pair by :math:`-m\theta_i`; also its VJP.

    .. math:: x = R_m^\top x' = R_{-m} x', \qquad
              \frac{\partial \ell}{\partial x} = R_m^\top \frac{\partial \ell}{\partial x'} .

    Parameters
    ----------
    x : array_like, shape (..., L, D)
        Rotated vectors, or the gradient with respect to the output of :func:`apply_rope`.
    positions : array_like of int, shape (L,) or (B, L)
    base : float

    Returns
    -------
    ndarray, shape (..., L, D)

    Notes
    -----
    Oracle: ``torch.autograd`` gradient of ``sum(apply_rope(x) * dout)`` and central
    differences; and ``apply_rope_inverse(apply_rope(x)) == x``.
    """
    base = check_real(base, "base", positive=True)
    x, angles, dtype = _rope_inputs(x, positions, base)  # (..., L, D), (.., L, D/2)
    return _rotate_interleaved(x, -angles).astype(dtype, copy=False)  # (..., L, D)


def apply_rope_half(
    x: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:
    r"""Rotary position embedding, "rotate-half" pairing ``(i, i + D/2)`` (GPT-NeoX; Hugging Face LLaMA, whose weight conversion permutes Meta's interleaved pairs).

    .. math::

        \begin{aligned}
        &x' = x \odot \cos(\Theta_m) + \operatorname{rotate\_half}(x) \odot \sin(\Theta_m), \\
        &\operatorname{rotate\_half}(x_1, x_2) = (-x_2, x_1),
        \end{aligned}

    where :math:`x = (x_1, x_2)` splits the last axis in halves and
    :math:`\Theta_m = (m\theta_0, \dots, m\theta_{D/2-1}, m\theta_0, \dots, m\theta_{D/2-1})`.
    Pair :math:`i` is :math:`(x_i, x_{i+D/2})`, rotated by :math:`m\theta_i`.

    Parameters
    ----------
    x : array_like, shape (..., L, D)
    positions : array_like of int, shape (L,) or (B, L)
    base : float

    Returns
    -------
    ndarray, shape (..., L, D)

    Notes
    -----
    ``apply_rope_half(interleaved_to_half(x)) == interleaved_to_half(apply_rope(x))``: the two
    conventions are the same rotation after permuting coordinates. Oracle: that identity, with
    :func:`apply_rope` checked independently against complex multiplication.
    """
    base = check_real(base, "base", positive=True)
    x, angles, dtype = _rope_inputs(x, positions, base)  # (..., L, D), (.., L, D/2)
    return _rotate_half(x, angles).astype(dtype, copy=False)  # (..., L, D)


def apply_rope_half_inverse(
    x: ArrayLike, positions: ArrayLike, *, base: float = 10000.0
) -> FloatArray:
    r"""Undo :func:`apply_rope_half` (rotation by :math:`-m\theta_i`); also its VJP.

    .. math:: x = R^{\text{half}\,\top}_m x'

    Parameters
    ----------
    x : array_like, shape (..., L, D)
    positions : array_like of int, shape (L,) or (B, L)
    base : float

    Returns
    -------
    ndarray, shape (..., L, D)

    Notes
    -----
    Oracle: ``torch.autograd`` gradient of ``sum(apply_rope_half(x) * dout)``.
    """
    base = check_real(base, "base", positive=True)
    x, angles, dtype = _rope_inputs(x, positions, base)  # (..., L, D), (.., L, D/2)
    return _rotate_half(x, -angles).astype(dtype, copy=False)  # (..., L, D)


def interleaved_to_half(x: ArrayLike) -> FloatArray:
    r"""Permute the last axis from interleaved pairs to half-split pairs.

    .. math:: (x_0, x_1, x_2, x_3, \dots, x_{D-2}, x_{D-1}) \mapsto
              (x_0, x_2, \dots, x_{D-2},\; x_1, x_3, \dots, x_{D-1})

    Parameters
    ----------
    x : array_like, shape (..., D)
        ``D`` even. Use it on the columns of a query/key projection weight ``W`` of shape
        ``(C, D)`` to move a model between the two RoPE conventions.

    Returns
    -------
    ndarray, shape (..., D)

    Notes
    -----
    Pair ``(2i, 2i+1)`` lands on ``(i, i + D/2)``, so
    ``apply_rope_half(interleaved_to_half(x)) == interleaved_to_half(apply_rope(x))`` and the
    attention scores are unchanged (a permutation is orthogonal). Inverse:
    :func:`half_to_interleaved`. Values are moved as they are: NaN and infinities pass through.
    """
    x = as_array(x, "x")
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dimension, got shape {x.shape}")
    D = x.shape[-1]
    if D % 2:
        raise ValueError(f"the last dimension D of x must be even, got D={D} (x.shape={x.shape})")
    return np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)  # (..., D)


def half_to_interleaved(x: ArrayLike) -> FloatArray:
    r"""Inverse of :func:`interleaved_to_half`.

    .. math:: (y_0, \dots, y_{D/2-1}, y_{D/2}, \dots, y_{D-1}) \mapsto
              (y_0, y_{D/2}, y_1, y_{D/2+1}, \dots)

    Parameters
    ----------
    x : array_like, shape (..., D)
        ``D`` even.

    Returns
    -------
    ndarray, shape (..., D)

    Notes
    -----
    Oracle: round trips with :func:`interleaved_to_half` both ways. Values are moved as they
    are: NaN and infinities pass through.
    """
    x = as_array(x, "x")
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dimension, got shape {x.shape}")
    D = x.shape[-1]
    if D % 2:
        raise ValueError(f"the last dimension D of x must be even, got D={D} (x.shape={x.shape})")
    out = np.empty_like(x)  # (..., D)
    out[..., 0::2] = x[..., : D // 2]
    out[..., 1::2] = x[..., D // 2 :]
    return out


# ----------------------------------------------------------------------------------------------
# ALiBi
# ----------------------------------------------------------------------------------------------


def _slopes_power_of_two(n: int) -> list[float]:
    start = 2.0 ** (-8.0 / n)
    return [start ** (h + 1) for h in range(n)]


def alibi_slopes(H: int) -> FloatArray:
    r"""The per-head ALiBi slopes :math:`m_h` of Press et al. (2022).

    For :math:`H` a power of two, the geometric sequence

    .. math:: m_h = 2^{-8(h+1)/H}, \qquad h = 0, \dots, H - 1,

    which starts at :math:`2^{-8/H}` with ratio :math:`2^{-8/H}` and ends at :math:`2^{-8}`.
    Otherwise, with :math:`n = 2^{\lfloor \log_2 H \rfloor}`, the :math:`n` slopes for
    :math:`n` heads followed by the first :math:`H - n` entries of every other slope
    (indices 0, 2, 4, ...) for :math:`2n` heads.

    Parameters
    ----------
    H : int
        Number of heads (>= 1).

    Returns
    -------
    ndarray, shape (H,)
        Positive and below 1 (the largest is :math:`2^{-8/H}` for a power of two).

    Notes
    -----
    The non-power-of-two rule is the one of the authors' reference code; the paper only says
    the slopes for 8 heads are :math:`1/2, 1/4, \dots, 1/256`. The extra slopes interleave
    between the first ones, so for :math:`H = 6` the slopes are
    :math:`1/4, 1/16, 1/64, 1/256, 1/2, 1/8` (not sorted).

    Oracle: hand-computed values for ``H = 8``, ``H = 6`` and ``H = 12``.
    """
    H = check_positive_int(H, "H")
    n = 1 << (H.bit_length() - 1)  # largest power of two <= H
    slopes = _slopes_power_of_two(n)
    if n < H:
        slopes += _slopes_power_of_two(2 * n)[0::2][: H - n]
    return np.asarray(slopes, dtype=np.float64)  # (H,)


def _query_key_distance(L: int, S: int, alignment: str) -> np.ndarray:
    """``i - j`` with the queries placed by ``alignment``; shape (L, S)."""
    offset = 0 if alignment == "top_left" else S - L
    i = np.arange(L)[:, None] + offset  # (L, 1) position of query i
    j = np.arange(S)[None, :]  # (1, S)
    return (i - j).astype(np.float64)  # (L, S)


def alibi_bias(
    H: int, L: int, S: int | None = None, *, alignment: str = "top_left"
) -> FloatArray:
    r"""The causal ALiBi bias added to the attention scores, one matrix per head.

    .. math::

        \begin{aligned}
        &\text{bias}_{h,i,j} = \begin{cases} -m_h\,(i - j) & j \le i \\ 0 & j > i \end{cases}, \\
        &\operatorname{softmax}_j\!\left(\frac{q_i\cdot k_j}{\sqrt{D}} + \text{bias}_{h,i,j}\right).
        \end{aligned}

    Parameters
    ----------
    H : int
        Number of heads (>= 1); slopes from :func:`alibi_slopes`.
    L : int
        Query length (>= 1).
    S : int, optional
        Key length (>= 1); default ``L``.
    alignment : {"top_left", "bottom_right"}
        Where the queries sit among the keys when ``L != S``: ``"top_left"`` puts query ``i`` at
        position ``i`` (torch's ``is_causal``), ``"bottom_right"`` at ``i + S - L`` (the last
        query is the newest token, as in KV-cache decoding). Use the causal mask with the same
        alignment.

    Returns
    -------
    ndarray, shape (H, L, S)
        Broadcastable to ``(B, H, L, S)``; pass it as ``bias=`` together with the causal mask.

    Notes
    -----
    The bias is 0 for the nearest key (:math:`j = i`) and falls by :math:`m_h` per step into
    the past. Entries for future keys (:math:`j > i`) are 0; they are meaningful only together
    with the causal mask, which removes them (the mask stays a separate boolean argument).

    Row :math:`i` written as a vector over :math:`j = 0, \dots, i` is
    :math:`m\,[-i, \dots, -2, -1, 0]`, as in the paper. Writing it as
    :math:`m\,[0, -1, \dots, -i]` (index :math:`j \mapsto -m j`) penalises the *recent* keys
    and favours the oldest, the opposite of ALiBi. The reference code's
    :math:`j \mapsto +m j` is correct: it differs from :math:`-m(i - j)` by :math:`-m i`, a
    constant along the row, which softmax ignores.

    Oracle: ``torch.nn.functional.scaled_dot_product_attention`` with ``attn_mask`` = this bias
    plus ``-inf`` above the diagonal, in float64, against
    ``attnmath.attention.scaled_dot_product_attention(bias=..., mask=causal)``.
    """
    H = check_positive_int(H, "H")
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    alignment = check_alignment(alignment)
    dist = _query_key_distance(L, S, alignment)  # (L, S)
    dist = np.where(dist >= 0, dist, 0.0)  # (L, S) future keys: no bias (masked)
    slopes = alibi_slopes(H)  # (H,)
    return -slopes[:, None, None] * dist[None, :, :]  # (H, L, S)


def alibi_bias_symmetric(
    H: int, L: int, S: int | None = None, *, alignment: str = "top_left"
) -> FloatArray:
    r"""The bidirectional ALiBi bias, a penalty on the absolute distance.

    .. math:: \text{bias}_{h,i,j} = -m_h\,|i - j|

    Parameters
    ----------
    H : int
        Number of heads (>= 1).
    L : int
        Query length (>= 1).
    S : int, optional
        Key length (>= 1); default ``L``.
    alignment : {"top_left", "bottom_right"}
        Query ``i`` sits at position ``i`` or ``i + S - L``.

    Returns
    -------
    ndarray, shape (H, L, S)

    Notes
    -----
    For encoders (no causal mask). Symmetric in the sense that a key ``d`` steps before and a
    key ``d`` steps after the query get the same bias, so, like the sinusoidal dot product,
    the bias alone does not tell the direction. Equal to :func:`alibi_bias` on and below the
    diagonal. Oracle: torch's attention with this bias as ``attn_mask`` in float64.
    """
    H = check_positive_int(H, "H")
    L = check_positive_int(L, "L")
    S = L if S is None else check_positive_int(S, "S")
    alignment = check_alignment(alignment)
    dist = np.abs(_query_key_distance(L, S, alignment))  # (L, S)
    slopes = alibi_slopes(H)  # (H,)
    return -slopes[:, None, None] * dist[None, :, :]  # (H, L, S)
