r"""Torch modules: multi-head (grouped-query) attention and a Transformer encoder block.

.. math::

    \operatorname{MHA}(X_q, X_{kv}) = \operatorname{Concat}_h\Bigl(
        \operatorname{softmax}\bigl(Q_h K_{g(h)}^\top / \sqrt{D} + \mathrm{bias}_M\bigr) V_{g(h)}\Bigr)
        W_O + b_O

The attention core is ``torch.nn.functional.scaled_dot_product_attention`` (with ``enable_gqa``
when ``H_kv < H``), so these modules run on whatever kernel torch picks, in any dtype (float32 by
default, as torch). The weights are stored as in ``torch.nn.MultiheadAttention`` and
``torch.nn.TransformerEncoderLayer`` (``in_proj_weight``, ``out_proj``, ``linear1``, ``norm1`` ...),
so ``load_from_torch`` copies them one to one; ``to_numpy_params``/``from_numpy_params``
convert to and from the NumPy references in :mod:`attnmath.multihead` and
:mod:`attnmath.encoder`.

Masks are boolean with ``True`` = may attend (the convention of
``scaled_dot_product_attention``), broadcastable to ``(B, H, L, S)``; note that torch's
``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` use the opposite convention for
their boolean ``attn_mask``/``key_padding_mask`` (``True`` = blocked).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._validate import as_array, check_bool, check_heads, check_positive_int, check_probability, check_real
from .encoder import EncoderBlockParams
from .multihead import MultiHeadParams, params_to_in_proj

__all__ = ["MultiHeadAttention", "TransformerEncoderBlock"]


def _check_input(x, name: str, C: int, dtype: torch.dtype) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3 or x.shape[-1] != C:
        raise ValueError(f"{name} must have shape (B, L, C) with C={C}, got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(f"{name} must have the module's dtype {dtype}, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        kind = "NaN" if bool(torch.isnan(x).any()) else "an infinity"
        raise ValueError(f"{name} contains {kind}; it must be finite (mask entries with `mask` instead)")
    return x


def _to_tensor(a, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=like.dtype, device=like.device)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().to(torch.float64).numpy().copy()


def _to_numpy_or_none(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else _to_numpy(t)


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention with optional grouped key/value heads, layout ``(B, L, C)``.

    .. math::

        Q = X_q W_Q^\top + b_Q, \quad K = X_{kv} W_K^\top + b_K, \quad V = X_{kv} W_V^\top + b_V, \\
        \text{out} = \operatorname{Concat}_h\bigl(\operatorname{Attention}(Q_h, K_{g(h)}, V_{g(h)})\bigr)
        W_O^\top + b_O,
        \qquad g(h) = \lfloor h H_{kv} / H \rfloor .

    Parameters
    ----------
    C : int
        Model width (``embed_dim``), divisible by ``H``; head dim ``D = C // H``.
    H : int
        Query heads.
    H_kv : int, optional
        Key/value heads (default ``H``); must divide ``H``. ``H_kv = 1`` is multi-query attention.
    bias : bool
        Biases on the input and output projections.
    dropout : float
        Dropout on the attention weights, active in training mode only.
    device, dtype
        Factory arguments of the parameters (float32 by default).

    Attributes
    ----------
    in_proj_weight : Parameter, shape ((H + 2 H_kv) D, C)
        Rows ``[0, HD)`` map to queries, then ``H_kv D`` rows each for keys and values (torch's
        ``nn.MultiheadAttention`` layout for ``H_kv = H``), applied as ``x @ W.T``.
    in_proj_bias : Parameter of shape ((H + 2 H_kv) D,), or None
    out_proj : nn.Linear(C, C)

    Notes
    -----
    Oracles: ``torch.nn.MultiheadAttention(batch_first=True)`` with the same weights (outputs,
    weights and autograd gradients in float64), a ``repeat_interleave`` reference for grouped
    heads, and :func:`attnmath.multihead.multihead_attention` through
    :meth:`to_numpy_params`. Differences from ``nn.MultiheadAttention``: masks mean ``True`` =
    may attend; a fully masked query row gives a zero attention output in both paths (torch's
    module gives NaN when ``need_weights=True``); ``need_weights=True`` returns per-head weights
    ``(B, H, L, S)`` before dropout instead of their head average.
    """

    def __init__(self, C: int, H: int, H_kv: int | None = None, bias: bool = True, dropout: float = 0.0,
                 *, device=None, dtype=None):
        super().__init__()
        C, H, H_kv = check_heads(C, H, H_kv)
        bias = check_bool(bias, "bias")
        self.C, self.H, self.H_kv, self.D = C, H, H_kv, C // H
        self.dropout = check_probability(dropout, "dropout")
        factory = {"device": device, "dtype": dtype}
        n_in = (H + 2 * H_kv) * self.D
        self.in_proj_weight = nn.Parameter(torch.empty(n_in, C, **factory))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(n_in, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(C, C, bias=bias, **factory)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections and zero biases, as ``nn.MultiheadAttention``."""
        nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.zeros_(self.in_proj_bias)
            nn.init.zeros_(self.out_proj.bias)

    def extra_repr(self) -> str:
        bias = self.in_proj_bias is not None
        return f"C={self.C}, H={self.H}, H_kv={self.H_kv}, bias={bias}, dropout={self.dropout}"

    def _check_mask(self, mask, B: int, L: int, S: int):
        if mask is None:
            return None
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"mask must be a boolean torch.Tensor, got {type(mask).__name__}")
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
        target = (B, self.H, L, S)
        try:
            ok = torch.broadcast_shapes(mask.shape, target) == torch.Size(target)
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to (B, H, L, S) = {target}"
            )
        return mask

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor | None = None, *,
                mask: torch.Tensor | None = None, is_causal: bool = False, need_weights: bool = False):
        r"""Attend from ``x_q`` to ``x_kv`` (to ``x_q`` itself when ``x_kv`` is None).

        Parameters
        ----------
        x_q : Tensor, shape (B, L, C)
        x_kv : Tensor of shape (B, S, C), optional
            Keys' and values' input; ``None`` for self-attention.
        mask : Tensor of bool, optional
            ``True`` = may attend, broadcastable to ``(B, H, L, S)``.
        is_causal : bool
            Add the causal mask, top-left aligned as torch's ``is_causal`` (query ``i`` sees keys
            ``j <= i``); combined with ``mask`` by AND.
        need_weights : bool
            Also return the attention weights (computed without the fused kernel).

        Returns
        -------
        out : Tensor, shape (B, L, C)
            Returned alone when ``need_weights`` is False.
        weights : Tensor, shape (B, H, L, S)
            Only with ``need_weights=True``: per-head weights before dropout; rows with every
            key masked are zero.
        """
        x_q = _check_input(x_q, "x_q", self.C, self.in_proj_weight.dtype)
        is_causal = check_bool(is_causal, "is_causal")
        need_weights = check_bool(need_weights, "need_weights")
        q, k, v = self._project(x_q, x_kv)  # (B, H, L, D), (B, H_kv, S, D) x2
        (B, H, L, D), H_kv, S = q.shape, self.H_kv, k.shape[-2]
        mask = self._check_mask(mask, B, L, S)
        if is_causal and mask is not None:
            causal = torch.ones(L, S, dtype=torch.bool, device=x_q.device).tril()  # (L, S)
            mask, is_causal = mask & causal, False  # (B, H, L, S) after broadcasting
        p = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = self._attention_with_weights(q, k, v, mask, is_causal, p)
        else:
            heads = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal, enable_gqa=H_kv < H
            )  # (B, H, L, D)
        out = self.out_proj(heads.transpose(1, 2).reshape(B, L, H * D))  # (B, L, C)
        return (out, weights) if need_weights else out

    def _project(self, x_q: torch.Tensor, x_kv: torch.Tensor | None):
        """Queries ``(B, H, L, D)``, keys and values ``(B, H_kv, S, D)``: one fused product for
        self-attention, two for cross-attention (``x_kv`` checked here)."""
        (B, L, _), H, H_kv, D = x_q.shape, self.H, self.H_kv, self.D
        w, b = self.in_proj_weight, self.in_proj_bias
        if x_kv is None or x_kv is x_q:
            S = L
            qkv = F.linear(x_q, w, b)  # (B, L, (H + 2 H_kv) D)
            q, k, v = qkv.split([H * D, H_kv * D, H_kv * D], dim=-1)  # (B, L, H D), (B, L, H_kv D) x2
        else:
            x_kv = _check_input(x_kv, "x_kv", self.C, w.dtype)
            if x_kv.shape[0] != B:
                raise ValueError(
                    f"x_q and x_kv must have the same batch size B, "
                    f"got {tuple(x_q.shape)} and {tuple(x_kv.shape)}"
                )
            S = x_kv.shape[1]
            q = F.linear(x_q, w[:H * D], None if b is None else b[:H * D])  # (B, L, H D)
            kv = F.linear(x_kv, w[H * D:], None if b is None else b[H * D:])  # (B, S, 2 H_kv D)
            k, v = kv.split([H_kv * D, H_kv * D], dim=-1)  # (B, S, H_kv D) x2
        return (q.view(B, L, H, D).transpose(1, 2),  # (B, H, L, D)
                k.view(B, S, H_kv, D).transpose(1, 2),  # (B, H_kv, S, D)
                v.view(B, S, H_kv, D).transpose(1, 2))  # (B, H_kv, S, D)

    def _attention_with_weights(self, q, k, v, mask, is_causal, p):
        """The attention written out, returning the weights ``(B, H, L, S)`` too."""
        B, H, L, D = q.shape
        S = k.shape[2]
        if self.H_kv < H:
            k = k.repeat_interleave(H // self.H_kv, dim=1)  # (B, H, S, D)
            v = v.repeat_interleave(H // self.H_kv, dim=1)  # (B, H, S, D)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)  # (B, H, L, S)
        if is_causal:
            mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()  # (L, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))  # (B, H, L, S)
            weights = torch.softmax(scores, dim=-1)  # (B, H, L, S); NaN in fully masked rows
            weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # (B, H, L, S)
        else:
            weights = torch.softmax(scores, dim=-1)  # (B, H, L, S)
        dropped = F.dropout(weights, p=p, training=p > 0.0)  # (B, H, L, S)
        return dropped @ v, weights  # (B, H, L, D), (B, H, L, S)

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a ``torch.nn.MultiheadAttention`` with the same ``C``, ``H`` and bias.

        Requires ``H_kv == H``, ``kdim == vdim == embed_dim`` and no ``add_bias_kv``. The
        layout flag ``batch_first`` of ``mha`` does not matter (only weights are copied); its
        dropout is not copied. Returns ``self``.
        """
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}")
        if (mha.embed_dim, mha.num_heads) != (self.C, self.H):
            raise ValueError(
                f"mha has C={mha.embed_dim}, H={mha.num_heads}; this module has C={self.C}, H={self.H}"
            )
        if self.H_kv != self.H:
            raise ValueError(
                f"nn.MultiheadAttention has H_kv = H; this module has H_kv={self.H_kv}, H={self.H}"
            )
        if not mha._qkv_same_embed_dim or mha.bias_k is not None:
            raise ValueError("mha must have kdim = vdim = embed_dim and add_bias_kv=False")
        if (mha.in_proj_bias is None) != (self.in_proj_bias is None):
            raise ValueError(
                f"bias mismatch: mha has bias={mha.in_proj_bias is not None}, "
                f"this module has bias={self.in_proj_bias is not None}"
            )
        self.in_proj_weight.copy_(mha.in_proj_weight)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if self.in_proj_bias is not None:
            self.in_proj_bias.copy_(mha.in_proj_bias)
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self

    def to_numpy_params(self) -> MultiHeadParams:
        """The weights as :class:`attnmath.multihead.MultiHeadParams` (float64, row-vector convention)."""
        HD, KD = self.H * self.D, self.H_kv * self.D
        w = _to_numpy(self.in_proj_weight)  # ((H + 2 H_kv) D, C)
        b = _to_numpy_or_none(self.in_proj_bias)
        b_q, b_k, b_v = (None, None, None) if b is None else (b[:HD], b[HD:HD + KD], b[HD + KD:])
        return MultiHeadParams(
            w[:HD].T.copy(), w[HD:HD + KD].T.copy(), w[HD + KD:].T.copy(),
            _to_numpy(self.out_proj.weight).T.copy(), b_q, b_k, b_v, _to_numpy_or_none(self.out_proj.bias),
        )

    @classmethod
    def from_numpy_params(cls, params: MultiHeadParams, H: int, H_kv: int | None = None, *,
                          dropout: float = 0.0, device=None, dtype=None) -> "MultiHeadAttention":
        """A module holding ``params`` (:class:`attnmath.multihead.MultiHeadParams`, ``D_v = D``).

        ``C`` is read from ``w_q``; the biases must be all present or all ``None``.
        """
        if not isinstance(params, MultiHeadParams):
            raise TypeError(f"params must be a MultiHeadParams, got {type(params).__name__}")
        in_w, in_b, out_w, out_b = params_to_in_proj(params)  # checks the shapes of params
        C = in_w.shape[1]
        if (in_b is None) != (out_b is None):
            raise ValueError("the biases params.b_q, b_k, b_v, b_o must be all present or all None")
        module = cls(C, H, H_kv, bias=in_b is not None, dropout=dropout, device=device, dtype=dtype)
        shapes = {"w_q": (C, module.H * module.D), "w_k": (C, module.H_kv * module.D),
                  "w_v": (C, module.H_kv * module.D), "w_o": (module.H * module.D, C)}
        for name, want in shapes.items():
            got = np.shape(getattr(params, name))
            if got != want:
                raise ValueError(
                    f"params.{name} must have shape {want} for C={C}, H={H}, H_kv={module.H_kv}, got {got}"
                )
        with torch.no_grad():
            module.in_proj_weight.copy_(_to_tensor(in_w, module.in_proj_weight))  # ((H + 2 H_kv) D, C)
            module.out_proj.weight.copy_(_to_tensor(out_w, module.out_proj.weight))  # (C, H D)
            if module.in_proj_bias is not None:
                module.in_proj_bias.copy_(_to_tensor(in_b, module.in_proj_bias))  # ((H + 2 H_kv) D,)
                module.out_proj.bias.copy_(_to_tensor(out_b, module.out_proj.bias))  # (C,)
        return module


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def _check_block_shapes(params: EncoderBlockParams, C: int, ffn_dim: int, *, bias: bool) -> None:
    """The feed-forward and layer-norm arrays of ``params`` against ``C`` and ``ffn_dim``."""
    want = {"w_2": (ffn_dim, C), "b_1": (ffn_dim,), "b_2": (C,), "ln1_gamma": (C,), "ln1_beta": (C,),
            "ln2_gamma": (C,), "ln2_beta": (C,)}
    for name, shape in want.items():
        value = getattr(params, name)
        if value is None and name in ("b_1", "b_2") and not bias:
            continue  # a block without biases has none to load
        got = np.shape(as_array(value, f"params.{name}"))
        if got != shape:
            raise ValueError(f"params.{name} must have shape {shape} for C={C}, ffn_dim={ffn_dim}, got {got}")


class TransformerEncoderBlock(nn.Module):
    r"""Transformer encoder block: self-attention and feed-forward sublayers with residuals and LayerNorm.

    .. math::

        \text{post-norm:}\quad y = \operatorname{LN}_1(x + \operatorname{MHA}(x)),\quad
        \text{out} = \operatorname{LN}_2(y + \operatorname{FFN}(y)) \\
        \text{pre-norm:}\quad y = x + \operatorname{MHA}(\operatorname{LN}_1(x)),\quad
        \text{out} = y + \operatorname{FFN}(\operatorname{LN}_2(y)) \\
        \operatorname{FFN}(z) = \phi(z W_1^\top + b_1) W_2^\top + b_2

    Parameters
    ----------
    C : int
        Model width.
    H : int
        Heads.
    ffn_dim : int
        Hidden width ``F`` of the feed-forward network.
    dropout : float
        Dropout after attention weights, inside the feed-forward network and on both residual
        branches (training mode only), as torch.
    activation : {"relu", "gelu"}
        ``"gelu"`` is the exact erf form.
    norm_first : bool
        Pre-norm when True.
    layer_norm_eps : float
    H_kv : int, optional
        Key/value heads of the attention (default ``H``).
    bias : bool
        Biases in every linear layer and layer norm.
    device, dtype
        Factory arguments.

    Notes
    -----
    Submodule and parameter names are those of ``torch.nn.TransformerEncoderLayer`` (``self_attn``,
    ``linear1``, ``linear2``, ``norm1``, ``norm2``), so for ``H_kv = H`` the two state dicts are
    interchangeable. ``mask=valid[:, None, None, :]`` (``True`` = real token) is torch's
    ``src_key_padding_mask=~valid``. Oracles: ``torch.nn.TransformerEncoderLayer(batch_first=True)``
    (outputs and autograd gradients in float64) and the NumPy references
    :func:`attnmath.encoder.encoder_block_forward` /
    :func:`~attnmath.encoder.pre_norm_encoder_block_forward`.
    """

    def __init__(self, C: int, H: int, ffn_dim: int, dropout: float = 0.0, activation: str = "relu",
                 norm_first: bool = False, layer_norm_eps: float = 1e-5, *, H_kv: int | None = None,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        norm_first = check_bool(norm_first, "norm_first")
        bias = check_bool(bias, "bias")
        ffn_dim = check_positive_int(ffn_dim, "ffn_dim")
        dropout = check_probability(dropout, "dropout")
        layer_norm_eps = check_real(layer_norm_eps, "layer_norm_eps", positive=True)
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiHeadAttention(C, H, H_kv, bias=bias, dropout=dropout, **factory)
        self.linear1 = nn.Linear(C, ffn_dim, bias=bias, **factory)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(ffn_dim, C, bias=bias, **factory)
        self.norm1 = nn.LayerNorm(C, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = nn.LayerNorm(C, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation_name = activation
        self.activation = _ACTIVATIONS[activation]
        self.norm_first = norm_first

    def extra_repr(self) -> str:
        return f"activation={self.activation_name!r}, norm_first={self.norm_first}"

    def _sa_block(self, x, mask, is_causal):
        return self.dropout1(self.self_attn(x, mask=mask, is_causal=is_causal))  # (B, L, C)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))  # (B, L, C)

    def forward(self, x: torch.Tensor, *, mask: torch.Tensor | None = None,
                is_causal: bool = False) -> torch.Tensor:
        """Apply the block to ``x (B, L, C)``; ``mask`` (``True`` = may attend) broadcasts to
        ``(B, H, L, L)``.

        Returns a tensor of shape ``(B, L, C)``.
        """
        _check_input(x, "x", self.self_attn.C, self.self_attn.in_proj_weight.dtype)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), mask, is_causal)  # (B, L, C)
            return x + self._ff_block(self.norm2(x))  # (B, L, C)
        x = self.norm1(x + self._sa_block(x, mask, is_causal))  # (B, L, C)
        return self.norm2(x + self._ff_block(x))  # (B, L, C)

    @torch.no_grad()
    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> "TransformerEncoderBlock":
        """Copy the weights of a ``torch.nn.TransformerEncoderLayer`` of the same configuration.

        Width, heads, ``ffn_dim``, ``norm_first``, activation and the layer-norm epsilon must
        agree (a ``ValueError`` names the first that does not). Returns ``self``.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer).__name__}")
        act = {1: "relu", 2: "gelu"}.get(layer.activation_relu_or_gelu)
        checks = [
            ("ffn_dim", layer.linear1.out_features, self.linear1.out_features),
            ("norm_first", layer.norm_first, self.norm_first),
            ("activation", act, self.activation_name),
            ("layer_norm_eps", layer.norm1.eps, self.norm1.eps),
        ]
        for name, theirs, ours in checks:
            if theirs != ours:
                raise ValueError(f"{name} mismatch: layer has {theirs!r}, this block has {ours!r}")
        self.self_attn.load_from_torch(layer.self_attn)
        for name in ("linear1", "linear2", "norm1", "norm2"):
            ours, theirs = getattr(self, name), getattr(layer, name)
            ours.weight.copy_(theirs.weight)
            if (ours.bias is None) != (theirs.bias is None):
                raise ValueError(f"bias mismatch in {name}")
            if ours.bias is not None:
                ours.bias.copy_(theirs.bias)
        return self

    def to_numpy_params(self) -> EncoderBlockParams:
        """The weights as :class:`attnmath.encoder.EncoderBlockParams` (float64, row vectors)."""
        def ln_bias(norm):
            return np.zeros(norm.weight.shape[0]) if norm.bias is None else _to_numpy(norm.bias)

        return EncoderBlockParams(
            self.self_attn.to_numpy_params(),
            _to_numpy(self.linear1.weight).T.copy(), _to_numpy_or_none(self.linear1.bias),
            _to_numpy(self.linear2.weight).T.copy(), _to_numpy_or_none(self.linear2.bias),
            _to_numpy(self.norm1.weight), ln_bias(self.norm1),
            _to_numpy(self.norm2.weight), ln_bias(self.norm2),
        )

    @classmethod
    def from_numpy_params(cls, params: EncoderBlockParams, H: int, *, H_kv: int | None = None,
                          activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5,
                          dropout: float = 0.0, device=None, dtype=None) -> "TransformerEncoderBlock":
        """A block holding ``params`` (:class:`attnmath.encoder.EncoderBlockParams`).

        ``C`` and ``ffn_dim`` are read from ``w_1``; biases are kept when the attention has them.
        """
        if not isinstance(params, EncoderBlockParams):
            raise TypeError(f"params must be an EncoderBlockParams, got {type(params).__name__}")
        C, ffn_dim = as_array(params.w_1, "params.w_1", ndim=2).shape
        attn = MultiHeadAttention.from_numpy_params(params.attn, H, H_kv, dropout=dropout,
                                                    device=device, dtype=dtype)
        block = cls(C, H, ffn_dim, dropout, activation, norm_first, layer_norm_eps, H_kv=attn.H_kv,
                    bias=attn.in_proj_bias is not None, device=device, dtype=dtype)
        _check_block_shapes(params, C, ffn_dim, bias=attn.in_proj_bias is not None)
        block.self_attn = attn
        with torch.no_grad():
            linears = ((block.linear1, params.w_1, params.b_1), (block.linear2, params.w_2, params.b_2))
            for mod, w, b in linears:
                mod.weight.copy_(_to_tensor(np.asarray(w).T, mod.weight))
                if mod.bias is not None:
                    mod.bias.copy_(_to_tensor(b, mod.bias))
            for norm, g, b in ((block.norm1, params.ln1_gamma, params.ln1_beta),
                               (block.norm2, params.ln2_gamma, params.ln2_beta)):
                norm.weight.copy_(_to_tensor(g, norm.weight))
                if norm.bias is not None:
                    norm.bias.copy_(_to_tensor(b, norm.bias))
        return block
