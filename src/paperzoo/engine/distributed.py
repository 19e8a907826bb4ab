"""DistributedDataParallel plumbing for runs launched by ``torchrun``.

Rank 0 alone logs, checkpoints and writes reports.

Backends. On CPU the process group is gloo. On CUDA it is NCCL alone (``backend_for``), started
after ``torch.cuda.set_device(LOCAL_RANK)``. NCCL serves CUDA tensors only ("No backend type
associated with device type cpu" for a CPU tensor), so every collective here puts its tensor on
this process's GPU, ``cuda:LOCAL_RANK`` (``collective_device``), and reads the few numbers back
with one ``.item()`` / ``.tolist()``; ``barrier`` names that GPU too. No gloo group is started
beside NCCL: it would only carry those few numbers, and its TCP connections between every pair
of ranks, across nodes, are the part of a multi-node start that fails most often. The waits
that must not meet at a collective (``wait_for_all_ranks``, ``check_shared_dir``'s nonce,
``mark_exited``) use the group's key-value store (torchrun's), which needs no backend.

Uneven work. A collective waits for every rank, and a wait longer than the process group's
timeout kills the job (NCCL's watchdog: 10 minutes by default). Work that is split unevenly over
ranks (the disentanglement study: 23 grid items on some ranks of 8, 22 on others, for hours) must
therefore not meet at a collective: ``wait_for_all_ranks`` marks this rank done in the process
group's key-value store and polls it until every rank is, which has no timeout; the ranks then
read each other's results from the shared output directory. The data-parallel training itself
(DDP) keeps its ranks in lock step, so its collectives never wait long.

Ending. Every rank that leaves the group (normally or by an exception) marks itself exited in
the store (``mark_exited``, registered at exit): a rank waiting in ``wait_for_all_ranks`` for a
rank that has exited stops waiting and is told which ranks never arrived. Decisions that every
rank must take at the same step (a loss that became NaN on one rank, a stop signal that reached
one rank) are taken on a flag all-reduced with MAX (``agree_max``).

Stops. A stop signal reaches one rank; the ranks act on it together at the next step where they
meet (``agree_max``), which every rank must know from the step count alone. The training loop
meets at its sync points (log, evaluation, checkpoint steps) and also on a wall-time schedule
(``MeetingSchedule``): at each meeting the ranks agree on the slowest rank's time per step and
meet again after as many steps as fit in ``seconds`` (at least one), so a signal reaches every
rank within about that many seconds plus a step, whatever ``log_every`` is. (``torchrun`` kills
its workers 30 s after forwarding SIGTERM: the stop checkpoint must be written before.)
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)

__all__ = [
    "DirectoryNotShared",
    "DistInfo",
    "MeetingSchedule",
    "RanksExited",
    "agree_max",
    "all_reduce_mean",
    "all_reduce_means",
    "backend_for",
    "barrier",
    "check_shared_dir",
    "collective_device",
    "current",
    "init_distributed",
    "mark_exited",
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
        "gloo" on CPU; "nccl" on CUDA (whose collectives then take CUDA tensors only).
    """
    return "nccl" if device.startswith("cuda") else "gloo"


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
    serves CPU tensors (gloo), else this process's CUDA device (NCCL: ``cuda:LOCAL_RANK``, the
    device ``init_distributed`` set)."""
    backend = _requested_backend or str(dist.get_backend())
    if "cpu" in served_devices(backend):
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def _destroy() -> None:
    global _requested_backend
    if dist.is_available() and dist.is_initialized():
        # Free what reference cycles still hold (a DDP wrapper kept by a caught exception's
        # traceback, its reducer, pending works) while the interpreter is whole: freed during
        # finalization instead, a backend thread that must take the GIL to drop a tensor aborts
        # the process ("terminate called without an active exception") after a run that ended
        # well.
        gc.collect()
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
        # Leave the group on exit (NCCL warns of, and may hang on, a group never destroyed);
        # first say so in the store, for ranks still waiting on this one (registered last: runs
        # first).
        atexit.register(_destroy)
        atexit.register(mark_exited)
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
        device = collective_device()
        if device.type == "cuda":  # NCCL's barrier is an all-reduce on this GPU, not a guessed one
            dist.barrier(device_ids=[device.index])
        else:
            dist.barrier()


def all_reduce_mean(value: float) -> float:
    """Mean of a Python float over all ranks (identity when not distributed)."""
    info = current()
    if not info.enabled:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=collective_device())
    dist.all_reduce(t)
    return float(t.item()) / info.world_size


def all_reduce_means(values: list[float]) -> list[float]:
    """The mean of each value over all ranks, in one collective (the values when not
    distributed)."""
    info = current()
    if not info.enabled or not values:
        return [float(v) for v in values]
    t = torch.tensor(values, dtype=torch.float64, device=collective_device())
    dist.all_reduce(t)
    return [float(v) / info.world_size for v in t.tolist()]


def agree_max(*values: float) -> list[float]:
    """The maximum of each value over all ranks (the values themselves when not distributed): a
    decision every rank takes together, e.g. "the loss is not finite on some rank"."""
    if not current().enabled:
        return [float(v) for v in values]
    t = torch.tensor(values, dtype=torch.float64, device=collective_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [float(v) for v in t.tolist()]


class MeetingSchedule:
    """The steps at which the ranks of a training loop meet, besides its sync points, so that
    they meet at least every ``seconds`` of wall time (see the module doc).

    Args:
        seconds: the most wall time between meetings (> 0).
        step: the step the loop starts from; the ranks first meet after its first step.
    """

    def __init__(self, seconds: float, step: int) -> None:
        if not seconds > 0:
            raise ValueError(f"seconds between meetings must be > 0, got {seconds}")
        self.seconds = seconds
        self.next = step + 1  # the next meeting: after this step
        self._since = (step, time.monotonic())

    def due(self, step: int) -> bool:
        """Whether the ranks meet after ``step``."""
        return step >= self.next

    def per_step(self, step: int) -> float:
        """This rank's wall seconds per step since the last meeting (to agree on)."""
        first, at = self._since
        return (time.monotonic() - at) / max(step - first, 1)

    def met(self, step: int, per_step: float) -> None:
        """The ranks met after ``step`` and agreed that a step takes ``per_step`` seconds (the
        slowest rank's time): the next meeting is as many steps later as fit in ``seconds``."""
        stride = int(self.seconds / per_step) if per_step > 0 else 1
        self.next = step + max(1, stride)
        self._since = (step, time.monotonic())


class RanksExited(RuntimeError):
    """Ranks left the process group before reaching a ``wait_for_all_ranks``."""

    def __init__(self, what: str, ranks: list[int], why: str | None = None) -> None:
        super().__init__(
            why
            or f"rank(s) {','.join(map(str, ranks))} ended before finishing {what}; their log "
            "says why"
        )
        self.ranks = ranks


def _exited_key(rank: int) -> str:
    return f"paperzoo/exited/rank-{rank}"


def mark_exited() -> None:
    """Record in the store that this rank has left (registered at exit by ``init_distributed``;
    a no-op when not distributed or when the store is gone)."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        store = dist.distributed_c10d._get_default_store()
        store.set(_exited_key(dist.get_rank()), "exited")
    except Exception as err:  # noqa: BLE001 - the store's server may have gone first
        log.debug("could not mark rank %d exited: %s", dist.get_rank(), err)


class DirectoryNotShared(ValueError):
    """A directory that every rank must see (``--out``) is not the same on every rank."""


_checks = 0  # check_shared_dir calls so far (every rank makes the same calls)


def check_shared_dir(path: str | Path, what: str = "--out") -> None:
    """Make sure every rank sees the same directory at ``path`` (a no-op when not distributed).

    Rank 0 writes a random nonce into a file there and puts it in the process group's store;
    every rank waits for it in the store (so nothing is read there before rank 0 has set the
    directory up, e.g. cleared it for ``--restart``), reads the file and compares; the ranks
    agree on the outcome, and rank 0 removes the file.

    Raises:
        DirectoryNotShared: on every rank, when some rank does not see rank 0's file.
    """
    global _checks
    info = current()
    if not info.enabled:
        return
    _checks += 1
    path = Path(path)
    name = f".paperzoo-ranks-{_checks}"
    store = dist.distributed_c10d._get_default_store()
    key = f"paperzoo/shared-dir-{_checks}"
    if info.is_main:
        nonce = secrets.token_hex(16)
        path.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(nonce)
        store.set(key, nonce)
    nonce = store.get(key).decode()  # waits for rank 0
    try:
        seen = (path / name).read_text() == nonce
    except OSError:
        seen = False
    (unseen,) = agree_max(0.0 if seen else 1.0)
    if info.is_main:
        (path / name).unlink(missing_ok=True)
    if unseen:
        raise DirectoryNotShared(
            f"{what} {path} is not one directory that every rank sees"
            + ("" if seen else f" (rank {info.rank} does not see rank 0's files there)")
            + ": give every rank the same shared directory"
        )


_waits = 0  # wait_for_all_ranks calls so far: every rank makes the same calls in the same order


def wait_for_all_ranks(
    what: str,
    *,
    poll_s: float = 1.0,
    report_s: float = 600.0,
    timeout_s: float | None = None,
) -> None:
    """Return once every rank has called this (a no-op when not distributed), without a
    collective: each rank sets a key in the process group's store and polls until all keys are
    there, so ranks that finish hours apart wait without the group's timeout.

    Each rank must make the same sequence of calls (the n-th call of every rank meet). A rank
    that leaves the group first (it ended, normally or by an exception: ``mark_exited``) ends
    the wait: ``RanksExited`` names it.

    Args:
        what: what the ranks finished, for the log.
        poll_s: seconds between looks at the store.
        report_s: seconds between log lines while waiting.
        timeout_s: give up after this many seconds (None: wait as long as the ranks work).

    Raises:
        RanksExited: a rank exited without arriving here.
        TimeoutError: ``timeout_s`` passed first.
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
    _await_keys(store, keys, what, info, poll_s, report_s, timeout_s)
    # Where rank 0's process hosts the store (torch before the agent's store), rank 0 leaving
    # ends every look at it: rank 0 returns only once every rank has seen all arrive.
    seen = [f"paperzoo/wait-{_waits}/seen-{r}" for r in range(info.world_size)]
    store.set(seen[info.rank], "seen")
    if info.rank == 0:
        _await_keys(store, seen, what, info, poll_s, report_s, timeout_s)


def _await_keys(
    store: dist.Store,
    keys: list[str],
    what: str,
    info: DistInfo,
    poll_s: float,
    report_s: float,
    timeout_s: float | None,
) -> None:
    """Poll ``store`` until it holds every one of ``keys`` (one per rank): ``wait_for_all_ranks``."""
    start = next_report = time.monotonic()
    while True:
        try:
            if store.check(keys):
                return
            waiting = [r for r, k in enumerate(keys) if not store.check([k])]
            gone = [r for r in waiting if store.check([_exited_key(r)])]
        except RuntimeError as err:  # (DistNetworkError) the store's server has gone
            # Where rank 0's process hosts the store (torch before the agent's store), rank 0
            # leaving ends every look at it; its log, and what it wrote, say how it ended.
            raise RanksExited(
                what, [0], f"the process group's store is gone while waiting for {what} ({err})"
            ) from None
        if gone:
            raise RanksExited(what, gone)
        now = time.monotonic()
        if timeout_s is not None and now - start >= timeout_s:
            raise TimeoutError(
                f"rank {info.rank}: {what} done, rank(s) {','.join(map(str, waiting))} not "
                f"after {timeout_s:.0f} s"
            )
        if now >= next_report:
            log.info(
                "rank %d: %s done, waiting for rank(s) %s (%.0f s so far)",
                info.rank, what, ",".join(map(str, waiting)), now - start,
            )  # fmt: skip
            next_report = now + report_s
        time.sleep(poll_s)
