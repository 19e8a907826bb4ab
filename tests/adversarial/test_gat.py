import pytest
import torch
from torch import nn

from paperzoo.adversarial.gat import (
    GATConfig,
    GenerativeAdversarialTrainer,
    PerturbationGenerator,
    input_gradient,
)
from paperzoo.models.small import SmallCNN


def _setup(alpha=0.5, c_g=0.1):
    torch.manual_seed(0)
    clf = SmallCNN(channels=(4, 8), hidden=16, dropout=0.2)
    gen = PerturbationGenerator(hidden=(4,), scale=0.2)
    gat = GenerativeAdversarialTrainer(
        generator=gen,
        generator_optimizer=torch.optim.SGD(gen.parameters(), lr=0.1),
        classifier_optimizer=torch.optim.SGD(clf.parameters(), lr=0.1),
        config=GATConfig(alpha=alpha, c_g=c_g),
    )
    x, y = torch.rand(8, 1, 28, 28), torch.randint(0, 10, (8,))
    return clf, gen, gat, x, y


def _snapshot(m: nn.Module):
    return [p.detach().clone() for p in m.parameters()]


def _same(m: nn.Module, snap) -> bool:
    return all(torch.equal(p, q) for p, q in zip(m.parameters(), snap, strict=True))


def test_generator_output_respects_its_scale():
    gen = PerturbationGenerator(in_chans=3, hidden=(8,), scale=0.05)
    with torch.no_grad():
        for p in gen.parameters():
            p.mul_(100.0)  # saturate tanh
    out = gen(torch.randn(4, 3, 16, 16) * 1e3)
    assert out.shape == (4, 3, 16, 16)
    assert out.abs().max() <= 0.05 + 1e-7 and out.abs().max() > 0.04


def test_generator_is_invariant_to_gradient_scale():
    gen = PerturbationGenerator(hidden=(4,))
    g = torch.randn(2, 1, 8, 8)
    assert torch.allclose(gen(g), gen(g * 1e-6), atol=1e-6)


def test_generator_phase_updates_only_the_generator():
    clf, gen, gat, x, y = _setup()
    clf_before, gen_before = _snapshot(clf), _snapshot(gen)
    gat.generator_step(clf, x, y)
    assert _same(clf, clf_before) and not _same(gen, gen_before)
    assert all(p.grad is None for p in clf.parameters())


def test_classifier_phase_updates_only_the_classifier():
    clf, gen, gat, x, y = _setup()
    clf_before, gen_before = _snapshot(clf), _snapshot(gen)
    gat.classifier_step(clf, x, y)
    assert _same(gen, gen_before) and not _same(clf, clf_before)


def test_generator_step_increases_the_fooling_loss():
    clf, gen, gat, x, y = _setup(c_g=0.0)
    clf.eval()  # no dropout noise: the fooling loss then depends on the generator alone
    metrics = [gat.generator_step(clf, x, y)["gen_fooling_ce"] for _ in range(15)]
    assert metrics[-1] > metrics[0]


def test_input_gradient_restores_mode_and_leaves_param_grads():
    clf, *_ = _setup()
    clf.train()
    x, y = torch.rand(3, 1, 28, 28), torch.tensor([1, 2, 3])
    g = input_gradient(clf, x, y)
    assert g.shape == x.shape and clf.training
    assert all(p.grad is None for p in clf.parameters())
    clf.eval()
    input_gradient(clf, x, y)
    assert not clf.training


def test_mode_restored_even_when_the_classifier_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    m = Boom().train()
    with pytest.raises(RuntimeError, match="boom"):
        input_gradient(m, torch.zeros(1, 1, 2, 2), torch.zeros(1, dtype=torch.long))
    assert m.training


def test_perturbed_inputs_stay_in_the_box_and_alpha_one_is_clean_training():
    clf, gen, gat, x, y = _setup(alpha=1.0)
    x_adv, delta = gat.perturb(clf, x, y)
    assert x_adv.min() >= 0 and x_adv.max() <= 1
    ref = SmallCNN(channels=(4, 8), hidden=16, dropout=0.2)
    ref.load_state_dict(clf.state_dict())
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.manual_seed(5)
    gat.classifier_step(clf, x, y)
    torch.manual_seed(5)
    loss = nn.functional.cross_entropy(ref(torch.cat([x, x_adv.detach()]))[: len(x)], y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    for p, q in zip(clf.parameters(), ref.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6)


def test_bad_config_raises():
    with pytest.raises(ValueError, match="alpha"):
        GATConfig(alpha=1.5)
    with pytest.raises(ValueError, match="scale"):
        PerturbationGenerator(scale=0)


def test_generator_step_reports_the_perturbation_size_within_the_bound():
    clf, gen, gat, x, y = _setup(c_g=0.0)
    out = gat.generator_step(clf, x, y)
    with torch.no_grad():
        delta = gen(input_gradient(clf, x, y))
    assert 0 < out["gen_linf"] <= gen.scale + 1e-7
    assert out["gen_l2"] >= out["gen_linf"]  # an l2 norm is at least the largest entry
    assert delta.abs().max() <= gen.scale + 1e-7


def test_a_step_reads_nothing_from_the_device(monkeypatch):
    """Both updates return detached 0-dim tensors: the host waits for nothing in a step."""
    clf, gen, gat, x, y = _setup()
    with monkeypatch.context() as m:
        m.setattr(torch.Tensor, "item", lambda self: pytest.fail("a metric was read"))
        out = gat.step(clf, (x, y))
    assert {"gen_loss", "gen_l2", "gen_linf", "loss", "acc", "adv_acc"} <= set(out)
    assert all(v.dim() == 0 and not v.requires_grad for v in out.values())
