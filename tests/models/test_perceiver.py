"""Perceiver: permutation invariance, weight sharing, parameter counts, input modalities, the
image wrappers."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from paperzoo import create_model
from paperzoo.engine import seeded
from paperzoo.models.perceiver import (
    IMAGENET,
    MNIST_SMALL,
    ConvNetWithPositions,
    Perceiver,
    PerceiverConfig,
    PerceiverOnImages,
    PerceiverWithPositions,
)
from paperzoo.nn.attention import Attention, CrossAttentionBlock, FeedForward
from paperzoo.utils import count_params

TINY = PerceiverConfig(
    input_channels=2,
    index_dims=(6, 5),
    num_classes=4,
    num_latents=4,
    latent_dim=16,
    num_cross_attends=3,
    self_attends_per_block=2,
    cross_heads=1,
    self_heads=2,
    num_bands=3,
)


def tiny(**kw: object) -> Perceiver:
    with seeded(0):
        return Perceiver(config=replace(TINY, **kw))  # type: ignore[arg-type]


def test_imagenet_parameter_counts_match_paper() -> None:
    with torch.device("meta"):
        shared = count_params(create_model("perceiver_imagenet"))
        unshared = count_params(create_model("perceiver_imagenet_unshared"))
    assert abs(shared - 44.9e6) <= 0.02 * 44.9e6
    assert abs(unshared - 326e6) <= 0.02 * 326e6
    assert IMAGENET.input_dim == 3 + 2 * (2 * 64 + 1) == 261


def test_output_invariant_to_joint_permutation_of_inputs_and_positions() -> None:
    model = tiny().eval()
    x = torch.rand(3, 6, 5, 2)
    flat = x.flatten(1, 2)  # (B, M, C)
    pos = model.position_features()
    assert pos is not None
    perm = torch.randperm(30, generator=torch.Generator().manual_seed(0))
    out = model(x)
    torch.testing.assert_close(model(flat[:, perm], pos=pos[perm]), out, atol=1e-5, rtol=1e-5)
    # Permuting the pixels but not their positions changes the function.
    assert (model(flat[:, perm]) - out).abs().max() > 1e-3


@pytest.mark.parametrize("cx", [1, 3])
def test_factored_byte_array_equals_concatenated(cx: int) -> None:
    """Keys/values of [x, pos] with positions shared by the batch (projected once, never
    concatenated) equal LayerNorm + projections of the concatenated byte array, in value and
    in every gradient."""
    with seeded(0):
        block = CrossAttentionBlock(
            latent_dim=16, input_dim=cx + 7, num_heads=2, qk_channels=8, v_channels=6
        )
        with torch.no_grad():  # a non-trivial LayerNorm affine map
            block.norm_kv.weight.uniform_(0.5, 1.5)
            block.norm_kv.bias.uniform_(-0.5, 0.5)
        z = torch.randn(3, 4, 16)
        x = (torch.randn(3, 20, cx) * 2 + 0.5).requires_grad_()
        pos = (torch.rand(20, 7) * 2 - 1).requires_grad_()
    cat = torch.cat([x, pos.expand(3, 20, 7)], dim=-1)
    k, v = block.byte_array_kv(x, pos)
    kn = block.norm_kv(cat)
    torch.testing.assert_close(k, block.attn.to_k(kn), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(v, block.attn.to_v(kn), atol=1e-5, rtol=1e-5)

    def grads(out: torch.Tensor) -> list[torch.Tensor]:
        return list(torch.autograd.grad(out.square().sum(), [x, pos, *block.parameters()]))

    factored, concatenated = block(z, x, pos), block(z, cat)
    torch.testing.assert_close(factored, concatenated, atol=1e-5, rtol=1e-5)
    for gf, gc in zip(grads(block(z, x, pos)), grads(block(z, cat)), strict=True):
        torch.testing.assert_close(gf, gc, atol=1e-4, rtol=1e-4)
    # Per-example positions (B, M, P) take the concatenating path: the same function.
    torch.testing.assert_close(block(z, x, pos.expand(3, 20, 7)), concatenated)
    with pytest.raises(ValueError, match="position channels"):
        block.byte_array_kv(x, pos[:, :5])


def test_perceiver_encodes_the_byte_array() -> None:
    """encode() (factored cross-attends) equals cross-attending to byte_array() explicitly."""
    model = tiny().eval()
    x = torch.rand(2, 6, 5, 2)
    inputs = model.byte_array(x)
    assert inputs.shape == (2, 30, model.config.input_dim)
    z = model.latents.expand(2, -1, -1)
    for cross, latent in model.repeats():
        z = latent(cross(z, inputs))
    torch.testing.assert_close(model.encode(x), z, atol=1e-5, rtol=1e-5)


def reference_logits(model: Perceiver, x: torch.Tensor) -> torch.Tensor:
    """The Perceiver written out with plain tensor operations, from the model's parameters: the
    byte array [x, pos] concatenated, LayerNorm by its definition, softmax(q k^T / sqrt(e)) v per
    head, exact GELU MLPs, the latent average (Fig. 1, Sec. 2). No SDPA, no factored projections."""

    def ln(t: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
        mu = t.mean(-1, keepdim=True)
        var = (t - mu).square().mean(-1, keepdim=True)
        return (t - mu) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias

    def lin(t: torch.Tensor, layer: torch.nn.Linear) -> torch.Tensor:
        return t @ layer.weight.T + layer.bias

    def attend(attn: Attention, q_in: torch.Tensor, kv_in: torch.Tensor) -> torch.Tensor:
        h = attn.num_heads
        q, k, v = lin(q_in, attn.to_q), lin(kv_in, attn.to_k), lin(kv_in, attn.to_v)
        heads = [
            torch.softmax(qh @ kh.transpose(1, 2) / math.sqrt(qh.shape[-1]), -1) @ vh
            for qh, kh, vh in zip(q.chunk(h, -1), k.chunk(h, -1), v.chunk(h, -1), strict=True)
        ]
        return lin(torch.cat(heads, -1), attn.to_out)

    def mlp(ff: FeedForward, t: torch.Tensor) -> torch.Tensor:
        t = lin(t, ff.net[0])  # type: ignore[arg-type]
        return lin(0.5 * t * (1 + torch.erf(t / math.sqrt(2))), ff.net[2])  # type: ignore[arg-type]

    pos = model.position_features()
    assert pos is not None
    u = torch.cat([x.flatten(1, -2), pos.to(x.dtype).expand(x.shape[0], -1, -1)], -1)
    z = model.latents.expand(x.shape[0], -1, -1)
    for cross, latent in model.repeats():
        z = z + attend(cross.attn, ln(z, cross.norm_q), ln(u, cross.norm_kv))
        z = z + mlp(cross.mlp, ln(z, cross.norm_mlp))
        for block in latent.blocks:
            h = ln(z, block.norm_attn)
            z = z + attend(block.attn, h, h)
            z = z + mlp(block.mlp, ln(z, block.norm_mlp))
    return lin(ln(z.mean(1), model.norm), model.head)


@pytest.mark.parametrize(
    "kw",
    [
        {},  # shared weights, one cross-attention head
        {"cross_heads": 2, "cross_qk_channels": 8, "share_weights": False, "input_channels": 3},
    ],
)
def test_outputs_and_gradients_match_a_plain_reference(kw: dict[str, object]) -> None:
    """Logits and every parameter's gradient equal the plain computation (float64): the fast
    paths (factored keys/values of the byte array, scaled_dot_product_attention) change nothing
    but round-off."""
    model = tiny(**kw).double()
    with seeded(1), torch.no_grad():  # non-trivial LayerNorm affine maps and biases
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
            elif "norm" in name:  # LayerNorm scales
                p.uniform_(0.5, 1.5)
        x = torch.rand(3, 6, 5, model.config.input_channels, dtype=torch.float64)
    y = torch.tensor([0, 3, 1])
    params = dict(model.named_parameters())
    fast, ref = model(x), reference_logits(model, x)
    torch.testing.assert_close(fast, ref, atol=1e-10, rtol=1e-10)
    g_fast = torch.autograd.grad(torch.nn.functional.cross_entropy(fast, y), list(params.values()))
    g_ref = torch.autograd.grad(torch.nn.functional.cross_entropy(ref, y), list(params.values()))
    for name, gf, gr in zip(params, g_fast, g_ref, strict=True):
        torch.testing.assert_close(gf, gr, atol=1e-10, rtol=1e-8, msg=lambda m, n=name: f"{n}: {m}")


def test_digit_model_attends_iteratively_with_shared_weights() -> None:
    """The quick reproduction's model: 2 cross-attends, one latent Transformer for both, the
    paper's single cross-attention head; its parameter count is the one docs/perceiver.md gives."""
    assert MNIST_SMALL.num_cross_attends >= 2 and MNIST_SMALL.share_weights
    assert MNIST_SMALL.cross_heads == 1
    with seeded(0):
        model = create_model("perceiver_mnist")
    reps = model.repeats()
    assert len(reps) == 2 and reps[0][0] is not reps[1][0] and reps[0][1] is reps[1][1]
    assert count_params(model) == 51_894
    assert model(torch.rand(2, 28, 28, 1)).shape == (2, 10)


def test_grid_and_flat_inputs_agree() -> None:
    model = tiny().eval()
    x = torch.rand(2, 6, 5, 2)
    torch.testing.assert_close(model(x), model(x.flatten(1, 2)))


def test_weight_sharing_is_parameter_identity() -> None:
    model = tiny()
    reps = model.repeats()
    assert len(reps) == 3
    assert reps[0][0] is not reps[1][0]  # first cross-attend has its own weights
    assert reps[1][0] is reps[2][0]  # later cross-attends share one module
    assert reps[0][1] is reps[1][1] is reps[2][1]  # one latent Transformer for all repeats
    for (n1, p1), (n2, p2) in zip(
        reps[1][0].named_parameters(), reps[2][0].named_parameters(), strict=True
    ):
        assert n1 == n2 and p1 is p2
    assert len(model.cross_attends) == 2 and len(model.latent_transformers) == 1

    unshared = tiny(share_weights=False)
    ureps = unshared.repeats()
    assert len({id(c) for c, _ in ureps}) == 3 and len({id(t) for _, t in ureps}) == 3
    per_cross = count_params(model.cross_attends[0])
    per_latent = count_params(model.latent_transformers[0])
    assert count_params(unshared) - count_params(model) == per_cross + 2 * per_latent


def test_shared_model_equals_tied_unshared_model_and_sums_gradients() -> None:
    shared = tiny()
    unshared = tiny(share_weights=False)
    # Tie the unshared copy to the shared weights: same function.
    state = {k: v for k, v in shared.state_dict().items() if not k.startswith(("cross", "latent_"))}
    unshared.load_state_dict(state, strict=False)
    for r, (c, t) in enumerate(unshared.repeats()):
        c.load_state_dict(shared.repeats()[r][0].state_dict())
        t.load_state_dict(shared.repeats()[r][1].state_dict())
    x = torch.rand(2, 30, 2)
    torch.testing.assert_close(unshared(x), shared(x))
    shared(x).sum().backward()
    unshared(x).sum().backward()
    # The shared latent Transformer's gradient is the sum of the three copies' gradients.
    name, p = next(iter(shared.latent_transformers[0].named_parameters()))
    total = sum(dict(t.named_parameters())[name].grad for _, t in unshared.repeats())
    torch.testing.assert_close(p.grad, total, atol=1e-5, rtol=1e-4)


def test_gradients_reach_every_parameter() -> None:
    for position in ("fourier", "learned"):
        model = tiny(position=position, learned_pos_dim=8)
        torch.nn.functional.cross_entropy(
            model(torch.rand(2, 30, 2)), torch.tensor([0, 3])
        ).backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, (position, name)


def test_learned_positions_and_no_positions() -> None:
    learned = tiny(position="learned", learned_pos_dim=8)
    assert learned.config.input_dim == 10
    assert learned.pos_embedding is not None and learned.pos_embedding.shape == (30, 8)
    none = tiny(position="none")
    assert none.config.input_dim == 2
    x = torch.rand(2, 30, 2)
    perm = torch.randperm(30)
    # Without positions the Perceiver is a set function: invariant to any input order.
    torch.testing.assert_close(none.eval()(x[:, perm]), none(x), atol=1e-5, rtol=1e-5)


def test_point_cloud_with_coordinates_and_video_grid() -> None:
    cloud = tiny(index_dims=None, max_resolution=(16.0, 16.0, 16.0), input_channels=1).eval()
    assert cloud.config.input_dim == 1 + 3 * 7
    xyz = torch.rand(2, 40, 3) * 2 - 1
    feats = torch.rand(2, 40, 1)
    perm = torch.randperm(40)
    out = cloud(feats, coords=xyz)
    assert out.shape == (2, 4)
    torch.testing.assert_close(
        cloud(feats[:, perm], coords=xyz[:, perm]), out, atol=1e-5, rtol=1e-5
    )
    with pytest.raises(ValueError, match="coords"):
        cloud(feats)

    video = tiny(index_dims=(3, 4, 5), input_channels=3)
    assert video(torch.rand(2, 3, 4, 5, 3)).shape == (2, 4)


def test_first_cross_attention_maps() -> None:
    model = tiny(cross_heads=2, cross_qk_channels=8)
    w = model.first_cross_attention(torch.rand(2, 6, 5, 2))
    assert w.shape == (2, 2, 4, 30)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 4))


def test_registry_and_bad_inputs() -> None:
    with seeded(0):
        m = create_model("perceiver_mnist", num_latents=8, latent_dim=32, self_heads=4)
    assert m(torch.rand(2, 28, 28, 1)).shape == (2, 10)
    with pytest.raises(TypeError):
        create_model("perceiver_mnist", not_a_field=1)
    with pytest.raises(ValueError, match="input channels"):
        m(torch.rand(2, 28, 28, 3))
    with pytest.raises(ValueError, match="position"):
        PerceiverConfig(position="sinusoid")
    with pytest.raises(ValueError, match="position rows"):
        m(torch.rand(2, 10, 1))


def test_image_wrappers_move_positions_with_the_pixels() -> None:
    model = tiny(input_channels=2)
    perm = torch.randperm(30, generator=torch.Generator().manual_seed(1))
    x = torch.randn(3, 2, 6, 5)  # (B, C, H, W)
    raster, permuted = PerceiverOnImages(model), PerceiverOnImages(model, perm)
    pos = model.position_features()
    assert torch.equal(raster.pos, pos) and torch.equal(permuted.pos, pos[perm])
    with torch.no_grad():
        a, b = raster(x), permuted(x)
        xs = x.flatten(2).transpose(1, 2)  # (B, H * W, C), raster order
        c = PerceiverWithPositions(model, pos[perm])(xs[:, perm])
        d = PerceiverWithPositions(model, None)(xs)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(b, c, atol=1e-6)
    assert torch.allclose(a, d, atol=1e-6)
    assert "pos" not in raster.state_dict() and "perm" not in permuted.state_dict()  # not saved
    # The ConvNet's input: image channels + position channels, every channel's pixels permuted.
    pos_image = pos.T.reshape(-1, 6, 5)  # (P, H, W)
    ff = ConvNetWithPositions(torch.nn.Identity(), pos_image, perm)
    out = ff(x)
    full = torch.cat([x, pos_image.expand(3, -1, -1, -1)], 1)
    assert out.shape == (3, 2 + pos.shape[1], 6, 5)
    assert torch.equal(out.flatten(2), full.flatten(2)[:, :, perm])
