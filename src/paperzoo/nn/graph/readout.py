"""The gated graph-level readout of Li et al. (ICLR 2016, Eq. 7): ``GatedReadout``."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from paperzoo.nn.graph.pool import global_add_pool


class GatedReadout(nn.Module):
    """Graph-level representation by soft attention (Eq. 7).

    h_G = tanh( sum_v sigmoid(i([h_v, x_v])) * tanh(j([h_v, x_v])) )

    Args:
        in_dim: size of [h_v, x_v].
        out_dim: size of h_G.

    Shapes:
        hx: (N, in_dim); batch: (N,) -> (num_graphs, out_dim)
    """

    def __init__(self, *, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.out_dim = out_dim
        self.lin = nn.Linear(in_dim, 2 * out_dim)  # i and j in one matrix

    def forward(self, hx: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        act = self.lin(hx)
        gated = torch.sigmoid(act[:, : self.out_dim]) * torch.tanh(act[:, self.out_dim :])
        return torch.tanh(global_add_pool(gated, batch, num_graphs))
