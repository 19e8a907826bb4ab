"""How Path-SGD's networks are trained and measured: the data preparation (``prepare``: a
stratified validation hold-out, inputs standardised with the training part's pixel statistics),
one grid run (``train_run``: an optimiser at one step size from one initialisation, its training
and validation curve every epoch, recorded in ``runs/TAG/curves.json``), the float64 invariance
pair (``invariance_nets``, ``invariance_diff``), the final test evaluation and the comparisons
of training-loss curves. Settings: ``config.py``; protocol: docs/path-sgd.md.
"""

from __future__ import annotations

import copy
import logging
import math
import shutil
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.data.splits import validation_split
from paperzoo.engine import NonFiniteLossError, TrainConfig, Trainer, budget, seeded
from paperzoo.engine import precision as num_precision
from paperzoo.experiments.base import RunContext
from paperzoo.experiments.grid import read_record, write_record
from paperzoo.metrics.classification import predict
from paperzoo.optim import PathSGD
from paperzoo.papers.path_sgd.config import INITS, Config

log = logging.getLogger(__name__)


@dataclass
class Run:
    init: str
    opt: str
    lr: float
    diverged: bool
    epochs: list[float]  # epoch of each curve point (0 = initialisation)
    train_loss: list[float]  # cross-entropy on the whole training part
    train_error: list[float]
    val_error: list[float]  # on the held-out validation part (chooses the step size)
    model: nn.Module | None  # the net after the budget (None: diverged), for the final evaluation
    test_error: float | None = None  # after the budget; only chosen runs are evaluated
    test_logits: Tensor | None = None  # (n_test, classes) after the budget, where evaluated

    @property
    def final_loss(self) -> float:
        return self.train_loss[-1] if not self.diverged else math.inf

    @property
    def selection_key(self) -> tuple[float, int, float]:
        """The paper's rule: the lowest validation error reached, then the earliest epoch."""
        if self.diverged or not self.val_error:
            return (math.inf, 0, -self.lr)
        best = min(self.val_error)
        return (best, self.val_error.index(best), -self.lr)

    def summary(self) -> dict[str, Any]:
        best, epoch, _ = self.selection_key
        return {
            "init": self.init,
            "optimizer": self.opt,
            "lr": self.lr,
            "diverged": self.diverged,
            "min_val_error": None if self.diverged else best,
            "min_val_error_epoch": None if self.diverged else epoch,
            "final_train_loss": None if self.diverged else self.train_loss[-1],
            "final_train_error": None if self.diverged else self.train_error[-1],
            "final_test_error": None if self.diverged else self.test_error,
        }


def mean_log10_ratio(other: Run, ref: Run) -> float | None:
    """mean over epochs 1..E of log10(other's training loss / ref's): the area between the two
    curves of Figure 2's loss panel on a log scale, per epoch; > 0 when ref is lower on average."""
    if other.diverged or ref.diverged:
        return None
    a = torch.tensor(other.train_loss[1:], dtype=torch.float64).clamp_min(1e-12)
    b = torch.tensor(ref.train_loss[1:], dtype=torch.float64).clamp_min(1e-12)
    return float((a.log10() - b.log10()).mean())


def relative_gradients(
    net: nn.Module, scales: dict[int, Tensor], x: Tensor, y: Tensor
) -> dict[str, float]:
    """||grad|| / ||w|| at initialisation of the incoming and outgoing weights of the rescaled
    units vs the other units of each hidden layer (what SGD's step size has to accommodate)."""
    net = copy.deepcopy(net)
    net.zero_grad()
    F.cross_entropy(net(x), y).backward()
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    out: dict[str, float] = {}
    for layer, s in scales.items():
        drawn = s != 1
        for tag, sel in (("rescaled", drawn), ("other", ~drawn)):
            if not bool(sel.any()):
                continue
            w_in, w_out = linears[layer].weight.detach(), linears[layer + 1].weight.detach()
            g_in, g_out = linears[layer].weight.grad, linears[layer + 1].weight.grad
            assert g_in is not None and g_out is not None
            rin = g_in[sel].norm() / w_in[sel].norm()
            rout = g_out[:, sel].norm() / w_out[:, sel].norm()
            out[f"layer{layer + 1}.{tag}.incoming"] = float(rin)
            out[f"layer{layer + 1}.{tag}.outgoing"] = float(rout)
    return out


def _loss_fn(net: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    x, y = batch
    return F.cross_entropy(net(x), y)


def _make_optimizer(
    opt: str, model: nn.Module, lr: float, input_shape: tuple[int, ...]
) -> torch.optim.Optimizer:
    if opt == "pathsgd":
        return PathSGD(model, lr=lr, input_shape=input_shape)
    if opt == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr)
    return torch.optim.Adagrad(model.parameters(), lr=lr)


def _rel_max_diff(a: Tensor, b: Tensor) -> float:
    """max |a - b| / max |a| over all entries (logits of the same inputs)."""
    return float((a - b).abs().max() / a.abs().max().clamp_min(1e-30))


@dataclass(frozen=True)
class Data:
    x_train: Tensor  # (N - n_val, ...) the examples trained on
    y_train: Tensor
    x_val: Tensor  # (n_val, ...) held out from the training split to choose the step size
    y_val: Tensor
    x_test: Tensor
    y_test: Tensor


def prepare(split: Any, cfg: Config, generator: torch.Generator) -> Data:
    """Hold out ``n_val`` training examples, a seeded random subset stratified by class (never
    the tail: a training file sorted by class would hold out its last classes only); standardise
    with the remaining training part.

    Args:
        split: the loaded data (``paperzoo.data.Split``).
        cfg: supplies ``n_val`` and ``standardize``.
        generator: draws the validation subset.

    Returns:
        Training, validation and test tensors.
    """
    n = len(split.x_train)
    if not 0 < cfg.n_val < n:
        raise ValueError(f"n_val must be in (0, {n}), got {cfg.n_val}")
    tr, va = validation_split(split.y_train, cfg.n_val, generator=generator)
    xtr, xval = split.x_train[tr], split.x_train[va]
    xte = split.x_test
    if cfg.standardize:
        mean, std = xtr.mean(), xtr.std().clamp_min(1e-12)  # one scalar each (global pixels)
        xtr, xval, xte = ((x - mean) / std for x in (xtr, xval, xte))
    return Data(xtr, split.y_train[tr], xval, split.y_train[va], xte, split.y_test)


def train_run(
    model: nn.Module,
    init: str,
    opt: str,
    lr: float,
    split: Data,
    cfg: Config,
    ctx: RunContext,
) -> Run:
    steps_per_epoch = len(split.x_train) // cfg.batch_size
    optimizer = _make_optimizer(opt, model, lr, tuple(split.x_train.shape[1:]))
    # --max-steps N: the curves on the first N batches of training and validation examples
    # (a dry run at full scale evaluated 2 x 50,000 examples through the 2 x 4000 MLP per
    # grid point before, most of its time); without a budget, every example.
    n_tr = budget.items(len(split.x_train), cfg.batch_size)
    n_va = budget.items(len(split.x_val), cfg.batch_size)
    x_tr, y_tr = split.x_train[:n_tr], split.y_train[:n_tr]
    x_va, y_va = split.x_val[:n_va], split.y_val[:n_va]

    def evaluate(net: nn.Module) -> dict[str, float]:  # the curves: training and validation
        tr = predict(net, x_tr, device=ctx.device)
        va = predict(net, x_va, device=ctx.device)
        return {
            "train_loss": float(F.cross_entropy(tr, y_tr)),
            "train_error": float((tr.argmax(1) != y_tr).float().mean()),
            "val_error": float((va.argmax(1) != y_va).float().mean()),
        }

    tag = f"{init}-{opt}-lr{lr:g}"
    run_dir = ctx.out_dir / "runs" / tag
    curves = run_dir / "curves.json"  # the run's record, kept when its weights are pruned
    if curves.exists() and not (run_dir / "checkpoints" / "latest.json").exists():
        log.info("%s: finished earlier (weights pruned), loading %s", tag, curves)
        return Run(**read_record(curves), model=None)
    trainer = Trainer(
        model,
        optimizer,
        _loss_fn,
        config=TrainConfig(
            steps=cfg.epochs * steps_per_epoch,
            batch_size=cfg.batch_size,
            seed=ctx.seed,
            log_every=steps_per_epoch,
            eval_every=steps_per_epoch,
            progress=ctx.progress,
            desc=tag,
        ),
        eval_fn=evaluate,
        device=ctx.device,
        out_dir=run_dir,
    )
    model.eval()
    with torch.no_grad():
        first = evaluate(model)
    diverged = False
    try:
        with seeded(ctx.seed):  # the same dropout masks in every run
            hist = trainer.fit((split.x_train, split.y_train), resume=True)
    except NonFiniteLossError as err:
        log.info("%s diverged: %s", tag, err)
        diverged, hist = True, trainer.history
    points = [first] + [
        {k: r[k] for k in ("train_loss", "train_error", "val_error")}
        for r in hist.records
        if "train_loss" in r
    ]
    if diverged or not all(math.isfinite(p["train_loss"]) for p in points):
        diverged = True
    record = {
        "init": init,
        "opt": opt,
        "lr": lr,
        "diverged": diverged,
        "epochs": [float(i) for i in range(len(points))],
        "train_loss": [p["train_loss"] for p in points],
        "train_error": [p["train_error"] for p in points],
        "val_error": [p["val_error"] for p in points],
    }
    write_record(curves, record)
    return Run(**record, model=None if diverged else model)


def evaluate_test(run: Run, data: Data, ctx: RunContext) -> None:
    """The final numbers of a run (inside the final evaluation): test logits and error."""
    if run.model is None:
        return
    te = predict(run.model, data.x_test, device=ctx.device)
    run.test_logits = te
    run.test_error = float((te.argmax(1) != data.y_test).float().mean())


def invariance_nets(
    nets: dict[str, nn.Module],
    opt: str,
    lr: float,
    split: Data,
    cfg: Config,
    ctx: RunContext,
) -> list[nn.Module] | None:
    """Both nets trained the same way (float64); None if one diverged. The final evaluation
    compares their test logits."""
    x, y = split.x_train.double(), split.y_train
    trained = []
    for init in INITS:
        model = copy.deepcopy(nets[init])
        trainer = Trainer(
            model,
            _make_optimizer(opt, model, lr, tuple(x.shape[1:])),
            _loss_fn,
            config=TrainConfig(
                steps=cfg.invariance_steps,
                batch_size=cfg.batch_size,
                seed=ctx.seed,
                log_every=max(1, cfg.invariance_steps),
                progress=ctx.progress,
                desc=f"invariance-{init}-{opt}",
            ),
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / f"invariance-{init}-{opt}-lr{lr:g}",
        )
        try:
            with seeded(ctx.seed):
                trainer.fit((x, y), resume=True)
        except NonFiniteLossError as err:
            log.info("invariance run %s/%s diverged: %s", init, opt, err)
            return None
        trained.append(model)
    return trained


def invariance_diff(pair: list[nn.Module] | None, data: Data, ctx: RunContext) -> float | None:
    """The max relative difference of the float64 pair's test logits (None: one diverged); in
    the final evaluation. An exact property: the forwards run in ``exact_comparison`` (bf16
    autocast leaves float64 alone, but the check does not rely on it)."""
    if pair is None:
        return None
    with num_precision.exact_comparison():
        logits = [predict(net, data.x_test.double(), device=ctx.device) for net in pair]
    return _rel_max_diff(*logits)


def pair_diff(runs: dict[tuple[str, str, float], Run], opt: str, lr: float) -> float | None:
    a, b = runs[("balanced", opt, lr)], runs[("unbalanced", opt, lr)]
    if a.test_logits is None or b.test_logits is None:
        return None
    return _rel_max_diff(a.test_logits, b.test_logits)


def prune_checkpoints(
    runs: dict[tuple[str, str, float], Run],
    keep: dict[int, Run],
    ctx: RunContext,
) -> None:
    """Keep the checkpoints of the runs the final evaluation reads only (the grid would fill
    the disk); the others' curves stay in their ``curves.json``."""
    for (init, opt, lr), r in runs.items():
        if id(r) not in keep:
            shutil.rmtree(ctx.out_dir / "runs" / f"{init}-{opt}-lr{lr:g}" / "checkpoints", True)
