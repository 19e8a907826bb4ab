"""Perceiver as a library: keyword constructor, positions from the input's shape, input_axis,
padding masks, the padded attention width and the split position stem of ResNet-50 (FF)."""

from __future__ import annotations

import math

import pytest
import torch

from paperzoo.engine import seeded
from paperzoo.models.perceiver import (
    IMAGENET,
    MNIST_SMALL,
    ConvNetWithPositions,
    Perceiver,
    PerceiverConfig,
)
from paperzoo.models.resnet import BasicBlock, CifarResNet, ResNet
from paperzoo.nn.attention import Attention, padded_sdpa
from paperzoo.nn.fourier import FourierPositionEncoding, fourier_features, linear_positions

SMALL = {"num_latents": 4, "latent_dim": 16, "num_cross_attends": 2, "self_attends_per_block": 1}
SMALL |= {"self_heads": 2, "num_bands": 3}


def test_keyword_constructor_beside_config() -> None:
    with seeded(0):
        a = Perceiver(input_channels=3, num_classes=10, index_dims=[8, 8], **SMALL)
    with seeded(0):
        b = Perceiver(config=PerceiverConfig(input_channels=3, num_classes=10, index_dims=(8, 8),
                                             **SMALL))  # fmt: skip
    assert a.config == b.config and a.config.index_dims == (8, 8)
    x = torch.rand(2, 8, 8, 3)
    assert torch.equal(a(x), b(x)) and a(x).shape == (2, 10)
    c = Perceiver(config=MNIST_SMALL, num_classes=3)  # fields override the config's
    assert c.config == PerceiverConfig(**{**MNIST_SMALL.__dict__, "num_classes": 3})
    assert Perceiver().config == PerceiverConfig() == IMAGENET


@pytest.mark.parametrize("cfg", [IMAGENET, MNIST_SMALL])
def test_fourier_features_from_the_shape_equal_the_precomputed_ones(cfg: PerceiverConfig) -> None:
    """The committed configs' grids: features for the input's shape are the old buffer, bit for
    bit (the old code precomputed fourier_features of the linear grid at construction)."""
    enc = FourierPositionEncoding(
        index_dims=cfg.index_dims, num_bands=cfg.num_bands, max_resolution=cfg.max_resolution
    )
    dims = cfg.index_dims
    old = fourier_features(
        linear_positions(dims).flatten(0, -2),
        num_bands=cfg.num_bands,
        max_resolution=cfg.max_resolution or dims,
    )
    assert torch.equal(enc.for_grid(tuple(dims)), old)
    fresh = FourierPositionEncoding(index_dims=(5, 5), num_bands=cfg.num_bands,
                                    max_resolution=cfg.max_resolution or dims)  # fmt: skip
    assert torch.equal(fresh.for_grid(dims), old)  # computed from the shape, not the buffer


def test_one_model_takes_grids_of_different_sizes() -> None:
    with seeded(0):
        model = Perceiver(input_channels=2, num_classes=4, index_dims=(6, 5), **SMALL).eval()
    x = torch.rand(3, 6, 5, 2)
    assert torch.equal(model(x), model(x.flatten(1, 2)))  # the configured grid, flat or not
    big = torch.rand(2, 9, 7, 2)
    out = model(big)
    assert out.shape == (2, 4)
    pos = model.position_features(index_dims=(9, 7))
    expect = fourier_features(linear_positions((9, 7)).flatten(0, -2), num_bands=3,
                              max_resolution=(6, 5))  # fmt: skip
    assert torch.equal(pos, expect)
    assert torch.equal(out, model(big.flatten(1, 2), pos=expect))
    model(big)
    assert len(model.fourier._cache) == 1  # computed once per shape
    with pytest.raises(ValueError, match="position rows"):
        model(torch.rand(2, 63, 2))  # flattened, but not the configured grid


def test_input_axis_sequences_and_mask_removes_padding() -> None:
    with seeded(0):
        model = Perceiver(input_channels=3, num_classes=5, index_dims=None, input_axis=1,
                          **SMALL).eval()  # fmt: skip
    assert model.config.pos_channels == 7
    x = torch.rand(2, 11, 3)
    assert model(x).shape == (2, 5)
    pos = model.position_features(index_dims=(11,))
    assert pos.shape == (11, 7)
    # a set without positions: padding masked out gives the unpadded output
    with seeded(0):
        sets = Perceiver(input_channels=3, num_classes=5, index_dims=None, position="none",
                         **SMALL).eval()  # fmt: skip
    a, b = torch.rand(1, 7, 3), torch.rand(1, 4, 3)
    padded = torch.cat([torch.cat([b, torch.randn(1, 3, 3) * 50], 1), a])  # (2, 7, 3)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[0, 4:] = False
    out = sets(padded, mask=mask)
    assert torch.allclose(out[0], sets(b)[0], atol=1e-5)
    assert torch.allclose(out[1], sets(a)[0], atol=1e-5)
    assert not torch.allclose(sets(padded)[0], sets(b)[0], atol=1e-3)  # padding would matter
    # the same with shared Fourier positions given explicitly (the factored kv path)
    with seeded(0):
        seq = Perceiver(input_channels=3, num_classes=5, index_dims=(7,), **SMALL).eval()
    p7 = seq.position_features()
    out = seq(padded, mask=mask)
    assert torch.allclose(out[0], seq(b, pos=p7[:4])[0], atol=1e-5)
    with pytest.raises(ValueError, match="mask"):
        sets(padded, mask=mask[:, :5])


def test_input_axis_without_a_grid_takes_any_length_and_any_size() -> None:
    """perceiver-pytorch's call: naming input_axis without index_dims gives a model without a
    grid, whose positions come from each input's own shape."""
    with seeded(0):
        seq = Perceiver(input_channels=3, num_classes=5, num_latents=8, latent_dim=32,
                        input_axis=1).eval()  # fmt: skip
    assert seq.config.index_dims is None and seq.config.num_axes == 1
    for n in (5, 17):
        x = torch.rand(2, n, 3)
        pos = fourier_features(linear_positions((n,)), num_bands=seq.config.num_bands,
                               max_resolution=(n,))  # fmt: skip
        assert torch.equal(seq(x), seq(x, pos=pos))  # its own length's positions
    with seeded(0):
        img = Perceiver(input_channels=3, num_classes=5, input_axis=2, **SMALL).eval()
    assert img.config.index_dims is None
    assert img(torch.rand(2, 8, 8, 3)).shape == img(torch.rand(2, 12, 10, 3)).shape == (2, 5)
    # a config's band choice (max_resolution) stays when it has input_axis axes
    assert Perceiver(config=MNIST_SMALL, input_axis=2).config.max_resolution == (14.0, 14.0)
    assert Perceiver(config=MNIST_SMALL, input_axis=1).config.max_resolution is None
    with pytest.raises(ValueError, match=r"has 2 axes, not input_axis=1: give index_dims=None"):
        PerceiverConfig(input_axis=1)


def test_masked_positions_do_not_change_the_output() -> None:
    with seeded(0):
        kw = SMALL | {"num_latents": 8, "latent_dim": 32}
        model = Perceiver(input_channels=3, num_classes=5, input_axis=1, **kw).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 9, 3, generator=g)
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, 6:] = False
    mask[1, 2] = False
    changed = x.clone()
    changed[~mask] = torch.randn(int((~mask).sum()), 3, generator=g) * 100
    out = model(x, mask=mask)
    assert torch.equal(out, model(changed, mask=mask))
    assert not torch.allclose(model(x), model(changed), atol=1e-3)  # unmasked, they count


def test_attention_weights_with_mask_are_zero_on_padding() -> None:
    with seeded(0):
        att = Attention(q_dim=8, kv_dim=6, num_heads=2)
    q, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 6)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    out, w = att(q, kv, mask=mask, need_weights=True)
    assert (w[0, :, :, 3:] == 0).all() and torch.allclose(w.sum(-1), torch.ones(2, 2, 3))
    assert torch.allclose(out, att(q, kv, mask=mask), atol=1e-6)


@pytest.mark.parametrize(("e", "ev"), [(261, 261), (13, 13), (16, 13), (261, 64)])
def test_padded_sdpa_is_the_same_function(e: int, ev: int) -> None:
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 5, e, generator=g), torch.randn(2, 1, 40, e, generator=g)
    v = torch.randn(2, 1, 40, ev, generator=g)
    mask = torch.rand(2, 1, 1, 40, generator=g) > 0.3
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = (q @ k.transpose(-1, -2) / math.sqrt(e)).masked_fill(~mask, -math.inf)
    assert torch.allclose(ref, scores.softmax(-1) @ v, atol=1e-5)
    out = padded_sdpa(q, k, v, attn_mask=mask, multiple=8)
    assert out.shape == ref.shape
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.equal(padded_sdpa(q, k, v, attn_mask=mask, multiple=1), ref)


def _pos(p: int, s: int) -> torch.Tensor:
    return torch.randn(p, s, s, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("permuted", [False, True])
@pytest.mark.parametrize("kind", ["resnet", "cifar"])
def test_split_position_stem_equals_the_concatenated_version(kind: str, permuted: bool) -> None:
    s, p = 16, 10
    with seeded(0):
        if kind == "resnet":
            net = ResNet(block=BasicBlock, layers=(1, 1, 1, 1), num_classes=5, in_chans=3 + p)
        else:
            net = CifarResNet(depth=8, num_classes=5, in_chans=3 + p)
    for m in net.modules():  # a conv with bias too
        if isinstance(m, torch.nn.Conv2d) and m.in_channels == 3 + p and m.bias is None:
            m.bias = torch.nn.Parameter(torch.randn(m.out_channels) * 0.1)
    perm = torch.randperm(s * s, generator=torch.Generator().manual_seed(2)) if permuted else None
    model = ConvNetWithPositions(net, _pos(p, s), perm).eval()
    assert model.stem_conv() is net.stem[0]
    x = torch.rand(4, 3, s, s)
    fast, ref = model(x), model.forward_concatenated(x)
    assert torch.allclose(fast, ref, atol=1e-5, rtol=1e-4)
    # gradients reach the stem's weights the same way (training: positions convolved per step)
    model.double().train()
    model(x.double()).sum().backward()
    g_fast = net.stem[0].weight.grad.clone()
    net.zero_grad()
    model.forward_concatenated(x.double()).sum().backward()
    assert torch.allclose(g_fast, net.stem[0].weight.grad, atol=1e-9, rtol=1e-7)


def test_a_convnet_without_a_stem_gets_the_concatenated_array() -> None:
    pos = _pos(2, 4)
    model = ConvNetWithPositions(torch.nn.Identity(), pos)
    assert model.stem_conv() is None
    out = model(torch.zeros(1, 3, 4, 4))
    assert torch.equal(out[0, 3:], pos)
