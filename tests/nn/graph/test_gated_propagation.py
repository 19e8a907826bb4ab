"""GatedGraphPropagation: hand-computed values, a dense reference, direction, batching, gradients
of gradients, bad inputs."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import Tensor
from torch.func import functional_call

from paperzoo.engine import seeded
from paperzoo.models.ggnn import GatedGraphNet
from paperzoo.nn.graph import GatedGraphPropagation, reverse_edges

RandomGraph = Callable[..., tuple[Tensor, Tensor, Tensor]]  # the random_graph fixture
EDGES = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 0, 3]])


def _sig(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def _dense_reference(
    prop: GatedGraphPropagation, x: Tensor, edge_index: Tensor, edge_type: Tensor, steps: int
) -> Tensor:
    """The paper's equations with per-type dense adjacency matrices (independent of the module)."""
    n, d, k = x.shape[0], prop.state_dim, prop.num_edge_types
    adj = torch.zeros(k, n, n, dtype=x.dtype)  # adj[t, v, u] = number of edges u -> v of type t
    for (u, v), t in zip(edge_index.t().tolist(), edge_type.tolist(), strict=True):
        adj[t, v, u] += 1
    w_in, w_out = prop.weight[0], prop.weight[-1]
    b_in, b_out = prop.bias[0], prop.bias[-1]
    wa, ba = prop.lin_a.weight, prop.lin_a.bias
    uzr, uc = prop.lin_h_zr.weight, prop.lin_h_c.weight
    h = torch.cat([x, x.new_zeros(n, d - x.shape[1])], dim=1)
    for _ in range(steps):
        a_in = sum(adj[t] @ (h @ w_in[t] + b_in[t]) for t in range(k))
        a_out = sum(adj[t].t() @ (h @ w_out[t] + b_out[t]) for t in range(k))
        a = a_in + a_out if prop.tie_directions else torch.cat([a_in, a_out], 1)
        pa = a @ wa.t() + ba
        z = torch.sigmoid(pa[:, :d] + h @ uzr[:d].t())
        r = torch.sigmoid(pa[:, d : 2 * d] + h @ uzr[d:].t())
        cand = torch.tanh(pa[:, 2 * d :] + (r * h) @ uc.t())
        h = (1 - z) * h + z * cand
    return h


def test_hand_computed_three_node_example() -> None:
    # Path 0 -> 1 -> 2, one edge type, state = annotation = 1 dimension, one step.
    prop = GatedGraphPropagation(state_dim=1, annotation_dim=1, num_edge_types=1, num_steps=1)
    with torch.no_grad():
        prop.weight[0, 0, 0, 0] = 2.0  # incoming message weight
        prop.weight[1, 0, 0, 0] = -1.0  # outgoing message weight
        prop.bias.fill_(0.5)  # every message gets +0.5
        prop.lin_a.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        prop.lin_a.bias.copy_(torch.tensor([0.0, 0.0, 0.1]))
        prop.lin_h_zr.weight.copy_(torch.tensor([[1.0], [-1.0]]))
        prop.lin_h_c.weight.fill_(3.0)
    x = torch.tensor([[1.0], [2.0], [-1.0]])
    edge_index = torch.tensor([[0, 1], [1, 2]])
    out = prop(x, edge_index, torch.zeros(2, dtype=torch.long))

    def node(h: float, a_in: float, a_out: float) -> float:
        z = _sig(a_in + h)  # row 0 of lin_a, U_z = 1
        r = _sig(a_out - h)  # row 1 of lin_a, U_r = -1
        cand = math.tanh(a_in + a_out + 0.1 + 3.0 * r * h)
        return (1 - z) * h + z * cand

    expected = [
        node(1.0, 0.0, -1.0 * 2.0 + 0.5),  # node 0: no incoming; outgoing to node 1 (h=2)
        node(2.0, 2.0 * 1.0 + 0.5, -1.0 * -1.0 + 0.5),  # node 1: in from 0, out to 2
        node(-1.0, 2.0 * 2.0 + 0.5, 0.0),  # node 2: in from 1, no outgoing
    ]
    assert out.squeeze(1).tolist() == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("k", [1, 3])  # one type: weights folded into the GRU input; else not
def test_matches_dense_per_type_reference(tie: bool, k: int, random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(0)
    prop = GatedGraphPropagation(
        state_dim=5, annotation_dim=2, num_edge_types=k, num_steps=4, tie_directions=tie
    )
    x, ei, et = random_graph(g, 7, 15, k, 2)  # includes self-loops/duplicates by chance
    ei = torch.cat([ei, ei[:, :2]], dim=1)  # force duplicate edges (counted twice)
    et = torch.cat([et, et[:2]])
    ref = _dense_reference(prop, x, ei, et, steps=4)
    assert torch.allclose(prop(x, ei, et), ref, atol=1e-5)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("k", [1, 3])  # both orders of messages and sums (see the module doc)
def test_hand_written_backward_matches_autograd_of_the_dense_reference(
    tie: bool, k: int, random_graph: RandomGraph
) -> None:
    g = torch.Generator().manual_seed(6)
    prop = GatedGraphPropagation(
        state_dim=5, annotation_dim=2, num_edge_types=k, num_steps=3, tie_directions=tie
    ).double()
    assert prop.transform_first == (k == 3)
    x, ei, et = random_graph(g, 7, 15, k, 2)
    ei, et = torch.cat([ei, ei[:, :2]], dim=1), torch.cat([et, et[:2]])  # duplicate edges
    x = x.double()
    weights = torch.randn(7, 5, generator=g, dtype=torch.float64)  # a loss that mixes outputs
    grads = []
    for fn in (lambda xx: prop(xx, ei, et), lambda xx: _dense_reference(prop, xx, ei, et, 3)):
        xx = x.clone().requires_grad_(True)
        (fn(xx) * weights).sum().backward()
        grads.append([xx.grad] + [p.grad.clone() for p in prop.parameters()])
        prop.zero_grad(set_to_none=True)
    names = ["x"] + [n for n, _ in prop.named_parameters()]
    for name, ours, ref in zip(names, *grads, strict=True):
        assert torch.allclose(ours, ref, atol=1e-10), name


def test_plan_holds_no_weights_and_is_reusable_after_an_update(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(7)
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    x, ei, et = random_graph(g, 6, 10, 2, 2)
    plan = prop.plan(ei, et, 6)
    with torch.no_grad():
        for p in prop.parameters():
            p.add_(0.1)
    assert torch.equal(prop(x, ei, et, plan=plan), prop(x, ei, et))


def test_graph_without_edges_matches_the_reference() -> None:
    prop = GatedGraphPropagation(state_dim=3, annotation_dim=2, num_edge_types=2, num_steps=2)
    x = torch.rand(4, 2, generator=torch.Generator().manual_seed(8))
    ei, et = torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    assert torch.allclose(prop(x, ei, et), _dense_reference(prop, x, ei, et, 2), atol=1e-6)


def test_direction_matters_unless_tied(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(1)
    x, ei, et = random_graph(g, 8, 12, 2, 3)
    untied = GatedGraphPropagation(state_dim=6, annotation_dim=3, num_edge_types=2)
    assert not torch.allclose(untied(x, ei, et), untied(x, reverse_edges(ei), et), atol=1e-4)
    tied = GatedGraphPropagation(
        state_dim=6, annotation_dim=3, num_edge_types=2, tie_directions=True
    )
    assert torch.allclose(tied(x, ei, et), tied(x, reverse_edges(ei), et), atol=1e-6)


def test_edge_types_matter(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(2)
    x, ei, et = random_graph(g, 6, 10, 2, 2)
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    assert not torch.allclose(prop(x, ei, et), prop(x, ei, 1 - et), atol=1e-4)


def test_batching_equals_one_by_one(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(3)
    prop = GatedGraphPropagation(state_dim=5, annotation_dim=2, num_edge_types=3, num_steps=5)
    graphs = [random_graph(g, n, e, 3, 2) for n, e in ((3, 4), (7, 15), (1, 0), (5, 9))]
    offset, xs, eis, ets = 0, [], [], []
    for x, ei, et in graphs:
        xs.append(x)
        eis.append(ei + offset)
        ets.append(et)
        offset += x.shape[0]
    batched = prop(torch.cat(xs), torch.cat(eis, 1), torch.cat(ets))
    single = torch.cat([prop(x, ei, et) for x, ei, et in graphs])
    assert torch.allclose(batched, single, atol=1e-6)


def test_node_permutation_equivariance(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(4)
    x, ei, et = random_graph(g, 9, 20, 2, 2)
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    perm = torch.randperm(9, generator=g)  # new id of old node i is inv[i]
    inv = torch.argsort(perm)
    out = prop(x[perm], inv[ei], et)
    assert torch.allclose(out, prop(x, ei, et)[perm], atol=1e-6)


def test_annotations_are_zero_padded_and_zero_steps_is_identity() -> None:
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=1, num_steps=0)
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = prop(x, torch.tensor([[0], [1]]))
    assert out.tolist() == [[1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0]]


def test_gradients_reach_every_parameter(random_graph: RandomGraph) -> None:
    g = torch.Generator().manual_seed(5)
    x, ei, et = random_graph(g, 6, 12, 2, 2)
    for tie in (False, True):
        prop = GatedGraphPropagation(
            state_dim=4, annotation_dim=2, num_edge_types=2, tie_directions=tie
        )
        prop(x, ei, et).pow(2).sum().backward()
        for name, p in prop.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_rejects_bad_inputs() -> None:
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    x = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="edge_type is required"):
        prop(x, torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="features"):
        prop(torch.zeros(3, 3), torch.tensor([[0], [1]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="annotation_dim"):
        GatedGraphPropagation(state_dim=2, annotation_dim=3, num_edge_types=1)
    with pytest.raises(ValueError, match="node ids outside"):
        prop(x, torch.tensor([[0], [3]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="node ids outside"):
        prop(x, torch.tensor([[-1], [1]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="edge_type has values outside"):
        prop(x, torch.tensor([[0], [1]]), torch.tensor([2]))
    ei, et = torch.tensor([[0], [1]]), torch.tensor([0])
    no_edges = (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    # 4 slots like prop's 2 types x 2 directions, but another layout; then 2 slots.
    tied = GatedGraphPropagation(
        state_dim=4, annotation_dim=2, num_edge_types=4, tie_directions=True
    )
    with pytest.raises(ValueError, match="tied=True"):
        prop(x, ei, et, plan=tied.plan(*no_edges, 3))
    other = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=1)
    with pytest.raises(ValueError, match="2 slots"):
        prop(x, ei, et, plan=other.plan(no_edges[0], None, 3))
    with pytest.raises(ValueError, match="4 nodes"):
        prop(x, ei, et, plan=prop.plan(*no_edges, 4))


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


def test_float_edge_type_is_refused_naming_it() -> None:
    m = _prop(2)
    x = torch.randn(4, 2, dtype=torch.double)
    with pytest.raises(TypeError, match="edge_type"):
        m(x, EDGES, torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0]))
    with pytest.raises(TypeError, match="edge_index"):
        m(x, EDGES.double(), torch.tensor([0, 1, 0, 1, 0]))
