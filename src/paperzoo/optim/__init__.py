"""Optimizers: Path-SGD (Neyshabur et al., 2015) and LAMB (You et al., 2020)."""

from paperzoo.optim.lamb import Lamb, trust_ratio
from paperzoo.optim.path_sgd import (
    PathSGD,
    balanced_init_,
    path_norm,
    path_scaling,
    rescale_units_,
    unbalanced_init_,
)
from paperzoo.optim.path_sgd_graph import UnsupportedLayerError

__all__ = [
    "Lamb",
    "PathSGD",
    "UnsupportedLayerError",
    "balanced_init_",
    "path_norm",
    "path_scaling",
    "rescale_units_",
    "trust_ratio",
    "unbalanced_init_",
]
