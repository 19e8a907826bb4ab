"""GG-NN's settings and claims: the authors' per-task settings (``OFFICIAL``, ``BASELINE``), the
config of each scale (``Config``, ``CONFIGS``), the paper's numbers (Tables 1-2) and the claims
judged against them (``CLAIMS``).

Quick departs from the authors' settings where ``DEVIATIONS`` says (and restarts, per-fold seeds,
ties by validation loss); full is the authors' protocol. Why, with the measurements behind each
choice: docs/ggnn.md ("Protocol", "Deviations from the paper").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from paperzoo.data import babi
from paperzoo.experiments.base import ClaimSpec, added_later


@dataclass(frozen=True)
class TaskSetting:
    """The authors' per-task settings (run_experiments.py)."""

    state_dim: int  # D
    annotation_dim: int  # A: argument bits (+ latent bits; the last bit marks END nodes)
    lr: float  # Adam learning rate
    steps: int  # weight updates (maxiters)
    n_train: int  # training graphs


OFFICIAL: dict[str, TaskSetting] = {
    "babi4": TaskSetting(4, 1, 0.01, 100, 50),
    "babi15": TaskSetting(5, 1, 0.005, 300, 50),
    "babi16": TaskSetting(6, 1, 0.01, 600, 50),
    "babi18": TaskSetting(3, 2, 0.01, 400, 50),
    "babi19": TaskSetting(6, 3, 0.005, 1000, 250),
    "shortest-path": TaskSetting(20, 10, 0.002, 700, 50),
    "eulerian": TaskSetting(20, 10, 0.001, 300, 50),
}
# Where quick departs from OFFICIAL (docs/ggnn.md, "Deviations"): at the authors' step size 0.001
# most initialisations do not learn the Eulerian circuit within 300 updates; 0.01 (the step of
# tasks 4, 16 and 18) does, chosen on validation accuracy over 16 + 24 initialisations.
DEVIATIONS: dict[str, TaskSetting] = {
    "eulerian": dataclasses.replace(OFFICIAL["eulerian"], lr=0.01),
}


@dataclass(frozen=True)
class BaselineSetting:
    """The authors' RNN/LSTM settings (run_rnn_baselines.py)."""

    lr: float  # Adam learning rate
    batch_size: int  # minibatch size
    lstm_updates: int  # the LSTM's weight updates (maxiters)
    rnn_updates: int  # the RNN's weight updates

    def updates(self, cell: str) -> int:
        return self.lstm_updates if cell == "lstm" else self.rnn_updates


BASELINE: dict[str, BaselineSetting] = {
    "babi4": BaselineSetting(0.001, 20, 1000, 1000),
    "babi15": BaselineSetting(0.001, 100, 5000, 20000),
    "babi16": BaselineSetting(0.0005, 100, 5000, 20000),
    "babi18": BaselineSetting(0.0005, 100, 500, 500),
    "babi19": BaselineSetting(0.001, 20, 5000, 10000),
    "shortest-path": BaselineSetting(0.001, 10, 5000, 10000),
    "eulerian": BaselineSetting(0.001, 10, 5000, 10000),
}


@dataclass(frozen=True)
class Config:
    tasks: tuple[str, ...]  # tasks the GG-NN / GGS-NN is trained on
    seeds: int  # independent folds (data + initialisation) per task; mean and std reported
    n_val: int  # validation graphs for model selection (paper: 50)
    n_test: int  # test graphs per task and fold (paper: 1000)
    step_scale: float  # multiplier on the authors' number of updates
    eval_every: int  # validate every this many updates, keep the best (paper: 10)
    batch_size: int  # graphs' questions per minibatch (paper: 10)
    num_prop_steps: int  # propagation steps T (paper: 5)
    baseline_tasks: tuple[str, ...]  # tasks the sequence baselines are trained on
    baseline_cells: tuple[str, ...]  # "lstm" and/or "rnn"
    baseline_train: int  # training graphs of the baselines (paper: 950, plus 50 validation)
    baseline_steps: int | None  # updates of each baseline; None: the authors' (BASELINE)
    baseline_seeds: int  # folds for the baselines
    baseline_eval_every: int  # validate the baselines every this many updates
    restarts: int = 1  # most runs per fold and question type, until validation accuracy is 100%
    # Runs trained at once as one batched model, wave after wave until a run reaches 100 %
    # validation accuracy; the selection is the same for any value (best_of_restart_waves).
    restart_batch: int = 1
    overrides: dict[str, TaskSetting] = field(default_factory=dict)  # per-task replacements
    # Seeds of the split, initialisation and batch order per fold (True), or one for every fold
    # (False: the authors' seed handling, run_experiments.py / babi_train.lua: ``-seed 8`` for
    # every fold and split_set's fixed seed 1023, so every fold starts from the same weights).
    fold_seeds: bool = True
    # Checkpoint selection: highest validation accuracy, ties by lower validation loss (True),
    # or the authors' rule (False, babi_train.lua:269 / seq_train.lua:264: a checkpoint replaces
    # the best only if its validation error is strictly lower, so the earliest of equals stays).
    ties_by_loss: bool = True
    # Training graphs of a baseline per task where they differ from ``baseline_train``
    # (run_rnn_baselines.py trains task 4's baselines on 50 ... 950 graphs; the paper's Table 1
    # compares them at 250).
    baseline_train_by_task: dict[str, int] = field(default_factory=dict)
    # Variants of the GG-NN's training measured against the authors' Lua code (docs/ggnn.md,
    # "Why one run in four gets stuck"); the defaults are what every committed run used
    # (``added_later``: runs made before these fields ran with those values).
    # Adam: torch's (epsilon added to the bias-corrected sqrt(v)) or Torch7's ``optim.adam``
    # (the bias corrections folded into the step size, epsilon added to sqrt(v) itself).
    adam: Literal["torch", "torch7"] = added_later("torch", ran_before="torch")
    # Every gradient entry of a run's mean minibatch loss clamped to [-c, c] (None: no clamping);
    # the authors clamp at 5 after dividing by the minibatch (babi_train.lua:229-231), so 0.5
    # is their clamp moved before the division.
    grad_clamp: float | None = added_later(5.0, ran_before=5.0)
    # The training / validation split of a fold's graphs: this project's seeded permutation, or
    # the authors' split_set (Torch7's randperm under seed 1023: the first n_train graphs train,
    # the next n_val validate), the same graphs as their runs on the same file.
    split: Literal["seeded", "torch7"] = added_later("seeded", ran_before="seeded")
    # The GG-NN's arithmetic: float32, or float64 as the authors' Torch7 code (the initial
    # weights are drawn in float32 and converted, so both start from the same values).
    dtype: Literal["float32", "float64"] = added_later("float32", ran_before="float32")


ALL_TASKS = tuple(OFFICIAL)
# A run (one fold) solves its task at test accuracy >= SOLVED: report.md gives the solved runs
# beside the mean (a stalled run of task 16 scores 0.53-0.73, a solved one 1.000).
SOLVED = 0.99
_QUESTION_TYPES = {"babi4": 4}  # question types of a task (one model each); others have one
CLAIM_BASELINE_TASKS = ("babi15", "babi16", "babi19")
_CLAIM_ID = {
    "babi4": "babi.task4.ggnn",
    "babi15": "babi.task15.ggnn",
    "babi16": "babi.task16.ggnn",
    "babi18": "babi.task18.ggnn",
    "babi19": "babi.task19.ggsnn",
    "shortest-path": "seq.shortest_path.ggsnn",
    "eulerian": "seq.eulerian.ggsnn",
}
_PAPER_LSTM = {"babi15": 0.50, "babi16": 0.37, "babi19": 0.28}
# The baselines of the paper's Tables 1-2 (RNN / LSTM on 950 training stories; task 4: the accuracy
# both reach with 250), to the point: the numbers of tasks 15, 16, 19, shortest path and Eulerian
# circuit are approximate; tasks 4 and 18 as read in Table 1.
_PAPER_BASELINE = {
    "rnn": {"babi4": 0.97, "babi15": 0.48, "babi16": 0.33, "babi18": 0.89, "babi19": 0.25,
            "shortest-path": 0.10, "eulerian": 0.00},
    "lstm": {"babi4": 0.97, "babi15": 0.50, "babi16": 0.37, "babi18": 0.89, "babi19": 0.28,
             "shortest-path": 0.10, "eulerian": 0.00},
}  # fmt: skip
# The paper's GG-NN / GGS-NN accuracy per task (Tables 1-2; task 19 with 250 training stories).
_PAPER_GGNN = {t: 0.99 if t == "babi19" else 1.0 for t in ALL_TASKS}
# Training graphs of the baselines at full where they differ from 950: Table 1 compares task 4's
# baselines at 250 (run_rnn_baselines.py trains them on 50, 100, 250, 500 and 950).
FULL_BASELINE_TRAIN = {"babi4": 250}
# Why the paper numbers above are not verified: the paper's text (arXiv 1511.05493, Tables 1-2)
# was not found in the corpora searched for this project (the authors' repository holds no
# numbers). Every full target resting on them is marked; docs/ggnn.md lists them.
_UNVERIFIED_GGNN = (
    "the paper's Tables 1-2 (arXiv 1511.05493) were not found in the corpora searched; "
    "the number is from the project's notes on the paper, not checked against the paper's text"
)
# The GG-NN column of Table 1 (bAbI tasks 4, 15, 16, 18; the GGS-NN on 19) as DGL's GG-NN example
# quotes it under "Reported Accuracy" (docs/paper-numbers.md); Table 2 and the baselines are not
# quoted there.
_QUOTED_DGL = (
    "dmlc/dgl examples/pytorch/ggnn/README.md, 'Reported Accuracy': 100.0 ± 0.00 (50) on "
    "tasks 4, 15, 16, 18; 99.0 ± 1.1 (250) on task 19"
)
_UNVERIFIED_BASELINE = {
    t: (
        "this project's reading of Table 1 (not in its notes on the paper), not checked against the paper's "
        "text (arXiv 1511.05493 was not found in the corpora searched)"
        + ("; a reviewer reads the task-18 LSTM as about 78.8 %" if t == "babi18" else "")
        if t in ("babi4", "babi18")
        else "the project's notes on the paper give this baseline as approximate; not checked against the paper's "
        "Tables 1-2 (arXiv 1511.05493 was not found in the corpora searched)"
    )
    for t in ALL_TASKS
}
# Tolerance of the full-scale gap targets (GG-NN minus a baseline >= paper gap - 0.05): the
# baselines' numbers are approximate, their spread over the paper's folds reaches 2.7
# points (task 19's RNN), and a gap is the difference of two means over folds: 5 points is about
# twice the largest spread. One-sided: a larger gap is no failure.
GAP_TOLERANCE = 0.05


def _gap_claim_id(task: str, cell: str) -> str:
    """``babi.task15.ggnn_minus_rnn.test_acc``, ``seq.eulerian.ggsnn_minus_lstm.test_acc``."""
    if task.startswith("babi"):
        return f"babi.task{task.removeprefix('babi')}.ggnn_minus_{cell}.test_acc"
    return f"{_CLAIM_ID[task]}_minus_{cell}.test_acc"


# Gaps judged at full scale only (quick runs the LSTM on tasks 15, 16, 19 alone): every task
# against the RNN, and against the LSTM where the all-scale claims do not already cover it.
FULL_GAPS = tuple(
    (task, cell)
    for task in ALL_TASKS
    for cell in ("rnn", "lstm")
    if not (cell == "lstm" and task in _PAPER_LSTM)
)


def _claims() -> tuple[ClaimSpec, ...]:
    claims = [
        ClaimSpec(
            f"babi.task{n}.ggnn.test_acc",
            f"A GG-NN trained on 50 graphs (50 more for validation) answers bAbI task {n} "
            f"({what}) questions (mean test accuracy over folds; full: paper 100.0 %, "
            "tolerance 1 point)",
            1.0,
            {"quick": ">= 0.98", "full": ">= 0.99"},
            quoted=_QUOTED_DGL,
        )
        for n, what in (
            (4, "two-argument relations"),
            (15, "basic deduction"),
            (16, "basic induction"),
            (18, "size reasoning"),
        )
    ]
    claims += [
        ClaimSpec(
            "babi.task19.ggsnn.test_acc",
            "A GGS-NN trained on 250 graphs finds the direction sequences of bAbI task 19 "
            "(path finding; full: paper 99.0 %, tolerance 2 points)",
            0.99,
            {"quick": ">= 0.95", "full": ">= 0.97"},
            quoted=_QUOTED_DGL,
        ),
        ClaimSpec(
            "seq.shortest_path.ggsnn.test_acc",
            "A GGS-NN trained on 50 graphs outputs the unique shortest path as a node sequence "
            "(full: paper about 100 %, tolerance 1 point)",
            "~1.00",
            {"quick": ">= 0.95", "full": ">= 0.99"},
            unverified=_UNVERIFIED_GGNN,
        ),
        ClaimSpec(
            "seq.eulerian.ggsnn.test_acc",
            "A GGS-NN trained on 50 graphs outputs the Eulerian circuit as a node sequence "
            "(full: paper about 100 %, tolerance 1 point)",
            "~1.00",
            {"quick": ">= 0.95", "full": ">= 0.99"},
            unverified=_UNVERIFIED_GGNN,
        ),
    ]
    for task, paper in _PAPER_LSTM.items():
        n = task.removeprefix("babi")
        updates = BASELINE[task].lstm_updates
        # The baseline's own accuracy is the paper's number for a baseline, not a result the
        # paper claims: a check. The paper's finding is the comparison below.
        claims.append(
            ClaimSpec(
                f"babi.task{n}.lstm.test_acc",
                f"An LSTM reading the serialized graphs of 950 training stories, bAbI task {n} "
                f"(full: the paper's {updates:,} updates; quick: 1,000 updates, one fold)",
                paper,
                "reported",
                kind="check",
            )
        )
        gg = 0.99 if task == "babi19" else 1.0
        model = "GGS-NN (250 graphs)" if task == "babi19" else "GG-NN (50 graphs)"
        gap = round(gg - paper, 2)
        # Full scale (the LSTM with the paper's 5,000 updates on 950 stories): the paper's gap
        # less a stated tolerance of 5 points (the LSTM numbers are approximate).
        claims.append(
            ClaimSpec(
                f"babi.task{n}.ggnn_minus_lstm.test_acc",
                f"Test accuracy of the {model} minus that of the LSTM (950 stories; full: "
                f"{updates:,} updates as the paper, quick: 1,000), task {n} "
                f"(full: paper {gap:.2f}, tolerance 5 points)",
                gap,
                {"quick": "> 0", "full": f">= {gap - 0.05:.2f}"},
                unverified=_UNVERIFIED_BASELINE[task],
            )
        )
    for task, cell in FULL_GAPS:
        gap = round(_PAPER_GGNN[task] - _PAPER_BASELINE[cell][task], 2)
        model = "GGS-NN" if babi.task_spec(task).kind.endswith("_seq") else "GG-NN"
        n_train = OFFICIAL[task].n_train
        base_train = FULL_BASELINE_TRAIN.get(task, 950)
        what = {"shortest-path": "shortest paths", "eulerian": "Eulerian circuits"}.get(
            task, f"bAbI task {task.removeprefix('babi')}"
        )
        claims.append(
            ClaimSpec(
                _gap_claim_id(task, cell),
                f"Test accuracy of the {model} ({n_train} training graphs) minus that of the "
                f"{cell.upper()} reading the serialized graphs ({base_train} graphs, the authors' "
                f"{BASELINE[task].updates(cell):,} updates), {what}: the paper's "
                f"{_PAPER_GGNN[task]:.0%} against about {_PAPER_BASELINE[cell][task]:.0%} "
                f"(Tables 1-2; paper gap {gap:.2f}, tolerance {GAP_TOLERANCE * 100:.0f} points)",
                gap,
                f">= {gap - GAP_TOLERANCE:.2f}",
                scales=("full",),
                unverified=_UNVERIFIED_BASELINE[task],
            )
        )
    return tuple(claims)


CLAIMS = _claims()


def _baseline_updates(cfg: Config, name: str, cell: str) -> int:
    """Weight updates of a baseline: ``cfg.baseline_steps``, or the authors' when None."""
    if cfg.baseline_steps is None:
        return BASELINE[name].updates(cell)
    return cfg.baseline_steps


def _baseline_train(cfg: Config, name: str) -> int:
    """Training graphs of the baselines on task ``name`` (``baseline_train_by_task`` first)."""
    return cfg.baseline_train_by_task.get(name, cfg.baseline_train)


def _fold_key(cfg: Config, fold: int) -> tuple[int, ...]:
    """The fold's part of a seed key: ``(fold,)``, or nothing with the authors' seed handling
    (``fold_seeds=False``: every fold gets the same split indices, weights and batch order)."""
    return (fold,) if cfg.fold_seeds else ()


def _seed_key(cfg: Config, key: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A run key (``("fold3", "q1", "a0")``) as seeds read it: without the fold unless
    ``fold_seeds``. Run directories keep the whole key."""
    return key if cfg.fold_seeds else tuple(k for k in key if not str(k).startswith("fold"))


def task_setting(name: str, cfg: Config) -> TaskSetting:
    """The GG-NN setting of task ``name`` under ``cfg``: its override, else the authors'."""
    return cfg.overrides.get(name, OFFICIAL[name])


CONFIGS: dict[str, Config] = {
    "smoke": Config(
        tasks=ALL_TASKS,
        seeds=1,
        n_val=6,
        n_test=20,
        step_scale=0.02,
        eval_every=5,
        batch_size=10,
        num_prop_steps=5,
        baseline_tasks=CLAIM_BASELINE_TASKS,
        baseline_cells=("lstm",),
        baseline_train=20,
        baseline_steps=4,
        baseline_seeds=1,
        baseline_eval_every=2,
        overrides={
            "babi19": TaskSetting(6, 3, 0.005, 1000, 20),
            "shortest-path": TaskSetting(20, 10, 0.002, 300, 50),
        },
    ),
    "quick": Config(
        tasks=ALL_TASKS,
        seeds=3,
        n_val=50,
        n_test=1000,
        step_scale=1.0,
        eval_every=10,
        batch_size=10,
        num_prop_steps=5,
        baseline_tasks=CLAIM_BASELINE_TASKS,
        baseline_cells=("lstm",),
        baseline_train=950,
        baseline_steps=1000,
        baseline_seeds=1,
        baseline_eval_every=50,
        restarts=16,
        restart_batch=1,  # one run after another: 1.3-1.5 runs on average, the cheapest
        overrides=DEVIATIONS,
    ),
    "full": Config(
        tasks=ALL_TASKS,
        seeds=10,
        n_val=50,
        n_test=1000,
        step_scale=1.0,
        eval_every=10,
        batch_size=10,
        num_prop_steps=5,
        baseline_tasks=ALL_TASKS,
        baseline_cells=("rnn", "lstm"),
        baseline_train=950,
        baseline_steps=None,
        baseline_seeds=10,
        baseline_eval_every=100,
        # The authors' protocol: one run per fold and question type with their
        # step sizes (Eulerian 0.001, run_seq5), their seed handling and checkpoint rule;
        # task 4's baselines on 250 graphs as Table 1. ``--set restarts=16`` is the restart
        # variant (a modified config: reported, never counted as the paper's setting).
        restarts=1,
        restart_batch=1,
        overrides=dict(OFFICIAL),  # every task's settings as the authors' (shown by config)
        fold_seeds=False,
        ties_by_loss=False,
        baseline_train_by_task=FULL_BASELINE_TRAIN,
        # The authors' 50 training and 50 validation graphs of each fold (split_set: Torch7's
        # randperm under seed 1023), whatever the run's seed; before: a split seeded by it.
        split="torch7",
    ),
}
