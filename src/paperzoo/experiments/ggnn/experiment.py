"""Reproduction of Li, Tarlow, Brockschmidt & Zemel (ICLR 2016), "Gated Graph Sequence Neural
Networks": GG-NNs on symbolic bAbI 4, 15, 16, 18, GGS-NNs on bAbI 19 and on the shortest-path and
Eulerian-circuit tasks, and LSTM baselines reading the serialized graphs (Table 1, Table 2).

Protocol (the authors' scripts, github.com/yujiali/ggnn/babi/run_experiments.py): per task, a
random ``n_train`` graphs for training and 50 for validation are drawn from the training split;
every question of those graphs is an example; a separate model is trained per question type (only
task 4 has several); Adam, minibatches of 10, gradients clamped to [-5, 5] element-wise; the
validation error is measured every 10 updates and the best parameters are kept; the test
accuracy counts a question as right only if the whole output (sequence) is. The paper averages
over 10 data folds. ``--scale full`` reads them: the official symbolic folds under ``--data-root``
(layout ``babi-folds``, ``paperzoo.data.babi``), every fold of 1-10 present unless ``--folds`` /
``--fold`` choose a subset (marked "not the paper's protocol"); without them a full run refuses
(``require_data``), and ``--dataset generated`` is a named substitute. At smoke and quick,
``--data-root`` reads fold 1 (or ``--folds`` / ``--fold``); without it, ``seeds`` independently
generated folds (each with its own initialisation). The mean and standard deviation over the
folds are reported. Full findings carry the paper's numbers as one-sided targets: accuracies
``>= paper - tolerance`` and, per task, the GG-NN's margin over the RNN and the LSTM (Tables 1-2)
``>= paper margin - 0.05`` (``GAP_TOLERANCE``).

Full scale is the authors' protocol (issue 39; docs/ggnn.md compares their Lua with this code
line by line): one run per fold and question type, every task's settings as ``OFFICIAL``
(Eulerian step 0.001), one seed for every fold (their ``-seed 8`` and split seed 1023), their
checkpoint rule (a strictly lower validation error), task 4's baselines on 250 graphs. The
restarts below are quick's (``--set restarts=16 restart_batch=16`` at full: a modified config).
``--part models`` runs the seven GG-NN / GGS-NN accuracy findings without the baselines.

Deviations of quick, and of full where said (docs/ggnn.md has the measurements behind them):

* Data: paperzoo's generator by default (the official symbolic files with ``--data-root``).
* Restarts. At the authors' settings (tiny state sizes, a few hundred updates) a fixed fraction
  of initialisations stalls in a question-blind solution: equal scores for every candidate of
  the right type (every colour in the story on task 16, every animal on task 15; loss
  ln(#candidates)), with final node states that hardly depend on the question's annotation (mean
  |h(with it) - h(without it)| 0.001-0.009, against 0.14-0.41 in runs that succeed). More
  updates help only in part: of 3 runs stalled after the authors' 600 updates on task 16, 2 left
  the stall within 2,000 and 1 did not. Measured over 8 initialisations on each of 9
  generated folds, runs end below 100 % validation accuracy on 22 % (task 15) and 35 % (task 16,
  up to 5 of 8 on one fold) of initialisations; the authors ran one initialisation per fold (their
  fixed seed 8). A run whose best validation accuracy stays below 100 % is repeated from a new
  initialisation, up to ``restarts`` runs, and the run best on validation is kept
  (``best_of_restarts``); the first run's test accuracy is reported too. With 3 runs a fold
  failed with probability p^3, up to 25 % on an unlucky fold of task 16 and 33 % on the Eulerian
  task: about one failed fold per 4-seed check of 84 fold runs, the knife edge of issue 17.
  ``restarts=16`` makes it p^16 (< 0.1 %); a run that reaches 100 % stops the restarts, so a
  fold costs 1/(1 - p) runs on average (1.3 on task 15, 1.5 on task 16). The runs train
  ``restart_batch`` at a time as one batched model (``_train_restarts``: each run's own
  initialisation, batch order, Adam state, clamping and selection; the same trajectory as alone
  up to float round-off), the next wave only if no run reached 100 % (``best_of_restart_waves``),
  which selects and reports what the sequential rule does. The full restart variant trains all
  16 at once (measured 2.3-4.2x the time of one run); quick one at a time (1.3-1.5 runs).
* Quick: Eulerian circuits at Adam's step 0.01 instead of the authors' 0.001 (``DEVIATIONS``). Every
  example of this task is the same graph up to relabelling (a 5-cycle and a 4-cycle: the paper's
  2-regular graphs of 5 and 4 nodes can be nothing else), so a fold is one trial, entirely right
  or entirely wrong. At 0.001 the outputs are learnt one step at a time and only 5 of 16
  initialisations learn the fifth within the authors' 300 updates (12 of 16 within 600); at 0.01,
  23 of 24 do (chosen on validation accuracy). The authors' fixed seed made their 10 folds one
  trial repeated.
* Quick: equally accurate checkpoints are ranked by validation loss; seeds drawn per fold.
* Precision: float32 (the authors' Torch7 code ran in double; on validation data this did not
  change how often runs stall, docs/ggnn.md).
* Quick scale: 3 folds instead of 10; the LSTM for 1,000 of the paper's 5,000 updates, on one
  fold (measured at 5,000 updates its test accuracy is no higher, docs/ggnn.md).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor, nn

from paperzoo.data import babi, layouts
from paperzoo.data.base import DataInfo
from paperzoo.engine import TrainConfig, Trainer, budget, derive_seed, seeded
from paperzoo.engine.batched import BatchedKeeper, fit_batched, model_samplers
from paperzoo.experiments.base import (
    EXPERIMENTS,
    ClaimSpec,
    Experiment,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.models.ggnn import (
    GatedGraphNet,
    GatedGraphSequenceNet,
    SequenceBaseline,
    StackedGatedGraphNet,
    StackedGatedGraphSequenceNet,
    StackedSequenceBaseline,
    node_selection_logits,
)
from paperzoo.nn.graph import PropagationPlan
from paperzoo.utils import count_params

log = logging.getLogger(__name__)


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
# Where quick and full depart from OFFICIAL (module docstring): at the authors' step size 0.001
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
class GGNNConfig:
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


ALL_TASKS = tuple(OFFICIAL)
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
# both reach with 250), to the point: PAPERS.md gives 15, 16, 19, shortest path and Eulerian
# circuit as approximate; tasks 4 and 18 as read in Table 1.
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
# Why the paper numbers above are not verified (issue 39, item 2): the paper's text (arXiv
# 1511.05493, Tables 1-2) was not found in the corpora searched for this project on 2 December
# 2026 (pages, docs, code; the authors' repository holds no numbers). Every full target resting
# on them is marked; docs/ggnn.md lists them.
_UNVERIFIED_GGNN = (
    "the paper's Tables 1-2 (arXiv 1511.05493) were not found in the corpora searched; "
    "the number is PAPERS.md's, not checked against the paper's text"
)
_UNVERIFIED_BASELINE = {
    t: (
        "this project's reading of Table 1 (not in PAPERS.md), not checked against the paper's "
        "text (arXiv 1511.05493 was not found in the corpora searched)"
        + ("; a reviewer reads the task-18 LSTM as about 78.8 %" if t == "babi18" else "")
        if t in ("babi4", "babi18")
        else "PAPERS.md gives this baseline as approximate; not checked against the paper's "
        "Tables 1-2 (arXiv 1511.05493 was not found in the corpora searched)"
    )
    for t in ALL_TASKS
}
# Tolerance of the full-scale gap targets (GG-NN minus a baseline >= paper gap - 0.05): the
# baselines' numbers are approximate (PAPERS.md), their spread over the paper's folds reaches 2.7
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
            unverified=_UNVERIFIED_GGNN,
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
            unverified=_UNVERIFIED_GGNN,
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
        # less a stated tolerance of 5 points (PAPERS.md gives the LSTM numbers as approximate).
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


# --------------------------------------------------------------------------------- training
def _clamped_step(
    opt: torch.optim.Optimizer, loss_of: Callable[[nn.Module, Any], Tensor]
) -> Callable[[nn.Module, Any], dict[str, Tensor]]:
    """A manual step: backward, clamp every gradient entry to [-5, 5] (official), Adam step."""

    def step(model: nn.Module, batch: Any) -> dict[str, Tensor]:
        loss = loss_of(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for group in opt.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.clamp_(-5.0, 5.0)
        opt.step()
        return {"loss": loss.detach()}

    return step


class _EpochBatches:
    """Minibatches that walk through shuffled epochs of the examples (the authors' DataLoader).

    A batch may straddle two epochs; batch ``step`` depends only on (seed, step), so training
    resumes exactly.
    """

    def __init__(self, items: list[babi.GraphExample], batch_size: int, seed: int) -> None:
        self.items, self.batch_size, self.seed = items, batch_size, seed
        self._perms: dict[int, Tensor] = {}

    def _perm(self, epoch: int) -> Tensor:
        if epoch not in self._perms:
            g = torch.Generator().manual_seed(derive_seed(self.seed, epoch))
            self._perms = {e: p for e, p in self._perms.items() if e >= epoch - 1}
            self._perms[epoch] = torch.randperm(len(self.items), generator=g)
        return self._perms[epoch]

    def indices(self, step: int) -> Tensor:
        """(B,) the positions in ``items`` of batch ``step``'s examples."""
        n, start = len(self.items), step * self.batch_size
        first, last = start // n, (start + self.batch_size - 1) // n  # the epochs it spans
        perms = torch.cat([self._perm(e) for e in range(first, last + 1)])
        return perms[start - first * n : start - first * n + self.batch_size]

    def __call__(self, step: int, generator: torch.Generator) -> dict[str, Tensor]:
        return babi.collate([self.items[i] for i in self.indices(step).tolist()])


class _GraphBank:
    """Examples with equally many nodes (every graph of a bAbI task), stacked once, so that a
    batch of them is gathered by index arithmetic instead of collated in Python: ``batch(idx)``
    is ``babi.collate([items[i] for i in idx])``. The K runs' minibatches of a step are one such
    batch (model k's graphs the k-th block of the union).
    """

    def __init__(self, items: list[babi.GraphExample]) -> None:
        sizes = {ex.x.shape[0] for ex in items}
        if len(sizes) != 1:
            raise ValueError(f"a graph bank needs equally many nodes per example, got {sizes}")
        (self.nodes,) = sizes
        self.x = torch.stack([ex.x for ex in items])  # (M, n, A)
        counts = torch.tensor([ex.edge_index.shape[1] for ex in items])  # (M,) edges
        self.edge_count, self.edge_start = counts, torch.cumsum(counts, 0) - counts
        self.edge_index = torch.cat([ex.edge_index for ex in items], 1)  # (2, E) local ids
        self.edge_type = torch.cat([ex.edge_type for ex in items])  # (E,)
        self.y_len = torch.tensor([ex.y.numel() for ex in items])  # (M,)
        self.y = torch.full((len(items), int(self.y_len.max())), babi.IGNORE, dtype=torch.long)
        for i, ex in enumerate(items):
            self.y[i, : ex.y.numel()] = ex.y

    @staticmethod
    def fits(items: list[babi.GraphExample]) -> bool:
        return bool(items) and len({ex.x.shape[0] for ex in items}) == 1

    def batch(self, idx: Tensor) -> dict[str, Tensor]:
        """``babi.collate`` of the examples at ``idx`` (B,): x (B*n, A), edge_index (2, E) with
        node ids offset per graph, edge_type (E,), batch (B*n,), y (B, L), num_nodes (B,)."""
        b, n = len(idx), self.nodes
        counts = self.edge_count[idx]  # (B,) edges of each picked graph
        first = torch.cumsum(counts, 0) - counts  # where each graph's edges go in the batch
        # The picked graphs' edge ids in the bank: edge_start[g] + 0 .. counts[g] - 1.
        edges = torch.repeat_interleave(self.edge_start[idx] - first, counts)
        edges += torch.arange(len(edges))
        shift = torch.repeat_interleave(torch.arange(b) * n, counts)  # node id offsets
        return {
            "x": self.x[idx].reshape(b * n, -1),
            "edge_index": self.edge_index[:, edges] + shift,
            "edge_type": self.edge_type[edges],
            "batch": torch.arange(b).repeat_interleave(n),
            "y": self.y[idx, : int(self.y_len[idx].max())],
            "num_nodes": torch.full((b,), n, dtype=torch.long),
        }


def best_of_restarts(
    train_once: Callable[[int], tuple[nn.Module, tuple[float, float]]], max_runs: int
) -> tuple[nn.Module, list[tuple[nn.Module, tuple[float, float]]]]:
    """The restart rule: train runs 0, 1, ... until one reaches 100 % validation accuracy
    (one after another; the experiment trains all runs at once and selects with
    ``best_of_batched_restarts``, which picks what this picks).

    Args:
        train_once: ``attempt -> (model, (val accuracy, -val loss))``, one run from its own
            initialisation (validation data only).
        max_runs: the most runs.

    Returns:
        (the run best on validation: highest accuracy, then lowest loss; every run in order)
    """
    if max_runs < 1:
        raise ValueError(f"max_runs must be >= 1, got {max_runs}")
    runs = []
    for attempt in budget.loop(max_runs, "restarts", kind="repeat"):  # (--max-steps: capped)
        runs.append(train_once(attempt))
        if runs[-1][1][0] >= 1.0:
            break
    return max(runs, key=lambda r: r[1])[0], runs  # max keeps the first of equal scores


def best_of_batched_restarts(
    runs: list[tuple[nn.Module, tuple[float, float]]],
) -> tuple[nn.Module, list[tuple[nn.Module, tuple[float, float]]]]:
    """``best_of_restarts`` over runs that were all trained (at once, ``_train_restarts``):
    the runs in order up to and including the first with 100 % validation accuracy (all of them
    when none reaches it), and the best of those on validation (highest accuracy, then lowest
    loss, the earlier of equals), exactly what the sequential rule selects and reports.

    Returns:
        (the selected run's model, the runs the sequential rule would have trained)
    """
    if not runs:
        raise ValueError("no runs to select from")
    n = next((i + 1 for i, (_, score) in enumerate(runs) if score[0] >= 1.0), len(runs))
    kept = runs[:n]
    return max(kept, key=lambda r: r[1])[0], kept  # max keeps the first of equal scores


def best_of_restart_waves(
    train_wave: Callable[[range], list[tuple[nn.Module, tuple[float, float]]]],
    max_runs: int,
    wave: int,
) -> tuple[nn.Module, list[tuple[nn.Module, tuple[float, float]]], int]:
    """The restart rule over runs trained ``wave`` at a time (``_train_restarts``): runs
    0 .. wave-1 at once, then the next ``wave`` runs only if none reached 100 % validation
    accuracy, and so on up to ``max_runs``. ``best_of_batched_restarts`` of the runs trained
    selects, and reports, what ``best_of_restarts`` does for any ``wave``; ``wave >= max_runs``
    trains every run at once (cost known in advance), ``wave = 1`` one after another (fewest
    runs).

    Returns:
        (the selected run's model, the runs the sequential rule would have trained, the number
        of runs trained)
    """
    if max_runs < 1 or wave < 1:
        raise ValueError(f"need max_runs >= 1 and wave >= 1, got {max_runs} and {wave}")
    runs: list[tuple[nn.Module, tuple[float, float]]] = []
    waves = math.ceil(max_runs / wave)
    for w in budget.loop(waves, "restart waves", kind="repeat"):  # (--max-steps: capped)
        runs += train_wave(range(w * wave, min((w + 1) * wave, max_runs)))
        if any(score[0] >= 1.0 for _, score in runs):
            break
    best, kept = best_of_batched_restarts(runs)
    return best, kept, len(runs)


def _better(acc: float, loss: float, best: tuple[float, float], ties_by_loss: bool) -> bool:
    """Whether a checkpoint at (validation accuracy, loss) replaces ``best`` (accuracy, -loss):
    higher accuracy, or equal accuracy and lower loss when ``ties_by_loss``. Without it this is
    the authors' ``val_err < best_val_err`` (babi_train.lua:269): the earliest of equals stays."""
    if ties_by_loss:
        return (acc, -loss) > best
    return acc > best[0]


class _EarliestKeeper(BatchedKeeper):
    """``BatchedKeeper`` with the authors' selection: model k's checkpoint replaces its best only
    if its validation accuracy is strictly higher (babi_train.lua:269, seq_train.lua:264), so
    the earliest of equally accurate checkpoints is kept; ``best`` still records its loss."""

    def update(self, model: nn.Module, acc: Sequence[float], loss: Sequence[float]) -> None:
        params = model.state_dict()
        for k, (a, lo) in enumerate(zip(acc, loss, strict=True)):
            if _better(a, lo, self.best[k], ties_by_loss=False):
                self.best[k] = (float(a), -float(lo))
                self.state[k] = {n: t[k].detach().clone() for n, t in params.items()}


class _BestKeeper:
    """eval_fn that validates and keeps the best parameters.

    Best = highest validation accuracy, ties broken by lower validation loss (the authors keep
    the earliest of equally accurate checkpoints; with a 100% validation accuracy reached early
    that is often a barely-converged one).
    """

    def __init__(
        self, evaluate: Callable[[nn.Module], tuple[float, float]], *, ties_by_loss: bool = True
    ) -> None:
        self.evaluate = evaluate
        self.ties_by_loss = ties_by_loss  # False: the authors' rule, the earliest of equals
        self.best: tuple[float, float] = (-1.0, 0.0)  # (accuracy, -loss)
        self.state: dict[str, Tensor] | None = None

    def __call__(self, model: nn.Module) -> dict[str, float]:
        acc, loss = self.evaluate(model)
        if _better(acc, loss, self.best, self.ties_by_loss):
            self.best, self.state = (acc, -loss), copy.deepcopy(model.state_dict())
        return {"val_acc": acc, "val_loss": loss}

    def state_dict(self) -> dict[str, Any]:  # checkpointed with the run (resume)
        return {"best": self.best, "state": self.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        best = state["best"]
        self.best = (float(best[0]), float(best[1]))
        self.state = state["state"]


def _graph_logits(model: nn.Module, kind: str, b: dict[str, Tensor]) -> Tensor:
    """(B, L, classes) log-probabilities / logits for a collated batch of ``kind``."""
    n_graphs = b["y"].shape[0]
    args = (b["x"], b["edge_index"], b["edge_type"], b["batch"])
    if kind == "node":
        return node_selection_logits(model(*args), b["batch"], n_graphs).unsqueeze(1)
    if kind == "graph":
        return F.log_softmax(model(*args, num_graphs=n_graphs), -1).unsqueeze(1)
    out = model(*args, num_outputs=b["y"].shape[1], num_graphs=n_graphs)
    if kind == "node_seq":
        return node_selection_logits(out, b["batch"], n_graphs)  # (B, L, max_nodes)
    return F.log_softmax(out, -1)  # graph_seq: (B, L, C)


def _stacked_graph_logits(
    model: StackedGatedGraphNet | StackedGatedGraphSequenceNet,
    kind: str,
    b: dict[str, Tensor],
    plan: PropagationPlan | None,
) -> Tensor:
    """``_graph_logits`` of K stacked models, each on its block of the union ``b`` (K blocks of
    equally many graphs and nodes, collated as one batch): (K, B, L, classes). Sequence models
    make ``b["y"].shape[1]`` outputs, the longest target of the union (a model's later outputs
    are ``IGNORE`` where its targets are shorter; earlier outputs do not depend on them).

    Shapes:
        b["x"]: (K*N, A); b["y"]: (K*B, L) -> (K, B, L, C)
    """
    k = model.num_models
    n_graphs = b["y"].shape[0] // k  # B, graphs per model
    x = b["x"].view(k, -1, b["x"].shape[1])  # (K, N, A)
    args = (x, b["edge_index"], b["edge_type"], b["batch"])
    if kind in ("node", "graph"):
        out = model(*args, num_graphs=n_graphs, plan=plan)  # (K, N) or (K, B, C)
        out = out.unsqueeze(-1) if kind == "node" else out.unsqueeze(2)  # (K, N, 1), (K, B, 1, C)
    else:
        out = model(*args, num_outputs=b["y"].shape[1], num_graphs=n_graphs, plan=plan)
    if kind in ("node", "node_seq"):  # (K, N, L) scores: softmax over each graph's nodes
        logp = node_selection_logits(out.flatten(0, 1), b["batch"], k * n_graphs)  # (K*B, L, M)
        return logp.view(k, n_graphs, *logp.shape[1:])
    return F.log_softmax(out, -1)  # (K, B, L, C)


def _sequence_loss(logp: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy averaged over each example's output steps, then over examples (official)."""
    b, steps = y.shape
    nll = F.nll_loss(
        logp.flatten(0, 1), y.flatten(), ignore_index=babi.IGNORE, reduction="none"
    ).view(b, steps)
    lengths = (y != babi.IGNORE).sum(1).clamp(min=1)
    return (nll.sum(1) / lengths).mean()


def _stacked_sequence_loss(logp: Tensor, y: Tensor, mask: Tensor, *, reduce: bool = True) -> Tensor:
    """``_sequence_loss`` of K models at once: (K,) each model's mean over its real examples
    (``mask``), or with ``reduce=False`` (K, B) per example.

    Shapes:
        logp: (K, B, T, C); y: (K, B, T); mask: (K, B)
    """
    k, b, steps = y.shape
    nll = F.nll_loss(
        logp.flatten(0, 2), y.flatten(), ignore_index=babi.IGNORE, reduction="none"
    ).view(k, b, steps)
    per = nll.sum(2) / (y != babi.IGNORE).sum(2).clamp(min=1)  # (K, B)
    if not reduce:
        return per
    return (per * mask).sum(1) / mask.sum(1).clamp(min=1)


def _stack_sequences(
    seqs: list[tuple[Tensor, Tensor, Tensor]],
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """K models' (tokens, lengths, targets) padded to common sizes (PAD tokens, length 1 and
    IGNORE targets in padding rows) and stacked, with the mask of real rows.

    Shapes:
        -> tokens (K, M, L), lengths (K, M), targets (K, M, T), mask (K, M)
    """
    k = len(seqs)
    m = max(len(s[2]) for s in seqs)
    length = max(s[0].shape[1] for s in seqs)
    steps = max(s[2].shape[1] for s in seqs)
    tok = torch.full((k, m, length), babi.PAD, dtype=torch.long)
    ln = torch.ones(k, m, dtype=torch.long)
    y = torch.full((k, m, steps), babi.IGNORE, dtype=torch.long)
    mask = torch.zeros(k, m, dtype=torch.bool)
    for i, (t, n, yy) in enumerate(seqs):
        tok[i, : len(t), : t.shape[1]], ln[i, : len(n)] = t, n
        y[i, : len(yy), : yy.shape[1]], mask[i, : len(yy)] = yy, True
    return tok, ln, y, mask


def _all_correct(logp: Tensor, y: Tensor) -> Tensor:
    """(B,) whether every (non-padding) output of each example is right."""
    return ((logp.argmax(-1) == y) | (y == babi.IGNORE)).all(1)


@torch.no_grad()
def graph_eval(
    model: nn.Module, kind: str, examples: list[babi.GraphExample], *, chunk: int = 500
) -> tuple[float, float]:
    """(accuracy, mean loss); an example is right only if its whole output is (eval mode)."""
    was = model.training
    model.eval()
    try:
        right, loss = 0, 0.0
        for i in range(0, len(examples), chunk):
            b = babi.collate(examples[i : i + chunk])
            logp = _graph_logits(model, kind, b)
            right += int(_all_correct(logp, b["y"]).sum())
            loss += float(_sequence_loss(logp, b["y"])) * len(b["y"])
    finally:
        model.train(was)
    n = max(len(examples), 1)
    return right / n, loss / n


@torch.no_grad()
def sequence_eval(
    model: SequenceBaseline, tokens: Tensor, lengths: Tensor, y: Tensor, *, chunk: int = 1000
) -> tuple[float, float]:
    """(accuracy, mean loss) of a sequence baseline (eval mode; caller's mode restored)."""
    was = model.training
    model.eval()
    try:
        right, loss = 0, 0.0
        for i in range(0, len(y), chunk):
            yy = y[i : i + chunk]
            out = model(tokens[i : i + chunk], lengths[i : i + chunk], num_outputs=y.shape[1])
            logp = F.log_softmax(out, -1)
            right += int(_all_correct(logp, yy).sum())
            loss += float(_sequence_loss(logp, yy)) * len(yy)
    finally:
        model.train(was)
    n = max(len(y), 1)
    return right / n, loss / n


def _runs_per_fold(res: dict[str, Any]) -> str:
    """'2' for one question type, '1+1+2+1' for several: the runs each needed."""
    return "+".join(str(len(q.get("attempts", []))) for q in res["per_question_type"].values())


def _baseline_updates(cfg: GGNNConfig, name: str, cell: str) -> int:
    """Weight updates of a baseline: ``cfg.baseline_steps``, or the authors' when None."""
    if cfg.baseline_steps is None:
        return BASELINE[name].updates(cell)
    return cfg.baseline_steps


def _baseline_train(cfg: GGNNConfig, name: str) -> int:
    """Training graphs of the baselines on task ``name`` (``baseline_train_by_task`` first)."""
    return cfg.baseline_train_by_task.get(name, cfg.baseline_train)


def _fold_key(cfg: GGNNConfig, fold: int) -> tuple[int, ...]:
    """The fold's part of a seed key: ``(fold,)``, or nothing with the authors' seed handling
    (``fold_seeds=False``: every fold gets the same split indices, weights and batch order)."""
    return (fold,) if cfg.fold_seeds else ()


def _seed_key(cfg: GGNNConfig, key: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A run key (``("fold3", "q1", "a0")``) as seeds read it: without the fold unless
    ``fold_seeds``. Run directories keep the whole key."""
    return key if cfg.fold_seeds else tuple(k for k in key if not str(k).startswith("fold"))


def _split_train(
    graphs: tuple[babi.SymbolicGraph, ...], n_train: int, n_val: int, seed: int
) -> tuple[list[babi.SymbolicGraph], list[babi.SymbolicGraph]]:
    """A random n_train / n_val split of the training graphs (the authors' split_set).

    A training split smaller than n_train + n_val (tiny test fixtures) keeps a third for
    validation and trains on the rest, with a warning.
    """
    if n_train + n_val > len(graphs):
        n_val = min(n_val, len(graphs) // 3)
        log.warning(
            "only %d training graphs: using %d for training and %d for validation",
            len(graphs),
            len(graphs) - n_val,
            n_val,
        )
        n_train = len(graphs) - n_val
    perm = np.random.default_rng(seed).permutation(len(graphs))
    return [graphs[i] for i in perm[:n_train]], [graphs[i] for i in perm[n_train : n_train + n_val]]


# ------------------------------------------------------------------------------- experiment
@EXPERIMENTS.register("ggnn")
class GGNNExperiment(Experiment):
    name = "ggnn"
    cuda_precision = "fp32"  # the reason: docs/ggnn.md, "Precision on CUDA"
    title = "Gated Graph Sequence Neural Networks"
    # --dataset generated: paperzoo's generator (the default at smoke and quick; at full a named
    # substitute for the paper's folds, marked "not the paper's setting").
    datasets = ("generated",)
    paper_data = babi.FOLDS_LAYOUT  # the official symbolic folds under --data-root
    claims = _claims()
    # --part models: the GG-NN / GGS-NN accuracies alone (the seven ``*.ggnn.test_acc`` /
    # ``*.ggsnn.test_acc`` findings), no baselines: a tenth of the CPU time of a whole full run
    # (issue 39); the gaps need the whole run. The prefix is not used: ``claims_at`` selects.
    parts = MappingProxyType({"models": "models"})
    not_estimated = (
        "restarts beyond the first wave of runs trained at once (restart_batch; quick: 1 of up to 16; full: one run, no restarts) are counted at their maximum (a question type stops once a run reaches 100% validation accuracy)",
    )
    configs = {
        "smoke": GGNNConfig(
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
        "quick": GGNNConfig(
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
        "full": GGNNConfig(
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
            # The authors' protocol (issue 39): one run per fold and question type with their
            # step sizes (Eulerian 0.001, run_seq5), their seed handling and checkpoint rule;
            # task 4's baselines on 250 graphs as Table 1. ``--set restarts=16`` is the restart
            # variant (a modified config: reported, never counted as the paper's setting).
            restarts=1,
            restart_batch=1,
            overrides=dict(OFFICIAL),  # every task's settings as the authors' (shown by config)
            fold_seeds=False,
            ties_by_loss=False,
            baseline_train_by_task=FULL_BASELINE_TRAIN,
        ),
    }

    order = 1  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("cpu",),
            "the ten official symbolic bAbI folds fit two CPU cores. The whole run at the "
            "authors' protocol (one run per fold and question type, with the baselines) took "
            "about 92 CPU-minutes at one thread, as two fold shards of 46 minutes side by side "
            "(results/ggnn-full; docs/ggnn.md).",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def claims_at(self, ctx: RunContext) -> list[ClaimSpec]:
        """The claims of the run; ``--part models`` keeps the models' own accuracies."""
        if self.part_prefix(ctx) is None:  # (an unknown part raises, naming the parts)
            return super().claims_at(ctx)
        return [
            c
            for c in self.claims
            if c.applies(ctx.scale) and c.id.endswith((".ggnn.test_acc", ".ggsnn.test_acc"))
        ]

    @staticmethod
    def _part_config(cfg: GGNNConfig, ctx: RunContext) -> GGNNConfig:
        """``--part models`` trains no baselines."""
        return dataclasses.replace(cfg, baseline_tasks=()) if ctx.part == "models" else cfg

    # -- data ------------------------------------------------------------------------------
    @staticmethod
    def _official(ctx: RunContext) -> bool:
        """Whether the run reads the official files (``--data-root``, no ``--dataset generated``)."""
        return ctx.data_root is not None and ctx.dataset != "generated"

    @staticmethod
    def _require_fold(ctx: RunContext) -> bool:
        """Read only fold K's own directory (not the single-fold layout): with ``--folds`` and
        at full scale, where fold numbers are the paper's folds."""
        return bool(ctx.options.get("folds")) or ctx.scale == "full"

    @staticmethod
    def _all_tasks(cfg: GGNNConfig) -> list[str]:
        known = [t for t in ALL_TASKS if t in set(cfg.tasks) | set(cfg.baseline_tasks)]
        return known

    def _folds(self, cfg: GGNNConfig, ctx: RunContext) -> list[int]:
        """The folds to run.

        Official files (``--data-root``): ``--folds``, else ``--fold K``, else at full scale every
        fold of 1-10 complete under the root (the paper's protocol averages over its 10 folds),
        else fold 1. Generated data: the indices of ``max(seeds, baseline_seeds)`` folds.
        """
        if not self._official(ctx):
            return list(range(max(cfg.seeds, cfg.baseline_seeds)))
        assert ctx.data_root is not None
        if ctx.options.get("folds"):
            return list(ctx.options.get("folds"))
        if ctx.options.get("fold") is not None:
            return [ctx.options["fold"]]
        if ctx.scale == "full":
            return babi.official_folds(ctx.data_root, self._all_tasks(cfg)) or [1]
        return [1]

    def _check_folds(self, tasks: list[str], folds: list[int], ctx: RunContext) -> None:
        """Fail before any training when a requested official fold's directory is missing."""
        if self._official(ctx):
            assert ctx.data_root is not None
            for k in folds:
                for name in tasks:
                    babi.official_dirs(
                        ctx.data_root, name, fold=k, require_fold=self._require_fold(ctx)
                    )

    def require_data(self, ctx: RunContext) -> None:
        """At full scale the paper's data are the official folds: refuse (one line naming the
        layout) without ``--data-root`` or when it holds no complete fold; with ``--data-root``
        at any scale, refuse when a requested fold is missing. Nothing has been written yet."""
        if self._official(ctx):
            if (
                ctx.scale == "full"
                and not ctx.options.get("folds")
                and ctx.options.get("fold") is None
            ):
                layouts.require(babi.FOLDS_LAYOUT, ctx.data_root, ctx.download)  # a whole fold
            cfg = self.config(ctx.scale)
            self._check_folds(self._all_tasks(cfg), self._folds(cfg, ctx), ctx)
        elif ctx.scale == "full" and ctx.dataset is None:  # no --data-root: refuse
            layouts.require(babi.FOLDS_LAYOUT, ctx.data_root, ctx.download)

    def setting_note(self, ctx: RunContext) -> str | None:
        """Besides a substitute data set: at full scale, a subset of the paper's 10 folds."""
        note = super().setting_note(ctx)
        if note is not None or ctx.scale != "full" or not self._official(ctx):
            return note
        folds = self._folds(self.config(ctx.scale), ctx)
        if folds == list(range(1, babi.NUM_FOLDS + 1)):
            return None
        return (
            f"fold{'s' * (len(folds) != 1)} {','.join(map(str, folds))} of "
            f"{babi.NUM_FOLDS}: not the paper's protocol (its numbers are means over all "
            f"{babi.NUM_FOLDS} folds)"
        )

    def _task(self, name: str, cfg: GGNNConfig, ctx: RunContext, fold: int) -> babi.BabiTask:
        if self._official(ctx):  # the official files of fold K
            assert ctx.data_root is not None
            task = babi.load_official(
                name, ctx.data_root, fold=fold, require_fold=self._require_fold(ctx)
            )
            test = task.test[: cfg.n_test]
        else:
            n_train = self._setting(name, cfg).n_train if name in cfg.tasks else 0
            if name in cfg.baseline_tasks:
                n_train = max(n_train, cfg.baseline_train)
            n_train += cfg.n_val
            task = babi.generate_task(
                name, n_train=n_train, n_test=cfg.n_test, seed=derive_seed(ctx.seed, "fold", fold)
            )
            test = task.test
        # The test graphs are read in the final evaluation only.
        return dataclasses.replace(task, test=ctx.holdout(test, f"{name} test graphs"))

    def _setting(self, name: str, cfg: GGNNConfig) -> TaskSetting:
        return cfg.overrides.get(name, OFFICIAL[name])

    # -- GG-NN / GGS-NN --------------------------------------------------------------------
    def _make_model(self, task: babi.BabiTask, s: TaskSetting, cfg: GGNNConfig) -> nn.Module:
        common = dict(
            state_dim=s.state_dim,
            annotation_dim=s.annotation_dim,
            num_edge_types=task.num_edge_types,
            num_steps=cfg.num_prop_steps,
        )
        if task.kind == "node":
            return GatedGraphNet(output="node", **common)  # type: ignore[arg-type]
        if task.kind == "graph":
            return GatedGraphNet(output="graph", num_classes=task.num_labels, **common)  # type: ignore[arg-type]
        output = "node" if task.kind == "node_seq" else "graph"
        classes = task.num_labels + 1 if task.kind == "graph_seq" else None
        return GatedGraphSequenceNet(output=output, num_classes=classes, **common)  # type: ignore[arg-type]

    def _train_graph_model(
        self,
        name: str,
        task: babi.BabiTask,
        cfg: GGNNConfig,
        ctx: RunContext,
        train: list[babi.GraphExample],
        val: list[babi.GraphExample],
        run_key: tuple[int | str, ...],
    ) -> tuple[nn.Module, tuple[float, float]]:
        """One training run; returns the selected model and its (val accuracy, -val loss)."""
        s = self._setting(name, cfg)
        with seeded(derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "init")):
            model = self._make_model(task, s, cfg)
        opt = torch.optim.Adam(model.parameters(), lr=s.lr)
        kind = task.kind

        def loss_of(m: nn.Module, b: dict[str, Tensor]) -> Tensor:
            return _sequence_loss(_graph_logits(m, kind, b), b["y"])

        seed = derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "batches")
        keeper = _BestKeeper(lambda m: graph_eval(m, kind, val), ties_by_loss=cfg.ties_by_loss)
        trainer = Trainer(
            model,
            None,
            _clamped_step(opt, loss_of),
            config=TrainConfig(
                steps=max(1, math.ceil(s.steps * cfg.step_scale)),
                batch_size=cfg.batch_size,
                seed=seed,
                log_every=cfg.eval_every,
                eval_every=cfg.eval_every,
                progress=ctx.progress,
                desc=f"{name} {'-'.join(map(str, run_key))}",
            ),
            out_dir=ctx.out_dir / "runs" / "-".join(map(str, (name, *run_key))),
            eval_fn=keeper if val else None,  # no validation data: keep the last parameters
            extra={"optimizer": opt, "keeper": keeper},
            manual=True,
            device=ctx.device,
        )
        trainer.fit(_EpochBatches(train, cfg.batch_size, seed), resume=True)
        if keeper.state is not None:
            model.load_state_dict(keeper.state)
        return model.to("cpu"), keeper.best

    def _train_restarts(
        self,
        name: str,
        task: babi.BabiTask,
        cfg: GGNNConfig,
        ctx: RunContext,
        train: list[babi.GraphExample],
        val: list[babi.GraphExample],
        key: tuple[str, ...],
        attempts: range,
    ) -> list[tuple[nn.Module, tuple[float, float]]]:
        """Runs ``attempts`` under ``key`` (``_train_attempt``) trained as one batched model
        (``StackedGatedGraphNet`` or, for sequence outputs, ``StackedGatedGraphSequenceNet``;
        ``engine.batched.fit_batched``).

        Each run keeps what it has alone: its initialisation (built from the seed
        ``_train_graph_model`` uses, then copied into the stacked weights), its batch order
        (its own ``_EpochBatches``), its Adam state and gradient clamping (element-wise on the
        stacked tensors; the loss is the sum of the runs' losses) and its validation-based
        selection (``BatchedKeeper``: best accuracy, ties by lower loss, the earlier of equals).
        Its trajectory equals ``_train_attempt``'s up to float round-off. Every step collates the
        runs' minibatches as one batch (``_GraphBank``), model k's graphs the k-th block.

        Returns:
            ``[(model, (val accuracy, -val loss))]`` per run, in order, as ``_train_attempt``.
        """
        s = self._setting(name, cfg)
        kind, runs = task.kind, len(attempts)
        models, batches = [], []
        for attempt in attempts:
            run_key = (*key, f"a{attempt}")
            with seeded(derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "init")):
                models.append(self._make_model(task, s, cfg))
            seed = derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "batches")
            batches.append(_EpochBatches(train, cfg.batch_size, seed))
        stacked: StackedGatedGraphNet | StackedGatedGraphSequenceNet
        if kind in ("node", "graph"):
            stacked = StackedGatedGraphNet(models=models)  # type: ignore[arg-type]
        else:
            stacked = StackedGatedGraphSequenceNet(models=models)  # type: ignore[arg-type]
        stacked.to(ctx.device)

        def to_device(b: dict[str, Tensor]) -> dict[str, Tensor]:
            return {n: t.to(ctx.device) for n, t in b.items()}

        bank = _GraphBank(train) if _GraphBank.fits(train) else None

        def loss_fn(m: nn.Module, step: int) -> Tensor:
            idx = torch.cat([bt.indices(step) for bt in batches])  # (K*B,): run k's, k-th block
            union = bank.batch(idx) if bank else babi.collate([train[i] for i in idx.tolist()])
            b = to_device(union)
            logp = _stacked_graph_logits(m, kind, b, None)  # type: ignore[arg-type]
            y = b["y"].view(runs, -1, b["y"].shape[1])  # (K, B, L)
            return _stacked_sequence_loss(logp, y, torch.ones_like(y[..., 0], dtype=torch.bool))

        # Validation: every run reads the same questions; the union of K copies of each chunk
        # and its plan are built once (graph_eval's chunks of 500, its accuracy and loss).
        chunks = []
        for i in range(0, len(val), 500):
            part = val[i : i + 500]
            b = to_device(babi.collate(part * runs))
            chunks.append(
                (len(part), b, stacked.plan(b["edge_index"], b["edge_type"], len(b["x"])))
            )

        def evaluate(m: nn.Module) -> tuple[list[float], list[float]]:
            right = torch.zeros(runs, dtype=torch.long)
            loss = torch.zeros(runs, dtype=torch.float64)
            for size, b, plan in chunks:
                logp = _stacked_graph_logits(m, kind, b, plan)  # (K, B, 1, C)
                y = b["y"].view(runs, size, -1)
                ok = _all_correct(logp.flatten(0, 1), y.flatten(0, 1)).view(runs, size)
                right += ok.sum(1).cpu()
                mask = torch.ones_like(ok)
                loss += _stacked_sequence_loss(logp, y, mask).double().cpu() * size
            n = max(len(val), 1)
            return [r / n for r in right.tolist()], [lo / n for lo in loss.tolist()]

        keeper = BatchedKeeper(runs) if cfg.ties_by_loss else _EarliestKeeper(runs)
        tag = "-".join(map(str, (name, *key)))
        fit_batched(
            stacked,
            loss_fn,
            torch.optim.Adam(stacked.parameters(), lr=s.lr),
            steps=max(1, math.ceil(s.steps * cfg.step_scale)),
            evaluate=evaluate if val else None,  # no validation data: keep the last parameters
            eval_every=cfg.eval_every,
            keeper=keeper,
            clamp=5.0,  # official: every gradient entry clamped to [-5, 5]
            desc=f"{name} {'-'.join(key)} runs {attempts[0]}-{attempts[-1]} batched",
            out_dir=ctx.out_dir / "runs" / f"{tag}-a{attempts[0]}-{attempts[-1]}",
        )
        stacked.to("cpu")
        return [
            (stacked.unstacked(i, m), keeper.best[i])  # type: ignore[arg-type]
            for i, m in enumerate(models)
        ]

    def _train_attempt(
        self,
        name: str,
        task: babi.BabiTask,
        cfg: GGNNConfig,
        ctx: RunContext,
        train: list[babi.GraphExample],
        val: list[babi.GraphExample],
        key: tuple[str, ...],
        attempt: int,
    ) -> tuple[nn.Module, tuple[float, float]]:
        """Run ``attempt`` (its own initialisation and batch order) of the runs under ``key``,
        alone: the reference ``_train_restarts`` is tested against."""
        return self._train_graph_model(name, task, cfg, ctx, train, val, (*key, f"a{attempt}"))

    def _run_graph_model(
        self, name: str, cfg: GGNNConfig, ctx: RunContext, fold: int, task: babi.BabiTask
    ) -> dict[str, Any]:
        """Train (per question type) on one fold; test accuracy over all its questions."""
        s = self._setting(name, cfg)
        train_g, val_g = _split_train(
            task.train,
            s.n_train,
            cfg.n_val,
            derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "split"),
        )
        right = right_first = total = 0
        per_qtype: dict[int, dict[str, Any]] = {}
        params = 0
        for qt in range(task.num_question_types):
            tr = babi.examples(task, train_g, annotation_dim=s.annotation_dim, question_type=qt)
            va = babi.examples(task, val_g, annotation_dim=s.annotation_dim, question_type=qt)
            best: nn.Module | None = None
            runs: list[tuple[nn.Module, tuple[float, float]]] = []
            max_runs = cfg.restarts if va else 1
            trained = 0
            if tr:  # runs restart_batch at a time, then the restart rule (best_of_restarts')
                key = (f"fold{fold}", f"q{qt + 1}")
                train_wave = functools.partial(
                    self._train_restarts, name, task, cfg, ctx, tr, va, key
                )
                best, runs, trained = best_of_restart_waves(train_wave, max_runs, cfg.restart_batch)
            with ctx.final_evaluation():  # this question type's models are final
                te = babi.examples(
                    task, task.test, annotation_dim=s.annotation_dim, question_type=qt
                )
                if not te:
                    continue
                total += len(te)
                if not tr:  # only possible with tiny data: such test questions count as wrong
                    log.warning("%s: no training question of type %d", name, qt + 1)
                    per_qtype[qt + 1] = {"test_acc": 0.0, "n_train": 0, "n_test": len(te)}
                    continue
                attempts = [
                    {"val_acc": score[0], "test_acc": graph_eval(m, task.kind, te)[0]}
                    for m, score in runs
                ]
                assert best is not None
                acc = graph_eval(best, task.kind, te)[0]
            params = count_params(best)
            per_qtype[qt + 1] = {
                "test_acc": acc,
                "n_train": len(tr),
                "n_test": len(te),
                "attempts": attempts,  # the runs the restart rule takes (up to the first at 100 %)
                "runs_trained": trained,  # whole waves of restart_batch runs
            }
            right += round(acc * len(te))
            right_first += round(attempts[0]["test_acc"] * len(te))
        return {
            "test_acc": right / total,
            "first_attempt_test_acc": right_first / total,
            "attempts": sum(len(v.get("attempts", [])) for v in per_qtype.values()),
            "n_test_questions": total,
            "per_question_type": per_qtype,
            "params": params,
        }

    # -- RNN / LSTM baselines ----------------------------------------------------------------
    def _run_baselines(
        self,
        name: str,
        cell: str,
        cfg: GGNNConfig,
        ctx: RunContext,
        folds: list[tuple[int, babi.BabiTask]],
    ) -> list[float]:
        """The baseline ``cell`` on task ``name``, one model per fold, trained as one batched
        model (``engine.batched``): each fold's model has the initialisation, data, batch order,
        Adam state, clamping and validation-based selection it has alone (``_baseline_alone``),
        and the same trajectory up to float round-off. Returns the test accuracy per fold."""
        bs_cfg = BASELINE[name]
        steps = _baseline_updates(cfg, name, cell)
        models, train, val, batch_sizes, seeds = [], [], [], [], []
        for fold, task in folds:
            train_g, val_g = _split_train(
                task.train,
                _baseline_train(cfg, name),
                cfg.n_val,
                derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "rnn"),
            )
            train.append(babi.sequences(task, train_g))
            val.append(babi.sequences(task, val_g))
            with seeded(derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "init")):
                models.append(
                    SequenceBaseline(
                        vocab_size=len(babi.vocabulary(task)),
                        num_classes=task.num_classes,
                        cell=cell,  # type: ignore[arg-type]
                    )
                )
            batch_sizes.append(min(bs_cfg.batch_size, len(train[-1][2])))
            seeds.append(derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "batches"))
        stacked = StackedSequenceBaseline(models=models).to(ctx.device)
        tok, ln, y, _ = _stack_sequences(train)  # (K, M, L), (K, M), (K, M, T)
        vtok, vln, vy, vmask = (t.to(ctx.device) for t in _stack_sequences(val))
        samplers = model_samplers([len(t[2]) for t in train], batch_sizes, seeds)
        width = max(batch_sizes)

        def loss_fn(m: nn.Module, step: int) -> Tensor:
            idx = torch.zeros(len(samplers), width, dtype=torch.long)
            mask = torch.zeros(len(samplers), width, dtype=torch.bool)
            for k, sampler in enumerate(samplers):  # model k's own batch of step ``step``
                i = sampler.indices(step)
                idx[k, : len(i)], mask[k, : len(i)] = i, True
            rows = torch.arange(len(samplers)).unsqueeze(1)
            t, n, yy = tok[rows, idx], ln[rows, idx].clamp(min=1), y[rows, idx]
            yy = yy.masked_fill(~mask.unsqueeze(-1), babi.IGNORE)  # padding rows: no loss
            t, n, yy, mask = (v.to(ctx.device) for v in (t, n, yy, mask))
            out = F.log_softmax(m(t, n, num_outputs=yy.shape[2]), -1)
            return _stacked_sequence_loss(out, yy, mask)

        def evaluate(m: nn.Module) -> tuple[list[float], list[float]]:
            logp = F.log_softmax(m(vtok, vln, num_outputs=vy.shape[2]), -1)  # (K, M, T, C)
            right = _all_correct(logp.flatten(0, 1), vy.flatten(0, 1)).view(vmask.shape) & vmask
            n = vmask.sum(1).clamp(min=1)
            losses = _stacked_sequence_loss(logp, vy, vmask, reduce=False)
            acc = [r / c for r, c in zip(right.sum(1).tolist(), n.tolist(), strict=True)]
            return acc, ((losses * vmask).sum(1) / n).tolist()

        keeper = BatchedKeeper(len(models)) if cfg.ties_by_loss else _EarliestKeeper(len(models))
        fit_batched(
            stacked,
            loss_fn,
            torch.optim.Adam(stacked.parameters(), lr=bs_cfg.lr),
            steps=steps,
            evaluate=evaluate,
            eval_every=cfg.baseline_eval_every,
            keeper=keeper,
            clamp=5.0,
            desc=f"{cell} {name} folds {','.join(str(f) for f, _ in folds)}",
            out_dir=ctx.out_dir
            / "runs"
            / f"{cell}-{name}-folds{'-'.join(str(f) for f, _ in folds)}",
        )
        stacked.to("cpu")
        accs = []
        with ctx.final_evaluation():  # the selected models are final
            for k, (_, task) in enumerate(folds):
                model = stacked.unstacked(k, models[k])
                accs.append(sequence_eval(model, *babi.sequences(task, task.test))[0])
        return accs

    def _baseline_alone(
        self, name: str, cell: str, cfg: GGNNConfig, ctx: RunContext, fold: int, task: babi.BabiTask
    ) -> tuple[SequenceBaseline, list[dict[str, float]]]:
        """One fold's baseline trained alone with ``Trainer`` (the reference the batched group is
        tested against): the selected model and the trainer's log."""
        bs_cfg = BASELINE[name]
        steps = _baseline_updates(cfg, name, cell)
        train_g, val_g = _split_train(
            task.train,
            _baseline_train(cfg, name),
            cfg.n_val,
            derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "rnn"),
        )
        tok, ln, y = babi.sequences(task, train_g)
        val = babi.sequences(task, val_g)
        with seeded(derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "init")):
            model = SequenceBaseline(
                vocab_size=len(babi.vocabulary(task)),
                num_classes=task.num_classes,
                cell=cell,  # type: ignore[arg-type]
            )
        opt = torch.optim.Adam(model.parameters(), lr=bs_cfg.lr)

        def loss_of(m: nn.Module, b: tuple[Tensor, Tensor, Tensor]) -> Tensor:
            t, n, yy = b
            out = F.log_softmax(m(t, n, num_outputs=yy.shape[1]), -1)
            return _sequence_loss(out, yy)

        keeper = _BestKeeper(
            lambda m: sequence_eval(m, *val),  # type: ignore[arg-type]
            ties_by_loss=cfg.ties_by_loss,
        )
        trainer = Trainer(
            model,
            None,
            _clamped_step(opt, loss_of),
            config=TrainConfig(
                steps=steps,
                batch_size=min(bs_cfg.batch_size, len(y)),
                seed=derive_seed(ctx.seed, name, *_fold_key(cfg, fold), cell, "batches"),
                log_every=cfg.baseline_eval_every,
                eval_every=cfg.baseline_eval_every,
                progress=False,
                desc=f"{cell} {name} fold {fold}",
            ),
            eval_fn=keeper,
            extra={"optimizer": opt, "keeper": keeper},
            manual=True,
        )
        history = trainer.fit((tok, ln, y))
        if keeper.state is not None:
            model.load_state_dict(keeper.state)
        return model, history.records

    # -- run -------------------------------------------------------------------------------
    # With restart_batch < restarts (quick) a question type stops at the first wave with a run at
    # 100 %; at full all 16 runs train at once and the plan is what trains.
    plan_upper_bound = True

    def plan(self, cfg: GGNNConfig, ctx: RunContext) -> list[tuple[str, int]]:
        cfg = self._part_config(cfg, ctx)
        tasks = sorted(set(cfg.tasks) | set(cfg.baseline_tasks), key=str)
        if not set(tasks) <= set(ALL_TASKS) or cfg.restarts < 1 or cfg.restart_batch < 1:
            return []  # run() says which task or setting is wrong
        tasks.sort(key=ALL_TASKS.index)
        runs = cfg.restarts if cfg.n_val > 0 else 1
        official = self._official(ctx)
        out: list[tuple[str, int]] = []
        all_folds, folds = self._folds(cfg, ctx), self._shard_folds(cfg, ctx)
        for name in tasks:
            steps = max(1, math.ceil(self._setting(name, cfg).steps * cfg.step_scale))
            # A question type's runs: waves of restart_batch runs, each one batched model (all
            # runs at once: one wave; else up to ceil(runs / restart_batch)).
            wave = min(cfg.restart_batch, runs)
            waves = math.ceil(runs / wave)
            what = f"{runs} runs at once" if waves == 1 else f"up to {waves} waves of {wave} runs"
            what = "one run" if runs == 1 else what
            for fold in folds:
                if name in cfg.tasks and (official or all_folds.index(fold) < cfg.seeds):
                    qtypes = range(1, _QUESTION_TYPES.get(name, 1) + 1)
                    out += [(f"{name} fold{fold}-q{q} ({what})", waves * steps) for q in qtypes]
            group = [f for f in folds if all_folds.index(f) < cfg.baseline_seeds]
            if name in cfg.baseline_tasks and group:  # one batched model per cell, all folds
                out += [
                    (
                        f"{cell} {name} folds {','.join(map(str, group))}",
                        _baseline_updates(cfg, name, cell),
                    )
                    for cell in cfg.baseline_cells
                ]
        return out

    def _shard_folds(self, cfg: GGNNConfig, ctx: RunContext) -> list[int]:
        """The folds this run trains: all of ``_folds``, or with ``--shard K/N`` every N-th from
        the K-th (``paperzoo merge`` of all N shards gives the whole run back)."""
        folds = self._folds(cfg, ctx)
        if ctx.shard is not None:
            k, n = ctx.shard
            folds = folds[k::n]
        return folds

    def run(self, cfg: GGNNConfig, ctx: RunContext) -> Outcome:
        self.part_prefix(ctx)  # an unknown part raises, naming the parts
        cfg = self._part_config(cfg, ctx)
        all_folds = self._folds(cfg, ctx)
        folds = self._shard_folds(cfg, ctx)
        official = self._official(ctx)
        unknown = sorted((set(cfg.tasks) | set(cfg.baseline_tasks)) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown GG-NN task(s) {unknown}; known: {', '.join(ALL_TASKS)}")
        if cfg.restarts < 1 or cfg.restart_batch < 1:
            raise ValueError(
                f"restarts and restart_batch must be >= 1, got {cfg.restarts} and {cfg.restart_batch}"
            )
        tasks = sorted(set(cfg.tasks) | set(cfg.baseline_tasks), key=ALL_TASKS.index)
        self._check_folds(tasks, all_folds, ctx)
        if not folds:
            raise ValueError(f"--shard {ctx.shard[0]}/{ctx.shard[1]} has no fold of {all_folds}")  # type: ignore[index]
        ggnn: dict[str, list[dict[str, Any]]] = {t: [] for t in cfg.tasks}
        base: dict[str, dict[str, list[float]]] = {c: {} for c in cfg.baseline_cells}
        base_folds: dict[str, list[int]] = {}
        data: list[DataInfo] = []
        cpu: dict[str, float] = {}
        for name in tasks:
            start = time.process_time()
            digests: dict[int, str] = {}  # each fold's data digest
            loaded: dict[int, babi.BabiTask] = {}
            for i in budget.loop(len(folds), f"{name} folds", kind="repeat"):
                fold = folds[i]
                task = loaded[fold] = self._task(name, cfg, ctx, fold)
                with ctx.final_evaluation():  # a digest identifies the test graphs, selects nothing
                    digests[fold] = babi.task_sha256(task)
                # Official folds: the GG-NN runs on every fold asked for; generated: cfg.seeds.
                if name in cfg.tasks and (official or all_folds.index(fold) < cfg.seeds):
                    res = self._run_graph_model(name, cfg, ctx, fold, task)
                    res["fold"], res["source"] = fold, task.source
                    ggnn[name].append(res)
                    log.info("%s fold %d: test accuracy %.4f", name, fold, res["test_acc"])
            if name in cfg.baseline_tasks:
                # The baselines of every fold at once, one batched model per cell (all folds
                # also under --max-steps: the batched step's time depends on their number).
                group = [
                    (f, loaded[f] if f in loaded else self._task(name, cfg, ctx, f))
                    for f in folds
                    if all_folds.index(f) < cfg.baseline_seeds
                ]
                base_folds[name] = [f for f, _ in group]
                for cell in cfg.baseline_cells:
                    accs = self._run_baselines(name, cell, cfg, ctx, group) if group else []
                    base[cell][name] = accs
                    for (fold, _), acc in zip(group, accs, strict=True):
                        log.info("%s %s fold %d: test accuracy %.4f", cell, name, fold, acc)
            data.append(self._data_record(name, cfg, ctx, all_folds, folds, loaded, digests))
            cpu[name] = round(time.process_time() - start, 1)
        baselines = {
            cell: {t: {"per_fold": v, "folds": base_folds[t]} for t, v in per_task.items() if v}
            for cell, per_task in base.items()
        }
        return self._outcome(cfg, ctx, ggnn, baselines, data, cpu, official)

    def _data_record(
        self,
        name: str,
        cfg: GGNNConfig,
        ctx: RunContext,
        all_folds: list[int],
        folds: list[int],
        loaded: dict[int, babi.BabiTask],
        digests: dict[int, str],
    ) -> DataInfo:
        """The data record of task ``name``: the folds of the whole run (a shard describes the
        run it is part of, so that the shards' records agree and ``merge`` accepts them; under
        ``--max-steps`` the folds that ran)."""
        described = all_folds if ctx.shard is not None else [f for f in folds if f in digests]
        for f in described:
            if f not in digests:
                task = loaded.get(f) or self._task(name, cfg, ctx, f)
                with ctx.final_evaluation():
                    digests[f] = babi.task_sha256(task)
                loaded[f] = task
        first = loaded[described[0]]
        with ctx.final_evaluation():  # a count of test questions for the data record
            n_q = sum(len(g.questions) for g in first.test)
        label = name.replace("babi", "babi-task") if name.startswith("babi") else name
        source = first.source
        official = self._official(ctx)
        if official and len(described) > 1:
            source += f" (first of folds {', '.join(map(str, described))})"
        ds = [digests[f] for f in described]
        return DataInfo(
            label,
            source,
            self._setting(name, cfg).n_train,
            n_q,
            sha256=ds[0] if len(ds) == 1 else babi.combine_sha256(ds),
            fold=described[0] if official and len(described) == 1 else None,
        )

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        """Fold shards (``--shard K/N``) -> the whole run: every task's per-fold results, in fold
        order, and the measurements, notes and figure computed from them as one run would."""
        cfg = self.config(ctx.scale)
        ggnn: dict[str, list[dict[str, Any]]] = {}
        baselines: dict[str, dict[str, Any]] = {}
        cpu: dict[str, float] = {}
        for r in results:
            d = r["details"]
            for task, summary in d["ggnn"].items():
                ggnn.setdefault(task, []).extend(summary["runs"])
            for cell, per_task in d["baselines"].items():
                for task, v in per_task.items():
                    b = baselines.setdefault(cell, {}).setdefault(
                        task, {"per_fold": [], "folds": []}
                    )
                    b["per_fold"] += v["per_fold"]
                    b["folds"] += v["folds"]
            for task, sec in d["cpu_seconds"].items():
                cpu[task] = round(cpu.get(task, 0.0) + sec, 1)
        for task, runs in ggnn.items():
            folds = [run["fold"] for run in runs]
            if len(set(folds)) != len(folds):
                raise ValueError(f"{task}: fold(s) run by more than one shard: {sorted(folds)}")
            runs.sort(key=lambda run: run["fold"])
        for per_task in baselines.values():
            for v in per_task.values():
                order = sorted(range(len(v["folds"])), key=v["folds"].__getitem__)
                v["per_fold"] = [v["per_fold"][i] for i in order]
                v["folds"] = [v["folds"][i] for i in order]
        data = [DataInfo(**d) for d in results[0]["data"]]
        official = bool(results[0]["details"]["official"])
        return self._outcome(cfg, ctx, ggnn, baselines, data, cpu, official)

    def _outcome(
        self,
        cfg: GGNNConfig,
        ctx: RunContext,
        ggnn: dict[str, list[dict[str, Any]]],
        baselines: dict[str, dict[str, Any]],
        data: list[DataInfo],
        cpu: dict[str, float],
        official: bool,
    ) -> Outcome:
        """Measurements, notes and figure from every task's per-fold results (``official``: read
        from the official files)."""
        base = {
            cell: {t: list(v["per_fold"]) for t, v in per_task.items()}
            for cell, per_task in baselines.items()
        }

        def mean(v: list[float]) -> float:
            return float(np.mean(v))

        measured: dict[str, float] = {}
        summary: dict[str, Any] = {}
        for name, runs in ggnn.items():
            accs = [r["test_acc"] for r in runs]
            first = [r["first_attempt_test_acc"] for r in runs]
            measured[f"{_CLAIM_ID[name]}.test_acc"] = mean(accs)
            summary[name] = {
                "model": "GGS-NN" if babi.task_spec(name).kind.endswith("_seq") else "GG-NN",
                "n_train": self._setting(name, cfg).n_train,
                "test_acc_mean": mean(accs),
                "test_acc_std": float(np.std(accs)),
                "folds": [r["fold"] for r in runs],
                "test_acc_per_fold": accs,
                "first_attempt_test_acc_mean": mean(first),
                "first_attempt_test_acc_per_fold": first,
                "runs": runs,
            }
        lstm = base.get("lstm", {})
        declared = {c.id for c in self.claims_at(ctx)}
        for name in ALL_TASKS:  # a task left out by --set tasks=[...]: not measured
            if name not in ggnn and f"{_CLAIM_ID[name]}.test_acc" in declared:
                measured[f"{_CLAIM_ID[name]}.test_acc"] = float("nan")
        for task_name in CLAIM_BASELINE_TASKS:
            n = task_name.removeprefix("babi")
            if f"babi.task{n}.lstm.test_acc" not in declared:  # --part models
                continue
            lstm_acc = mean(lstm[task_name]) if task_name in lstm else float("nan")
            measured[f"babi.task{n}.lstm.test_acc"] = lstm_acc
            gg = measured.get(f"{_CLAIM_ID[task_name]}.test_acc", float("nan"))
            measured[f"babi.task{n}.ggnn_minus_lstm.test_acc"] = gg - lstm_acc
        for task_name, cell in FULL_GAPS:  # declared at full only
            if _gap_claim_id(task_name, cell) not in declared:
                continue
            b = base.get(cell, {}).get(task_name)
            gg = measured.get(f"{_CLAIM_ID[task_name]}.test_acc", float("nan"))
            measured[_gap_claim_id(task_name, cell)] = gg - mean(b) if b else float("nan")
        baselines = {
            cell: {
                t: {
                    "test_acc_mean": mean(v),
                    "test_acc_std": float(np.std(v)),
                    "per_fold": v,
                    "folds": baselines[cell][t]["folds"],
                }
                for t, v in per_task.items()
            }
            for cell, per_task in base.items()
        }

        def over(n: int, fold_ids: list[int]) -> str:
            if official:
                return f"{n} official fold{'s' * (n != 1)} ({', '.join(map(str, fold_ids))})"
            return f"{n} generated fold{'s' * (n != 1)}"

        notes = [
            f"{summary[t]['model']} on {t}: {summary[t]['test_acc_mean']:.3f} "
            f"± {summary[t]['test_acc_std']:.3f} (mean ± std over "
            f"{over(len(ggnn[t]), summary[t]['folds'])}, "
            f"{summary[t]['n_train']} training graphs); first training run only: "
            f"{summary[t]['first_attempt_test_acc_mean']:.3f}; training runs per fold"
            f"{' (per question type)' if len(ggnn[t][0]['per_question_type']) > 1 else ''}: "
            f"{', '.join(_runs_per_fold(r) for r in ggnn[t])}"
            for t in ggnn
        ]
        if cfg.restarts > 1:
            notes.append(
                f"Runs whose best validation accuracy stayed below 100% were repeated from a new "
                f"initialisation (up to {cfg.restarts} runs per fold and question type; the run "
                "with the best validation accuracy is kept). Selection uses validation data only. "
                f"{cfg.restart_batch} run{'s' * (cfg.restart_batch != 1)} at a time trained as "
                "one batched model; the rule keeps the runs up to the first at 100% (the runs "
                "counted above) and selects what it selects running them one after another."
            )
        else:
            notes.append(
                "One training run per fold and question type (the authors' run_experiments.py); "
                "its checkpoint best on the validation graphs is kept."
            )
        notes.append(
            "Seeds: "
            + (
                "split, initialisation and batch order drawn per fold"
                if cfg.fold_seeds
                else "one seed for every fold, as the authors' fixed -seed 8 and split seed 1023 "
                "(the same split indices, initial weights and batch order on every fold)"
            )
            + "; checkpoints: "
            + (
                "highest validation accuracy, ties by lower validation loss."
                if cfg.ties_by_loss
                else "the authors' rule, a strictly lower validation error replaces the best "
                "(the earliest of equals stays)."
            )
        )
        for t, s in cfg.overrides.items():
            if t in ggnn and s != OFFICIAL[t]:
                changed = ", ".join(
                    f"{f.name} {getattr(s, f.name)} instead of the authors' "
                    f"{getattr(OFFICIAL[t], f.name)}"
                    for f in dataclasses.fields(s)
                    if getattr(s, f.name) != getattr(OFFICIAL[t], f.name)
                )
                why = (
                    "chosen on validation accuracy over many initialisations after the authors' "
                    "setting failed on whole folds; docs/ggnn.md"
                    if s == DEVIATIONS.get(t)
                    else f"the {ctx.scale} scale's setting"
                )
                notes.append(f"{t}: {changed} ({why}).")
        notes += [
            f"{cell.upper()} on {t} ({_baseline_train(cfg, t)} training graphs, "
            f"{_baseline_updates(cfg, t, cell)} updates; the authors': "
            f"{BASELINE[t].updates(cell)}): {v['test_acc_mean']:.3f} ± {v['test_acc_std']:.3f} "
            f"({len(v['per_fold'])} fold{'s' if len(v['per_fold']) > 1 else ''})"
            for cell, per_task in baselines.items()
            for t, v in per_task.items()
        ]
        source = "the official symbolic files" if official else "paperzoo's bAbI generator"
        notes.append(f"Data: {source}; a question counts only if its whole output is right.")
        figures = [self._plot(summary, baselines, ctx)]
        return Outcome(
            measured=measured,
            data=data,
            figures=figures,
            notes=notes,
            details={
                "ggnn": summary,
                "baselines": baselines,
                "cpu_seconds": cpu,
                "official": official,
            },
        )

    def _plot(self, summary: dict[str, Any], baselines: dict[str, Any], ctx: RunContext) -> str:
        names = list(summary)
        fig = Figure(figsize=(9, 3.5))
        ax = fig.subplots()
        series = [("GG-NN / GGS-NN", {t: summary[t] for t in names})]
        series += [(c.upper(), per_task) for c, per_task in baselines.items()]
        width = 0.8 / len(series)
        for i, (label, per_task) in enumerate(series):
            xs = [
                j + (i - (len(series) - 1) / 2) * width
                for j, t in enumerate(names)
                if t in per_task
            ]
            ys = [per_task[t]["test_acc_mean"] for t in names if t in per_task]
            es = [per_task[t]["test_acc_std"] for t in names if t in per_task]
            ax.bar(xs, ys, width=width, yerr=es, capsize=2, label=label)
        ax.set_xticks(range(len(names)), names, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("test accuracy")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        fig.tight_layout()
        path, rel = ctx.figure_path("accuracy.png")
        fig.savefig(path, dpi=100)
        return rel


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.cost import Piece
    from paperzoo.experiments.ggnn import OFFICIAL
    from paperzoo.models.ggnn import GatedGraphNet

    nodes, batch = 20, cfg.batch_size  # per graph (an assumption), graphs per minibatch
    pieces = []
    per_task: dict[str, float] = {}
    for name, steps in plan:
        task = name.split(" ")[0]
        if task not in OFFICIAL:  # an RNN / LSTM baseline (not counted, see below)
            continue
        if task not in per_task:
            s = OFFICIAL[task]
            net = GatedGraphNet(
                state_dim=s.state_dim, annotation_dim=s.annotation_dim, num_edge_types=2,
                num_steps=cfg.num_prop_steps,
            )  # fmt: skip
            n = nodes * batch
            src = torch.arange(n)
            edges = torch.stack([src, (src + 1) % n]), torch.zeros(n, dtype=torch.long)
            x = torch.zeros(n, s.annotation_dim)
            per_task[task] = _ggnn_step(net, x, edges)
        pieces.append(Piece(name, per_task[task], steps))
    return pieces, (
        f"GG-NNs at the authors' state sizes on minibatches of {batch} graphs of {nodes} nodes "
        "and one edge per node (an assumption: bAbI graphs have tens of nodes); the RNN / LSTM "
        "baselines (hidden 50) and evaluation are not counted; either way a full GG-NN run "
        "is minutes of GPU work, bound by per-operation overhead rather than FLOP"
    )


def _ggnn_step(net: nn.Module, x: Tensor, edges: tuple[Tensor, Tensor]) -> float:
    """FLOP of a GG-NN training step on real (small) tensors: its sparse sums over edges need
    real indices, so this one is not counted on the meta device."""
    from paperzoo.utils.flops import count_flop

    def run() -> None:
        out = net(x, edges[0], edges[1])
        out.float().sum().backward()

    return float(count_flop(run))
