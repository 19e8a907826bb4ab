"""The one training loop every paper uses.

A ``Trainer`` owns: batch sampling (a deterministic function of seed and step, so resuming from a
checkpoint continues the exact same trajectory), the optimisation step, learning-rate schedules as
pure functions of the step, NaN/inf detection, metric averaging (``engine.window``) and JSONL
logging (TensorBoard too when asked for: ``engine.tensorboard``), progress bars, periodic atomic
checkpoints (every ``checkpoint_every`` steps and every ``checkpoint_seconds`` of wall time), clean
stops on SIGINT / SIGTERM (``engine.interrupt``), and DistributedDataParallel when the process
was launched by ``torchrun`` (unless ``local=True``: a model of this process alone, e.g. one item
of a grid that the ranks share out).

The host does not wait for the device at every step. The loss and the metrics of each step stay
on the device, summed into a window that also marks the first step whose loss was not finite;
the host reads them only at sync points: every ``log_every`` steps, at the last step, before a
checkpoint is written and before an evaluation. There a loss that was not finite raises
``NonFiniteLossError`` naming that step (the steps run after it are discarded with the run: no
checkpoint is written past it). A stop signal in one process is seen at the end of the step it
arrived in (that step becomes a sync point), as is a timed checkpoint that is due.

Under a process group (DDP) the ranks decide together, at the sync points, which every rank
reaches at the same steps: one all-reduce (MAX) tells every rank whether a loss was not finite
on any rank (every rank raises ``NonFiniteLossError`` naming the earliest such step), whether a
stop signal reached any rank (every rank stops after that step; rank 0 writes the stop
checkpoint) and whether a timed checkpoint is due on any rank. The ranks also meet at least every
``agree_seconds`` (``MeetingSchedule``), so a signal stops them within about that. Each record is
the mean over the ranks (the record of the global batch, the same on every rank), and the ranks
check that they resumed the same checkpoint.

Resuming (``fit(resume=True)``) continues exactly where the newest checkpoint left off: weights,
optimizer states, the global RNG, the state of ``extra`` generators and stateful objects, and the
logged history all come back, and batches are a function of the step. A run whose final
checkpoint is there is not trained again: its weights and history are loaded and ``fit`` returns.

Under a step budget (``paperzoo.engine.budget``, ``reproduce --max-steps N``) ``fit`` runs at
most N steps, times them for the run's time estimate, and checkpoints the capped run as finished;
learning-rate schedules, which close over the planned step count, are unchanged.

Under ``--precision bf16`` (``paperzoo.engine.precision``) the forward passes of the model and of
the ``extra`` modules run under bf16 autocast while ``fit`` runs (periodic evaluation included);
their outputs come back in float32, so the loss, the backward pass, the optimizer step and the
logged metrics are float32.

Two ways to define a step:

* ``loss_fn(model, batch) -> loss`` or ``-> (loss, {"name": value, ...})``: the trainer zeroes the
  gradients, back-propagates, clips (optional) and steps the optimizer.
* ``manual=True``: ``loss_fn(model, batch) -> {"loss": ..., ...}`` performs its own updates (e.g.
  the alternating generator/classifier updates of GAT); the trainer logs, checks and checkpoints.

Metric values may be tensors (kept on the device until a sync point; a tensor of several elements
logs its mean) or Python numbers; returning tensors rather than ``.item()`` spares a host sync
per step. Batches of data tensors that live on the device are gathered there (the step's indices
copied over without blocking); batches made on the host reach CUDA from pinned memory.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor, nn
from torch.utils.data import Dataset, default_collate

from paperzoo.engine import budget as step_budget
from paperzoo.engine import checkpoint as ckpt
from paperzoo.engine import faults, interrupt
from paperzoo.engine import precision as num_precision
from paperzoo.engine import tensorboard as tb
from paperzoo.engine.distributed import (
    DistInfo,
    MeetingSchedule,
    agree_max,
    all_reduce_means,
    current,
)
from paperzoo.engine.progress import ProgressLines
from paperzoo.engine.sampler import BatchSampler
from paperzoo.engine.seeding import capture_global_rng, derive_seed, restore_global_rng
from paperzoo.engine.transfer import batch_to_device, to_device
from paperzoo.engine.window import MetricWindow
from paperzoo.utils.io import WriteError, atomic_write_text, is_disk_error

log = logging.getLogger(__name__)

Batch = tuple[Tensor, ...]
DataSource = Sequence[Tensor] | Dataset | Callable[[int, torch.Generator], Batch]
LossOutput = Tensor | tuple[Tensor, dict[str, Any]] | dict[str, Any]


@runtime_checkable
class Stateful(Protocol):
    """Anything whose state belongs in a checkpoint: ``state_dict()`` returns nested dicts /
    lists / tuples of tensors and plain values, ``load_state_dict`` takes that back."""

    def state_dict(self) -> Any: ...

    def load_state_dict(self, state: Any) -> Any: ...


Extra = nn.Module | torch.optim.Optimizer | torch.Generator | Stateful
# The TrainConfig fields a checkpoint must agree with to be resumed.
# (``steps`` may grow: a finished run continues to a larger step count.)
_FINGERPRINT = ("batch_size", "seed", "grad_clip", "drop_last")


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite; ``step`` is the first step whose loss was not finite
    (the error is raised at the next sync point, see the module doc) and, under a process group,
    ``elsewhere`` says that it was another rank's loss (every rank raises at the same sync point,
    naming the same step)."""

    def __init__(self, step: int, value: float, *, elsewhere: bool = False) -> None:
        where = " on another rank" if elsewhere else ""
        super().__init__(
            f"loss became {value}{where} at step {step}; lower the learning rate, clip "
            "gradients, or check the inputs for NaN"
        )
        self.step = step
        self.value = value
        self.elsewhere = elsewhere


@dataclass(frozen=True)
class TrainConfig:
    steps: int  # total optimisation steps
    batch_size: int = 64  # global batch (split across ranks under torchrun)
    seed: int = 0  # seeds batch order (and the step generator)
    log_every: int = 50  # average metrics over this many steps, then log a record
    eval_every: int = 0  # run eval_fn every this many steps (0: only at the end)
    checkpoint_every: int = 0  # write a checkpoint every this many steps (0: only at the end)
    # and after this many wall seconds since the last (0: off; None: checkpoint_seconds_default())
    checkpoint_seconds: float | None = None
    keep_checkpoints: int = 2  # newest checkpoints kept on disk
    grad_clip: float | None = None  # max global gradient norm (None: no clipping)
    drop_last: bool = True  # epochs are whole batches (the last partial batch is skipped)
    channels_last: bool = False  # 4-D inputs and the model in channels-last memory format
    compile: bool = False  # torch.compile the model for the training forward pass
    progress: bool = True  # rank 0: a tqdm bar on a TTY, else a log line every progress_seconds
    progress_seconds: float = 30.0  # off a TTY: wall seconds between progress log lines
    # under a process group: the ranks meet (to agree on a stop) at least this often, besides
    # the sync points (engine.distributed.MeetingSchedule)
    agree_seconds: float = 5.0
    desc: str = "train"  # progress-bar label

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.log_every < 1:
            raise ValueError(f"log_every must be >= 1, got {self.log_every}")
        if not self.agree_seconds > 0:
            raise ValueError(f"agree_seconds must be > 0, got {self.agree_seconds}")
        if self.checkpoint_seconds is not None and self.checkpoint_seconds < 0:
            raise ValueError(f"checkpoint_seconds must be >= 0, got {self.checkpoint_seconds}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be positive, got {self.grad_clip}")


CHECKPOINT_SECONDS_ENV = "PAPERZOO_CHECKPOINT_SECONDS"


def checkpoint_seconds_default() -> float:
    """Wall seconds between checkpoints when a ``TrainConfig`` leaves it open: the environment
    variable ``PAPERZOO_CHECKPOINT_SECONDS`` if set (it reaches the processes of a multi-seed
    run too), else 300."""
    raw = os.environ.get(CHECKPOINT_SECONDS_ENV)
    if raw is None or not raw.strip():
        return 300.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise ValueError(f"{CHECKPOINT_SECONDS_ENV} must be a number of seconds >= 0, got {raw!r}")
    return value


@dataclass
class History:
    """Logged records: ``{"step": s, "name": value, ...}``, one per log/eval event."""

    records: list[dict[str, float]] = field(default_factory=list)

    def series(self, name: str) -> tuple[list[int], list[float]]:
        """(steps, values) of every record that has ``name``."""
        pts = [(int(r["step"]), float(r[name])) for r in self.records if name in r]
        return [p[0] for p in pts], [p[1] for p in pts]

    def last(self, name: str) -> float:
        """The newest logged value of ``name``."""
        for r in reversed(self.records):
            if name in r:
                return float(r[name])
        raise KeyError(f"metric {name!r} was never logged")


def has_running_stats(model: nn.Module) -> bool:
    """Whether ``model`` has batch-norm running statistics: the only buffers DDP must copy from
    rank 0 before each forward (constant buffers, e.g. position encodings, are the same on
    every rank already; broadcasting them every step only costs time)."""
    return any(
        isinstance(m, nn.modules.batchnorm._NormBase) and m.track_running_stats
        for m in model.modules()
    )


class Trainer:
    """Runs ``config.steps`` optimisation steps of ``loss_fn`` on ``data``.

    Args:
        model: the network being trained (wrapped in DDP under torchrun).
        optimizer: its optimizer; ``None`` only with ``manual=True``.
        loss_fn: ``(model, batch) -> loss | (loss, metrics) | metrics`` (see the module doc).
        config: loop settings.
        out_dir: where ``metrics.jsonl`` and ``checkpoints/`` go (nothing is written if ``None``).
        lr_schedule: ``step -> multiplier`` of each param group's initial learning rate.
        eval_fn: ``(model) -> metrics`` run every ``config.eval_every`` steps and at the end.
        extra: further state that belongs in checkpoints: modules and optimizers (GAN-style
            setups, manual steps), ``torch.Generator``s drawn from during training, and
            ``Stateful`` objects (e.g. an ``eval_fn`` that keeps the best parameters).
        manual: ``loss_fn`` performs its own parameter updates.
        device: where batches and the model live.
        local: the model belongs to this process alone (under torchrun each rank trains its own
            models, e.g. its items of a grid): no DDP wrapper, every batch whole on this process
            (not split across ranks), and every rank logs and checkpoints into its ``out_dir``.
        tensorboard: also write the logged records as TensorBoard scalars to
            ``out_dir/tensorboard`` (rank 0); None: when the run asked for them
            (``engine.tensorboard.requested``, ``reproduce --tensorboard``). The writer is open
            while ``fit`` runs and closed when it returns or raises, and by ``close`` (the
            Trainer is also a context manager that closes it).
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None,
        loss_fn: Callable[[nn.Module, Any], LossOutput],
        *,
        config: TrainConfig,
        out_dir: str | Path | None = None,
        lr_schedule: Callable[[int], float] | None = None,
        eval_fn: Callable[[nn.Module], dict[str, float]] | None = None,
        extra: dict[str, Extra] | None = None,
        manual: bool = False,
        device: str | torch.device = "cpu",
        local: bool = False,
        tensorboard: bool | None = None,
    ) -> None:
        if optimizer is None and not manual:
            raise ValueError("an optimizer is required unless manual=True")
        self.config = config
        self.device = torch.device(device)
        self.local = local
        # A local model sees a process group of one: no DDP, whole batches, this rank writes.
        self.dist = DistInfo() if local else current()
        self.model = model.to(self.device)
        if config.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.lr_schedule = lr_schedule
        self.eval_fn = eval_fn
        self.extra = dict(extra or {})
        for k, v in self.extra.items():
            if not isinstance(v, nn.Module | torch.optim.Optimizer | torch.Generator | Stateful):
                raise TypeError(
                    f"extra[{k!r}] must be a module, optimizer, generator or have "
                    f"state_dict/load_state_dict, got {type(v).__name__}"
                )
        self.manual = manual
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.history = History()
        self.step = 0
        self.finished = False  # the final checkpoint was written (or loaded)
        self._saved_at = time.monotonic()  # when the last checkpoint was written
        self._window = MetricWindow()  # the metrics since the last record, on the device
        if tensorboard is None:
            tensorboard = tb.is_requested()
        self._tb: tb.ScalarWriter | None = None
        if tensorboard and self.out_dir is not None and self.dist.is_main:
            self._tb = tb.ScalarWriter(self.out_dir / "tensorboard")
        self._timing: step_budget.Loop | None = None  # fit under a step budget: its record
        self._meetings: MeetingSchedule | None = None  # under a group: when the ranks meet
        inject = faults.inject_nan_at()  # PAPERZOO_INJECT_NAN=RANK:STEP (tests of divergence)
        self._nan_step = inject[1] if inject is not None and inject[0] == current().rank else None
        self._train_model = self._wrap(self.model)
        for opt in self._optimizers().values():
            for g in opt.param_groups:
                g.setdefault("initial_lr", g["lr"])

    # -- setup --------------------------------------------------------------------------------
    def _wrap(self, model: nn.Module) -> nn.Module:
        wrapped: nn.Module = model
        if self.dist.enabled and any(p.requires_grad for p in model.parameters()):
            ids = [self.device.index] if self.device.type == "cuda" else None
            wrapped = nn.parallel.DistributedDataParallel(
                model, device_ids=ids, broadcast_buffers=has_running_stats(model)
            )
        if self.config.compile:
            wrapped = torch.compile(wrapped)  # type: ignore[assignment]
        return wrapped

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        opts = {k: v for k, v in self.extra.items() if isinstance(v, torch.optim.Optimizer)}
        if self.optimizer is not None:
            opts["optimizer"] = self.optimizer
        return opts

    def _modules(self) -> dict[str, nn.Module]:
        mods = {k: v for k, v in self.extra.items() if isinstance(v, nn.Module)}
        mods["model"] = self.model
        return mods

    def _generators(self) -> dict[str, torch.Generator]:
        return {k: v for k, v in self.extra.items() if isinstance(v, torch.Generator)}

    def _objects(self) -> dict[str, Stateful]:
        kinds = nn.Module | torch.optim.Optimizer | torch.Generator
        objs = {k: v for k, v in self.extra.items() if not isinstance(v, kinds)}
        return objs  # type: ignore[return-value]

    def _fingerprint(self) -> dict[str, Any]:
        return {k: getattr(self.config, k) for k in _FINGERPRINT}

    @property
    def checkpoint_dir(self) -> Path | None:
        return self.out_dir / "checkpoints" if self.out_dir is not None else None

    # -- state --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "modules": {k: m.state_dict() for k, m in self._modules().items()},
            "optimizers": {k: o.state_dict() for k, o in self._optimizers().items()},
            "generators": {k: g.get_state() for k, g in self._generators().items()},
            "objects": {k: o.state_dict() for k, o in self._objects().items()},
            "rng": capture_global_rng(),
            "history": self.history.records,
            "window_sums": self._window.state_dict(),
            "config": self._fingerprint(),
            "finished": self.finished,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("config")
        if saved is not None and saved != self._fingerprint():
            diff = ", ".join(
                f"{k} {saved.get(k)!r} -> {v!r}"
                for k, v in self._fingerprint().items()
                if saved.get(k) != v
            )
            raise ckpt.CheckpointError(
                f"the checkpoint in {self.checkpoint_dir} was written with other settings "
                f"({diff}): train into another directory, or restart the run (--restart)"
            )
        try:
            for k, m in self._modules().items():
                m.load_state_dict(state["modules"][k])
            for k, o in self._optimizers().items():
                o.load_state_dict(state["optimizers"][k])
            for k, g in self._generators().items():
                g.set_state(state["generators"][k].to(torch.uint8))
            for k, obj in self._objects().items():
                obj.load_state_dict(state["objects"][k])
        except (KeyError, RuntimeError, ValueError) as err:
            raise ckpt.CheckpointError(
                f"the checkpoint in {self.checkpoint_dir} does not match this model: {err}"
            ) from err
        restore_global_rng(state["rng"])
        self.history = History([dict(r) for r in state["history"]])
        if "window_sums" in state:
            self._window = MetricWindow()
            self._window.load_state_dict(state["window_sums"])
        else:  # checkpoints written before the window kept sums: the values of its steps
            self._window = MetricWindow.from_values(state["window"])
        if self.step > self.config.steps:
            raise ckpt.CheckpointError(
                f"the checkpoint in {self.checkpoint_dir} is at step {self.step}, past this "
                f"run's {self.config.steps} steps: train into another directory, or restart the run "
                "(--restart)"
            )
        # (Checkpoints written before the flag existed: the last one was written at the end.)
        done = bool(state.get("finished", True))
        self.finished = done and self.step == self.config.steps

    def save_checkpoint(self) -> None:
        """Write a checkpoint of the current step (rank 0). Under a process group every rank
        calls this at the same step: the window of values not yet logged is first averaged over
        the ranks, so that a resumed run's records are means over the ranks too. The training
        loop calls it at sync points only (the window is read there anyway, and a loss that was
        not finite has raised before any checkpoint holds weights trained past it)."""
        if self.checkpoint_dir is None:
            return
        if self.dist.enabled:
            sums = self._window.read().sums
            keys = sorted(sums)
            self._window.replace_sums(
                dict(zip(keys, all_reduce_means([sums[k] for k in keys]), strict=True))
            )
            self._saved_at = time.monotonic()
        if not self.dist.is_main:
            return
        ckpt.save_state(
            self.checkpoint_dir, self.step, self.state_dict(), keep=self.config.keep_checkpoints
        )
        self._saved_at = time.monotonic()

    def resume(self) -> bool:
        """Load the newest checkpoint in ``out_dir`` if there is one; True if something loaded."""
        d = self.checkpoint_dir
        if d is None or ckpt.latest_step(d) is None:
            return False
        self.step, state = ckpt.load_state(d)
        self.load_state_dict(state)
        if self.finished:
            log.info("%s: finished earlier, loaded from %s", self.config.desc, d)
        else:
            log.info("%s: resumed from step %d in %s", self.config.desc, self.step, d)
        return True

    # -- data ---------------------------------------------------------------------------------
    def _batches(self, data: DataSource) -> Iterator[Any]:
        cfg = self.config
        if callable(data) and not isinstance(data, Dataset | Sequence):
            # A procedural source: batch = data(step, generator) from a per-step generator.
            while True:
                g = torch.Generator().manual_seed(derive_seed(cfg.seed, "batch", self.step))
                yield data(self.step, g)
        if isinstance(data, Sequence) and data and all(isinstance(t, Tensor) for t in data):
            n = len(data[0])
            if any(len(t) != n for t in data):
                raise ValueError(f"data tensors differ in length: {[len(t) for t in data]}")
            sampler = BatchSampler(
                n, cfg.batch_size, seed=cfg.seed, drop_last=cfg.drop_last, dist=self.dist
            )
            devices = {t.device for t in data}
            while True:
                idx = sampler.indices(self.step)  # to the data's device, not blocking
                on = {d: to_device(idx, d) for d in devices}
                yield tuple(t[on[t.device]] for t in data)
        if isinstance(data, Dataset):
            sampler = BatchSampler(
                len(data),  # type: ignore[arg-type]
                cfg.batch_size,
                seed=cfg.seed,
                drop_last=cfg.drop_last,
                dist=self.dist,
            )
            while True:
                yield default_collate([data[int(i)] for i in sampler.indices(self.step)])
        raise TypeError(
            "data must be a sequence of equally long tensors, a torch Dataset, "
            f"or a callable (step, generator) -> batch; got {type(data).__name__}"
        )

    # -- loop ---------------------------------------------------------------------------------
    def _one_step(self, batch: Any) -> dict[str, Any]:
        """Run one step and return its metrics as they came: tensors stay on the device (no
        value is read here, so the host never waits for the device inside a step)."""
        self._train_model.train()
        for opt in self._optimizers().values():
            if self.lr_schedule is not None:
                mult = self.lr_schedule(self.step)
                for g in opt.param_groups:
                    g["lr"] = g["initial_lr"] * mult
        if self.manual:
            out = self.loss_fn(self._train_model, batch)
            if not isinstance(out, dict) or "loss" not in out:
                raise TypeError("with manual=True, loss_fn must return a dict with a 'loss' entry")
            metrics = dict(out)
            if self.step == self._nan_step:
                loss = metrics["loss"]
                metrics["loss"] = loss * math.nan if isinstance(loss, Tensor) else math.nan
            return metrics
        assert self.optimizer is not None
        out = self.loss_fn(self._train_model, batch)
        loss, extra = out if isinstance(out, tuple) else (out, {})
        if isinstance(out, dict):
            loss, extra = out["loss"], out
        if not isinstance(loss, Tensor) or loss.dim() != 0:
            raise TypeError("loss_fn must return a scalar loss tensor")
        if self.step == self._nan_step:
            loss = loss * math.nan
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.grad_clip is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()
        metrics = {k: v for k, v in extra.items() if k != "loss"}
        metrics["loss"] = loss
        return metrics

    def _settle(self, timed: bool) -> tuple[int | None, bool]:
        """A sync point: read the window (the host waits for the device here and only here) and
        decide. A loss that was not finite raises ``NonFiniteLossError`` naming its step, before
        anything is logged, evaluated or checkpointed. Under a process group one all-reduce
        (MAX) decides for every rank together: a loss that was not finite on any rank (every
        rank raises, naming the earliest such step over the ranks), a stop signal that reached
        any rank, a timed checkpoint due (``timed``) on any rank, and the slowest rank's time
        per step, which sets the next meeting (``MeetingSchedule``). Returns the stop signal
        (None: go on) and whether the timed checkpoint is due."""
        seen = self._window.read()
        bad, signum = seen.bad_step, interrupt.requested()
        if self.dist.enabled:
            meet = self._meetings
            per = meet.per_step(self.step) if meet is not None else 0.0
            first, agreed, due, slowest = agree_max(
                -math.inf if bad is None else -bad, signum or 0, timed, per
            )
            signum, timed = int(agreed) or None, bool(due)
            if meet is not None:
                meet.met(self.step, slowest)
            if first > -math.inf:
                step = int(-first)
                here = bad == step
                value = seen.bad_value if here else math.nan
                raise NonFiniteLossError(step, value, elsewhere=not here)
        elif bad is not None:
            raise NonFiniteLossError(bad, seen.bad_value)
        return signum, timed

    def _diverged_before(self, err: Exception) -> None:
        """A step raised ``err``: if an earlier loss of this process was not finite (weights
        trained past it can make a step fail, e.g. a sampler given NaN probabilities), raise
        ``NonFiniteLossError`` for that step from ``err``, as the next sync point would have."""
        try:
            seen = self._window.read()
        except Exception:  # noqa: BLE001 - the device may be unusable after err: keep err
            return
        if seen.bad_step is not None:
            raise NonFiniteLossError(seen.bad_step, seen.bad_value) from err

    def _agree_resumed(self) -> None:
        """Under a process group: every rank resumed the same step (and finished state), or
        every rank raises ``CheckpointError`` (a rank that found no checkpoint would start from
        fresh weights while another resumes)."""
        lo, hi, done_lo, done_hi = agree_max(-self.step, self.step, -self.finished, self.finished)
        if -lo != hi or -done_lo != done_hi:
            raise ckpt.CheckpointError(
                f"{self.config.desc}: the ranks resumed from different checkpoints (steps "
                f"{int(-lo)} to {int(hi)}; this rank: {self.step} in {self.checkpoint_dir}): "
                "--out must be one directory that every rank sees"
            )

    def _restart_metrics_file(self) -> None:
        """metrics.jsonl holds exactly the records of ``self.history`` (a resumed run drops what
        was logged after its checkpoint; a fresh run drops an older run's records)."""
        if self.out_dir is None or not self.dist.is_main:
            return
        path = self.out_dir / "metrics.jsonl"
        if self.history.records:
            text = "".join(json.dumps(r) + "\n" for r in self.history.records)
            atomic_write_text(path, text)
        else:
            path.unlink(missing_ok=True)

    def _log(self, record: dict[str, float]) -> None:
        self.history.records.append(record)
        if self.out_dir is None or not self.dist.is_main:
            return
        path = self.out_dir / "metrics.jsonl"
        try:  # (a resumed run rewrites the file from its history: a torn line does not stay)
            self.out_dir.mkdir(parents=True, exist_ok=True)
            with open(path, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as err:
            if is_disk_error(err):
                raise WriteError(path, "the training log", err) from None
            raise
        if self._tb is not None:
            self._tb.add(record)

    def close(self) -> None:
        """Close the TensorBoard writer (its thread and event file), if one is open; a later
        ``fit`` opens a new one."""
        if self._tb is not None:
            self._tb.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _evaluate(self) -> None:
        if self.eval_fn is None:
            return
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                res = self.eval_fn(self.model)
        finally:
            self.model.train(was_training)
        self._log({"step": self.step, **{k: float(v) for k, v in res.items()}})

    def fit(self, data: DataSource, *, resume: bool = False) -> History:
        """Train until ``config.steps``; with ``resume`` continue from the newest checkpoint.

        Training runs under a forked global RNG seeded from ``config.seed`` (dropout and other
        global-RNG draws are reproducible, and the caller's random stream is left untouched);
        resuming restores the RNG state saved in the checkpoint. A finished run (its final
        checkpoint found) is loaded and returned without training or evaluating again. Without
        ``resume`` older checkpoints in ``out_dir`` are replaced.

        Raises:
            interrupt.Interrupted: SIGINT / SIGTERM arrived (handlers installed by the
                application): the step in progress was completed and checkpointed first.
        """
        budget = step_budget.active()
        if budget is not None and not budget.inside_step:
            return self._fit_capped(data, resume, budget)
        return self._fit(data, resume)

    def _fit(self, data: DataSource, resume: bool) -> History:
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        # --precision bf16: the forwards of the trained modules run under autocast, their outputs
        # come back in fp32 (the loss, backward, optimizer and metrics stay fp32; engine.precision)
        forwards = num_precision.autocast_modules(self._modules().values())
        with torch.random.fork_rng(devices=devices), forwards, closing(self):
            torch.manual_seed(derive_seed(self.config.seed, "global"))
            resumed = self.resume() if resume else False
            if resume and self.dist.enabled:
                self._agree_resumed()
            if not self.finished:  # (inside ckpt.evaluation_only: refused)
                ckpt.check_may_train(self.checkpoint_dir, self.config.desc)
            if not resumed and self.checkpoint_dir is not None and self.dist.is_main:
                ckpt.remove_all(self.checkpoint_dir)
            self._restart_metrics_file()
            if not self.finished:
                self._loop(data)
        return self.history

    def _fit_capped(
        self, data: DataSource, resume: bool, budget: step_budget.StepBudget
    ) -> History:
        """``fit`` under a step budget (``--max-steps``): at most ``budget.max_steps`` steps
        (learning-rate schedules still see the planned step count through their closures), timed
        for the run's estimate; the capped run checkpoints as finished at its last step."""
        planned = self.config.steps
        self.config = replace(self.config, steps=budget.cap(planned))
        with budget.track(self.config.desc, "steps", planned) as node:
            node.planned_points += step_budget.sync_points(planned, self.config.log_every)
            self._timing = node
            try:
                return self._fit(data, resume)
            finally:
                self._timing = None

    def _loop(self, data: DataSource) -> None:
        with interrupt.deferred():  # a signal stops the loop after a step, with a checkpoint
            budget = step_budget.active() if self._timing is not None else None
            with budget.stepping() if budget is not None else nullcontext():
                self._train(data)
            start = time.perf_counter()
            self._evaluate()
            timing = self._timing
            if timing is not None and self.eval_fn is not None and self.config.eval_every:
                # The full run also evaluates every eval_every steps on the way.
                self._sync()
                evals = (timing.planned - 1) // self.config.eval_every
                timing.extra_seconds += evals * (time.perf_counter() - start)
            self.finished = True
            if self.checkpoint_dir is not None:
                start = time.perf_counter()
                self.save_checkpoint()
                if timing is not None:  # the full run's checkpoints before its last
                    every = self.config.checkpoint_seconds
                    every = checkpoint_seconds_default() if every is None else every
                    saves = timing.repeats(self.config.checkpoint_every, every)
                    timing.extra_seconds += saves * (time.perf_counter() - start)

    def _train(self, data: DataSource) -> None:
        cfg = self.config
        batches = self._batches(data)
        report = cfg.progress and self.dist.is_main
        show = report and sys.stderr.isatty()
        from tqdm.auto import tqdm  # a reproduction dependency: imported when training runs

        bar = tqdm(total=cfg.steps, initial=self.step, desc=cfg.desc, disable=not show, leave=False)
        lines = None
        if report and not show:
            lines = ProgressLines(cfg.desc, cfg.steps, cfg.progress_seconds, self.step, log=log)
        loss: float | None = None
        every_seconds = cfg.checkpoint_seconds
        if every_seconds is None:
            every_seconds = checkpoint_seconds_default()
        every_seconds = every_seconds if self.checkpoint_dir is not None else 0.0
        self._saved_at = time.monotonic()
        start_step = self.step
        if self.dist.enabled:
            self._meetings = MeetingSchedule(cfg.agree_seconds, start_step)
        # Under a step budget: the steps are timed (the first and the sync points apart); the
        # first step also logs, so that the first record's costs (files, writers) are warm-up.
        clock = None  # on CUDA the steps after the first are watched for synchronising calls
        if self._timing is not None:
            clock = step_budget.StepClock(self._timing, self._sync, self.device.type == "cuda")
        apart = clock.apart if clock is not None else nullcontext
        in_clock_step = clock.step if clock is not None else nullcontext
        fetch = clock.next_batch if clock is not None else next  # the batch's wait timed apart
        in_step = diverged = 0
        try:
            while self.step < cfg.steps:
                with in_clock_step():
                    batch = batch_to_device(fetch(batches), self.device, cfg.channels_last)
                    in_step = 1
                    try:
                        metrics = self._one_step(batch)
                    except Exception as err:
                        self._diverged_before(err)
                        raise
                    self._window.add(self.step, metrics)
                in_step = 0
                self.step += 1
                last = self.step == cfg.steps
                log_now = self.step % cfg.log_every == 0 or last
                log_now = log_now or (clock is not None and self.step == start_step + 1)
                eval_now = bool(cfg.eval_every) and self.step % cfg.eval_every == 0 and not last
                save_now = bool(cfg.checkpoint_every) and self.step % cfg.checkpoint_every == 0
                save_now = save_now and self.checkpoint_dir is not None
                elapsed = time.monotonic() - self._saved_at
                timed = bool(every_seconds) and not last and elapsed >= every_seconds
                # Sync points: under a group only steps that every rank knows (the ranks meet
                # there; also the schedule's meetings); in one process also a step after which
                # a signal or a timed checkpoint is pending.
                sync = log_now or eval_now or save_now
                if self._meetings is not None:
                    sync = sync or self._meetings.due(self.step)
                else:
                    sync = sync or timed or interrupt.requested() is not None
                if sync and clock is not None:
                    clock.computed()
                signum, timed = self._settle(timed) if sync else (None, False)
                if log_now:
                    loss = self._log_window().get("loss", loss)
                    if loss is not None:
                        bar.set_postfix(loss=f"{loss:.4g}")
                if eval_now:
                    with apart():
                        self._evaluate()
                if save_now or timed:
                    with apart():
                        self.save_checkpoint()
                bar.update(1)
                if lines is not None:
                    lines.tick(self.step, loss)
                if clock is not None:
                    clock.done()
                if signum is not None:  # (under a group: the stop every rank agreed on)
                    self._stop(signum)
        except NonFiniteLossError:
            diverged = in_step  # a step that failed after the divergence ran too
            raise
        finally:
            bar.close()
            self._meetings = None
            if clock is not None:
                clock.finish(self.step - start_step + diverged)

    def _log_window(self) -> dict[str, float]:
        """Log the window's means (under a process group: their means over the ranks) as the
        record of this step, start the next window, and return the record."""
        rec = self._window.read().means()
        if self.dist.enabled:  # a record of the whole global batch, as one process
            keys = sorted(rec)
            rec.update(zip(keys, all_reduce_means([rec[k] for k in keys]), strict=True))
        self._window.reset()
        self._log({"step": self.step, **rec})
        return rec

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _stop(self, signum: int) -> None:
        """Checkpoint the completed step and raise ``Interrupted``."""
        if self.checkpoint_dir is not None:
            self.save_checkpoint()
            log.warning(
                "%s: stopped at step %d/%d; checkpoint in %s",
                self.config.desc, self.step, self.config.steps, self.checkpoint_dir,
            )  # fmt: skip
        raise interrupt.Interrupted(signum)
