"""Training K independent small models as one batched model.

Small models (the GG-NN paper's RNN / LSTM baselines: hidden size 50, minibatches of 10-100)
spend much of a step in per-operation overhead; K of them stacked along a leading model
dimension (``paperzoo.models.ggnn.StackedSequenceBaseline``) run in about the time of a few. Each
model keeps what it would have alone:

* its own initialisation (the stacked module copies K separately seeded models),
* its own data and batch order (one ``BatchSampler`` per model, seeded as a ``Trainer`` would
  seed it, so batch ``s`` of model k is the one it would see alone),
* its own optimiser state and gradient clipping: the loss is the sum of the K models' losses,
  so the gradient of model k's slice is its own gradient, and an element-wise optimiser (Adam)
  and element-wise clamping on stacked tensors are K independent ones,
* its own validation-based model selection (``BatchedKeeper``: best validation accuracy, ties by
  lower loss, per model).

Under ``--precision bf16`` the stacked model's forwards run under bf16 autocast (outputs back in
float32; ``paperzoo.engine.precision``), as in ``Trainer``.

So each model's trajectory equals training it alone, up to float round-off (tests/engine/
test_batched.py; a model-level test in tests/papers/test_ggnn.py).

Under a step budget (``--max-steps``) the K models are one loop: at most N steps run, timed, and
the estimate is ``planned x`` the time per batched step (plus the evaluations the full run makes
on the way); checkpoints every ``checkpoint_seconds`` let a long group resume exactly.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.engine import budget as step_budget
from paperzoo.engine import checkpoint as ckpt
from paperzoo.engine import interrupt
from paperzoo.engine import precision as num_precision
from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.sampler import BatchSampler
from paperzoo.engine.trainer import checkpoint_seconds_default
from paperzoo.utils.io import atomic_write_text

__all__ = ["BatchedKeeper", "fit_batched", "model_samplers"]

log = logging.getLogger(__name__)


def model_samplers(
    sizes: Sequence[int],
    batch_sizes: Sequence[int],
    seeds: Sequence[int],
    *,
    drop_last: bool = True,
) -> list[BatchSampler]:
    """One ``BatchSampler`` per model, as a ``Trainer`` with ``TrainConfig(batch_size, seed,
    drop_last)`` builds it (no DDP): ``indices(step)`` is model k's batch of step ``step``."""
    return [
        BatchSampler(n, bs, seed=s, drop_last=drop_last, dist=DistInfo())
        for n, bs, s in zip(sizes, batch_sizes, seeds, strict=True)
    ]


class BatchedKeeper:
    """Per-model selection on validation data: model k's best (accuracy, -loss) and a copy of its
    slice of every stacked tensor at that point (ties keep the earlier, as ``_BestKeeper``).

    Args:
        num_models: K.
    """

    def __init__(self, num_models: int) -> None:
        self.best: list[tuple[float, float]] = [(-1.0, 0.0)] * num_models
        self.state: list[dict[str, Tensor] | None] = [None] * num_models

    def update(self, model: nn.Module, acc: Sequence[float], loss: Sequence[float]) -> None:
        params = model.state_dict()
        for k, (a, lo) in enumerate(zip(acc, loss, strict=True)):
            if (a, -lo) > self.best[k]:
                self.best[k] = (float(a), -float(lo))
                self.state[k] = {n: t[k].detach().clone() for n, t in params.items()}

    def load_into(self, model: nn.Module) -> None:
        """Write every model's selected slice back into the stacked module (models that were
        never evaluated keep their last parameters)."""
        with torch.no_grad():
            params = model.state_dict()
            for k, st in enumerate(self.state):
                if st is not None:
                    for n, t in params.items():
                        t[k].copy_(st[n])

    def state_dict(self) -> dict[str, Any]:
        return {"best": [list(b) for b in self.best], "state": list(self.state)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best = [(float(a), float(b)) for a, b in state["best"]]
        self.state = list(state["state"])


def fit_batched(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, int], Tensor],
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    evaluate: Callable[[nn.Module], tuple[Sequence[float], Sequence[float]]] | None,
    eval_every: int,
    keeper: BatchedKeeper,
    clamp: float | None = None,
    desc: str = "batched",
    out_dir: Path | None = None,
    resume: bool = True,
    checkpoint_seconds: float | None = None,
) -> list[dict[str, Any]]:
    """Train a stacked model of K independent models for ``steps`` steps.

    Args:
        model: the K models, every tensor stacked along dimension 0.
        loss_fn: ``(model, step) -> (K,)`` each model's loss on its own batch ``step``.
        optimizer: an element-wise optimiser over ``model``'s parameters (Adam, SGD).
        steps: updates of every model.
        evaluate: ``model -> (accuracies, losses)``, K each, on validation data (eval mode, no
            gradients); None: no selection (the last parameters are kept).
        eval_every: validate every this many updates and after the last (as ``Trainer``).
        keeper: receives the evaluations; its selection is loaded into ``model`` at the end.
        clamp: clamp every gradient entry to [-clamp, clamp] (None: no clamping).
        desc: the loop's name (progress, step budget).
        out_dir: where checkpoints (``checkpoints/``) and ``metrics.jsonl`` go (None: neither).
        resume: continue from the newest checkpoint in ``out_dir`` (batch ``s`` depends only on
            ``s``, so the trajectory is the same); a run finished at ``steps`` is loaded.
        checkpoint_seconds: wall seconds between checkpoints (default: ``Trainer``'s).

    Returns:
        The log: one record per evaluation, ``{"step", "loss": [K], "mean_loss": [K],
        "val_acc": [K], "val_loss": [K]}``: ``loss`` the losses of that step (not in the last
        record), ``mean_loss`` their mean over the steps since the previous record (what
        ``Trainer`` logs with ``log_every == eval_every``).
    """
    history: list[dict[str, Any]] = []
    # Sum of the K losses over the steps since the previous record, and their number.
    window: dict[str, Any] = {"sum": None, "steps": 0}
    start, resumed = 0, False
    ckpt_dir = None if out_dir is None else out_dir / "checkpoints"
    if ckpt_dir is not None and resume and ckpt.latest_step(ckpt_dir) is not None:
        resumed = True
        start, state = ckpt.load_state(ckpt_dir)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        keeper.load_state_dict(state["keeper"])
        history = json.loads(state["history"])
        window = state.get("window", window)
        log.info("%s: resumed at step %d", desc, start)
        if state["finished"] and start >= steps:  # (steps may grow: training continues)
            keeper.load_into(model)
            return history
    if ckpt_dir is not None:  # (inside ckpt.evaluation_only: refused)
        ckpt.check_may_train(ckpt_dir, desc)
    if ckpt_dir is not None and not resumed:
        ckpt.remove_all(ckpt_dir)

    def save(step: int, finished: bool) -> None:
        if ckpt_dir is None:
            return
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "keeper": keeper.state_dict(),
            "history": json.dumps(history),
            "window": window,
            "finished": finished,
        }
        ckpt.save_state(ckpt_dir, step, state)

    # The first step whose K losses were not all finite, kept on the losses' device (-1 before
    # it) and read only where the loop reads the device anyway: before a validation, a
    # checkpoint, a stop and at the end (no host sync per step).
    first_bad: Tensor | None = None

    def check_finite() -> None:
        if first_bad is not None and (bad := int(first_bad)) >= 0:
            raise FloatingPointError(f"{desc}: non-finite loss at step {bad}")

    def validate(step: int, losses: Tensor | None) -> None:
        check_finite()
        if evaluate is None:
            return
        was = model.training
        model.eval()
        try:
            with torch.no_grad():
                acc, loss = evaluate(model)
        finally:
            model.train(was)
        keeper.update(model, acc, loss)
        rec: dict[str, Any] = {"step": step, "val_acc": list(acc), "val_loss": list(loss)}
        if losses is not None:
            rec["loss"] = losses.tolist()
        if window["steps"]:
            rec["mean_loss"] = (window["sum"] / window["steps"]).tolist()
        window["sum"], window["steps"] = None, 0
        history.append(rec)

    b = step_budget.active()
    b = None if b is None or b.inside_step else b
    planned = steps
    run_steps = b.cap(steps) if b is not None else steps
    every = checkpoint_seconds if checkpoint_seconds is not None else checkpoint_seconds_default()
    # --precision bf16: the model's forwards (training and validation) under autocast, outputs
    # back in fp32, so the summed loss, its backward and the optimiser are fp32 (engine.precision)
    forwards = num_precision.autocast_modules([model])
    with b.track(desc, "steps", planned) if b is not None else nullcontext() as node, forwards:
        model.train()
        # Under a step budget the steps are timed: the first apart, and the validations and
        # checkpoints on the way apart from the steps (the estimate counts them itself).
        # On CUDA the steps after the first are watched for synchronising calls.
        clock = None
        if node is not None and b is not None:
            clock = step_budget.StepClock(node, b.sync, b.device.type == "cuda")
        apart = clock.apart if clock is not None else nullcontext
        in_clock_step = clock.step if clock is not None else nullcontext
        saved = time.monotonic()
        step = start
        try:
            with interrupt.deferred(), b.stepping() if b is not None else nullcontext():
                while step < run_steps:
                    with in_clock_step():
                        losses = loss_fn(model, step)  # (K,)
                        optimizer.zero_grad(set_to_none=True)
                        losses.sum().backward()  # model k's slice gets model k's gradient
                        if clamp is not None:
                            for p in model.parameters():
                                if p.grad is not None:
                                    p.grad.clamp_(-clamp, clamp)
                        optimizer.step()
                        step += 1
                        finite = torch.isfinite(losses.detach()).all()
                        if first_bad is None:
                            first_bad = torch.full((), -1, dtype=torch.long, device=losses.device)
                        first_bad = torch.where(finite | (first_bad >= 0), first_bad, step)
                        done = losses.detach().double()
                        prev = window["sum"]
                        window["sum"] = done if prev is None else prev.to(done) + done
                        window["steps"] += 1
                    if eval_every and step % eval_every == 0 and step < run_steps:
                        with apart():
                            validate(step, losses.detach())
                    if ckpt_dir is not None and every and time.monotonic() - saved >= every:
                        check_finite()
                        with apart():
                            save(step, False)
                        saved = time.monotonic()
                    if clock is not None:
                        clock.done()
                    if interrupt.requested() is not None:
                        check_finite()
                        save(step, False)
                        raise interrupt.Interrupted(interrupt.requested() or 0)
        finally:
            if clock is not None:
                clock.finish()
        t_eval = time.perf_counter()
        validate(step, None)
        if node is not None and evaluate is not None and eval_every:
            # The full run also validates every eval_every updates on the way.
            node.extra_seconds += (planned - 1) // eval_every * (time.perf_counter() - t_eval)
    save(step, True)  # the last parameters (a longer run continues from them)
    keeper.load_into(model)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out_dir / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in history))
    return history
