"""Resume continues exactly: a run stopped after a checkpoint and resumed equals an uninterrupted
one (weights, optimizer state, history, global RNG, extra generators and stateful objects), for
every kind of batch source the experiments use; finished runs are loaded, not retrained; SIGTERM
stops the loop after a checkpoint."""

from __future__ import annotations

import json
import os
import signal

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from paperzoo.engine import CheckpointError, TrainConfig, Trainer, interrupt, seeded
from paperzoo.engine.trainer import CHECKPOINT_SECONDS_ENV, checkpoint_seconds_default

STEPS = 14


class _Killed(Exception):
    """Stands in for SIGKILL: the process dies mid-step, after its last checkpoint."""


class _Keeper:
    """An eval_fn with state (the best score and its weights), like GG-NN's best keeper."""

    def __init__(self) -> None:
        self.best, self.weights = float("inf"), None

    def __call__(self, model: nn.Module) -> dict[str, float]:
        x, y = _xy()
        loss = float(nn.functional.cross_entropy(model(x), y))
        if loss < self.best:
            self.best, self.weights = loss, {k: v.clone() for k, v in model.state_dict().items()}
        return {"val_loss": loss}

    def state_dict(self):
        return {"best": self.best, "weights": self.weights}

    def load_state_dict(self, state) -> None:
        self.best, self.weights = float(state["best"]), state["weights"]


def _xy():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 5, generator=g)
    return x, (x.sum(1) > 0).long()


def _sources():
    x, y = _xy()

    def procedural(step: int, g: torch.Generator):
        xb = torch.randn(8, 5, generator=g)
        return xb, (xb.sum(1) > 0).long()

    return {"tensors": (x, y), "dataset": TensorDataset(x, y), "procedural": procedural}


class _Setup:
    """A model with dropout (global RNG), Adam, a noise generator drawn from in the loss, a
    stateful eval_fn, an lr schedule; ``manual`` steps the optimizer itself."""

    def __init__(self, out_dir, *, manual: bool, kill_at: int | None = None, **cfg) -> None:
        with seeded(1):
            self.model = nn.Sequential(
                nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2)
            )
        self.opt = torch.optim.Adam(self.model.parameters(), lr=0.01)
        self.noise = torch.Generator().manual_seed(7)
        self.keeper = _Keeper()
        self.calls = 0
        kill_at_call = kill_at

        def loss(model, batch):
            self.calls += 1
            if kill_at_call is not None and self.calls > kill_at_call:
                raise _Killed
            x, y = batch
            x = x + 0.1 * torch.randn(x.shape, generator=self.noise)
            value = nn.functional.cross_entropy(model(x), y)
            if not manual:
                return value
            self.opt.zero_grad()
            value.backward()
            self.opt.step()
            return {"loss": value}

        config = TrainConfig(
            steps=STEPS, batch_size=8, seed=3, log_every=3, eval_every=4, progress=False, **cfg
        )
        self.trainer = Trainer(
            self.model,
            None if manual else self.opt,
            loss,
            config=config,
            out_dir=out_dir,
            lr_schedule=lambda s: 1.0 if s < 7 else 0.5,
            eval_fn=self.keeper,
            extra={"noise": self.noise, "keeper": self.keeper}
            | ({"optimizer": self.opt} if manual else {}),
            manual=manual,
        )


def _assert_same(a: _Setup, b: _Setup) -> None:
    for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values(), strict=True):
        assert torch.equal(p, q)
    sa, sb = a.opt.state_dict()["state"], b.opt.state_dict()["state"]
    for k in sa:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sa[k][name], sb[k][name])
    assert a.trainer.history.records == b.trainer.history.records
    assert torch.equal(a.noise.get_state(), b.noise.get_state())
    assert a.keeper.best == b.keeper.best
    assert all(torch.equal(a.keeper.weights[k], b.keeper.weights[k]) for k in a.keeper.weights)


@pytest.mark.parametrize("manual", [False, True], ids=["loss_fn", "manual"])
@pytest.mark.parametrize("source", ["tensors", "dataset", "procedural"])
def test_killed_and_resumed_equals_uninterrupted(tmp_path, source, manual):
    data = _sources()[source]
    ref = _Setup(tmp_path / "ref", manual=manual)
    ref.trainer.fit(data, resume=True)

    out = tmp_path / "run"
    first = _Setup(out, manual=manual, kill_at=9, checkpoint_every=5)
    with pytest.raises(_Killed):  # dies in step 10, after the checkpoint at step 5
        first.trainer.fit(data, resume=True)
    torch.manual_seed(12345)  # a fresh process: other global RNG state, untrained objects
    again = _Setup(out, manual=manual)
    again.trainer.fit(data, resume=True)
    assert again.calls == STEPS - 5  # continued from step 5
    _assert_same(ref, again)
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert logged == again.trainer.history.records  # the lost steps' records are not repeated


def test_finished_run_is_loaded_not_retrained(tmp_path):
    data = _sources()["tensors"]
    ref = _Setup(tmp_path, manual=False)
    ref.trainer.fit(data, resume=True)
    again = _Setup(tmp_path, manual=False)
    evals = []
    again.trainer.eval_fn = lambda m: evals.append(1) or {}
    again.trainer.fit(data, resume=True)
    assert again.calls == 0 and not evals and again.trainer.finished
    _assert_same(ref, again)


def test_wall_time_checkpoints_and_their_default(tmp_path, monkeypatch):
    data = _sources()["tensors"]
    run = _Setup(tmp_path, manual=False, kill_at=9, checkpoint_seconds=1e-9, keep_checkpoints=1)
    with pytest.raises(_Killed):
        run.trainer.fit(data, resume=True)
    pointer = json.loads((tmp_path / "checkpoints" / "latest.json").read_text())
    assert pointer["step"] == 9  # checkpointed after every step
    assert len(list((tmp_path / "checkpoints").glob("step_*.json"))) == 1
    monkeypatch.delenv(CHECKPOINT_SECONDS_ENV, raising=False)
    assert checkpoint_seconds_default() == 300.0
    monkeypatch.setenv(CHECKPOINT_SECONDS_ENV, "0.5")
    assert checkpoint_seconds_default() == 0.5
    monkeypatch.setenv(CHECKPOINT_SECONDS_ENV, "soon")
    with pytest.raises(ValueError, match=CHECKPOINT_SECONDS_ENV):
        checkpoint_seconds_default()


def test_sigterm_checkpoints_the_step_then_stops(tmp_path):
    data = _sources()["procedural"]
    ref = _Setup(tmp_path / "ref", manual=False)
    ref.trainer.fit(data, resume=True)

    out = tmp_path / "run"
    run = _Setup(out, manual=False)
    inner = run.trainer.loss_fn

    def loss(model, batch):
        if run.calls == 6:  # during step 7 (0-based 6)
            os.kill(os.getpid(), signal.SIGTERM)
        return inner(model, batch)

    run.trainer.loss_fn = loss
    with interrupt.handling():
        with pytest.raises(interrupt.Interrupted) as stop:
            run.trainer.fit(data, resume=True)
    assert stop.value.signum == signal.SIGTERM and stop.value.exit_code == 143
    assert json.loads((out / "checkpoints" / "latest.json").read_text())["step"] == 7
    again = _Setup(out, manual=False)
    again.trainer.fit(data, resume=True)
    assert again.calls == STEPS - 7
    _assert_same(ref, again)


def test_signal_outside_a_training_loop_stops_at_once():
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN where the shell started us in the background
    with interrupt.handling():
        with pytest.raises(interrupt.Interrupted) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert stop.value.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_checkpoint_of_other_settings_is_refused(tmp_path):
    data = _sources()["tensors"]
    _Setup(tmp_path, manual=False).trainer.fit(data, resume=True)
    other = _Setup(tmp_path, manual=False)
    other.trainer.config = TrainConfig(steps=STEPS, batch_size=4, seed=3, progress=False)
    with pytest.raises(CheckpointError, match="batch_size 8 -> 4"):
        other.trainer.fit(data, resume=True)
    shorter = _Setup(tmp_path, manual=False)
    shorter.trainer.config = TrainConfig(steps=STEPS - 1, batch_size=8, seed=3, progress=False)
    with pytest.raises(CheckpointError, match="past this run's"):
        shorter.trainer.fit(data, resume=True)


def test_without_resume_old_checkpoints_are_replaced(tmp_path):
    data = _sources()["tensors"]
    _Setup(tmp_path, manual=False).trainer.fit(data)
    run = _Setup(tmp_path, manual=False, kill_at=2)
    with pytest.raises(_Killed):
        run.trainer.fit(data)  # a fresh start: the finished run's checkpoints are removed
    assert not (tmp_path / "checkpoints" / "latest.json").exists()
    assert not (tmp_path / "metrics.jsonl").exists()
