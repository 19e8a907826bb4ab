"""Layers, each usable on its own tensors.

* Gated graph neural networks (Li et al., 2016), ``paperzoo.nn.graph`` with one module per layer:
  ``GatedGraphPropagation`` (GRU propagation over typed edges given as ``edge_index``),
  ``GatedReadout`` (the gated graph-level readout), with ``global_add_pool``, ``to_dense_batch``
  and ``reverse_edges`` for PyG-style batches.
* CoordConv (Liu et al., 2018): ``AddCoords`` and ``CoordConv2d``.
* Perceiver (Jaegle et al., 2021): ``FourierPositionEncoding``, ``CrossAttentionBlock``,
  ``SelfAttentionBlock``, ``LatentTransformer``, ``Attention``, ``FeedForward``.
* DRAW (Gregor et al., 2015): Gaussian ``AttentionReader`` / ``AttentionWriter`` and the
  attention-free ``PlainReader`` / ``PlainWriter``.
* Relation networks (WReN, Barrett et al., 2018): ``RelationalScorer``.
"""

from paperzoo.nn.attention import (
    Attention,
    CrossAttentionBlock,
    FeedForward,
    LatentTransformer,
    SelfAttentionBlock,
)
from paperzoo.nn.coord import AddCoords, CoordConv2d, coord_grid
from paperzoo.nn.fourier import FourierPositionEncoding, fourier_features
from paperzoo.nn.gaussian_attention import (
    AttentionReader,
    AttentionWriter,
    PlainReader,
    PlainWriter,
)
from paperzoo.nn.graph import (
    GatedGraphPropagation,
    GatedReadout,
    global_add_pool,
    reverse_edges,
    to_dense_batch,
)
from paperzoo.nn.relational import RelationalScorer

__all__ = [
    "AddCoords",
    "Attention",
    "AttentionReader",
    "AttentionWriter",
    "CoordConv2d",
    "CrossAttentionBlock",
    "FeedForward",
    "FourierPositionEncoding",
    "GatedGraphPropagation",
    "GatedReadout",
    "LatentTransformer",
    "PlainReader",
    "PlainWriter",
    "RelationalScorer",
    "SelfAttentionBlock",
    "coord_grid",
    "fourier_features",
    "global_add_pool",
    "reverse_edges",
    "to_dense_batch",
]
