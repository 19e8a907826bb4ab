"""DRAW model: loss terms, sampling, canvases, NLL evaluation, registry variants."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Normal, kl_divergence

from paperzoo.models import create_model
from paperzoo.models.draw import (
    DRAW,
    DRAWConfig,
    bernoulli_nll,
    binarize,
    evaluate_nll,
    gaussian_kl,
)
from paperzoo.utils import count_params

TINY = DRAWConfig(height=12, width=10, steps=4, enc_size=16, dec_size=16, z_size=3)


def tiny(**kw) -> DRAW:
    torch.manual_seed(0)
    return DRAW(config=TINY, **kw)


def test_kl_matches_torch_distributions():
    torch.manual_seed(0)
    mu, log_sigma = torch.randn(7, 5), 0.5 * torch.randn(7, 5)
    ref = kl_divergence(Normal(mu, log_sigma.exp()), Normal(0.0, 1.0)).sum(-1)
    assert torch.allclose(gaussian_kl(mu, log_sigma), ref, atol=1e-5)


def test_model_kl_is_the_sum_of_per_step_closed_form_terms():
    m = tiny()
    x = torch.rand(3, 1, 12, 10).round()
    out = m(x, generator=torch.Generator().manual_seed(0))
    assert out.kl.shape == (3, TINY.steps)
    assert (out.kl >= 0).all()
    rec, kl = m.loss_terms(x, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(kl, out.kl.sum(1))
    assert torch.allclose(rec, bernoulli_nll(out.logits, x))


def test_bernoulli_nll_matches_torch_distributions():
    torch.manual_seed(1)
    logits, x = torch.randn(4, 1, 3, 3), torch.rand(4, 1, 3, 3).round()
    ref = -torch.distributions.Bernoulli(logits=logits).log_prob(x).flatten(1).sum(1)
    assert torch.allclose(bernoulli_nll(logits, x), ref, atol=1e-5)


@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_loss_is_finite_for_constant_images(attention, fill):
    m = tiny() if attention else tiny(read_n=None, write_n=None)
    x = torch.full((2, 1, 12, 10), fill)
    loss = m.nll_bound(x).mean()
    assert torch.isfinite(loss)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


@pytest.mark.parametrize("attention", [True, False])
def test_gradients_reach_every_parameter(attention):
    m = tiny() if attention else tiny(read_n=None, write_n=None)
    x = torch.rand(4, 1, 12, 10).round()
    m.nll_bound(x).mean().backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_canvases_accumulate_to_the_final_logits_and_windows_are_recorded():
    m = tiny()
    x = torch.rand(2, 1, 12, 10).round()
    out = m(x, return_canvases=True)
    assert out.canvases is not None and out.canvases.shape == (TINY.steps, 2, 1, 12, 10)
    assert torch.equal(out.canvases[-1], out.logits)
    assert len(out.read_params) == len(out.write_params) == TINY.steps
    plain = tiny(read_n=None, write_n=None)(x)
    assert plain.read_params == [] and plain.canvases is None


def test_noise_generator_makes_forward_reproducible():
    m = tiny()
    x = torch.rand(2, 1, 12, 10).round()
    a = m.nll_bound(x, generator=torch.Generator().manual_seed(5))
    b = m.nll_bound(x, generator=torch.Generator().manual_seed(5))
    c = m.nll_bound(x, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_sampling_shapes_and_range():
    m = tiny()
    means, canvases, windows = m.sample(
        6, generator=torch.Generator().manual_seed(0), return_canvases=True
    )
    assert means.shape == (6, 1, 12, 10)
    assert canvases is not None and canvases.shape == (TINY.steps, 6, 1, 12, 10)
    assert torch.equal(canvases[-1], means)
    assert ((means >= 0) & (means <= 1)).all()
    assert len(windows) == TINY.steps


def test_evaluate_nll_and_importance_weighting():
    m = tiny()
    x = torch.rand(20, 1, 12, 10).round()
    was = m.training
    res = evaluate_nll(
        m, x, batch_size=7, importance_samples=64, generator=torch.Generator().manual_seed(0)
    )
    assert m.training == was
    assert res["nll_bound"] == pytest.approx(res["recon"] + res["kl"], rel=1e-5)
    # The importance-weighted bound is tighter than the ELBO (in expectation; 64 samples suffice).
    assert res["iw_nll"] < res["nll_bound"]
    # With one sample the IW estimate is an unbiased estimate of the same bound.
    with torch.no_grad():
        k1 = -m.log_weights(x, 200, generator=torch.Generator().manual_seed(1)).mean()
    assert float(k1) == pytest.approx(res["nll_bound"], rel=0.02)
    assert "iw_nll" not in evaluate_nll(m, x)


def test_wrong_input_shape_and_unknown_override_raise():
    m = tiny()
    with pytest.raises(ValueError):
        m(torch.rand(2, 1, 10, 12))
    with pytest.raises(TypeError):
        DRAW(config=TINY, nonsense=3)
    with pytest.raises(ValueError):
        DRAWConfig(steps=0)


def test_registered_paper_variants():
    m = create_model("draw-mnist", steps=2)
    cfg = m.config
    assert (cfg.enc_size, cfg.dec_size, cfg.z_size, cfg.read_n, cfg.write_n) == (
        256,
        256,
        100,
        2,
        5,
    )
    assert create_model("draw-mnist").config.steps == 64
    plain = create_model("draw-mnist-noattn", steps=2)
    assert plain.config.read_n is None and plain.config.write_n is None
    assert count_params(plain) > count_params(m)  # the full-image read/write dominate


def test_binarize_modes():
    x = torch.tensor([0.0, 0.2, 0.5, 0.51, 1.0])
    assert torch.equal(binarize(x, mode="threshold"), torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0]))
    s = binarize(x.expand(4000, 5), mode="stochastic", generator=torch.Generator().manual_seed(0))
    assert set(s.unique().tolist()) <= {0.0, 1.0}
    assert torch.allclose(s.mean(0), x, atol=0.03)
    with pytest.raises(ValueError):
        binarize(x, mode="dynamic")
