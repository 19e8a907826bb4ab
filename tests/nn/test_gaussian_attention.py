"""DRAW's Gaussian read/write attention: filterbank geometry, read, write, initialisation."""

from __future__ import annotations

import math

import pytest
import torch

from paperzoo.nn.gaussian_attention import (
    AttentionParams,
    AttentionReader,
    AttentionWriter,
    PlainReader,
    PlainWriter,
    attention_params,
    filterbank,
    grid_centres,
    read_glimpse,
    write_patch,
)


def params(gx, gy, delta, sigma2, gamma=1.0) -> AttentionParams:
    def t(v):
        return torch.as_tensor(v, dtype=torch.float32).reshape(-1)

    return AttentionParams(t(gx), t(gy), t(delta), t(sigma2), t(gamma))


def test_grid_centres_are_centred_on_g_with_stride_delta():
    # mu^i = g + (i - (N-1)/2) delta, i = 0..N-1: symmetric about g (the paper's Eq. 19 with
    # i = 1..N; ports that use range(N) with i - N/2 - 0.5 are shifted by one stride).
    for n in (1, 2, 3, 5, 12):
        mu = grid_centres(torch.tensor([10.0]), torch.tensor([2.0]), n)[0]
        assert mu.shape == (n,)
        assert torch.allclose(mu.mean(), torch.tensor(10.0))
        paper = torch.tensor([10.0 + (i - n / 2 - 0.5) * 2.0 for i in range(1, n + 1)])
        assert torch.allclose(mu, paper)
        if n > 1:
            assert torch.allclose(mu.diff(), torch.full((n - 1,), 2.0))


def test_attention_params_follow_eqs_22_to_24():
    h, w, n = 20, 30, 4
    raw = torch.tensor([[0.0, 0.0, math.log(4.0), 0.0, math.log(2.0)], [-1.0, 1.0, 0.0, 0.0, 0.0]])
    p = attention_params(raw, height=h, width=w, n=n)
    assert torch.allclose(p.gx, torch.tensor([(w + 1) / 2, 0.0]))  # g~ = 0: image centre
    assert torch.allclose(p.gy, torch.tensor([(h + 1) / 2, h + 1.0]))  # g~ = +1: past the edge
    assert torch.allclose(p.delta, torch.full((2,), (max(h, w) - 1) / (n - 1)))
    assert torch.allclose(p.sigma2, torch.tensor([4.0, 1.0]))
    assert torch.allclose(p.gamma, torch.tensor([2.0, 1.0]))
    # delta~ = 1 with a centred grid puts the outer centres on the first and last pixel.
    mu = grid_centres(p.gx[:1], p.delta[:1], n)[0]
    assert torch.allclose(mu[[0, -1]], torch.tensor([1.0, float(w)]))


def test_filterbank_rows_sum_to_one_even_off_image():
    p = params([5.0, -40.0, 14.5], [3.0, 90.0, 7.0], [1.5, 3.0, 0.2], [0.5, 0.01, 30.0])
    fx, fy = filterbank(p, height=11, width=17, n=6)
    assert fx.shape == (3, 6, 17) and fy.shape == (3, 6, 11)
    assert torch.isfinite(fx).all() and torch.isfinite(fy).all()
    assert torch.allclose(fx.sum(-1), torch.ones(3, 6), atol=1e-6)
    assert torch.allclose(fy.sum(-1), torch.ones(3, 6), atol=1e-6)
    assert (fx >= 0).all() and (fy >= 0).all()


def test_small_delta_and_sigma_read_the_pixel_at_the_grid_centre():
    torch.manual_seed(0)
    x = torch.rand(2, 3, 9, 13)  # non-square, 3 channels
    # 1-based pixel coordinates: (gx, gy) = (4, 7) is the pixel x[..., 6, 3].
    p = params([4.0, 10.0], [7.0, 2.0], [1e-4, 1e-4], [1e-3, 1e-3])
    fx, fy = filterbank(p, height=9, width=13, n=3)
    g = read_glimpse(x, fx, fy, p.gamma)
    assert g.shape == (2, 3, 3, 3)
    assert torch.allclose(g[0], x[0, :, 6, 3][:, None, None].expand(3, 3, 3), atol=1e-5)
    assert torch.allclose(g[1], x[1, :, 1, 9][:, None, None].expand(3, 3, 3), atol=1e-5)


def test_unit_stride_sharp_read_returns_the_pixel_block_scaled_by_gamma():
    torch.manual_seed(1)
    x = torch.rand(1, 1, 10, 12)
    p = params([6.0], [5.0], [1.0], [1e-3], [2.5])  # 3x3 centres at columns 5..7, rows 4..6
    fx, fy = filterbank(p, height=10, width=12, n=3)
    g = read_glimpse(x, fx, fy, p.gamma)
    assert torch.allclose(g[0, 0], 2.5 * x[0, 0, 3:6, 4:7], atol=1e-5)


def test_read_equals_explicit_matrix_products():
    torch.manual_seed(2)
    x = torch.rand(3, 2, 8, 11)
    p = params([3.0, 6.0, 9.0], [2.0, 4.0, 7.0], [0.7, 1.3, 2.0], [0.8, 2.0, 5.0], [1.0, 0.5, 3.0])
    fx, fy = filterbank(p, height=8, width=11, n=4)
    g = read_glimpse(x, fx, fy, p.gamma)
    for b in range(3):
        for c in range(2):
            ref = p.gamma[b] * fy[b] @ x[b, c] @ fx[b].T  # Eq. 27
            assert torch.allclose(g[b, c], ref, atol=1e-6)
    w = torch.rand(3, 2, 4, 4)
    img = write_patch(w, fx, fy, p.gamma)
    assert img.shape == (3, 2, 8, 11)
    for b in range(3):
        ref = fy[b].T @ w[b, 1] @ fx[b] / p.gamma[b]  # Eq. 29
        assert torch.allclose(img[b, 1], ref, atol=1e-6)


def test_write_of_a_read_reconstructs_the_patch():
    torch.manual_seed(3)
    x = torch.rand(2, 1, 12, 15)
    p = params([5.0, 10.0], [4.0, 8.0], [1.0, 1.0], [1e-3, 1e-3], [1.7, 0.6])
    fx, fy = filterbank(p, height=12, width=15, n=5)
    img = write_patch(read_glimpse(x, fx, fy, p.gamma), fx, fy, p.gamma)
    # Sample 0: centres at columns 3..7, rows 2..6 (1-based) -> x[..., 1:6, 2:7].
    mask = torch.zeros(12, 15, dtype=torch.bool)
    mask[1:6, 2:7] = True
    assert torch.allclose(img[0, 0][mask], x[0, 0][mask], atol=1e-5)
    assert img[0, 0][~mask].abs().max() < 1e-5
    assert torch.allclose(img[1, 0, 5:10, 7:12], x[1, 0, 5:10, 7:12], atol=1e-5)


def test_cover_init_tiles_the_image_and_zero_init_sits_on_the_corners():
    h_dec = torch.zeros(1, 16)
    cover = AttentionReader(hidden_size=16, channels=1, height=28, width=28, n=2)
    p, fx, _ = cover.windows(h_dec)
    mu = grid_centres(p.gx, p.delta, 2)[0]
    assert torch.allclose(mu, torch.tensor([7.5, 21.5]))  # stride 14, centred at 14.5
    assert torch.allclose(p.sigma2.sqrt(), torch.tensor([7.0]))
    assert torch.allclose(p.gamma, torch.ones(1))
    zero = AttentionReader(hidden_size=16, channels=1, height=28, width=28, n=2, window_init="zero")
    pz, fxz, _ = zero.windows(h_dec)
    assert torch.allclose(grid_centres(pz.gx, pz.delta, 2)[0], torch.tensor([1.0, 28.0]))
    # With sigma = 1 the corner filters put almost no weight on the central 20 columns of a
    # 28-pixel image (where MNIST digits are): the encoder sees nothing of the digit.
    assert fxz[0, :, 4:24].sum() < 1e-3
    assert fx[0, :, 4:24].sum() > 1.0
    with pytest.raises(ValueError):
        AttentionReader(hidden_size=4, channels=1, height=5, width=5, n=2, window_init="bad")


def test_reader_and_writer_modules_shapes_and_gradients():
    torch.manual_seed(4)
    reader = AttentionReader(hidden_size=8, channels=3, height=10, width=14, n=3)
    writer = AttentionWriter(hidden_size=8, channels=3, height=10, width=14, n=4)
    x, x_hat, h = torch.rand(5, 3, 10, 14), torch.randn(5, 3, 10, 14), torch.randn(5, 8)
    h.requires_grad_(True)
    r, rp = reader(x, x_hat, h)
    assert r.shape == (5, reader.out_features) == (5, 2 * 3 * 3 * 3)
    update, wp = writer(h)
    assert update.shape == (5, 3, 10, 14)
    (r.square().sum() + update.square().sum()).backward()
    for mod in (reader, writer):
        for name, prm in mod.named_parameters():
            assert prm.grad is not None and prm.grad.abs().sum() > 0, name
    assert h.grad is not None and h.grad.abs().sum() > 0
    assert rp.gx.shape == (5,) and wp.sigma2.shape == (5,)


def test_plain_read_and_write():
    x, x_hat = torch.rand(2, 1, 4, 6), torch.rand(2, 1, 4, 6)
    r, none = PlainReader(channels=1, height=4, width=6)(x, x_hat, None)
    assert none is None
    assert torch.equal(r, torch.cat([x.flatten(1), x_hat.flatten(1)], 1))  # Eq. 17
    w = PlainWriter(hidden_size=5, channels=1, height=4, width=6)
    out, _ = w(torch.randn(2, 5))
    assert out.shape == (2, 1, 4, 6)


def test_bad_raw_shape_raises():
    with pytest.raises(ValueError):
        attention_params(torch.zeros(3, 4), height=5, width=5, n=2)


def test_square_fast_path_matches_the_per_axis_formula():
    p = params([3.0, 20.5], [11.0, 2.0], [1.5, 4.0], [0.7, 9.0])
    fx, fy = filterbank(p, height=24, width=24, n=4)
    pos = torch.arange(1, 25, dtype=torch.float32)
    for b in range(2):
        for f, g in ((fx, p.gx), (fy, p.gy)):
            mu = grid_centres(g, p.delta, 4)[b]
            ref = torch.exp(-((pos[None] - mu[:, None]) ** 2) / (2 * p.sigma2[b]))  # Eq. 25
            assert torch.allclose(f[b], ref / ref.sum(1, keepdim=True), atol=1e-6)


def test_cover_init_write_has_unit_gain():
    # A constant patch written by the initial window adds that constant to the canvas on average.
    writer = AttentionWriter(hidden_size=4, channels=1, height=28, width=28, n=5)
    p, fx, fy = writer.windows(torch.zeros(1, 4))
    canvas = write_patch(torch.full((1, 1, 5, 5), 3.0), fx, fy, p.gamma)
    assert canvas.mean().item() == pytest.approx(3.0, rel=1e-4)
    reader = AttentionReader(hidden_size=4, channels=1, height=28, width=28, n=2)
    pr, rfx, rfy = reader.windows(torch.zeros(1, 4))
    glimpse = read_glimpse(torch.full((1, 1, 28, 28), 0.7), rfx, rfy, pr.gamma)
    assert torch.allclose(glimpse, torch.full_like(glimpse, 0.7))
