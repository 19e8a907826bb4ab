"""GatedReadout: Eq. 7 by hand, invariant to the order of a graph's nodes."""

from __future__ import annotations

import torch

from paperzoo.engine import seeded
from paperzoo.nn.graph import GatedReadout


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
