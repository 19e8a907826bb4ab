"""The training engine shared by every paper: loop, checkpoints and resume, clean stops on
SIGINT / SIGTERM (``engine.interrupt``), step budgets with a time estimate (``engine.budget``,
``--max-steps``), learning-rate schedules (``engine.schedules``), metrics summed on the device
between logged records (``engine.window``), seeding, DDP."""

from paperzoo.engine.checkpoint import (
    CheckpointError,
    load_state,
    load_weights,
    save_state,
    save_weights,
)
from paperzoo.engine.distributed import DistInfo, current, init_distributed
from paperzoo.engine.interrupt import Interrupted
from paperzoo.engine.schedules import cosine, step_decay, warmup_cosine
from paperzoo.engine.seeding import derive_seed, make_generator, seed_everything, seeded
from paperzoo.engine.trainer import History, NonFiniteLossError, Stateful, TrainConfig, Trainer
from paperzoo.engine.window import MetricWindow, WindowRead

__all__ = [
    "CheckpointError",
    "DistInfo",
    "History",
    "Interrupted",
    "MetricWindow",
    "NonFiniteLossError",
    "Stateful",
    "TrainConfig",
    "Trainer",
    "WindowRead",
    "cosine",
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
    "step_decay",
    "warmup_cosine",
]
