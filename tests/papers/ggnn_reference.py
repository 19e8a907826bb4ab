"""Reference paths of the GG-NN reproduction, kept to check its fast paths against: each run
trained alone with ``Trainer`` (``train_attempt``, ``baseline_alone``), the sequential restart
rule (``best_of_restarts``) and the single-model checkpoint keeper (``BestKeeper``). The
reproduction trains the runs of a question type, and the baselines of all folds, as one batched
model (``paperzoo.papers.ggnn.training``); tests/papers/test_ggnn.py checks that each
run follows the trajectory it has here. Protocol: docs/ggnn.md.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.data import babi
from paperzoo.engine import TrainConfig, Trainer, budget, derive_seed, seeded
from paperzoo.experiments.base import RunContext
from paperzoo.models.ggnn import SequenceBaseline
from paperzoo.papers.ggnn.config import (
    BASELINE,
    Config,
    _baseline_train,
    _baseline_updates,
    _fold_key,
    _seed_key,
    task_setting,
)
from paperzoo.papers.ggnn.training import (
    _better,
    _EpochBatches,
    _graph_logits,
    _sequence_loss,
    _split_train,
    graph_eval,
    make_model,
    sequence_eval,
)


def clamped_step(
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


class BestKeeper:
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


def train_graph_model(
    name: str,
    task: babi.BabiTask,
    cfg: Config,
    ctx: RunContext,
    train: list[babi.GraphExample],
    val: list[babi.GraphExample],
    run_key: tuple[int | str, ...],
) -> tuple[nn.Module, tuple[float, float]]:
    """One training run; returns the selected model and its (val accuracy, -val loss)."""
    s = task_setting(name, cfg)
    with seeded(derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "init")):
        model = make_model(task, s, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    kind = task.kind

    def loss_of(m: nn.Module, b: dict[str, Tensor]) -> Tensor:
        return _sequence_loss(_graph_logits(m, kind, b), b["y"])

    seed = derive_seed(ctx.seed, name, *_seed_key(cfg, run_key), "batches")
    keeper = BestKeeper(lambda m: graph_eval(m, kind, val), ties_by_loss=cfg.ties_by_loss)
    trainer = Trainer(
        model,
        None,
        clamped_step(opt, loss_of),
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


def train_attempt(
    name: str,
    task: babi.BabiTask,
    cfg: Config,
    ctx: RunContext,
    train: list[babi.GraphExample],
    val: list[babi.GraphExample],
    key: tuple[str, ...],
    attempt: int,
) -> tuple[nn.Module, tuple[float, float]]:
    """Run ``attempt`` (its own initialisation and batch order) of the runs under ``key``,
    alone: the reference ``training.train_restarts`` is tested against."""
    return train_graph_model(name, task, cfg, ctx, train, val, (*key, f"a{attempt}"))


def baseline_alone(
    name: str, cell: str, cfg: Config, ctx: RunContext, fold: int, task: babi.BabiTask
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

    keeper = BestKeeper(
        lambda m: sequence_eval(m, *val),  # type: ignore[arg-type]
        ties_by_loss=cfg.ties_by_loss,
    )
    trainer = Trainer(
        model,
        None,
        clamped_step(opt, loss_of),
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
