"""Perceiver attention blocks: equivalence with a reference, permutation behaviour, gradients."""

from __future__ import annotations

import math

import pytest
import torch

from paperzoo.engine import seeded
from paperzoo.nn.attention import (
    Attention,
    CrossAttentionBlock,
    FeedForward,
    LatentTransformer,
    SelfAttentionBlock,
)


def test_attention_matches_explicit_softmax_formula() -> None:
    with seeded(0):
        attn = Attention(q_dim=16, kv_dim=12, qk_channels=8, v_channels=20, out_dim=10, num_heads=4)
        q, kv = torch.randn(2, 5, 16), torch.randn(2, 7, 12)
    out, w = attn(q, kv, need_weights=True)
    assert out.shape == (2, 5, 10) and w.shape == (2, 4, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 5))
    # Reference: per head h, softmax(q_h k_h^T / sqrt(2)) v_h, concatenated, projected.
    qp, kp, vp = attn.to_q(q), attn.to_k(kv), attn.to_v(kv)
    heads = []
    for h in range(4):
        qh, kh, vh = (
            qp[..., 2 * h : 2 * h + 2],
            kp[..., 2 * h : 2 * h + 2],
            vp[..., 5 * h : 5 * h + 5],
        )
        heads.append(torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(2), -1) @ vh)
    ref = attn.to_out(torch.cat(heads, -1))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    # The fast path (scaled_dot_product_attention) gives the same output.
    torch.testing.assert_close(attn(q, kv), ref, atol=1e-5, rtol=1e-5)


def test_cross_attention_is_invariant_to_input_order() -> None:
    with seeded(1):
        block = CrossAttentionBlock(latent_dim=16, input_dim=6, num_heads=2, qk_channels=8)
        z, x = torch.randn(3, 4, 16), torch.randn(3, 50, 6)
    perm = torch.randperm(50, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(block(z, x), block(z, x[:, perm]), atol=1e-5, rtol=1e-5)
    w, wp = block.attention_weights(z, x), block.attention_weights(z, x[:, perm])
    torch.testing.assert_close(wp, w[..., perm])


def test_self_attention_is_equivariant_to_latent_order() -> None:
    with seeded(2):
        block = SelfAttentionBlock(dim=16, num_heads=4, widening_factor=2)
        z = torch.randn(2, 9, 16)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(block(z)[:, perm], block(z[:, perm]), atol=1e-5, rtol=1e-5)


def test_pre_layernorm_residual_structure() -> None:
    # Zeroing the output projections makes a pre-LN residual block the identity.
    with seeded(3):
        block = SelfAttentionBlock(dim=8, num_heads=2)
    for lin in (block.attn.to_out, block.mlp.net[2]):
        torch.nn.init.zeros_(lin.weight)
        torch.nn.init.zeros_(lin.bias)
    z = torch.randn(2, 3, 8)
    torch.testing.assert_close(block(z), z)
    assert isinstance(block.mlp.net[1], torch.nn.GELU)


def test_gradients_reach_every_parameter() -> None:
    with seeded(4):
        cross = CrossAttentionBlock(latent_dim=16, input_dim=5)
        latent = LatentTransformer(dim=16, depth=2, num_heads=4)
        z, x = torch.randn(2, 4, 16), torch.randn(2, 30, 5)
    latent(cross(z, x)).square().sum().backward()
    for name, p in [*cross.named_parameters(), *latent.named_parameters()]:
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_feedforward_widening_and_bad_heads() -> None:
    ff = FeedForward(dim=8, widening_factor=3)
    assert ff.net[0].out_features == 24
    with pytest.raises(ValueError, match="divisible"):
        Attention(q_dim=10, kv_dim=10, num_heads=3)


def test_official_variance_scaling_initialisation() -> None:
    with seeded(5):
        attn = Attention(q_dim=256, kv_dim=64, num_heads=4)
    for lin in (attn.to_q, attn.to_k, attn.to_v, attn.to_out):
        fan_in = lin.in_features
        assert lin.weight.std().item() == pytest.approx(1 / math.sqrt(fan_in), rel=0.05)
        assert lin.weight.abs().max().item() <= 2 / 0.8796 / math.sqrt(fan_in) + 1e-6
        assert torch.count_nonzero(lin.bias) == 0
