"""The state file of a launch (``DIR/launch.json``) and what the cells record as they run.

``launch.json`` holds the papers' plans (``PaperPlan``), every cell in submission order (its
index is its Slurm array index), the job each cell was last submitted as, the merge job, the
executor and the Slurm options. Each cell appends its events to ``DIR/launch/events/cell-I.tsv``
(one line each: time, job id, ``start`` host | ``end`` exit status | ``requeue`` reason |
``retry`` exit status), from the Slurm script or the local executor; ``status`` reads them.
A cell is done when its ``results.json`` is complete (``cell_done``), whatever its job says.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperzoo.launch.plan import Cell, LaunchError, PaperPlan
from paperzoo.utils.io import atomic_write_text

SCHEMA = "paperzoo.launch/1"
STATE_FILE = "launch.json"
WORK_DIR = "launch"  # DIR/launch/: scripts, logs, events


@dataclass(frozen=True)
class SlurmOptions:
    """The Slurm options a launch passes through to every job.

    Args:
        partition, account, qos: ``--partition``, ``--account``, ``--qos`` (None: the
            cluster's default).
        extra: ``--slurm-opt KEY=VALUE`` items, in order, as ``(KEY, VALUE)``; they come after
            the options paperzoo sets, so they override them (``time``, ``mem``, ...).
        retries: how often a cell that fails (an exit status other than 0 and 2) is requeued.
    """

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    retries: int = 2

    def lines(self) -> list[str]:
        """The ``#SBATCH`` options, as ``--key=value`` words."""
        words = [
            f"--{key}={value}"
            for key, value in (
                ("partition", self.partition),
                ("account", self.account),
                ("qos", self.qos),
            )
            if value is not None
        ]
        return words + [f"--{k}={v}" if v else f"--{k}" for k, v in self.extra]

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "account": self.account,
            "qos": self.qos,
            "extra": [list(kv) for kv in self.extra],
            "retries": self.retries,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlurmOptions:
        return cls(
            partition=d["partition"],
            account=d["account"],
            qos=d["qos"],
            extra=tuple((k, v) for k, v in d["extra"]),
            retries=int(d["retries"]),
        )


@dataclass
class LaunchState:
    """Everything a launch needs to be looked at or continued.

    Args:
        root: the launch directory (absolute).
        executor: ``slurm`` or ``local``.
        command: the command line that started it (recorded in the merged results).
        plans: each paper's ``PaperPlan``, by paper.
        cells: every cell, in submission order.
        jobs: the job each cell was last submitted as, by cell index (Slurm ``ARRAY_TASK``; the
            local executor's process id).
        merge_job: the last merge job submitted (Slurm), if any.
        slurm: the Slurm options.
        rule: the seeds follow the seed rule (``next_seeds`` adds cells after each merge).
    """

    root: Path
    executor: str
    command: str | None
    plans: dict[str, PaperPlan]
    cells: list[Cell] = field(default_factory=list)
    jobs: dict[int, str] = field(default_factory=dict)
    merge_job: str | None = None
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    rule: bool = False

    @property
    def work(self) -> Path:
        """``DIR/launch``: the scripts, logs and events."""
        return self.root / WORK_DIR

    def events_file(self, index: int) -> Path:
        """The events of cell ``index``."""
        return self.work / "events" / f"cell-{index}.tsv"

    def log_file(self, index: int) -> Path:
        """The output of cell ``index`` (every attempt, appended)."""
        return self.work / "logs" / f"cell-{index}.log"

    def index(self, cell_id: str) -> int | None:
        """The index of the cell ``cell_id``, or None."""
        return next((i for i, c in enumerate(self.cells) if c.id == cell_id), None)

    def add(self, cells: list[Cell]) -> list[int]:
        """Add the cells not in the launch yet; returns every given cell's index.

        Raises:
            LaunchError: a cell of the same id was launched with another command.
        """
        indices = []
        for cell in cells:
            i = self.index(cell.id)
            if i is None:
                self.cells.append(cell)
                i = len(self.cells) - 1
            elif self.cells[i].argv != cell.argv:
                raise LaunchError(
                    f"{self.root} holds a launch whose cell {cell.id} runs another command "
                    f"({' '.join(self.cells[i].argv)}): relaunch it with `paperzoo launch --out "
                    f"{self.root}`, or choose another --out"
                )
            indices.append(i)
        return indices

    def done(self, index: int) -> bool:
        """Whether cell ``index`` has its complete results (``cell_done``)."""
        return cell_done(self.cells[index], self.root)

    def save(self) -> None:
        """Write ``DIR/launch.json`` (atomically)."""
        self.root.mkdir(parents=True, exist_ok=True)
        data = {
            "schema": SCHEMA,
            "executor": self.executor,
            "command": self.command,
            "plans": {n: p.to_dict() for n, p in self.plans.items()},
            "cells": [c.to_dict() for c in self.cells],
            "jobs": {str(i): j for i, j in sorted(self.jobs.items())},
            "merge_job": self.merge_job,
            "slurm": self.slurm.to_dict(),
            "rule": self.rule,
        }
        atomic_write_text(self.root / STATE_FILE, json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, root: Path) -> LaunchState:
        """The launch in ``root``.

        Raises:
            LaunchError: no launch there, or a state file that cannot be read.
        """
        path = root / STATE_FILE
        try:
            d = json.loads(path.read_text())
        except FileNotFoundError:
            raise LaunchError(f"{root} holds no launch ({STATE_FILE} not found)") from None
        except (OSError, ValueError) as err:
            raise LaunchError(f"{path} cannot be read: {err}") from None
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            raise LaunchError(f"{path} is not a paperzoo launch state ({SCHEMA})")
        return cls(
            root=root.resolve(),
            executor=d["executor"],
            command=d["command"],
            plans={n: PaperPlan.from_dict(p) for n, p in d["plans"].items()},
            cells=[Cell.from_dict(c) for c in d["cells"]],
            jobs={int(i): j for i, j in d["jobs"].items()},
            merge_job=d["merge_job"],
            slurm=SlurmOptions.from_dict(d["slurm"]),
            rule=bool(d["rule"]),
        )


def cell_done(cell: Cell, root: Path) -> bool:
    """Whether the cell's ``results.json`` is there and complete: readable, of the cell's
    paper, seed and shard."""
    from paperzoo.verdict import load_result

    try:
        result = load_result(root / cell.out)
    except ValueError:
        return False
    shard = list(cell.shard) if cell.shard else None
    return (
        result.paper == cell.paper
        and list(result.seeds) == [cell.seed]
        and (list(result.shard) if result.shard else None) == shard
    )


@dataclass(frozen=True)
class Event:
    """One line of a cell's events file."""

    at: float
    job: str
    kind: str  # start | end | requeue | retry
    value: str


def read_events(path: Path) -> list[Event]:
    """The events in ``path`` (none when it does not exist; a torn last line is skipped)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    events = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 4:
            try:
                events.append(Event(float(parts[0]), parts[1], parts[2], parts[3]))
            except ValueError:
                continue
    return events


def write_event(path: Path, job: str, kind: str, value: str) -> None:
    """Append one event (the local executor; the Slurm script writes the same lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(f"{int(time.time())}\t{job}\t{kind}\t{value}\n")
