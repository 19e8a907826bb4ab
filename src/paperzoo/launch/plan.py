"""The cells of a launch and what each one needs: ``Cell``, ``PaperPlan``, ``Resources``.

A reproduction splits into cells, one run each: paper x seed, and x shard ``K/N`` where the
launch asks for ``--shards N`` of a paper that trains a grid of models
(``Experiment.has_grid``). A part (``--part``) or a paper's own options (GG-NN's ``--folds``)
apply to every cell of the paper, as they do to every seed of ``reproduce --seeds``. Each cell
is the ``paperzoo reproduce`` command of one seed (``RunRequest.child_argv``: the flags the seeds
of a multi-seed run repeat), with its own ``--out`` under the launch directory:

- one paper: ``DIR/seed-S`` (the layout of ``reproduce --seeds ... --out DIR``), the aggregate in
  ``DIR``; several papers: ``DIR/NAME/seed-S``, the aggregates in ``DIR/NAME``;
- shards: ``.../seed-S/shard-K``, merged into ``.../seed-S`` before the seeds are.

Resources per cell (``resources``): GPUs where the run is on CUDA (``--device cuda``, or a full
run without ``--device cpu``); CPUs: the torch threads on the CPU, else ``CPUS_PER_GPU`` per GPU
plus the paper's data-loader workers (``workers`` in its config); memory ``MEM_GB_PER_CPU`` per
CPU; the time limit ``MARGIN`` times the cell's estimate plus ``SLACK_S``, at least ``MIN_TIME_S``
and at most ``MAX_TIME_S`` (a cell that reaches its limit checkpoints at the warning signal, is
requeued and continues, so a long run is a chain of jobs). The estimate: smoke ``SMOKE_S``,
quick ``QUICK_S`` (the quick scale's budget of about 5 CPU-minutes per seed), full the paper's
priced GPU-hours (``paperzoo list --json``: ``full_cost``, a lower bound on one H100/H200) over
its shards and GPUs; a full run on the CPU or of a paper without a price has none (the limit is
then ``MAX_TIME_S``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SMOKE_S = 60.0  # estimate of a smoke cell (seconds)
QUICK_S = 300.0  # estimate of a quick cell: the quick scale's budget per seed
MARGIN = 3.0  # time limit = MARGIN x estimate + SLACK_S ...
SLACK_S = 600.0  # ... (start-up, data, the checkpoint at the warning signal)
MIN_TIME_S = 900  # ... at least 15 minutes
MAX_TIME_S = 24 * 3600  # ... at most 24 hours (then the cell is requeued and resumes)
CPUS_PER_GPU = 2  # CPUs per GPU rank besides its data-loader workers
MEM_GB_PER_CPU = 4  # memory per CPU


class LaunchError(ValueError):
    """A launch that cannot be made as asked: one line (the CLI exits 2)."""


@dataclass(frozen=True)
class Resources:
    """What one cell asks Slurm for.

    Args:
        nodes: nodes per cell (more than one: torchrun over them, ``multi_node``).
        gpus_per_node: GPUs per node (0: a CPU run).
        cpus_per_task: CPUs of the one task per node.
        mem_gb: memory per node, GB.
        time_s: the time limit, seconds.
        estimate_s: the cell's estimated run time (None: unknown).
        threads: torch threads of each process of the cell (``--threads``).
    """

    nodes: int
    gpus_per_node: int
    cpus_per_task: int
    mem_gb: int
    time_s: int
    estimate_s: float | None
    threads: int

    @property
    def torchrun(self) -> bool:
        """The cell runs under torchrun: several GPUs or several nodes."""
        return self.nodes > 1 or self.gpus_per_node > 1

    @property
    def gpus(self) -> int:
        """GPUs of the whole cell."""
        return self.nodes * self.gpus_per_node


def time_limit(estimate_s: float | None) -> int:
    """The time limit of a cell estimated to take ``estimate_s`` seconds (see the module doc)."""
    if estimate_s is None:
        return MAX_TIME_S
    return int(min(MAX_TIME_S, max(MIN_TIME_S, math.ceil(MARGIN * estimate_s + SLACK_S))))


def estimate(name: str, scale: str, *, on_gpu: bool, shards: int, gpus: int) -> float | None:
    """The estimated seconds of one cell of paper ``name`` (see the module doc)."""
    if scale == "smoke":
        return SMOKE_S
    if scale == "quick":
        return QUICK_S
    if not on_gpu:
        return None
    from paperzoo.cost import stored_cost

    cost = stored_cost(name)
    if cost is None:
        return None
    return float(cost["gpu_hours"]) * 3600.0 / max(1, shards) / max(1, gpus)


def resources(
    name: str,
    values: Any,
    *,
    nodes: int,
    gpus_per_node: int | None,
    shards: int,
) -> Resources:
    """The ``Resources`` of each cell of paper ``name`` run with the reproduce options
    ``values`` (a ``RunRequest``: ``scale``, ``device``, ``threads``, ``overrides``).

    Raises:
        LaunchError: several GPUs or nodes for a paper that does not run under torchrun, or
            GPUs asked for a run on the CPU.
    """
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.overrides import parse_set
    from paperzoo.experiments.runner import resolve_config

    exp = get_experiment(name)
    device = values.device
    on_gpu = (device or "").startswith("cuda") or (values.scale == "full" and device != "cpu")
    if gpus_per_node is not None and gpus_per_node > 0 and device == "cpu":
        raise LaunchError("--gpus-per-node with --device cpu: the run would not use the GPUs")
    gpn = gpus_per_node if gpus_per_node is not None else (1 if on_gpu else 0)
    if (nodes > 1 or gpn > 1) and not exp.gpu_check.torchrun:
        raise LaunchError(
            f"{name} trains each model on one GPU: --nodes / --gpus-per-node above 1 apply to "
            f"the papers that run under torchrun ({', '.join(torchrun_papers())})"
        )
    if nodes > 1 and gpn == 0:
        raise LaunchError("--nodes above 1 needs GPUs: give --gpus-per-node G")
    cfg = resolve_config(name, values.scale, parse_set(list(values.overrides)))
    workers = int(getattr(cfg, "workers", 0) or 0)
    if gpn:
        threads = values.threads or CPUS_PER_GPU
        cpus = (threads + workers) * gpn
    else:
        threads = values.threads or 1
        cpus = threads
    est = estimate(name, values.scale, on_gpu=gpn > 0, shards=shards, gpus=nodes * max(gpn, 1))
    return Resources(
        nodes=nodes,
        gpus_per_node=gpn,
        cpus_per_task=cpus,
        mem_gb=MEM_GB_PER_CPU * cpus,
        time_s=time_limit(est),
        estimate_s=est,
        threads=threads,
    )


def torchrun_papers() -> list[str]:
    """The papers that train one model on several GPUs (``GpuCheck.torchrun``)."""
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.lookup import get_experiment

    return [n for n in EXPERIMENTS.names() if get_experiment(n).gpu_check.torchrun]


@dataclass(frozen=True)
class Cell:
    """One run of a launch.

    Args:
        paper: the paper.
        seed: its seed.
        shard: ``(K, N)`` for slice K of N of the paper's grid, else None.
        out: the run's directory, relative to the launch directory.
        argv: the ``paperzoo`` arguments that run it (``reproduce NAME --seed S --out ...``).
        resources: what it asks for.
    """

    paper: str
    seed: int
    shard: tuple[int, int] | None
    out: str
    argv: tuple[str, ...]
    resources: Resources

    @property
    def id(self) -> str:
        """``paper/seed-S`` (``/shard-K`` for a shard): unique in a launch."""
        return f"{self.paper}/seed-{self.seed}" + (f"/shard-{self.shard[0]}" if self.shard else "")

    def to_dict(self) -> dict[str, Any]:
        """The cell as the state file holds it."""
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["shard"] = list(self.shard) if self.shard else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """The cell of ``to_dict``."""
        shard = d["shard"]
        return cls(
            paper=d["paper"],
            seed=int(d["seed"]),
            shard=(int(shard[0]), int(shard[1])) if shard else None,
            out=d["out"],
            argv=tuple(d["argv"]),
            resources=Resources(**d["resources"]),
        )


@dataclass(frozen=True)
class PaperPlan:
    """How the cells of one paper of a launch are made, kept in the state file so that more
    seeds (``next_seeds``) become cells like the first ones.

    Args:
        paper: the paper.
        out: its aggregate's directory, relative to the launch directory (``.`` for one paper).
        flags: the reproduce options every cell repeats (``Flag.seeds``), as words.
        shards: N of ``--shards N`` (None: whole runs).
        resources: what each cell asks for.
    """

    paper: str
    out: str
    flags: tuple[str, ...]
    shards: int | None
    resources: Resources

    def cells(self, seeds: Sequence[int], root: Path) -> list[Cell]:
        """The cells of ``seeds`` (each seed's shards, in order); ``root``: the launch
        directory (absolute: the cells' ``--out``)."""
        cells = []
        for seed in seeds:
            seed_dir = Path(self.out) / f"seed-{seed}"
            for shard in [(k, self.shards) for k in range(self.shards)] if self.shards else [None]:
                rel = seed_dir / f"shard-{shard[0]}" if shard else seed_dir
                argv = ["reproduce", self.paper, "--seed", str(seed), "--out", str(root / rel)]
                argv += ["--threads", str(self.resources.threads), *self.flags]
                if shard:
                    argv += ["--shard", f"{shard[0]}/{shard[1]}"]
                cells.append(Cell(self.paper, seed, shard, str(rel), tuple(argv), self.resources))
        return cells

    def to_dict(self) -> dict[str, Any]:
        """The plan as the state file holds it."""
        d = asdict(self)
        d["flags"] = list(self.flags)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PaperPlan:
        """The plan of ``to_dict``."""
        return cls(
            paper=d["paper"],
            out=d["out"],
            flags=tuple(d["flags"]),
            shards=d["shards"],
            resources=Resources(**d["resources"]),
        )
