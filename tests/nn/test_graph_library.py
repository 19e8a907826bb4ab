"""GG-NN as a library: gradients of gradients, integer edge types, PyG-style graph objects."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.func import functional_call

from paperzoo.engine import seeded
from paperzoo.models.ggnn import GatedGraphNet, GatedGraphSequenceNet
from paperzoo.nn.graph import GatedGraphPropagation, StackedGatedPropagation, graph_inputs

EDGES = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 0, 3]])


def _prop(k: int, tie: bool = False, state_dim: int = 4) -> GatedGraphPropagation:
    with seeded(0):
        return GatedGraphPropagation(
            state_dim=state_dim, annotation_dim=2, num_edge_types=k, num_steps=2,
            tie_directions=tie,
        ).double()  # fmt: skip


@pytest.mark.parametrize(("k", "tie"), [(1, False), (3, False), (2, True)])
def test_gradcheck_and_gradgradcheck_through_inputs_and_weights(k: int, tie: bool) -> None:
    """Both layouts (sums first: k=1; messages first: k=3, tied) in float64."""
    m = _prop(k, tie, state_dim=3)
    assert m.transform_first == (k > 1)  # both orders of the message weights are covered
    et = torch.tensor([0, k - 1, 0, k - 1, 0])
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in m.parameters())
    x = torch.randn(4, 2, dtype=torch.double, generator=torch.Generator().manual_seed(0))
    x.requires_grad_()

    def f(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return functional_call(m, dict(zip(names, ps, strict=True)), (x, EDGES, et))

    assert torch.autograd.gradcheck(f, (x, *params))
    assert torch.autograd.gradgradcheck(f, (x, *params))


def test_gradient_penalty_and_meta_step_run_and_first_order_is_unchanged() -> None:
    with seeded(0):
        net = GatedGraphNet(state_dim=6, annotation_dim=2, num_edge_types=2, output="graph",
                            num_classes=3, num_steps=2)  # fmt: skip
    et = torch.tensor([0, 1, 0, 1, 0])
    x = torch.randn(4, 2, generator=torch.Generator().manual_seed(1), requires_grad=True)
    out = net(x, EDGES, et).logsumexp(1).sum()
    (gx,) = torch.autograd.grad(out, x, create_graph=True)  # a gradient penalty
    penalty = gx.pow(2).sum()
    penalty.backward()
    assert all(p.grad is not None for p in net.propagation.parameters())
    # a meta-learning step: differentiate through an inner SGD update of the weights
    params = dict(net.named_parameters())
    loss = functional_call(net, params, (x.detach(), EDGES, et)).logsumexp(1).sum()
    grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads, strict=True)}
    outer = functional_call(net, fast, (x.detach(), EDGES, et)).logsumexp(1).sum()
    (meta,) = torch.autograd.grad(outer, [params["propagation.weight"]])
    assert torch.isfinite(meta).all() and meta.abs().sum() > 0
    # first-order gradients: the hand-written pass, and the create_graph one, agree
    net.zero_grad()
    net(x, EDGES, et).sum().backward()
    fast_grad = net.propagation.lin_a.weight.grad.clone()
    (slow,) = torch.autograd.grad(net(x, EDGES, et).sum(), [net.propagation.lin_a.weight],
                                  create_graph=True)  # fmt: skip
    assert torch.allclose(fast_grad, slow, atol=1e-5)


def test_stacked_propagation_double_backward() -> None:
    mods = [_prop(3) for _ in range(2)]
    stacked = StackedGatedPropagation(modules=mods)
    union = torch.cat([EDGES, EDGES + 4], 1)
    et = torch.tensor([0, 2, 0, 2, 1] * 2)
    plan = stacked.plan(union, et, 8)
    x = torch.randn(2, 4, 2, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda v: stacked(v, plan), (x,))


def test_float_edge_type_is_refused_naming_it() -> None:
    m = _prop(2)
    x = torch.randn(4, 2, dtype=torch.double)
    with pytest.raises(TypeError, match="edge_type"):
        m(x, EDGES, torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0]))
    with pytest.raises(TypeError, match="edge_index"):
        m(x, EDGES.double(), torch.tensor([0, 1, 0, 1, 0]))


def _data(**kw: object) -> SimpleNamespace:
    g = torch.Generator().manual_seed(2)
    base = {"x": torch.randn(4, 2, generator=g), "edge_index": EDGES}
    return SimpleNamespace(**{**base, **kw})


def test_pyg_style_data_and_batch_objects() -> None:
    with seeded(0):
        net = GatedGraphNet(state_dim=6, annotation_dim=2, num_edge_types=2, output="graph",
                            num_classes=3, num_steps=2)  # fmt: skip
    et = torch.tensor([0, 1, 0, 1, 0])
    batch = torch.tensor([0, 0, 1, 1])
    d = _data(edge_type=et, batch=batch, num_graphs=2)
    assert torch.equal(net(d), net(d.x, EDGES, et, batch, num_graphs=2))
    one_hot = torch.nn.functional.one_hot(et, 2).float()
    assert torch.equal(net(_data(edge_attr=one_hot, batch=batch, num_graphs=2)), net(d))
    assert torch.equal(net(_data(edge_attr=et, batch=batch, num_graphs=2)), net(d))
    with pytest.raises(ValueError, match="edge_attr"):
        net(_data(edge_attr=torch.rand(5, 2), batch=batch, num_graphs=2))
    with pytest.raises(TypeError, match="graph object"):
        net(d, EDGES)
    prop = net.propagation
    assert torch.equal(prop(d), prop(d.x, EDGES, et))
    with seeded(0):
        seq = GatedGraphSequenceNet(state_dim=6, annotation_dim=2, num_edge_types=2, num_steps=2)
    assert torch.equal(seq(d, num_outputs=2), seq(d.x, EDGES, et, batch, num_outputs=2))
    x, ei, t, b, n = graph_inputs(d)
    assert n == 2 and b is batch and t is et
