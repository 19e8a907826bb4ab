"""Attention blocks of the Perceiver (Jaegle et al., 2021, "Perceiver: General Perception with
Iterative Attention", arXiv:2103.03206, Sec. 2.1-2.2 and Fig. 1).

* ``Attention``: multi-head QKV attention with separate query / key-value inputs, computed with
  ``torch.nn.functional.scaled_dot_product_attention``.
* ``CrossAttentionBlock``: a latent array (N, D) queries a byte array (M, C): cost O(M N).
* ``SelfAttentionBlock`` / ``LatentTransformer``: GPT-2-style blocks on the latents: cost O(N^2).

All blocks are pre-LayerNorm with a GELU MLP (Sec. 2.2), as in the official code:
``x = x + Attn(LN(x)[, LN(kv)])``, then ``x = x + MLP(LN(x))``.

Linear layers are initialised as in the official code (Haiku ``VarianceScaling(1.0)``): weights
from a normal truncated at two standard deviations with std ``1 / sqrt(fan_in)`` after
truncation, biases zero. The paper uses no attention masks (its attention is non-causal); a
padding ``mask`` (B, M) can remove padded inputs from an ``Attention`` / ``CrossAttentionBlock``.

On CUDA the per-head width is zero-padded to a multiple of 8 for
``scaled_dot_product_attention`` (``padded_sdpa``): the fused kernels need it, and the ImageNet
Perceiver's single cross-attention head is 261 wide. The function is unchanged (the zeros add
nothing to ``q . k``; the scale stays ``1 / sqrt(261)``; the padded value columns are sliced off).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor, nn

_TRUNC_STD = 0.87962566103423978  # std of a unit normal truncated to [-2, 2]


def variance_scaling_(linear: nn.Linear, scale: float = 1.0) -> nn.Linear:
    """Official-code initialisation: truncated normal, std sqrt(scale / fan_in); zero bias."""
    std = math.sqrt(scale / max(1, linear.in_features)) / _TRUNC_STD
    nn.init.trunc_normal_(linear.weight, std=std, a=-2 * std, b=2 * std)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
    return linear


def padded_sdpa(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    multiple: int = 8,
) -> Tensor:
    """``F.scaled_dot_product_attention`` with the head width zero-padded to a multiple.

    q, k and v are padded with zeros to the same width ``E'`` (the smallest multiple of
    ``multiple`` >= both widths), attended with ``scale = 1 / sqrt(E)`` (the unpadded query
    width), and the output is sliced back to the value width: the same function as unpadded (the
    zero columns add nothing to ``q . k`` and give zero outputs), but one the fused kernels accept
    (they need widths that are multiples of 8, at most 256 for flash attention). ``multiple=1``
    or both widths already multiples: the plain call.

    Shapes:
        q: (B, H, N, E), k: (B, H, M, E), v: (B, H, M, Ev); attn_mask broadcastable to
        (B, H, N, M) (bool: True attends) -> (B, H, N, Ev)
    """
    e, ev = q.shape[-1], v.shape[-1]
    if multiple <= 1 or (e % multiple == 0 and ev % multiple == 0):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
    width = -(-max(e, ev) // multiple) * multiple
    q, k = F.pad(q, (0, width - e)), F.pad(k, (0, width - e))
    out = F.scaled_dot_product_attention(
        q, k, F.pad(v, (0, width - ev)), attn_mask=attn_mask, dropout_p=dropout_p, scale=e**-0.5
    )
    return out[..., :ev]


class Attention(nn.Module):
    """Multi-head attention of queries from ``q_dim`` inputs over keys/values from ``kv_dim`` inputs.

    Args:
        q_dim: channels of the query input.
        kv_dim: channels of the key/value input.
        qk_channels: total query/key channels over all heads (default ``q_dim``).
        v_channels: total value channels over all heads (default ``qk_channels``).
        out_dim: output channels (default ``q_dim``).
        num_heads: heads; must divide ``qk_channels`` and ``v_channels``.
        dropout: dropout on the attention probabilities (training only).

    Shapes:
        q: (B, N, q_dim), kv: (B, M, kv_dim) -> (B, N, out_dim);
        with ``need_weights`` also the attention probabilities (B, num_heads, N, M);
        ``mask``: optional (B, M) bool, True for the inputs attended to (padding: False).
    """

    def __init__(
        self,
        *,
        q_dim: int,
        kv_dim: int,
        qk_channels: int | None = None,
        v_channels: int | None = None,
        out_dim: int | None = None,
        num_heads: int = 8,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        qk_channels = qk_channels or q_dim
        v_channels = v_channels or qk_channels
        out_dim = out_dim or q_dim
        for name, ch in (("qk_channels", qk_channels), ("v_channels", v_channels)):
            if ch % num_heads:
                raise ValueError(f"{name} ({ch}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.dropout = dropout
        self.to_q = nn.Linear(q_dim, qk_channels)
        self.to_k = nn.Linear(kv_dim, qk_channels)
        self.to_v = nn.Linear(kv_dim, v_channels)
        self.to_out = nn.Linear(v_channels, out_dim)
        for lin in (self.to_q, self.to_k, self.to_v, self.to_out):
            variance_scaling_(lin)

    def forward(
        self, q: Tensor, kv: Tensor, *, mask: Tensor | None = None, need_weights: bool = False
    ) -> Tensor | tuple[Tensor, Tensor]:
        return self.attend(q, self.to_k(kv), self.to_v(kv), mask=mask, need_weights=need_weights)

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Attention with keys and values already projected (``to_k(kv)``, ``to_v(kv)``).

        Shapes:
            q: (B, N, q_dim), k: (B, M, qk_channels), v: (B, M, v_channels) -> as ``forward``
        """
        h = self.num_heads
        qh = rearrange(self.to_q(q), "b n (h e) -> b h n e", h=h)  # (B, H, N, E)
        kh = rearrange(k, "b m (h e) -> b h m e", h=h)  # (B, H, M, E)
        vh = rearrange(v, "b m (h e) -> b h m e", h=h)  # (B, H, M, Ev)
        p = self.dropout if self.training else 0.0
        attn_mask = None
        if mask is not None:
            if mask.shape != (k.shape[0], k.shape[1]):
                raise ValueError(
                    f"mask must be (B, M) = {(k.shape[0], k.shape[1])}, got {tuple(mask.shape)}"
                )
            attn_mask = mask.to(torch.bool)[:, None, None, :]  # (B, 1, 1, M): True attends
        if need_weights:
            # softmax(Q K^T / sqrt(E)) V, spelled out to expose the weights.
            scores = qh @ kh.transpose(-1, -2) / math.sqrt(qh.shape[-1])
            if attn_mask is not None:
                scores = scores.masked_fill(~attn_mask, -math.inf)
            weights = scores.softmax(-1)
            out = F.dropout(weights, p) @ vh
        else:
            # On CUDA: head width padded to a multiple of 8 so that a fused kernel runs.
            multiple = 8 if qh.device.type == "cuda" else 1
            out = padded_sdpa(qh, kh, vh, attn_mask=attn_mask, dropout_p=p, multiple=multiple)
        out = self.to_out(rearrange(out, "b h n e -> b n (h e)"))  # (B, N, out_dim)
        return (out, weights) if need_weights else out


class FeedForward(nn.Module):
    """The Transformer MLP: Linear(D, wD) -> GELU -> Linear(wD, D) -> Dropout.

    Shapes:
        x: (..., dim) -> (..., dim)
    """

    def __init__(self, *, dim: int, widening_factor: int = 1, dropout: float = 0.0) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, widening_factor * dim),
            nn.GELU(),
            nn.Linear(widening_factor * dim, dim),
            nn.Dropout(dropout),
        )
        variance_scaling_(self.net[0])
        variance_scaling_(self.net[2])

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class CrossAttentionBlock(nn.Module):
    """Latents attend to the inputs, then an MLP (Fig. 1, "cross attention").

    Args:
        latent_dim: D, channels of the latent array (queries and output).
        input_dim: C, channels of the byte array (keys/values), position features included.
        num_heads: heads (the paper uses 1 for cross-attention).
        qk_channels: query/key width (default ``input_dim``, the official code's default).
        v_channels: value width (default ``qk_channels``).
        widening_factor: MLP hidden width / D.
        dropout: dropout after the attention and the MLP.
        attn_dropout: dropout on the attention probabilities.
        query_residual: add the attention output to the latents (the paper does).

    Shapes:
        latents: (B, N, D), inputs: (B, M, C) -> (B, N, D)
    """

    def __init__(
        self,
        *,
        latent_dim: int,
        input_dim: int,
        num_heads: int = 1,
        qk_channels: int | None = None,
        v_channels: int | None = None,
        widening_factor: int = 1,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
        query_residual: bool = True,
    ) -> None:
        super().__init__()
        self.norm_q = nn.LayerNorm(latent_dim)
        self.norm_kv = nn.LayerNorm(input_dim)
        self.attn = Attention(
            q_dim=latent_dim,
            kv_dim=input_dim,
            qk_channels=qk_channels or input_dim,
            v_channels=v_channels,
            out_dim=latent_dim,
            num_heads=num_heads,
            dropout=attn_dropout,
        )
        self.drop = nn.Dropout(dropout)
        self.norm_mlp = nn.LayerNorm(latent_dim)
        self.mlp = FeedForward(dim=latent_dim, widening_factor=widening_factor, dropout=dropout)
        self.query_residual = query_residual

    def forward(
        self,
        latents: Tensor,
        inputs: Tensor,
        pos: Tensor | None = None,
        *,
        mask: Tensor | None = None,
    ) -> Tensor:
        """Cross-attend from ``latents`` to the byte array ``inputs`` (or ``[inputs, pos]``).

        With ``pos`` the byte array is ``inputs`` with ``pos`` concatenated on the channel axis.
        Position features shared by the batch, ``pos`` of shape (M, P), take a factored path
        that never builds the (B, M, C + P) array; the function is the same (``byte_array_kv``).
        ``mask`` (B, M), True for real inputs, removes padded inputs from the attention (each
        example needs at least one True).

        Shapes:
            latents: (B, N, D), inputs: (B, M, C) [or (B, M, C - P) with pos: (M, P) or
            (B, M, P)], mask: (B, M) -> (B, N, D)
        """
        q = self.norm_q(latents)
        if pos is not None and pos.dim() == 2:
            k, v = self.byte_array_kv(inputs, pos)
            a = self.attn.attend(q, k, v, mask=mask)
        else:
            if pos is not None:
                inputs = torch.cat([inputs, pos.to(inputs.dtype)], dim=-1)
            a = self.attn(q, self.norm_kv(inputs), mask=mask)
        a = self.drop(a)
        x = latents + a if self.query_residual else a
        return x + self.mlp(self.norm_mlp(x))

    def byte_array_kv(self, x: Tensor, pos: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of the byte array ``u = [x, pos]`` (positions shared by the batch),
        ``to_k(norm_kv(u))`` and ``to_v(norm_kv(u))``, without building ``u``.

        With ``W' = W diag(gamma)`` (the LayerNorm scale folded into a projection ``W``) and the
        LayerNorm mean ``mu`` and inverse standard deviation ``s`` of a row ``u = [x, p]``::

            W LN(u) + b = s * (W'_x x - mu * W' 1 + W'_p p) + (W beta + b)

        ``W'_p p`` depends on the position alone: it is computed once for the M positions, not
        for each of the B inputs, and ``mu``, ``s`` need only ``x`` and per-position sums of
        ``p``. The cost per input element does not grow with the number of position channels
        (an implementation choice for speed on CPU: 4x faster than LayerNorm + projections at
        67 channels; the function is the paper's).

        Shapes:
            x: (B, M, C_x), pos: (M, P) with C_x + P = input_dim -> k: (B, M, qk), v: (B, M, v)
        """
        norm, attn = self.norm_kv, self.attn
        cx, p = x.shape[-1], pos.shape[-1]
        c = cx + p
        if c != norm.normalized_shape[0]:
            raise ValueError(
                f"{cx} input + {p} position channels, the block expects {norm.normalized_shape[0]}"
            )
        pos = pos.to(x.dtype)
        w = torch.cat([attn.to_k.weight, attn.to_v.weight])  # (Q + V, C)
        bias = torch.cat([attn.to_k.bias, attn.to_v.bias])  # (Q + V,)
        gamma = norm.weight if norm.weight is not None else torch.ones_like(w[0])
        beta = norm.bias if norm.bias is not None else torch.zeros_like(w[0])
        wg = w * gamma  # W diag(gamma): (Q + V, C)
        # LayerNorm statistics of every row [x_bm, p_m] from x and per-position sums of p:
        # sum_c (u_c - mu)^2 = sum (x - mu)^2 + sum p^2 - 2 mu sum p + P mu^2.
        s1, s2 = pos.sum(-1), (pos * pos).sum(-1)  # (M,)
        mu = (x.sum(-1) + s1) / c  # (B, M)
        sq = ((x - mu.unsqueeze(-1)) ** 2).sum(-1) + s2 - 2 * mu * s1 + p * mu * mu
        rstd = torch.rsqrt(sq / c + norm.eps).unsqueeze(-1)  # (B, M, 1)
        # [x s, -mu s, 1] @ [W'_x^T; (W' 1)^T; (W beta + b)^T] + s * (p W'_p^T)
        feats = torch.cat([x * rstd, -mu.unsqueeze(-1) * rstd, torch.ones_like(rstd)], dim=-1)
        mat = torch.cat([wg[:, :cx].T, wg.sum(1, keepdim=True).T, (w @ beta + bias)[None]])
        kv = torch.addcmul(feats @ mat, rstd, pos @ wg[:, cx:].T)  # (B, M, Q + V)
        k, v = kv.split([attn.to_k.out_features, attn.to_v.out_features], dim=-1)
        return k, v

    @torch.no_grad()
    def attention_weights(
        self, latents: Tensor, inputs: Tensor, *, mask: Tensor | None = None
    ) -> Tensor:
        """Attention probabilities of every latent over the inputs (0 where ``mask`` is False).

        Shapes:
            latents: (B, N, D), inputs: (B, M, C), mask: (B, M) -> (B, num_heads, N, M)
        """
        q, kv = self.norm_q(latents), self.norm_kv(inputs)
        _, w = self.attn(q, kv, mask=mask, need_weights=True)
        return w


class SelfAttentionBlock(nn.Module):
    """One latent Transformer block: pre-LN multi-head self-attention, then a pre-LN GELU MLP.

    Shapes:
        x: (B, N, D) -> (B, N, D)
    """

    def __init__(
        self,
        *,
        dim: int,
        num_heads: int = 8,
        qk_channels: int | None = None,
        v_channels: int | None = None,
        widening_factor: int = 1,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim)
        self.attn = Attention(
            q_dim=dim,
            kv_dim=dim,
            qk_channels=qk_channels,
            v_channels=v_channels,
            out_dim=dim,
            num_heads=num_heads,
            dropout=attn_dropout,
        )
        self.drop = nn.Dropout(dropout)
        self.norm_mlp = nn.LayerNorm(dim)
        self.mlp = FeedForward(dim=dim, widening_factor=widening_factor, dropout=dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = self.norm_attn(x)
        x = x + self.drop(self.attn(h, h))
        return x + self.mlp(self.norm_mlp(x))


class LatentTransformer(nn.Module):
    """A stack of ``depth`` self-attention blocks on the latent array (Fig. 1).

    Shapes:
        x: (B, N, D) -> (B, N, D)
    """

    def __init__(
        self,
        *,
        dim: int,
        depth: int,
        num_heads: int = 8,
        qk_channels: int | None = None,
        v_channels: int | None = None,
        widening_factor: int = 1,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(
                dim=dim,
                num_heads=num_heads,
                qk_channels=qk_channels,
                v_channels=v_channels,
                widening_factor=widening_factor,
                dropout=dropout,
                attn_dropout=attn_dropout,
            )
            for _ in range(depth)
        )

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = block(x)
        return x
