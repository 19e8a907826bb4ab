"""WReN: candidate independence, equivalence with the naive all-pairs computation, gradients."""

from __future__ import annotations

import torch

from paperzoo import create_model
from paperzoo.models.wren import WReN
from paperzoo.nn.relational import RelationalScorer


def _inputs(b: int = 4, d: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, 8, d, generator=g), torch.randn(b, 6, d, generator=g)


def test_each_candidate_is_scored_independently() -> None:
    torch.manual_seed(0)
    m = WReN(embed_dim=6, edge_mlp=(32, 32), graph_mlp=(16,)).eval()
    ctx, ans = _inputs()
    base = m(ctx, ans)
    other = ans.clone()
    other[:, 1:] = torch.randn(4, 5, 6)  # change every candidate but the first
    torch.testing.assert_close(m(ctx, other)[:, 0], base[:, 0])
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    torch.testing.assert_close(m(ctx, ans[:, perm]), base[:, perm])  # equivariant
    torch.testing.assert_close(m(ctx, ans[:, :2]), base[:, :2])  # any number of candidates


def test_matches_the_naive_relation_network() -> None:
    torch.manual_seed(0)
    s = RelationalScorer(embed_dim=6, edge_mlp=(16, 8), graph_mlp=(5,), dropout=0.0).eval()
    ctx, ans = _inputs()
    pos = torch.eye(9)
    expected = torch.empty(4, 6)
    for k in range(6):
        panels = torch.cat(
            [torch.cat([ctx, ans[:, k : k + 1]], 1), pos.expand(4, 9, 9)], -1
        )  # (B, 9, 15)
        pairs = torch.cat(
            [panels.unsqueeze(2).expand(-1, 9, 9, -1), panels.unsqueeze(1).expand(-1, 9, 9, -1)], -1
        )
        w = torch.cat([s.first_i.weight, s.first_j.weight], 1)
        h = torch.relu(pairs @ w.T + s.first_i.bias)
        g = s.edge_rest(h).sum(dim=(1, 2))
        expected[:, k] = s.out(s.graph(g)).squeeze(-1)
    torch.testing.assert_close(s(ctx, ans), expected, rtol=1e-4, atol=1e-4)


def test_gradients_reach_every_parameter_and_shapes() -> None:
    torch.manual_seed(0)
    m = create_model("wren", embed_dim=6, edge_mlp=(16, 16), graph_mlp=(8,))
    ctx, ans = _inputs()
    loss = torch.nn.functional.cross_entropy(m(ctx, ans), torch.tensor([0, 1, 2, 3]))
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in m.parameters())
    cnn = create_model("wren-cnn", in_channels=3, image_size=32, edge_mlp=(16,), graph_mlp=(8,))
    out = cnn(torch.rand(2, 8, 3, 32, 32), torch.rand(2, 6, 3, 32, 32))
    assert out.shape == (2, 6)
