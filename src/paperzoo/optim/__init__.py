"""Optimizers: Path-SGD (Neyshabur et al., 2015)."""

from paperzoo.optim.path_sgd import (
    PathSGD,
    UnsupportedLayerError,
    balanced_init_,
    path_norm,
    path_scaling,
    rescale_units_,
    unbalanced_init_,
)

__all__ = [
    "PathSGD",
    "UnsupportedLayerError",
    "balanced_init_",
    "path_norm",
    "path_scaling",
    "rescale_units_",
    "unbalanced_init_",
]
