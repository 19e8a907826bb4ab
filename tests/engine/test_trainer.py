import json

import pytest
import torch
from torch import nn

from paperzoo.engine import NonFiniteLossError, TrainConfig, Trainer, seeded
from paperzoo.engine.checkpoint import latest_step, load_state, save_state
from paperzoo.engine.distributed import DistInfo


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 5, generator=g)
    return x, (x.sum(1) > 0).long()


def _model_and_opt():
    with seeded(1):
        m = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))
    return m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)


def _loss(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


def _cfg(steps, **kw):
    return TrainConfig(steps=steps, batch_size=16, log_every=3, progress=False, **kw)


def test_training_reduces_loss_and_logs_jsonl(tmp_path):
    m, opt = _model_and_opt()
    hist = Trainer(m, opt, _loss, config=_cfg(60), out_dir=tmp_path).fit(_data())
    _, losses = hist.series("loss")
    assert losses[-1] < losses[0]
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == len(hist.records) and json.loads(lines[-1])["step"] == 60


def test_resume_continues_the_exact_trajectory(tmp_path):
    data = _data()
    m_ref, opt_ref = _model_and_opt()
    Trainer(m_ref, opt_ref, _loss, config=_cfg(30)).fit(data)

    m1, opt1 = _model_and_opt()
    Trainer(m1, opt1, _loss, config=_cfg(12, checkpoint_every=6), out_dir=tmp_path).fit(data)
    torch.manual_seed(12345)  # a different global RNG state must not matter after resume
    m2, opt2 = _model_and_opt()
    with torch.no_grad():
        for p in m2.parameters():
            p.add_(1.0)  # garbage that resume must overwrite
    t2 = Trainer(m2, opt2, _loss, config=_cfg(30), out_dir=tmp_path)
    t2.fit(data, resume=True)
    for a, b in zip(m_ref.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)
    assert t2.history.records[-1]["step"] == 30


@pytest.mark.parametrize("kind", ["tensor", "manual-float"])
def test_nan_loss_names_the_step(kind):
    """The loss of step 3 is NaN: the error, raised at the next sync point (step 6, log_every 3),
    names step 3; a manual step that returns Python floats is checked the same way."""
    m, opt = _model_and_opt()
    calls = {"n": 0}

    def bad_loss(model, batch):
        calls["n"] += 1
        loss = _loss(model, batch)
        if kind == "tensor":
            return loss * float("nan") if calls["n"] == 4 else loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        return {"loss": float("nan") if calls["n"] == 4 else loss.item(), "one": 1}

    manual = kind != "tensor"
    trainer = Trainer(m, None if manual else opt, bad_loss, config=_cfg(10), manual=manual)
    with pytest.raises(NonFiniteLossError, match="loss became nan at step 3") as err:
        trainer.fit(_data())
    assert err.value.step == 3 and not err.value.elsewhere
    assert trainer.step == 6 and [r["step"] for r in trainer.history.records] == [3]


def test_no_checkpoint_holds_weights_trained_past_a_nan(tmp_path):
    """A checkpoint is a sync point: the NaN of step 3 raises before the checkpoint of step 5."""
    m, opt = _model_and_opt()
    calls = {"n": 0}

    def bad_loss(model, batch):
        calls["n"] += 1
        return _loss(model, batch) * (float("nan") if calls["n"] == 4 else 1.0)

    cfg = TrainConfig(steps=10, batch_size=16, log_every=10, checkpoint_every=5, progress=False)
    trainer = Trainer(m, opt, bad_loss, config=cfg, out_dir=tmp_path)
    with pytest.raises(NonFiniteLossError, match="at step 3"):
        trainer.fit(_data())
    assert trainer.step == 5 and latest_step(tmp_path / "checkpoints") is None


def test_a_step_that_fails_after_a_nan_reports_the_nan():
    """Weights trained past a NaN can make a later step fail before the sync point (here: a
    sampler given NaN probabilities); the error is the divergence, naming its step."""
    m, opt = _model_and_opt()
    calls = {"n": 0}

    def loss_fn(model, batch):
        calls["n"] += 1
        x, y = batch
        probs = model(x).softmax(1)
        if calls["n"] > 4:
            torch.multinomial(probs, 1)  # raises on NaN probabilities
        return nn.functional.cross_entropy(model(x), y) * (float("nan") if calls["n"] == 4 else 1)

    cfg = TrainConfig(steps=10, batch_size=16, log_every=10, progress=False)
    with pytest.raises(NonFiniteLossError, match="at step 3") as err:
        Trainer(m, opt, loss_fn, config=cfg).fit(_data())
    assert isinstance(err.value.__cause__, RuntimeError) and calls["n"] == 5


def test_the_host_reads_device_values_only_at_sync_points(monkeypatch):
    """No host sync per step: the loss and a tensor metric stay on the device, and the host
    reads them once per log_every window (steps 5, 10, 15, 20 of 20), in one transfer; the
    records are the means of the steps' values."""
    m, opt = _model_and_opt()
    seen: list[tuple[float, float]] = []

    def loss_fn(model, batch):
        x, y = batch
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float()  # several elements: logged as their mean
        seen.append((loss.detach().clone(), acc.mean()))
        return loss, {"acc": acc, "lr": 0.1}

    cfg = TrainConfig(steps=20, batch_size=16, log_every=5, progress=False)
    trainer = Trainer(m, opt, loss_fn, config=cfg)
    reads: list[int] = []

    def counted(original):
        def read(self, *args, **kwargs):
            reads.append(trainer.step)
            return original(self, *args, **kwargs)

        return read

    for name in ("item", "tolist", "__float__", "__int__", "__bool__", "numpy"):
        monkeypatch.setattr(torch.Tensor, name, counted(getattr(torch.Tensor, name)))
    hist = trainer.fit(_data())
    monkeypatch.undo()
    assert reads == [5, 10, 15, 20]
    assert [r["step"] for r in hist.records] == [5, 10, 15, 20]
    for i, rec in enumerate(hist.records):
        window = seen[5 * i : 5 * i + 5]
        assert rec["loss"] == pytest.approx(sum(float(v[0]) for v in window) / 5, rel=1e-12)
        assert rec["acc"] == pytest.approx(sum(float(v[1]) for v in window) / 5, rel=1e-12)
        assert rec["lr"] == pytest.approx(0.1)


def test_manual_step_and_eval_fn():
    m, opt = _model_and_opt()

    def manual(model, batch):
        loss = _loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return {"loss": loss, "extra": 1.0}

    hist = Trainer(
        m, None, manual, config=_cfg(6, eval_every=3), manual=True,
        eval_fn=lambda model: {"val": 0.5 if not model.training else -1.0},
    ).fit(_data())  # fmt: skip
    assert hist.last("extra") == 1.0
    assert hist.series("val")[1] == [0.5, 0.5]  # at step 3 and at the end, in eval mode


def test_lr_schedule_is_a_function_of_step():
    m, opt = _model_and_opt()
    Trainer(m, opt, _loss, config=_cfg(5), lr_schedule=lambda s: 0.0 if s >= 2 else 1.0).fit(
        _data()
    )
    assert opt.param_groups[0]["lr"] == 0.0 and opt.param_groups[0]["initial_lr"] == 0.1


def test_procedural_data_source_is_deterministic():
    seen = []

    def source(step, g):
        x = torch.randn(8, 5, generator=g)
        seen.append(x)
        return x, (x.sum(1) > 0).long()

    m, opt = _model_and_opt()
    Trainer(m, opt, _loss, config=_cfg(2, seed=3)).fit(source)
    m, opt = _model_and_opt()
    Trainer(m, opt, _loss, config=_cfg(2, seed=3)).fit(source)
    assert torch.equal(seen[0], seen[2]) and not torch.equal(seen[0], seen[1])


def test_bad_config_and_data_raise():
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(steps=1, batch_size=0)
    with pytest.raises(ValueError, match="agree_seconds must be > 0, got 0"):
        TrainConfig(steps=1, agree_seconds=0)
    m, opt = _model_and_opt()
    with pytest.raises(ValueError, match="differ in length"):
        Trainer(m, opt, _loss, config=_cfg(1)).fit((torch.zeros(4, 5), torch.zeros(3)))
    with pytest.raises(ValueError, match="optimizer is required"):
        Trainer(m, None, _loss, config=_cfg(1))


def test_progress_off_a_terminal_is_logged_lines(caplog):
    m, opt = _model_and_opt()
    cfg = TrainConfig(steps=20, batch_size=16, log_every=5, progress_seconds=0.0, desc="toy")
    with caplog.at_level("INFO", logger="paperzoo.engine.trainer"):
        Trainer(m, opt, _loss, config=cfg).fit(_data())  # pytest's stderr is not a TTY
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "toy: 20 steps"
    assert any(line.startswith("toy: step 5/20, loss ") and "left ~" in line for line in lines)
    assert lines[-1].startswith("toy: step 20/20")
    with caplog.at_level("INFO", logger="paperzoo.engine.trainer"):
        caplog.clear()
        Trainer(m, opt, _loss, config=_cfg(5)).fit(_data())  # progress=False: silent
    assert not caplog.records


def test_a_local_model_under_torchrun_trains_alone_and_every_rank_writes(tmp_path, monkeypatch):
    from paperzoo.engine import trainer as trainer_module

    data = _data()
    m_one, opt_one = _model_and_opt()
    Trainer(m_one, opt_one, _loss, config=_cfg(9)).fit(data)  # one process: the reference
    # Rank 1 of 2 (no process group is needed: a local model never talks to the other ranks).
    monkeypatch.setattr(trainer_module, "current", lambda: DistInfo(rank=1, world_size=2))
    sizes = []

    def loss(model, batch):
        sizes.append(len(batch[0]))
        return _loss(model, batch)

    m, opt = _model_and_opt()
    t = Trainer(m, opt, loss, config=_cfg(9), out_dir=tmp_path / "local", local=True)
    assert t._train_model is m and not t.dist.enabled  # no DDP wrapper
    t.fit(data)
    assert set(sizes) == {16}  # the whole batch, not this rank's half
    assert (tmp_path / "local" / "metrics.jsonl").exists()  # rank 1 logs and checkpoints
    assert (tmp_path / "local" / "checkpoints" / "latest.json").exists()
    for a, b in zip(m.parameters(), m_one.parameters(), strict=True):
        assert torch.equal(a, b)  # the single process's trajectory
    # The control: a shared model on rank 1 of 2 takes half of each batch and writes nothing.
    sizes.clear()

    def manual(model, batch):
        sizes.append(len(batch[0]))
        return {"loss": torch.tensor(0.0)}

    frozen = nn.Linear(5, 2).requires_grad_(False)  # no trainable weights: no DDP wrapper
    shared = Trainer(frozen, None, manual, config=_cfg(2), out_dir=tmp_path / "shared", manual=True)
    assert shared.dist.enabled
    shared.fit(data)
    assert set(sizes) == {8} and not (tmp_path / "shared").exists()


def test_ddp_broadcasts_buffers_only_for_batch_norm_statistics() -> None:
    from paperzoo.engine.trainer import has_running_stats

    assert has_running_stats(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)))
    assert not has_running_stats(nn.Sequential(nn.Conv2d(3, 4, 3), nn.GroupNorm(2, 4)))
    assert not has_running_stats(nn.BatchNorm1d(4, track_running_stats=False))
    with_constant = nn.Linear(2, 2)
    with_constant.register_buffer("positions", torch.zeros(3))
    assert not has_running_stats(with_constant)


def test_a_checkpoint_of_per_step_window_values_still_resumes(tmp_path):
    """Checkpoints written before the window kept sums hold the values of its steps: resuming
    one sums them, so the next record is the same mean."""
    data = _data()
    m, opt = _model_and_opt()
    ref = Trainer(m, opt, _loss, config=_cfg(5, checkpoint_every=4), out_dir=tmp_path).fit(data)
    step, state = load_state(tmp_path / "checkpoints", 4)  # step 3's loss not logged yet
    window = state.pop("window_sums")
    assert step == 4 and window["counts"] == {"loss": 1}
    state["window"] = {"loss": [window["sums"]["loss"]]}  # the older form
    save_state(tmp_path / "old" / "checkpoints", 4, state)
    again = Trainer(*_model_and_opt(), _loss, config=_cfg(5), out_dir=tmp_path / "old")
    assert again.fit(data, resume=True).records == ref.records


def test_under_a_step_budget_the_batch_wait_is_timed_apart() -> None:
    """A capped run records how long the host waited for each step's batch (a loader's delay
    shows there, not only inside the step's time)."""
    import time

    from paperzoo.engine import budget

    def slow(step: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
        time.sleep(0.02)
        return (torch.zeros(4, 3),)

    model = nn.Linear(3, 1)
    trainer = Trainer(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        lambda m, b: m(b[0]).pow(2).mean(),
        config=TrainConfig(steps=50, batch_size=4, progress=False),
    )
    b = budget.StepBudget(3)
    with budget.capped(b):
        trainer.fit(slow)
    (loop,) = b.root.children
    assert loop.batches == 3 and loop.batch_seconds >= 3 * 0.02
    assert loop.to_dict()["batch_wait_seconds"] >= 0.02
    assert loop.batch_seconds <= loop.seconds  # part of the steps' time as well
