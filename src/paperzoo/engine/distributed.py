"""DistributedDataParallel plumbing for runs launched by ``torchrun``.

gloo on CPU, nccl on CUDA. Rank 0 alone logs, checkpoints and writes reports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_distributed(device: str = "cpu") -> DistInfo:
    """Join the process group described by torchrun's environment (a no-op outside torchrun)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend)
    return DistInfo(rank=rank, world_size=world, local_rank=local)


def current() -> DistInfo:
    """The process group this process is in (world size 1 when not distributed)."""
    if dist.is_available() and dist.is_initialized():
        return DistInfo(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        )
    return DistInfo()


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def all_reduce_mean(value: float) -> float:
    """Mean of a Python float over all ranks (identity when not distributed)."""
    info = current()
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return float(t.item()) / info.world_size
