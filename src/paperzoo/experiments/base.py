"""What an experiment is: configs per scale, declared claims, and ``run`` producing measurements.

An experiment module declares a subclass of ``Experiment`` and registers it in ``EXPERIMENTS``.
The runner (``paperzoo.experiments.runner``) picks the config for the requested scale, calls
``run``, and turns the returned ``Outcome`` into a ``Result`` whose ``holds`` fields are computed
from the measured values and the declared targets (``paperzoo.report.evaluate_target``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from paperzoo.data.base import DataInfo
from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.seeding import derive_seed
from paperzoo.registry import Registry

log = logging.getLogger(__name__)

SCALES = ("smoke", "quick", "full")
Measured = float | int | bool | None


@dataclass(frozen=True)
class ClaimSpec:
    id: str  # stable id, e.g. "quadrant.classification.coordconv.test_acc"
    statement: str  # one sentence a reader understands without the paper
    paper: float | str | None  # the paper's number (or a short text like "~0.86")
    target: str  # ">= 0.95", "<= 0.1", "> 0", "within 2% of 0.27e6", "is true", "reported"


@dataclass
class Outcome:
    """What ``Experiment.run`` returns: measurements keyed by claim id, plus provenance."""

    measured: dict[str, Measured] = field(default_factory=dict)
    data: list[DataInfo] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # paths relative to the output directory
    notes: list[str] = field(default_factory=list)  # shown under the claim table in report.md
    details: dict[str, Any] = field(
        default_factory=dict
    )  # extra JSON-able numbers for results.json


@dataclass(frozen=True)
class RunContext:
    """Everything about one invocation that is not the experiment's own config."""

    scale: str = "quick"
    seed: int = 0
    device: str = "cpu"
    out_dir: Path = Path("runs")
    data_root: Path | None = None
    download: bool = False
    dataset: str | None = None
    quiet: bool = False
    fold: int = 1  # GG-NN: which fold of the official bAbI files
    shard: tuple[int, int] | None = None  # (k, n): run only slice k of n of a model grid
    dist: DistInfo = field(default_factory=DistInfo)

    def generator(self, *keys: int | str) -> torch.Generator:
        """A CPU generator seeded from the run seed and ``keys`` (independent streams by key)."""
        return torch.Generator().manual_seed(derive_seed(self.seed, *keys))

    def figure_path(self, name: str) -> tuple[Path, str]:
        """(absolute path to save to, path relative to out_dir for ``Outcome.figures``)."""
        rel = f"figures/{name}"
        path = self.out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path, rel

    @property
    def progress(self) -> bool:
        return not self.quiet


class Experiment(ABC):
    """One paper's reproduction.

    Subclasses set ``name``, ``title``, ``claims``, ``datasets`` (names accepted by ``--dataset``,
    first is the default; empty when the data are generated) and ``configs`` (one config object
    per scale in ``SCALES``), and implement ``run``.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    claims: ClassVar[tuple[ClaimSpec, ...]]
    datasets: ClassVar[tuple[str, ...]] = ()
    configs: ClassVar[Mapping[str, Any]]

    def config(self, scale: str) -> Any:
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose from {', '.join(SCALES)}")
        return self.configs[scale]

    def dataset_name(self, ctx: RunContext) -> str | None:
        """The data set to use: ``ctx.dataset`` if supported, else the default."""
        if ctx.dataset is None:
            return self.datasets[0] if self.datasets else None
        if ctx.dataset not in self.datasets:
            supported = ", ".join(self.datasets) or "none (its data are generated)"
            raise ValueError(
                f"{self.name} does not support --dataset {ctx.dataset}; supported: {supported}"
            )
        return ctx.dataset

    @abstractmethod
    def run(self, cfg: Any, ctx: RunContext) -> Outcome:
        """Train/evaluate with ``cfg`` and return the measurements of every declared claim."""

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        """Combine the ``results.json`` of shards into one outcome (``paperzoo merge``)."""
        raise NotImplementedError(f"{self.name} runs in one piece; it has no shards to merge")


EXPERIMENTS: Registry[Experiment] = Registry("experiment")
