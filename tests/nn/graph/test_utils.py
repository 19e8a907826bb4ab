"""Pooling and batching helpers of PyG-style graph batches."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from paperzoo.engine import seeded
from paperzoo.models.ggnn import GatedGraphNet, GatedGraphSequenceNet
from paperzoo.nn.graph import global_add_pool, graph_inputs, to_dense_batch

EDGES = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 0, 0, 3]])


def test_pooling_helpers() -> None:
    batch = torch.tensor([0, 0, 1, 2, 2, 2])
    v = torch.arange(6.0)
    assert global_add_pool(v, batch, 3).tolist() == [1.0, 2.0, 12.0]
    dense, mask = to_dense_batch(v, batch, 3, fill=-1.0)
    assert dense.tolist() == [[0.0, 1.0, -1.0], [2.0, -1.0, -1.0], [3.0, 4.0, 5.0]]
    assert mask.sum(1).tolist() == [2, 1, 3]


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
