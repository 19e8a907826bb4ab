"""StackedGatedPropagation: K modules evaluated as one compute what each computes alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from paperzoo.engine import seeded
from paperzoo.nn.graph import GatedGraphPropagation, StackedGatedPropagation

RandomGraph = Callable[..., tuple[Tensor, Tensor, Tensor]]  # the random_graph fixture
EDGES = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 0, 3]])


def _stacked_case(
    random_graph: RandomGraph, tie: bool, k: int, dtype: torch.dtype = torch.float64
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
    graphs = [random_graph(g, 6, e, k, 2) for e in (9, 0, 14)]  # one without edges
    return mods, StackedGatedPropagation(modules=mods), [(x.to(dtype), i, t) for x, i, t in graphs]


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("k", [1, 3])  # both orders of messages and sums
def test_stacked_propagation_computes_what_each_module_computes_alone(
    tie: bool, k: int, random_graph: RandomGraph
) -> None:
    """K modules stacked, the graphs laid out as one block per model: model i's states and the
    gradients of its slice of every weight (the hand-written batched backward pass) are those
    of module i alone on its own graph."""
    mods, stacked, graphs = _stacked_case(random_graph, tie, k)
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


def test_stacked_propagation_rejects_bad_inputs(random_graph: RandomGraph) -> None:
    mods, stacked, _ = _stacked_case(random_graph, False, 2, torch.float32)
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


def test_stacked_propagation_double_backward() -> None:
    with seeded(0):
        prop = GatedGraphPropagation(state_dim=4, annotation_dim=2, num_edge_types=3, num_steps=2)
    stacked = StackedGatedPropagation(modules=[prop.double()] * 2)  # two copies of one model
    union = torch.cat([EDGES, EDGES + 4], 1)
    et = torch.tensor([0, 2, 0, 2, 1] * 2)
    plan = stacked.plan(union, et, 8)
    x = torch.randn(2, 4, 2, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda v: stacked(v, plan), (x,))
