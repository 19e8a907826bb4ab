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

from typing import TYPE_CHECKING

from paperzoo.utils.modules import lazy_exports

if TYPE_CHECKING:
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

# each name is imported from its module on first use: importing this package imports none of them
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Attention": "paperzoo.nn.attention",
        "CrossAttentionBlock": "paperzoo.nn.attention",
        "FeedForward": "paperzoo.nn.attention",
        "LatentTransformer": "paperzoo.nn.attention",
        "SelfAttentionBlock": "paperzoo.nn.attention",
        "AddCoords": "paperzoo.nn.coord",
        "CoordConv2d": "paperzoo.nn.coord",
        "coord_grid": "paperzoo.nn.coord",
        "FourierPositionEncoding": "paperzoo.nn.fourier",
        "fourier_features": "paperzoo.nn.fourier",
        "AttentionReader": "paperzoo.nn.gaussian_attention",
        "AttentionWriter": "paperzoo.nn.gaussian_attention",
        "PlainReader": "paperzoo.nn.gaussian_attention",
        "PlainWriter": "paperzoo.nn.gaussian_attention",
        "GatedGraphPropagation": "paperzoo.nn.graph",
        "GatedReadout": "paperzoo.nn.graph",
        "global_add_pool": "paperzoo.nn.graph",
        "reverse_edges": "paperzoo.nn.graph",
        "to_dense_batch": "paperzoo.nn.graph",
        "RelationalScorer": "paperzoo.nn.relational",
    },
)


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
