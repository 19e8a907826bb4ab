"""Gated graph propagation: hand-computed values, a dense reference, direction, batching."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor

from paperzoo.engine import seeded
from paperzoo.nn.graph import (
    GatedGraphPropagation,
    GatedReadout,
    StackedGatedPropagation,
    global_add_pool,
    reverse_edges,
    to_dense_batch,
)


def _sig(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def _random_graph(
    g: torch.Generator, n: int, e: int, k: int, a: int
) -> tuple[Tensor, Tensor, Tensor]:
    x = torch.rand(n, a, generator=g)
    edge_index = torch.randint(n, (2, e), generator=g)
    edge_type = torch.randint(k, (e,), generator=g)
    return x, edge_index, edge_type


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
def test_matches_dense_per_type_reference(tie: bool, k: int) -> None:
    g = torch.Generator().manual_seed(0)
    prop = GatedGraphPropagation(
        state_dim=5, annotation_dim=2, num_edge_types=k, num_steps=4, tie_directions=tie
    )
    x, ei, et = _random_graph(g, 7, 15, k, 2)  # includes self-loops/duplicates by chance
    ei = torch.cat([ei, ei[:, :2]], dim=1)  # force duplicate edges (counted twice)
    et = torch.cat([et, et[:2]])
    ref = _dense_reference(prop, x, ei, et, steps=4)
    assert torch.allclose(prop(x, ei, et), ref, atol=1e-5)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("k", [1, 3])  # both orders of messages and sums (see the module doc)
def test_hand_written_backward_matches_autograd_of_the_dense_reference(tie: bool, k: int) -> None:
    g = torch.Generator().manual_seed(6)
    prop = GatedGraphPropagation(
        state_dim=5, annotation_dim=2, num_edge_types=k, num_steps=3, tie_directions=tie
    ).double()
    assert prop.transform_first == (k == 3)
    x, ei, et = _random_graph(g, 7, 15, k, 2)
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


def test_plan_holds_no_weights_and_is_reusable_after_an_update() -> None:
    g = torch.Generator().manual_seed(7)
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    x, ei, et = _random_graph(g, 6, 10, 2, 2)
    plan = prop.plan(ei, et, 6)
    with torch.no_grad():
        for p in prop.parameters():
            p.add_(0.1)
    assert torch.equal(prop(x, ei, et, plan=plan), prop(x, ei, et))


@pytest.mark.parametrize("index_dtype", [torch.long, torch.int32])
def test_sparse_matrix_counts_every_pair_and_orders_its_rows(index_dtype) -> None:
    from paperzoo.nn.graph import _csr

    g = torch.Generator().manual_seed(3)
    rows, cols = torch.randint(5, (40,), generator=g), torch.randint(7, (40,), generator=g)
    adj = _csr(rows.to(index_dtype), cols.to(index_dtype), (5, 7), torch.float64)
    dense = torch.zeros(5, 7, dtype=torch.float64).index_put_(
        (rows, cols), torch.ones(40, dtype=torch.float64), True
    )
    assert torch.equal(adj.to_dense(), dense)  # duplicate pairs counted, not dropped
    assert adj.crow_indices().dtype == torch.int32
    crow, col = adj.crow_indices(), adj.col_indices()
    for r in range(5):  # columns ascending within each row, no pair twice
        assert bool((col[crow[r] + 1 : crow[r + 1]] > col[crow[r] : crow[r + 1] - 1]).all())


def test_graph_without_edges_matches_the_reference() -> None:
    prop = GatedGraphPropagation(state_dim=3, annotation_dim=2, num_edge_types=2, num_steps=2)
    x = torch.rand(4, 2, generator=torch.Generator().manual_seed(8))
    ei, et = torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
    assert torch.allclose(prop(x, ei, et), _dense_reference(prop, x, ei, et, 2), atol=1e-6)


def test_direction_matters_unless_tied() -> None:
    g = torch.Generator().manual_seed(1)
    x, ei, et = _random_graph(g, 8, 12, 2, 3)
    untied = GatedGraphPropagation(state_dim=6, annotation_dim=3, num_edge_types=2)
    assert not torch.allclose(untied(x, ei, et), untied(x, reverse_edges(ei), et), atol=1e-4)
    tied = GatedGraphPropagation(
        state_dim=6, annotation_dim=3, num_edge_types=2, tie_directions=True
    )
    assert torch.allclose(tied(x, ei, et), tied(x, reverse_edges(ei), et), atol=1e-6)


def test_edge_types_matter() -> None:
    g = torch.Generator().manual_seed(2)
    x, ei, et = _random_graph(g, 6, 10, 2, 2)
    prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2)
    assert not torch.allclose(prop(x, ei, et), prop(x, ei, 1 - et), atol=1e-4)


def test_batching_equals_one_by_one() -> None:
    g = torch.Generator().manual_seed(3)
    prop = GatedGraphPropagation(state_dim=5, annotation_dim=2, num_edge_types=3, num_steps=5)
    graphs = [_random_graph(g, n, e, 3, 2) for n, e in ((3, 4), (7, 15), (1, 0), (5, 9))]
    offset, xs, eis, ets = 0, [], [], []
    for x, ei, et in graphs:
        xs.append(x)
        eis.append(ei + offset)
        ets.append(et)
        offset += x.shape[0]
    batched = prop(torch.cat(xs), torch.cat(eis, 1), torch.cat(ets))
    single = torch.cat([prop(x, ei, et) for x, ei, et in graphs])
    assert torch.allclose(batched, single, atol=1e-6)


def test_node_permutation_equivariance() -> None:
    g = torch.Generator().manual_seed(4)
    x, ei, et = _random_graph(g, 9, 20, 2, 2)
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


def test_gradients_reach_every_parameter() -> None:
    g = torch.Generator().manual_seed(5)
    x, ei, et = _random_graph(g, 6, 12, 2, 2)
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


def test_pooling_helpers() -> None:
    batch = torch.tensor([0, 0, 1, 2, 2, 2])
    v = torch.arange(6.0)
    assert global_add_pool(v, batch, 3).tolist() == [1.0, 2.0, 12.0]
    dense, mask = to_dense_batch(v, batch, 3, fill=-1.0)
    assert dense.tolist() == [[0.0, 1.0, -1.0], [2.0, -1.0, -1.0], [3.0, 4.0, 5.0]]
    assert mask.sum(1).tolist() == [2, 1, 3]


def test_gated_readout_is_a_sum_over_nodes() -> None:
    with seeded(0):
        readout = GatedReadout(in_dim=3, out_dim=2)
    hx = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    batch = torch.tensor([0, 0, 0, 1, 1])
    out = readout(hx, batch, 2)
    # Eq. 7 by hand for graph 1; permuting its nodes does not change h_G.
    act = readout.lin(hx[3:])
    expected = torch.tanh((torch.sigmoid(act[:, :2]) * torch.tanh(act[:, 2:])).sum(0))
    assert torch.allclose(out[1], expected, atol=1e-6)
    swapped = readout(hx[[0, 1, 2, 4, 3]], batch, 2)
    assert torch.allclose(out, swapped, atol=1e-6)


def _stacked_case(
    tie: bool, k: int, dtype: torch.dtype = torch.float64
) -> tuple[
    list[GatedGraphPropagation], StackedGatedPropagation, list[tuple[Tensor, Tensor, Tensor]]
]:
    """Three separately seeded modules, stacked, and a graph of 6 nodes each (other edges)."""
    mods = []
    for i in range(3):
        with seeded(i):
            mods.append(
                GatedGraphPropagation(
                    state_dim=5, annotation_dim=2, num_edge_types=k, tie_directions=tie
                ).to(dtype)
            )
    g = torch.Generator().manual_seed(7)
    graphs = [_random_graph(g, 6, e, k, 2) for e in (9, 0, 14)]  # one without edges
    return mods, StackedGatedPropagation(modules=mods), [(x.to(dtype), i, t) for x, i, t in graphs]


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("k", [1, 3])  # both orders of messages and sums
def test_stacked_propagation_computes_what_each_module_computes_alone(tie: bool, k: int) -> None:
    """K modules stacked, the graphs laid out as one block per model: model i's states and the
    gradients of its slice of every weight (the hand-written batched backward pass) are those
    of module i alone on its own graph."""
    mods, stacked, graphs = _stacked_case(tie, k)
    n = 6
    ei = torch.cat([e + i * n for i, (_, e, _) in enumerate(graphs)], 1)  # the union, (2, E)
    et = torch.cat([t for _, _, t in graphs])
    out = stacked(torch.stack([x for x, _, _ in graphs]), stacked.plan(ei, et, 3 * n))
    assert out.shape == (3, n, 5)
    w = torch.randn(3, n, 5, generator=torch.Generator().manual_seed(8), dtype=out.dtype)
    (out * w).sum().backward()
    for i, (m, (x, e, t)) in enumerate(zip(mods, graphs, strict=True)):
        alone = m(x, e, t)
        torch.testing.assert_close(out[i], alone, rtol=0, atol=1e-12)
        (alone * w[i]).sum().backward()
        pairs = {
            "weight": (m.weight, stacked.weight),
            "bias": (m.bias, stacked.bias),
            "lin_a.weight": (m.lin_a.weight, stacked.lin_a_weight),
            "lin_a.bias": (m.lin_a.bias, stacked.lin_a_bias),
            "lin_h_zr.weight": (m.lin_h_zr.weight, stacked.lin_h_zr_weight),
            "lin_h_c.weight": (m.lin_h_c.weight, stacked.lin_h_c_weight),
        }
        for name, (p, q) in pairs.items():
            assert p.grad is not None and q.grad is not None, name
            torch.testing.assert_close(q.grad[i], p.grad, rtol=0, atol=1e-10, msg=name)
    # Unstacking gives back module i's weights.
    twin = GatedGraphPropagation(
        state_dim=5, annotation_dim=2, num_edge_types=k, tie_directions=tie
    ).to(torch.float64)
    stacked.unstacked(2, twin)
    for a, b in zip(twin.state_dict().values(), mods[2].state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_stacked_propagation_rejects_bad_inputs() -> None:
    mods, stacked, graphs = _stacked_case(False, 2, torch.float32)
    no_edges = (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    x = torch.zeros(3, 6, 2)
    with pytest.raises(ValueError, match="18 nodes|3 x 6"):
        stacked(x, stacked.plan(*no_edges, 12))
    with pytest.raises(ValueError, match=r"\(K=3, N, 2\)"):
        stacked(torch.zeros(2, 6, 2), stacked.plan(*no_edges, 12))
    with pytest.raises(ValueError, match="share sizes"):
        StackedGatedPropagation(
            modules=[
                mods[0],
                GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=2),
            ]
        )
    with pytest.raises(ValueError, match="empty"):
        StackedGatedPropagation(modules=[])
