"""DistributedDataParallel plumbing for runs launched by ``torchrun``.

Rank 0 alone logs, checkpoints and writes reports.

Backends. On CPU the process group is gloo. On CUDA it is device-aware, ``cpu:gloo,cuda:nccl``
(``backend_for``): NCCL serves CUDA tensors only ("No backend type associated with device type
cpu" for a CPU tensor), so a group of NCCL alone rejects every CPU tensor a helper reduces
(ResNet's ``all_reduce_mean`` of a Python float, for one).
With both, DDP's gradients on the GPU go through NCCL and small CPU values through gloo; the
helpers here also put their tensors on a device the group serves (``collective_device``).

Uneven work. A collective waits for every rank, and a wait longer than the process group's
timeout kills the job (NCCL's watchdog: 10 minutes by default). Work that is split unevenly over
ranks (the disentanglement study: 23 grid items on some ranks of 8, 22 on others, for hours) must
therefore not meet at a collective: ``wait_for_all_ranks`` marks this rank done in the process
group's key-value store and polls it until every rank is, which has no timeout; the ranks then
read each other's results from the shared output directory. The data-parallel training itself
(DDP) keeps its ranks in lock step, so its collectives never wait long.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)

__all__ = [
    "DistInfo",
    "all_reduce_mean",
    "backend_for",
    "barrier",
    "collective_device",
    "current",
    "init_distributed",
    "served_devices",
    "wait_for_all_ranks",
]


@dataclass(frozen=True)
class DistInfo:
    """This process's place in the process group.

    ``group``: a process group is initialized, also of one process (``torchrun
    --nproc_per_node=1``, so that a one-GPU check runs the NCCL collectives of a multi-GPU run).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    group: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Whether the run is distributed: DDP wraps models, helpers reduce over the group."""
        return self.group or self.world_size > 1


def backend_for(device: str) -> str:
    """The process-group backend for runs on ``device``.

    Args:
        device: the run's device, e.g. "cpu", "cuda" or "cuda:1".

    Returns:
        "gloo" on CPU; "cpu:gloo,cuda:nccl" on CUDA (NCCL for CUDA tensors, gloo for CPU ones).
    """
    return "cpu:gloo,cuda:nccl" if device.startswith("cuda") else "gloo"


def served_devices(backend: str) -> dict[str, str]:
    """Which backend serves each device type in a backend string.

    Args:
        backend: as given to ``init_process_group``: "gloo", "nccl" or "cpu:gloo,cuda:nccl".

    Returns:
        device type -> backend, e.g. {"cuda": "nccl"} for "nccl" (NCCL has no CPU backend).
    """
    out: dict[str, str] = {}
    for part in str(backend).lower().split(","):
        if ":" in part:
            device, name = part.split(":", 1)
            out[device.strip()] = name.strip()
        else:
            name = part.strip()
            for device in dist.Backend.backend_capability.get(name, ["cpu"]):
                out.setdefault(device, name)
    return out


_requested_backend: str | None = None  # what init_distributed asked for (a group may report less)


def collective_device() -> torch.device:
    """The device of tensors given to the default group's collectives: the CPU when the group
    serves CPU tensors (gloo, or the device-aware group), else this process's CUDA device."""
    backend = _requested_backend or str(dist.get_backend())
    if "cpu" in served_devices(backend):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def _destroy() -> None:
    global _requested_backend
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    _requested_backend = None


def init_distributed(device: str = "cpu", timeout: timedelta | None = None) -> DistInfo:
    """Join the process group described by torchrun's environment (a no-op outside torchrun).

    Under torchrun the group is started also for one process, so that DDP and the helpers'
    collectives run as in a multi-process run.

    Args:
        device: the run's device; chooses the backend (``backend_for``).
        timeout: the process group's timeout for a collective (None: torch's default, 10 minutes
            for NCCL); no collective of paperzoo waits on uneven work (``wait_for_all_ranks``).

    Returns:
        this process's rank, the world size and the local rank.
    """
    global _requested_backend
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:  # not launched by torchrun
        return DistInfo()
    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = backend_for(device)
        if device.startswith("cuda"):
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend, timeout=timeout)
        _requested_backend = backend
        # Leave the group on exit (NCCL warns of, and may hang on, a group never destroyed).
        atexit.register(_destroy)
    return DistInfo(rank=rank, world_size=world, local_rank=local, group=True)


def current() -> DistInfo:
    """The process group this process is in (world size 1 when not distributed)."""
    if dist.is_available() and dist.is_initialized():
        return DistInfo(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=int(os.environ.get("LOCAL_RANK", "0")),
            group=True,
        )
    return DistInfo()


def barrier() -> None:
    """Wait for every rank at a collective: only where the ranks arrive together (the wait is
    bounded by the group's timeout); uneven work waits with ``wait_for_all_ranks``."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def all_reduce_mean(value: float) -> float:
    """Mean of a Python float over all ranks (identity when not distributed)."""
    info = current()
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=collective_device())
    dist.all_reduce(t)
    return float(t.item()) / info.world_size


_waits = 0  # wait_for_all_ranks calls so far: every rank makes the same calls in the same order


def wait_for_all_ranks(what: str, *, poll_s: float = 1.0, report_s: float = 600.0) -> None:
    """Return once every rank has called this (a no-op when not distributed), without a
    collective: each rank sets a key in the process group's store and polls until all keys are
    there, so ranks that finish hours apart wait without any timeout.

    Each rank must make the same sequence of calls (the n-th call of every rank meet). A rank
    that dies leaves the others polling; torchrun then stops them all.

    Args:
        what: what the ranks finished, for the log.
        poll_s: seconds between looks at the store.
        report_s: seconds between log lines while waiting.
    """
    global _waits
    info = current()
    if not info.enabled:
        return
    _waits += 1
    # The store the group was set up with (torchrun's rendezvous store): a private accessor,
    # covered by tests/engine/test_distributed.py.
    store = dist.distributed_c10d._get_default_store()
    keys = [f"paperzoo/wait-{_waits}/rank-{r}" for r in range(info.world_size)]
    store.set(keys[info.rank], "done")
    start = next_report = time.monotonic()
    while not store.check(keys):
        now = time.monotonic()
        if now >= next_report:
            waiting = [r for r, k in enumerate(keys) if not store.check([k])]
            log.info(
                "rank %d: %s done, waiting for rank(s) %s (%.0f s so far; no timeout)",
                info.rank, what, ",".join(map(str, waiting)), now - start,
            )  # fmt: skip
            next_report = now + report_s
        time.sleep(poll_s)
