"""The study's VAEs: shapes, objectives, gradients."""

from __future__ import annotations

import pytest
import torch

from paperzoo import create_model
from paperzoo.models.vae import (
    VAE,
    VAEConfig,
    covariance,
    gaussian_kl,
    make_optimizers,
    shuffle_codes,
    total_correlation,
    train_step,
)

METHODS = {
    "beta_vae": {"beta": 4.0},
    "annealed_vae": {"gamma": 1000.0, "c_max": 25.0, "iteration_threshold": 10},
    "factor_vae": {"gamma": 10.0},
    "dip_vae_i": {"lambda_od": 5.0},
    "dip_vae_ii": {"lambda_od": 5.0},
    "beta_tc_vae": {"beta": 6.0},
}


@pytest.mark.parametrize("size,channels", [(64, 1), (32, 3)])
def test_shapes(size: int, channels: int) -> None:
    torch.manual_seed(0)
    m = VAE(config=VAEConfig(in_channels=channels, image_size=size))
    x = torch.rand(5, channels, size, size)
    out = m(x)
    assert out.mean.shape == out.logvar.shape == out.z.shape == (5, 10)
    assert out.logits.shape == x.shape
    assert m.represent(x).shape == (5, 10)
    with pytest.raises(ValueError, match="multiple of 16"):
        VAE(config=VAEConfig(image_size=40))


@pytest.mark.parametrize("method", list(METHODS))
def test_every_objective_trains_every_parameter(method: str) -> None:
    torch.manual_seed(0)
    m = VAE(config=VAEConfig(in_channels=1, image_size=32), method=method, **METHODS[method])
    x = (torch.rand(16, 1, 32, 32) > 0.7).float()
    terms = m.losses(x, torch.Generator().manual_seed(0))
    assert all(torch.isfinite(v) for v in terms.values())
    terms["loss"].backward()
    for name, p in m.named_parameters():
        if not name.startswith("discriminator"):
            assert p.grad is not None and p.grad.abs().sum() > 0, name
    if method == "factor_vae":
        m.zero_grad()
        terms = m.losses(x)
        terms["disc_loss"].backward()
        assert all(
            p.grad is not None and p.grad.abs().sum() > 0 for p in m.discriminator.parameters()
        )
        assert all(p.grad is None for p in m.encoder.parameters())  # codes are detached


def test_training_reduces_the_loss_and_counts_steps() -> None:
    torch.manual_seed(0)
    m = create_model("beta-tcvae", config=VAEConfig(in_channels=1, image_size=16), beta=2.0)
    x = (torch.rand(32, 1, 16, 16) > 0.8).float()
    vae_opt, disc_opt = make_optimizers(m, lr=1e-3)
    assert disc_opt is None
    first = train_step(m, x, vae_opt, disc_opt)["recon"]
    for _ in range(15):
        last = train_step(m, x, vae_opt, disc_opt)["recon"]
    assert last < first and int(m.step) == 16


def test_annealed_capacity_grows_linearly_to_c_max() -> None:
    m = VAE(
        config=VAEConfig(image_size=16),
        method="annealed_vae",
        gamma=1.0,
        c_max=10.0,
        iteration_threshold=100,
    )
    out = m(torch.rand(2, 1, 16, 16))
    kl = torch.tensor(3.0)
    m.step.fill_(50)
    assert m.regularizer(out, kl).item() == pytest.approx(2.0)  # |3 - 5|
    m.step.fill_(1000)
    assert m.regularizer(out, kl).item() == pytest.approx(7.0)  # |3 - 10|


def test_building_blocks() -> None:
    assert gaussian_kl(torch.zeros(4, 3), torch.zeros(4, 3)).item() == 0.0
    x = torch.randn(500, 3, dtype=torch.float64)
    torch.testing.assert_close(covariance(x), torch.cov(x.T, correction=0))
    z = torch.arange(12.0).view(4, 3)
    s = shuffle_codes(z, torch.Generator().manual_seed(0))
    for j in range(3):  # each column is a permutation of itself
        assert sorted(s[:, j].tolist()) == z[:, j].tolist()
    # Independent latents with tiny posteriors: TC of a batch from a factorised distribution is small
    # compared with perfectly correlated latents.
    g = torch.Generator().manual_seed(0)
    mean_ind = torch.randn(256, 2, generator=g)
    mean_cor = mean_ind[:, :1].repeat(1, 2)
    logvar = torch.full((256, 2), -4.0)
    assert (
        total_correlation(mean_cor, mean_cor, logvar)
        > total_correlation(mean_ind, mean_ind, logvar) + 1.0
    )
