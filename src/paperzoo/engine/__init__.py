"""The training engine shared by every paper: loop, checkpoints, seeding, DDP."""

from paperzoo.engine.checkpoint import (
    CheckpointError,
    load_state,
    load_weights,
    save_state,
    save_weights,
)
from paperzoo.engine.distributed import DistInfo, current, init_distributed
from paperzoo.engine.seeding import derive_seed, make_generator, seed_everything, seeded
from paperzoo.engine.trainer import History, NonFiniteLossError, TrainConfig, Trainer

__all__ = [
    "CheckpointError",
    "DistInfo",
    "History",
    "NonFiniteLossError",
    "TrainConfig",
    "Trainer",
    "current",
    "derive_seed",
    "init_distributed",
    "load_state",
    "load_weights",
    "make_generator",
    "save_state",
    "save_weights",
    "seed_everything",
    "seeded",
]
