"""What an experiment is: configs per scale, declared claims, and ``run`` producing measurements.

A paper declares a subclass of ``Experiment``; its package declares that class under the
``paperzoo.papers`` entry point group (``paperzoo.experiments.lookup``).
The runner (``paperzoo.experiments.runner``) picks the config for the requested scale, calls
``run``, and turns the returned ``Outcome`` into a ``Result`` whose ``holds`` fields are computed
from the measured values and the declared targets (``paperzoo.verdict.evaluate_target``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import torch

from paperzoo.data.base import DataInfo
from paperzoo.data.holdout import final_evaluation as _final_evaluation
from paperzoo.data.holdout import guard as _guard
from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.seeding import derive_seed
from paperzoo.utils.io import atomic_savefig
from paperzoo.verdict.targets import Measured, validate_diagnosis, validate_target

log = logging.getLogger(__name__)

SCALES = ("smoke", "quick", "full")
_T = TypeVar("_T")


CLAIM_KINDS = ("finding", "check")


def check_selection_run(
    models: Sequence[str] | None, known: Sequence[str], n_val: int | None
) -> None:
    """Validate a config's selection-run fields (validation seeds 100-103): ``models``, the
    models to train (None: all ``known``), and ``n_val``, training examples held out to
    evaluate on instead of the test set (None: the test set).

    Raises:
        ValueError: an unknown or empty ``models``, or ``n_val < 1``.
    """
    if models is not None:
        unknown = sorted(set(models) - set(known))
        if unknown or not models:
            raise ValueError(f"models must be among {', '.join(known)}, got {unknown}")
    if n_val is not None and n_val < 1:
        raise ValueError(f"n_val must be >= 1, got {n_val}")


RAN_BEFORE = "ran_before"  # dataclass field metadata: see ``added_later``


def added_later(default: Any, *, ran_before: Any) -> Any:
    """A config field added after some runs were recorded: ``default`` now, ``ran_before`` the
    value those runs ran with (they could not record the field). The summary compares a run that
    lacks the field with ``ran_before``, so a field whose declared value changes what runs is
    config drift for the runs made before it (``paperzoo.verdict.counting``)."""
    return field(default=default, metadata={RAN_BEFORE: ran_before})


@dataclass(frozen=True)
class ClaimSpec:
    """One claim of a reproduction: what is measured, the paper's number and the target per scale.

    ``kind`` is ``"finding"`` for an empirical result the paper reports (A beats B; X reaches N)
    and ``"check"`` for a property that holds by construction or a sanity bound (parameter
    counts, invariances that follow from the architecture, a random code scoring near chance).
    Only findings count as reproduced. ``target`` is one string for every scale or a mapping
    ``{"quick": ..., "full": ...}`` (``"smoke"`` optional; it falls back to ``"quick"``).
    ``"reported"`` (a descriptive number, no target) is allowed only for checks.

    ``unverified`` (a reason) marks a paper number that could not be checked against the paper's
    text; the finding is shown but does not count at full scale (``paperzoo.verdict``).
    ``quoted`` (a source) marks a paper number read not in the paper's text but as a maintained
    reimplementation quotes it from the paper (e.g. a table of "reported" accuracies); such a
    number counts like a verified one and is shown as quoted. A claim is not both.

    ``diagnosis`` maps a scale to why the finding does not reproduce there, as an experiment
    found: "CAUSE: why", CAUSE one of ``paperzoo.verdict.DIAGNOSIS_CAUSES`` ("the small scale",
    "our code", "the paper"), the reason naming the page that holds the experiment. report.md,
    results.json and the summary show it beside the finding wherever it is not reproduced; it
    changes no verdict.

    ``scales`` lists the scales at which the claim is measured and judged (default: all). A claim
    declared for some scales only (e.g. ``scales=("full",)`` for a finding that needs the paper's
    data set and model) is absent from the other scales' runs, results and tables; its target
    (a string, or a mapping over its own scales) is judged only where it is declared.
    """

    id: str  # stable id, e.g. "quadrant.classification.coordconv.test_acc"
    statement: str  # one sentence a reader understands without the paper
    paper: float | str | None  # the paper's number (or a short text like "~0.86")
    target: str | Mapping[str, str]  # ">= 0.95", "within 2% of 0.27e6", "is true", "reported"
    kind: str = "finding"  # "finding" | "check"
    scales: tuple[str, ...] = SCALES  # where the claim is measured and judged
    # Why the paper number this claim's full target rests on is not verified against the paper's
    # text (None: verified, its source named in the paper's docs). An unverified finding is shown
    # but never counted as reproduced at full scale.
    unverified: str | None = None
    # Where the paper number is quoted from when the paper's text was not read (a maintained
    # reimplementation's table of the paper's numbers); None: not quoted. It counts.
    quoted: str | None = None
    # scale -> why the finding does not reproduce there ("CAUSE: why"); see above
    diagnosis: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        self._check_types()
        if self.kind not in CLAIM_KINDS:
            raise ValueError(
                f"claim {self.id}: kind must be one of {CLAIM_KINDS}, got {self.kind!r}"
            )
        scales = tuple(self.scales)
        if not scales or set(scales) - set(SCALES) or len(set(scales)) != len(scales):
            raise ValueError(
                f"claim {self.id}: scales must be distinct names from {SCALES}, got {scales}"
            )
        object.__setattr__(self, "scales", tuple(s for s in SCALES if s in scales))
        if self.unverified is not None and not self.unverified.strip():
            raise ValueError(f"claim {self.id}: unverified needs a reason (or None)")
        if self.quoted is not None and not self.quoted.strip():
            raise ValueError(f"claim {self.id}: quoted needs a source (or None)")
        if self.quoted is not None and self.unverified is not None:
            raise ValueError(f"claim {self.id}: a paper number is quoted or unverified, not both")
        if self.diagnosis is not None:
            if self.kind != "finding" or set(self.diagnosis) - set(scales):
                raise ValueError(
                    f"claim {self.id}: a diagnosis belongs to a finding, at scales it is "
                    f"declared at ({list(scales)}), got {self.kind} at {sorted(self.diagnosis)}"
                )
            for text in self.diagnosis.values():
                try:
                    validate_diagnosis(text)
                except ValueError as err:
                    raise ValueError(f"claim {self.id}: {err}") from None
            object.__setattr__(self, "diagnosis", MappingProxyType(dict(self.diagnosis)))
        if not isinstance(self.target, str):
            # 'quick' and 'full' where declared; 'smoke' optional (it falls back to 'quick'),
            # needed only for a claim declared at smoke but not at quick.
            need = {"quick", "full"} & set(scales)
            if "smoke" in scales and "quick" not in scales:
                need.add("smoke")
            unknown = set(self.target) - set(scales)
            if unknown or not need <= set(self.target):
                raise ValueError(
                    f"claim {self.id}: per-scale targets need {sorted(need)} "
                    f"(of its scales {list(scales)}), got {sorted(self.target)}"
                )
            object.__setattr__(self, "target", MappingProxyType(dict(self.target)))
        for scale in self.scales:
            t = self.target_at(scale)
            try:
                validate_target(t)
            except ValueError as err:
                raise ValueError(f"claim {self.id}: {err} (at {scale})") from None
            if self.kind == "finding" and t.strip().lower() == "reported":
                raise ValueError(
                    f"claim {self.id}: a finding needs a target at every scale "
                    f"({scale} is 'reported'); descriptive numbers are checks"
                )

    def _check_types(self) -> None:
        """Raise ``TypeError`` naming the claim for a field of the wrong type (the id, the
        statement, the paper's number, a target that is not a string or a mapping of strings,
        ``scales`` given as one string)."""
        if not isinstance(self.id, str) or not self.id.strip():
            raise TypeError(f"a claim's id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise TypeError(
                f"claim {self.id}: statement must be a sentence, got {self.statement!r}"
            )
        if self.paper is not None and not isinstance(self.paper, int | float | str):
            raise TypeError(
                f"claim {self.id}: paper (the paper's number) must be a number, a short text "
                f"or None, got {type(self.paper).__name__}"
            )
        form = "a string such as '>= 0.9' or a mapping {'quick': ..., 'full': ...}"
        if isinstance(self.target, Mapping):
            bad = {k: v for k, v in self.target.items() if not isinstance(v, str)}
            if bad:
                raise TypeError(f"claim {self.id}: every target must be a string, got {bad!r}")
        elif not isinstance(self.target, str):
            raise TypeError(f"claim {self.id}: target must be {form}, got {self.target!r}")
        if isinstance(self.scales, str):
            raise TypeError(
                f"claim {self.id}: scales is a tuple of scale names, e.g. ('full',), "
                f"got the string {self.scales!r}"
            )

    def applies(self, scale: str) -> bool:
        """Whether the claim is measured and judged at ``scale``."""
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose from {', '.join(SCALES)}")
        return scale in self.scales

    def target_at(self, scale: str) -> str:
        """The target string in force at ``scale`` (one of the claim's ``scales``)."""
        if not self.applies(scale):
            raise ValueError(
                f"claim {self.id} is declared at {list(self.scales)} only, not {scale}"
            )
        if isinstance(self.target, str):
            return self.target
        return self.target.get(scale, self.target.get("quick", ""))

    def diagnosis_at(self, scale: str) -> str | None:
        """Why the finding does not reproduce at ``scale`` (None: nothing declared there)."""
        return None if self.diagnosis is None else self.diagnosis.get(scale)

    def targets(self) -> dict[str, str]:
        """``{scale: target}`` for every scale the claim is declared at."""
        return {s: self.target_at(s) for s in self.scales}


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
    # claim id -> why it has no value (e.g. "diverged at step 412 (deconv)"): the claims of a
    # model that diverged are recorded as not measured with the reason, the others judged
    why_not_measured: dict[str, str] = field(default_factory=dict)


_NEEDS = {"data": "needs data", "gpu": "needs a GPU", "cpu": "fits a CPU (see its docs)"}


@dataclass(frozen=True)
class NotRun:
    """Why a paper (or one part of it) has no full-scale run, as the summary shows it.

    Args:
        needs: what stands in the way: ``"data"`` (the paper's data set is not reachable from
            this project's machines), ``"gpu"`` (too long for a CPU), ``"cpu"`` (fits a CPU:
            its run is committed under results/, shown when not given to the summary).
        why: one sentence a reader can check.
        part: the part of the paper this covers (``--part``); None for the whole paper.
        data: the data set's short name, for the label ("needs CIFAR-10 and a GPU").
    """

    needs: tuple[str, ...]
    why: str
    part: str | None = None
    data: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.needs) - set(_NEEDS))
        if not self.needs or unknown:
            raise ValueError(f"NotRun.needs must be among {sorted(_NEEDS)}, got {self.needs}")

    @property
    def label(self) -> str:
        words = [
            f"needs {self.data}" if n == "data" and self.data else _NEEDS[n] for n in self.needs
        ]
        if len(words) == 2 and words[1] == _NEEDS["gpu"]:
            return f"{words[0]} and a GPU"
        return " and ".join(words)


@dataclass(frozen=True)
class Option:
    """A command-line option that one paper adds to ``paperzoo reproduce`` (GG-NN's ``--fold``).

    The CLI adds every paper's options to ``reproduce``; a value given reaches the run as
    ``RunContext.options[dest]`` (absent when not given), is recorded in the run's identity
    (``run.json``) and is repeated for each seed's process and in the resume command. Giving an
    option of another paper is a usage error.

    Args:
        flag: the flag, e.g. ``"--folds"``.
        help: one line for ``--help``.
        parse: turns the command-line text into the value (raise ``ValueError`` naming the
            expected form); ``None``: the option is a switch (``True`` when given).
        unparse: turns the value back into command-line text (default ``str``).
        exclusive: a group name; options of one group cannot be given together.
    """

    flag: str
    help: str
    parse: Callable[[str], Any] | None = None
    unparse: Callable[[Any], str] = str
    exclusive: str | None = None

    @property
    def dest(self) -> str:
        """The key in ``RunContext.options``: the flag without dashes, ``-`` as ``_``."""
        return self.flag.lstrip("-").replace("-", "_")

    def argv(self, value: Any) -> list[str]:
        """The command-line words that give ``value`` again (for seed processes and resume)."""
        if self.parse is None:
            return [self.flag] if value else []
        return [self.flag, self.unparse(value)]


@dataclass(frozen=True)
class RunContext:
    """Everything about one invocation that is not the experiment's own config.

    ``paperzoo reproduce`` fills the fields that its options give from the table of its
    options (``paperzoo.experiments.flags.REPRODUCE_FLAGS``, entries with ``context``) and keeps
    every option's value as given in ``flags``.
    """

    scale: str = "quick"
    seed: int = 0
    device: str = "cpu"
    out_dir: Path = Path("runs")
    data_root: Path | None = None
    download: bool = False
    dataset: str | None = None
    quiet: bool = False
    command: str | None = None  # the command line, recorded in results.json (not a run's identity)
    # the paper's own command-line options (``Experiment.options``) that were given, by ``dest``
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    shard: tuple[int, int] | None = None  # (k, n): run only slice k of n of a model grid
    part: str | None = None  # --part: run one part of the paper (``Experiment.parts``); None: all
    # --max-steps: every loop stops after this many steps (paperzoo.engine.budget); None: off
    max_steps: int | None = None
    # --precision: fp32 | tf32 | bf16 (paperzoo.engine.precision), applied by the runner around run
    precision: str = "fp32"
    dist: DistInfo = field(default_factory=DistInfo)
    restart: bool = False  # --restart: clear what an earlier run left in out_dir first
    # --tensorboard: the training loops also write TensorBoard event files (the runner turns
    # them on around ``run``: paperzoo.engine.tensorboard)
    tensorboard: bool = False
    # every ``reproduce`` option's value as given, by ``dest`` (empty outside ``reproduce``)
    flags: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # Selection hygiene check (tests): test data passed through ``holdout`` raise when read
    # outside ``final_evaluation()`` (paperzoo.data.holdout). Off: both are no-ops.
    guard_test: bool = False

    def holdout(self, data: _T, name: str = "test data") -> _T:
        """``data`` (a tensor, a ``Split`` or a sequence of test items) guarded when
        ``guard_test`` is set, else returned unchanged.

        Args:
            data: the test data, as loaded or generated.
            name: how an error message calls them.

        Returns:
            ``data`` or its guarded version (see ``paperzoo.data.holdout.guard``).
        """
        return _guard(data, name) if self.guard_test else data

    def final_evaluation(self) -> AbstractContextManager[None]:
        """The block where the final numbers are computed: guarded test data may be read inside."""
        return _final_evaluation() if self.guard_test else nullcontext()

    def generator(self, *keys: int | str) -> torch.Generator:
        """A CPU generator seeded from the run seed and ``keys`` (independent streams by key)."""
        return torch.Generator().manual_seed(derive_seed(self.seed, *keys))

    def figure_path(self, name: str) -> tuple[Path, str]:
        """(absolute path to save to, path relative to out_dir for ``Outcome.figures``)."""
        rel = f"figures/{name}"
        path = self.out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path, rel

    def save_figure(self, fig: Any, name: str, *, dpi: int = 100) -> str:
        """Lay out and save the matplotlib figure ``fig`` as ``figures/NAME`` in ``out_dir``;
        returns the relative path for ``Outcome.figures``."""
        fig.tight_layout()
        path, rel = self.figure_path(name)
        atomic_savefig(fig, path, dpi=dpi)
        return rel

    @property
    def progress(self) -> bool:
        return not self.quiet


@dataclass(frozen=True)
class GpuCheck:
    """A paper's place in ``make gpu-check`` (tools/gpu_check.sh): its full config run for a
    few steps per loop on one GPU. Its limit there is derived from these figures and the
    paper's counted price (``paperzoo.cost.gpu_check_limit``: the steps' time and the loader's
    warm-up come from the count, with a margin)."""

    plumbing_s: int  # measured: half its wall seconds in the check's CPU plumbing mode
    # stated: what the capped run pays on one GPU besides its steps and its loader's warm-up
    # (CUDA start, reading the full data, building the full models, cuDNN's algorithm search,
    # the evaluation cut to a few batches)
    setup_s: int
    reason: str  # what ``setup_s`` covers
    torchrun: bool = False  # launched under torchrun (data-parallel), also on one GPU


class Experiment(ABC):
    """One paper's reproduction.

    Subclasses set ``name``, ``title``, ``claims``, ``datasets`` (names accepted by ``--dataset``,
    first is the default at smoke and quick; empty when the data are generated), ``paper_data``
    (the data set the paper's own experiment reads, the default at full) and ``configs`` (one
    config object per scale in ``SCALES``), and implement ``run``.

    Data at full scale: a run without ``--dataset`` reads ``paper_data`` from ``--data-root``
    (``require_data`` refuses, before anything is written, when the files are absent); a run
    with another ``--dataset`` is marked "not the paper's setting" (``setting_note``) and none
    of its findings counts as reproduced.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    claims: ClassVar[tuple[ClaimSpec, ...]]
    datasets: ClassVar[tuple[str, ...]] = ()
    # The data set of the paper's own experiment (a name in ``paperzoo.data.layouts.LAYOUTS``),
    # read at full scale; None: the paper's data are generated here, a full run needs no files.
    paper_data: ClassVar[str | None] = None
    # Parts of the paper that run alone (``--part NAME``): name -> the prefix of its claim ids.
    parts: ClassVar[Mapping[str, str | tuple[str, ...]]] = MappingProxyType({})
    configs: ClassVar[Mapping[str, Any]]
    # The precision of a run on CUDA without --precision (paperzoo.engine.precision): the fastest
    # setting that leaves the paper's numbers unchanged, its reason in docs/<paper>.md. On the CPU
    # the default is always fp32.
    cuda_precision: ClassVar[str] = "fp32"
    # What the time estimate of a --max-steps run leaves out (shown in its report).
    not_estimated: ClassVar[tuple[str, ...]] = ()
    # Where the paper sits in the summary's tables (ascending; ties by name).
    order: ClassVar[int] = 1000
    # Why there is no committed full-scale run (the summary shows these where none is given).
    full_not_run: ClassVar[tuple[NotRun, ...]] = ()
    # Command-line options of this paper only (GG-NN's --fold / --folds): ``Option``.
    options: ClassVar[tuple[Option, ...]] = ()
    # Files in a run's --out (glob patterns) that a rerun resumes from, besides checkpoints:
    # records of finished models. A directory holding one is never taken over by another run.
    resume_state: ClassVar[tuple[str, ...]] = ()
    # Its place in make gpu-check (tools/gpu_check.sh); the default: ``GpuCheck(20, 15, ...)``.
    gpu_check: ClassVar[GpuCheck] = GpuCheck(20, 15, "the default allowance (none stated)")
    # The ``reproduce`` arguments under which its full config runs capped (``--max-steps``) on a
    # CPU on small files in the layout of its data under ROOT (the word ROOT stands for that
    # folder): smaller evaluation sets, the data set the files are written for
    # (tests/test_max_steps.py). Empty: the full config as declared, on its own data.
    cpu_capped_args: ClassVar[tuple[str, ...]] = ()

    def loader_workers(self, cfg: Any) -> int:
        """The data-loader worker processes a run of ``cfg`` starts per rank (each hands over
        whole batches: a loop's first batch takes one worker a batch's decoding). Default 0:
        the data are made in the training process."""
        return 0

    def loader_shared_memory(self, cfg: Any, ranks: int = 1) -> int:
        """The most bytes of shared memory (``/dev/shm``) that the data-loader worker processes
        of a run of ``cfg`` hold at once on one machine running ``ranks`` ranks of it: every
        batch in flight between the workers and the training processes (a worker hands its
        batch over in shared memory). Default 0: the paper starts no loader workers.

        Args:
            cfg: the config that runs (e.g. the full one).
            ranks: the ranks on this machine (the global batch shared out over them).

        Returns:
            Bytes.
        """
        return 0

    def check_options(self, ctx: RunContext) -> None:
        """Raise ``ValueError`` (one line) when ``ctx.options`` cannot run: called before
        anything is written. Default: nothing to check."""
        return None

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str] | None:
        """The pieces of a full run's price (``paperzoo.utils.work.Piece``: what, work, count)
        and what the count assumes, for ``cfg`` (the full config) and ``plan`` (its
        ``plan``); None: not counted."""
        return None

    def config(self, scale: str) -> Any:
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; choose from {', '.join(SCALES)}")
        return self.configs[scale]

    def default_dataset(self, scale: str) -> str | None:
        """The data set a run at ``scale`` reads without ``--dataset``: the paper's at full (when
        declared), else the embedded default (``datasets[0]``); None when generated."""
        if scale == "full" and self.paper_data is not None:
            return self.paper_data
        return self.datasets[0] if self.datasets else None

    def dataset_name(self, ctx: RunContext) -> str | None:
        """The data set to use: ``ctx.dataset`` if supported, else ``default_dataset``."""
        if ctx.dataset is None:
            return self.default_dataset(ctx.scale)
        if ctx.dataset not in self.datasets:
            supported = ", ".join(self.datasets) or "none (its data are generated)"
            raise ValueError(
                f"{self.name} does not support --dataset {ctx.dataset}; supported: {supported}"
            )
        return ctx.dataset

    def part_prefix(self, ctx: RunContext) -> str | tuple[str, ...] | None:
        """The claim-id prefix (or prefixes) of ``ctx.part`` (None: the whole paper);
        ``ValueError`` naming the parts for an unknown one."""
        if ctx.part is None:
            return None
        if ctx.part not in self.parts:
            known = ", ".join(self.parts) or "none (it runs in one piece)"
            raise ValueError(f"{self.name} has no part {ctx.part!r}; parts: {known}")
        return self.parts[ctx.part]

    def claims_at(self, ctx: RunContext) -> list[ClaimSpec]:
        """The claims a run measures: those declared at its scale, in its part (if any)."""
        prefix = self.part_prefix(ctx)
        return [
            c
            for c in self.claims
            if c.applies(ctx.scale) and (prefix is None or c.id.startswith(prefix))
        ]

    def uses_paper_data(self, ctx: RunContext) -> bool:
        """Whether a run reads ``paper_data`` (full scale, no other ``--dataset``). A part that
        reads no files overrides this (``require_data`` then asks for nothing)."""
        return (
            ctx.scale == "full"
            and self.paper_data is not None
            and ctx.dataset in (None, self.paper_data)
        )

    def require_data(self, ctx: RunContext) -> None:
        """Raise ``paperzoo.data.DataRequired`` (one line: the data set and its layout) when a full
        run's paper data are not under ``ctx.data_root``. Called before anything is written;
        files that are there are hashed now and compared with the canonical release
        (``layouts.require``), which ``setting_note`` reports."""
        if self.uses_paper_data(ctx):
            from paperzoo.data import layouts

            assert self.paper_data is not None
            layouts.require(self.paper_data, ctx.data_root, ctx.download)

    def setting_note(self, ctx: RunContext) -> str | None:
        """None when the run is its scale's own setting; else one line saying why not (a
        substitute data set, or paper data whose files are not the canonical release:
        ``paperzoo.data.layouts.files_note``). Such a run's findings never count as reproduced."""
        default = self.default_dataset(ctx.scale)
        if ctx.dataset is None or ctx.dataset == default:
            if self.uses_paper_data(ctx):
                from paperzoo.data import layouts

                assert self.paper_data is not None
                return layouts.files_note(self.paper_data, ctx.data_root)
            return None
        if ctx.scale == "full" and self.paper_data is not None:
            return f"--dataset {ctx.dataset} instead of the paper's {self.paper_data}"
        return f"--dataset {ctx.dataset} instead of the {ctx.scale} default {default}"

    @abstractmethod
    def run(self, cfg: Any, ctx: RunContext) -> Outcome:
        """Train/evaluate with ``cfg`` and return the measurements of every declared claim."""

    # Whether ``plan`` counts an upper bound (some models may stop early: restarts that succeed).
    plan_upper_bound: ClassVar[bool] = False

    def plan(self, cfg: Any, ctx: RunContext) -> list[tuple[str, int]]:
        """What ``run`` will train with ``cfg``: (model or phase, optimisation steps) in training
        order, for the line a run logs at its start (``runner.plan_line``). Empty: not declared."""
        return []

    @property
    def has_grid(self) -> bool:
        """Whether the experiment trains a grid of models that ``--shard K/N`` splits (it then
        overrides ``merge``)."""
        return type(self).merge is not Experiment.merge

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        """Combine the ``results.json`` of shards into one outcome (``paperzoo merge``)."""
        raise NotImplementedError(f"{self.name} runs in one piece; it has no shards to merge")

    def seed_notes(self, details: list[dict[str, Any]], seeds: list[int]) -> list[str]:
        """Notes on seed runs taken together, added to their aggregate's notes (``reproduce
        --seeds``, ``paperzoo merge``): ``details`` are the runs' ``details`` in the order of
        ``seeds``. None by default."""
        return []
