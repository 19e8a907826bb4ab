"""Gated graph neural network layers (Li, Tarlow, Brockschmidt & Zemel, ICLR 2016, "Gated Graph
Sequence Neural Networks", arXiv:1511.05493), one layer per module:

* ``gated_propagation``: ``GatedGraphPropagation``, GRU propagation over typed edges (Eq. 1-6);
* ``stacked_propagation``: ``StackedGatedPropagation``, K propagation modules evaluated as one;
* ``readout``: ``GatedReadout``, the gated graph-level readout (Eq. 7);
* ``pool``: ``global_add_pool``;
* ``utils``: ``graph_inputs`` (PyG-style ``Data`` / ``Batch`` objects), ``to_dense_batch``,
  ``reverse_edges``;
* ``plan``: ``PropagationPlan`` and ``build_plan``, a graph as the sparse matrices of a
  propagation, built once per graph.

Graph convention (PyG's): node features ``x`` (N, F); ``edge_index`` (2, E) with row 0 the
source and row 1 the destination of each directed edge; ``edge_type`` (E,) in
``[0, num_edge_types)``; many graphs are batched into one by offsetting node ids, and ``batch``
(N,) says which graph each node belongs to.
"""

from paperzoo.nn.graph.gated_propagation import GatedGraphPropagation
from paperzoo.nn.graph.plan import PropagationPlan, build_plan
from paperzoo.nn.graph.pool import global_add_pool
from paperzoo.nn.graph.readout import GatedReadout
from paperzoo.nn.graph.stacked_propagation import StackedGatedPropagation
from paperzoo.nn.graph.utils import graph_inputs, reverse_edges, to_dense_batch

__all__ = [
    "GatedGraphPropagation",
    "GatedReadout",
    "PropagationPlan",
    "StackedGatedPropagation",
    "build_plan",
    "global_add_pool",
    "graph_inputs",
    "reverse_edges",
    "to_dense_batch",
]
