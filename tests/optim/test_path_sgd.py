"""Path-SGD: gamma against brute-force path enumeration, rescaling invariance, path norm, errors."""

from __future__ import annotations

import copy
import itertools

import pytest
import torch
from torch import Tensor, nn

from paperzoo.models.small import MLP, SmallCNN
from paperzoo.optim import (
    PathSGD,
    UnsupportedLayerError,
    balanced_init_,
    path_norm,
    path_scaling,
    rescale_units_,
    unbalanced_init_,
)


def tiny_mlp(sizes: tuple[int, ...] = (3, 4, 3, 2), seed: int = 0) -> nn.Sequential:
    g = torch.Generator().manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        lin = nn.Linear(a, b).double()
        with torch.no_grad():
            lin.weight.copy_(torch.randn(b, a, generator=g, dtype=torch.float64))
            lin.bias.copy_(torch.randn(b, generator=g, dtype=torch.float64))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def enumerate_paths(net: nn.Sequential) -> list[list[tuple[str, tuple[int, ...]]]]:
    """Every input->output path as a list of (parameter name, index) edges.

    A path starts at an input unit or at the bias of some layer (an edge from a constant-1 unit)
    and then visits one unit of every following layer.
    """
    lins = [(str(i), m) for i, m in enumerate(net) if isinstance(m, nn.Linear)]
    paths = []
    for start, (_, lin0) in enumerate(lins):
        sources: list[int | None] = [None]  # None: the bias of layer `start`
        if start == 0:
            sources += list(range(lin0.in_features))
        rest = lins[start:]
        for src in sources:
            for units in itertools.product(*(range(m.out_features) for _, m in rest)):
                edges = []
                for k, ((name, _), u) in enumerate(zip(rest, units, strict=True)):
                    if k == 0:
                        edges.append(
                            (f"{name}.bias", (u,)) if src is None else (f"{name}.weight", (u, src))
                        )
                    else:
                        edges.append((f"{name}.weight", (u, units[k - 1])))
                paths.append(edges)
    return paths


def brute_force(net: nn.Sequential, p: float) -> tuple[dict[str, Tensor], float]:
    """gamma_p(w, e) and pi_p(w) straight from their definitions as sums over paths."""
    params = dict(net.named_parameters())
    sums = {n: torch.zeros_like(q) for n, q in params.items()}
    total = 0.0
    for path in enumerate_paths(net):
        vals = [params[n].detach()[idx].abs() ** p for n, idx in path]
        total += float(torch.stack(vals).prod())
        for i, (n, idx) in enumerate(path):
            others = [v for j, v in enumerate(vals) if j != i]
            sums[n][idx] += torch.stack(others).prod() if others else 1.0
    return {n: s ** (2.0 / p) for n, s in sums.items()}, total ** (1.0 / p)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_gamma_equals_brute_force_path_enumeration(p: float) -> None:
    net = tiny_mlp()
    expected, _ = brute_force(net, p)
    got = path_scaling(net, p=p)
    assert set(got) == set(expected)
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-10, atol=1e-12)


def test_optimizer_scaling_matches_path_scaling_and_update_rule() -> None:
    net = tiny_mlp((4, 5, 3))
    opt = PathSGD(net, lr=0.1)
    x, y = torch.randn(8, 4, dtype=torch.float64), torch.randint(0, 3, (8,))
    nn.functional.cross_entropy(net(x), y).backward()
    gam = opt.scaling()
    ref = path_scaling(net)
    for n, q in net.named_parameters():
        torch.testing.assert_close(gam[q], ref[n])
    before = {n: q.detach().clone() for n, q in net.named_parameters()}
    grads = {n: q.grad.clone() for n, q in net.named_parameters()}
    opt.step()
    for n, q in net.named_parameters():
        torch.testing.assert_close(q.detach(), before[n] - 0.1 * grads[n] / ref[n])
    # A bias is an edge from a constant-1 unit: its gamma is gamma_out alone, i.e. the gamma of
    # an edge from a unit with gamma_in = 1.
    assert ref["2.bias"].shape == (3,)
    torch.testing.assert_close(ref["2.bias"], torch.ones(3, dtype=torch.float64))


def test_gamma_is_not_the_squared_output_norm_variant() -> None:
    # Back-propagating ||out||^2 (a known bug) weights each output by its own path sum.
    net = tiny_mlp((3, 4, 2))
    w2 = {n: q.detach() ** 2 for n, q in net.named_parameters()}
    w2 = {n: t.requires_grad_(True) for n, t in w2.items()}
    out = torch.func.functional_call(net, w2, (torch.ones(1, 3, dtype=torch.float64),))
    wrong = torch.autograd.grad(out.pow(2).sum(), list(w2.values()))
    right = path_scaling(net)
    assert not torch.allclose(wrong[0], right["0.weight"])


@pytest.mark.parametrize("p", [2.0, 1.0])
def test_path_norm_matches_definition(p: float) -> None:
    net = tiny_mlp((3, 3, 4, 2), seed=3)
    _, expected = brute_force(net, p)
    assert path_norm(net, p=p) == pytest.approx(expected, rel=1e-12)
    # Without biases only the paths that start at an input unit count.
    no_bias = copy.deepcopy(net)
    with torch.no_grad():
        for m in no_bias:
            if isinstance(m, nn.Linear):
                m.bias.zero_()
    assert path_norm(net, p=p, bias=False) == pytest.approx(path_norm(no_bias, p=p), rel=1e-12)


def test_path_norm_of_a_single_linear_layer_is_the_entrywise_norm() -> None:
    lin = nn.Linear(5, 3, bias=False)
    assert path_norm(lin, p=2) == pytest.approx(float(lin.weight.detach().norm()), rel=1e-5)
    assert path_norm(lin, p=1) == pytest.approx(float(lin.weight.detach().abs().sum()), rel=1e-5)


def test_conv_gamma_is_the_derivative_of_the_path_sum() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(2, 3, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 3, stride=2),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 1 * 1, 3),
    ).double()
    shape = (2, 10, 10)
    w2 = {n: (q.detach() ** 2).requires_grad_(True) for n, q in net.named_parameters()}
    out = torch.func.functional_call(net, w2, (torch.ones(1, *shape, dtype=torch.float64),))
    grads = dict(zip(w2, torch.autograd.grad(out.sum(), list(w2.values())), strict=True))
    got = path_scaling(net, input_shape=shape)
    for n in w2:
        torch.testing.assert_close(got[n], grads[n])
    assert path_norm(net, input_shape=shape) == pytest.approx(float(out.detach().sum()) ** 0.5)


def random_rescale_(net: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    hidden = [m for m in net.modules() if isinstance(m, nn.Linear | nn.Conv2d)][:-1]
    for i, m in enumerate(hidden):
        units = m.out_features if isinstance(m, nn.Linear) else m.out_channels
        # factors spread over two orders of magnitude either way
        rescale_units_(
            net, i, 10.0 ** (4 * torch.rand(units, generator=g, dtype=torch.float64) - 2)
        )


def make_mlp() -> nn.Module:
    torch.manual_seed(1)
    return MLP(in_features=12, hidden=(10, 8), num_classes=4).double()


def make_cnn() -> nn.Module:
    torch.manual_seed(2)
    return SmallCNN(in_chans=1, num_classes=3, image_size=8, channels=(3, 4), hidden=6).double()


@pytest.mark.parametrize(
    ("factory", "xshape"), [(make_mlp, (12,)), (make_cnn, (1, 8, 8))], ids=["mlp", "cnn"]
)
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_update_is_invariant_to_node_wise_rescaling(factory, xshape, momentum: float) -> None:
    a = factory()
    b = copy.deepcopy(a)
    random_rescale_(b, seed=5)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(16, *xshape, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (16,), generator=g)
    torch.testing.assert_close(b(x), a(x))  # the same function
    opt_a = PathSGD(a, lr=0.05, momentum=momentum, input_shape=xshape)
    opt_b = PathSGD(b, lr=0.05, momentum=momentum, input_shape=xshape)
    for _ in range(3 if momentum else 1):
        for net, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    # After the update, rescaling a's new weights gives exactly b's new weights.
    a_rescaled = copy.deepcopy(a)
    random_rescale_(a_rescaled, seed=5)
    for (n, qa), qb in zip(a_rescaled.named_parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(qb, qa, rtol=1e-10, atol=1e-12, msg=n)
    out_a, out_b = a(x), b(x)
    assert (out_a - out_b).abs().max() <= 1e-10 * out_a.abs().max()
    assert not torch.allclose(out_a, factory()(x))  # the step did change the function


def test_sgd_is_not_invariant_to_node_wise_rescaling() -> None:
    a = make_mlp()
    b = copy.deepcopy(a)
    random_rescale_(b, seed=5)
    x = torch.rand(16, 12, dtype=torch.float64)
    y = torch.randint(0, 4, (16,))
    for net in (a, b):
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    assert (a(x) - b(x)).abs().max() > 1e-3 * a(x).abs().max()


def _linears(net: nn.Module) -> list[nn.Linear]:
    return [m for m in net.modules() if isinstance(m, nn.Linear)]


def test_unbalanced_init_preserves_the_function_and_rescales_drawn_units() -> None:
    """Section 6: a drawn unit's incoming edges (and bias) x 10c, its outgoing edges / 10c."""
    net = make_mlp()
    balanced_init_(net, generator=torch.Generator().manual_seed(0))
    for m in _linears(net):
        assert float(m.weight.detach().std()) == pytest.approx(m.in_features**-0.5, rel=0.3)
        assert not m.bias.any()
        with torch.no_grad():  # non-zero biases, so that their rescaling is checked too
            m.bias.copy_(torch.randn(m.bias.shape, generator=torch.Generator().manual_seed(3)))
    before = copy.deepcopy(net)
    norm = path_norm(net)
    scales = unbalanced_init_(net, draws_per_layer=3, generator=torch.Generator().manual_seed(1))
    assert [tuple(s.shape) for s in scales.values()] == [(10,), (8,)]
    for s in scales.values():  # three draws with replacement in each hidden layer
        assert 1 <= int((s != 1).sum()) <= 3 and bool((s > 0).all())
    # Every weight is exactly what the rescaling says: W'[j, k] = W[j, k] * f_out[j] / f_in[k]
    # (f = 1 for the input and output units), b'[j] = b[j] * f_out[j].
    ones_in, ones_out = torch.ones(12, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    factors = [ones_in, scales[0], scales[1], ones_out]
    for i, (new, old) in enumerate(zip(_linears(net), _linears(before), strict=True)):
        f_in, f_out = factors[i], factors[i + 1]
        torch.testing.assert_close(new.weight, old.weight * f_out[:, None] / f_in[None, :])
        torch.testing.assert_close(new.bias, old.bias * f_out)
    # ... so the network computes the same function (the paper's point) with the same path norm.
    x = torch.rand(7, 12, dtype=torch.float64)
    torch.testing.assert_close(net(x), before(x))
    assert path_norm(net) == pytest.approx(norm, rel=1e-10)


def test_unbalanced_init_draws_a_quarter_of_each_hidden_layer_by_default() -> None:
    # With sigma = 0 every draw rescales its unit by exactly base = 10, so the sum of log10
    # factors over a layer counts the draws made in that layer: h // 4 each, not a pooled total.
    net = MLP(in_features=5, hidden=(400, 200, 120), num_classes=3).double()
    scales = unbalanced_init_(net, sigma=0.0, generator=torch.Generator().manual_seed(0))
    draws = [round(float(s.log10().sum())) for s in scales.values()]
    assert draws == [100, 50, 30]
    # With replacement: about h * (1 - (1 - 1/h)^(h/4)) = 0.22 h distinct units per layer.
    assert 80 <= int((scales[0] != 1).sum()) < 100
    # c ~ LogNormal(0, 1): the factor of a unit drawn (mostly) once has log10(c) with median 0.
    wide = MLP(in_features=5, hidden=(800, 800), num_classes=3)
    factors = torch.cat(
        list(unbalanced_init_(wide, generator=torch.Generator().manual_seed(1)).values())
    )
    once = factors[factors != 1].log10() - 1
    assert float(once.median()) == pytest.approx(0.0, abs=0.15)
    untouched = copy.deepcopy(net)
    none = unbalanced_init_(untouched, draws_per_layer=(0, 0, 0))
    assert all(bool((s == 1).all()) for s in none.values())
    assert all(
        torch.equal(a, b) for a, b in zip(untouched.parameters(), net.parameters(), strict=True)
    )
    some = unbalanced_init_(copy.deepcopy(untouched), draws_per_layer=(0, 5, 0))
    assert bool((some[0] == 1).all()) and bool((some[2] == 1).all())
    assert 1 <= int((some[1] != 1).sum()) <= 5
    with pytest.raises(ValueError, match="draws_per_layer"):
        unbalanced_init_(untouched, draws_per_layer=(1, 2))


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 6)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(x + self.act(self.fc1(x)))


@pytest.mark.parametrize(
    ("net", "name"),
    [
        (
            nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2)),
            "'1' (BatchNorm1d)",
        ),
        (nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)), "'1' (Tanh)"),
        (MLP(in_features=4, hidden=(4,), act="elu"), "'net.2' (ELU)"),
        (nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.LSTM(4, 2)), "'2' (LSTM)"),
    ],
)
def test_unsupported_layers_raise_naming_the_layer(net: nn.Module, name: str) -> None:
    with pytest.raises(UnsupportedLayerError, match=name.replace("(", r"\(").replace(")", r"\)")):
        PathSGD(net, lr=0.1)
    with pytest.raises(UnsupportedLayerError):
        path_norm(net)


def test_residual_connection_is_rejected() -> None:
    """Refused when the optimizer is built (the forward read with torch.fx), naming the model."""
    with pytest.raises(UnsupportedLayerError, match=r"Residual\.forward calls .*add.*residual"):
        PathSGD(Residual(), lr=0.1)


def test_needs_the_model_and_learns_input_shape_from_forward() -> None:
    net = make_cnn().float()
    with pytest.raises(TypeError, match="model"):
        PathSGD(net.parameters(), lr=0.1)
    opt = PathSGD(net.parameters(), lr=0.1, model=net)
    with pytest.raises(RuntimeError, match="input shape"):
        opt.step()
    x = torch.rand(4, 1, 8, 8)
    nn.functional.cross_entropy(net(x), torch.tensor([0, 1, 2, 0])).backward()
    before = net.head[-1].weight.detach().clone()
    opt.step()
    assert not torch.equal(before, net.head[-1].weight)
    with pytest.raises(ValueError, match="does not belong"):
        PathSGD([nn.Parameter(torch.zeros(3))], lr=0.1, model=net)


def test_param_groups_and_state_dict_round_trip() -> None:
    net = make_mlp()
    lin = [m for m in net.modules() if isinstance(m, nn.Linear)]
    opt = PathSGD(
        [{"params": lin[0].parameters(), "lr": 0.01}, {"params": lin[1].parameters()}],
        lr=0.1,
        model=net,
        momentum=0.5,
    )
    x, y = torch.rand(5, 12, dtype=torch.float64), torch.randint(0, 4, (5,))
    frozen = lin[2].weight.detach().clone()
    nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
    assert torch.equal(frozen, lin[2].weight)  # not in any group: untouched
    state = opt.state_dict()
    opt2 = PathSGD(
        [{"params": lin[0].parameters(), "lr": 0.01}, {"params": lin[1].parameters()}],
        lr=0.1,
        model=net,
        momentum=0.5,
    )
    opt2.load_state_dict(state)
    assert torch.equal(
        opt2.state[lin[0].weight]["momentum_buffer"], opt.state[lin[0].weight]["momentum_buffer"]
    )


@pytest.mark.parametrize("xshape", [(6,), (3, 6)], ids=["vector", "sequence"])
def test_blockwise_update_with_momentum_and_weight_decay(monkeypatch, xshape) -> None:
    import paperzoo.optim.path_sgd as ps

    monkeypatch.setattr(ps, "_CHUNK_ELEMS", 7)  # several row blocks per weight
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 4)).double()
    ref = copy.deepcopy(net)
    opt = PathSGD(net, lr=0.03, momentum=0.8, weight_decay=0.1, input_shape=xshape)
    bufs: dict[str, Tensor] = {}
    for _ in range(3):
        x = torch.randn(5, *xshape, dtype=torch.float64)
        gam = path_scaling(ref, input_shape=xshape)
        for net_, opt_ in ((net, opt), (ref, None)):
            net_.zero_grad()
            net_(x).pow(2).mean().backward()
            if opt_ is not None:
                opt_.step()
        with torch.no_grad():
            for n, q in ref.named_parameters():
                d = (q.grad + 0.1 * q) / gam[n]
                bufs[n] = 0.8 * bufs[n] + d if n in bufs else d
                q -= 0.03 * bufs[n]
    for (n, q), r in zip(net.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(q, r, rtol=1e-12, atol=1e-12, msg=n)


@pytest.mark.parametrize(
    "widths",
    [(3, 12, 4, 2), (8, 3, 4, 5), (3, 4, 5, 12), (4, 6, 9, 5, 3)],
    ids=["pivot-first", "pivot-middle", "pivot-last", "four-layers"],
)
@pytest.mark.parametrize("bias", [True, False])
def test_mlp_fast_path_equals_the_update_rule(monkeypatch, widths, bias: bool) -> None:
    # The MLP path reads the largest layer once (both gammas from its old weights) and walks
    # outwards; wherever the largest layer sits, the update is w - lr * grad / gamma(w).
    import paperzoo.optim.path_sgd as ps

    monkeypatch.setattr(ps, "_CHUNK_ELEMS", 5)  # several row blocks per weight
    torch.manual_seed(1)
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(widths):
        layers += [nn.Linear(a, b, bias=bias), nn.ReLU()]
    net = nn.Sequential(*layers[:-1]).double()
    opt = PathSGD(net, lr=0.05)
    for _ in range(2):
        x = torch.randn(7, widths[0], dtype=torch.float64)
        net.zero_grad()
        net(x).pow(2).mean().backward()
        gam = path_scaling(net)
        expected = {n: q.detach() - 0.05 * q.grad / gam[n] for n, q in net.named_parameters()}
        opt.step()
        for n, q in net.named_parameters():
            torch.testing.assert_close(q.detach(), expected[n], rtol=1e-12, atol=1e-14, msg=n)
