"""Reusable layers."""

from paperzoo.nn.coord import AddCoords, CoordConv2d, coord_grid

__all__ = ["AddCoords", "CoordConv2d", "coord_grid"]
