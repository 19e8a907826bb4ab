"""Helpers for PyG-style graph batches: ``graph_inputs`` (the tensors of a ``Data`` / ``Batch``
object, read by duck typing), ``to_dense_batch`` and ``reverse_edges``."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def graph_inputs(
    data: Any, edge_index: Tensor | None = None, edge_type: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, int | None]:
    """``(x, edge_index, edge_type, batch, num_graphs)`` of a PyG-style ``Data`` / ``Batch``.

    Read by duck typing (no PyG dependency): ``data.x`` and ``data.edge_index`` are required;
    the edge types come from ``data.edge_type`` or else ``data.edge_attr``, either as (E,)
    integer types or as (E, K) one-hot rows (converted to indices; anything else is refused
    naming ``edge_attr``); ``batch`` and ``num_graphs`` when present (a ``Batch``). An argument
    passed explicitly alongside ``data`` is refused rather than silently ignored.
    """
    if edge_index is not None or edge_type is not None:
        raise TypeError("pass either a graph object or tensors (x, edge_index, edge_type)")
    x = getattr(data, "x", None)
    ei = getattr(data, "edge_index", None)
    if not isinstance(x, Tensor) or not isinstance(ei, Tensor):
        raise TypeError(
            f"expected node features x (a Tensor) or a graph object with tensors .x and "
            f".edge_index, got {type(data).__name__}"
        )
    et = getattr(data, "edge_type", None)
    if et is None:
        attr = getattr(data, "edge_attr", None)
        if attr is not None:
            if attr.dim() == 2 and attr.shape[0] == ei.shape[1]:
                ones = (attr == 1).sum(1) == 1
                if not bool(((attr == 0) | (attr == 1)).all() and ones.all()):
                    raise ValueError(
                        "edge_attr (E, K) must be one-hot edge types (one 1 per row) to be read "
                        "as edge types; pass edge_type (E,) integers instead"
                    )
                et = attr.argmax(1)
            elif attr.dim() == 1 and not attr.is_floating_point():
                et = attr
            else:
                raise ValueError(
                    f"edge_attr of shape {tuple(attr.shape)} and dtype {attr.dtype} is not edge "
                    "types: give (E,) integer types or (E, K) one-hot rows, or set edge_type"
                )
    batch = getattr(data, "batch", None)
    num_graphs = getattr(data, "num_graphs", None)
    return x, ei, et, batch, None if num_graphs is None else int(num_graphs)


def to_dense_batch(
    values: Tensor,
    batch: Tensor,
    num_graphs: int,
    *,
    fill: float = 0.0,
    max_nodes: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Scatter per-node values into a padded (graph, position) array.

    ``batch`` must be sorted (nodes of a graph contiguous), as batching produces it.

    Args:
        values: per-node values.
        batch: each node's graph.
        num_graphs: the number of graphs.
        fill: the value of padding positions.
        max_nodes: the nodes of the largest graph when the caller knows it on the host (e.g.
            from the batch's sizes before it went to a GPU); None: read from ``batch``, which
            makes the host wait for the device when ``batch`` lives there.

    Returns:
        (dense, mask): ``dense[g, i]`` is the value of the i-th node of graph g, ``mask`` marks
        real nodes.

    Shapes:
        values: (N, ...); batch: (N,) -> (num_graphs, max_nodes, ...), (num_graphs, max_nodes)
    """
    # (B,) nodes per graph; a scatter of known size (bincount sizes its output from the data)
    counts = torch.zeros(num_graphs, dtype=torch.long, device=batch.device)
    counts.scatter_add_(0, batch, torch.ones_like(batch))
    if max_nodes is None:
        max_nodes = int(counts.max()) if counts.numel() else 0
    starts = torch.cumsum(counts, 0) - counts  # first node of each graph
    pos = torch.arange(batch.shape[0], device=batch.device) - starts[batch]
    dense = values.new_full((num_graphs, max_nodes, *values.shape[1:]), fill)
    dense[batch, pos] = values
    mask = torch.zeros(num_graphs, max_nodes, dtype=torch.bool, device=batch.device)
    mask[batch, pos] = True
    return dense, mask


def reverse_edges(edge_index: Tensor) -> Tensor:
    """Swap source and destination of every edge. Shapes: (2, E) -> (2, E)."""
    return edge_index.flip(0)
