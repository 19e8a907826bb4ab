"""Pooling of node values per graph in a PyG-style batch: ``global_add_pool``."""

from __future__ import annotations

from torch import Tensor


def global_add_pool(values: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
    """Sum node values per graph.

    Shapes:
        values: (N, F); batch: (N,) -> (num_graphs, F)
    """
    return values.new_zeros(num_graphs, *values.shape[1:]).index_add_(0, batch, values)
