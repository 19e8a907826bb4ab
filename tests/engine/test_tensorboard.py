"""TensorBoard writers: opened only when asked for, closed with their Trainer.

A fake ``torch.utils.tensorboard`` stands in for the real package (which need not be installed):
with it importable, today's Trainer would open a writer for every training loop.
"""

import json
import sys
import types

import pytest
import torch
from torch import nn

from paperzoo.cli import main
from paperzoo.engine import TrainConfig, Trainer, seeded
from paperzoo.engine import tensorboard as tb


class FakeWriter:
    """Records what a ``SummaryWriter`` was asked to do."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.scalars: list[tuple[str, float, int]] = []
        self.closes = 0

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        assert self.closes == 0, "written after close"
        self.scalars.append((tag, value, step))

    def close(self) -> None:
        self.closes += 1


@pytest.fixture
def writers(monkeypatch):
    """The writers made through a fake ``torch.utils.tensorboard``, in order."""
    made: list[FakeWriter] = []

    def summary_writer(log_dir: str) -> FakeWriter:
        made.append(FakeWriter(log_dir))
        return made[-1]

    module = types.ModuleType("torch.utils.tensorboard")
    module.SummaryWriter = summary_writer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", module)
    return made


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 5, generator=g)
    return x, (x.sum(1) > 0).long()


def _trainer(out_dir, steps=6, loss=None, **kw):
    with seeded(1):
        m = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def cross_entropy(model, batch):
        x, y = batch
        return nn.functional.cross_entropy(model(x), y)

    cfg = TrainConfig(steps=steps, batch_size=16, log_every=2, progress=False)
    return Trainer(m, opt, loss or cross_entropy, config=cfg, out_dir=out_dir, **kw)


def test_no_writer_unless_asked_for(writers, tmp_path):
    _trainer(tmp_path).fit(_data())
    with tb.requested(False):
        _trainer(tmp_path / "b").fit(_data())
    with tb.requested():
        _trainer(tmp_path / "c", tensorboard=False).fit(_data())
    assert writers == []
    assert not any(p.name == "tensorboard" for p in tmp_path.rglob("*"))
    assert (tmp_path / "metrics.jsonl").exists()  # the JSONL log is written as before


def test_a_writer_asked_for_gets_the_records_and_is_closed_when_fit_returns(writers, tmp_path):
    trainer = _trainer(tmp_path, tensorboard=True)
    history = trainer.fit(_data())
    (w,) = writers
    assert w.log_dir == str(tmp_path / "tensorboard")
    losses = [(step, v) for tag, v, step in w.scalars if tag == "loss"]
    assert losses == [(r["step"], r["loss"]) for r in history.records]
    assert [s for s, _ in losses] == [2, 4, 6]
    assert w.closes == 1
    with tb.requested():  # the run's request reaches a Trainer left at its default
        _trainer(tmp_path / "run").fit(_data())
    assert len(writers) == 2 and writers[1].closes == 1 and writers[1].scalars


def test_the_writer_is_closed_when_fit_raises(writers, tmp_path):
    def failing(model, batch):
        x, y = batch
        if failing.calls == 3:  # after the record of step 2 opened the writer
            raise RuntimeError("boom")
        failing.calls += 1
        return nn.functional.cross_entropy(model(x), y)

    failing.calls = 0
    trainer = _trainer(tmp_path, loss=failing, tensorboard=True)
    with pytest.raises(RuntimeError, match="boom"):
        trainer.fit(_data())
    (w,) = writers
    assert w.scalars and w.closes == 1


def test_close_and_the_context_manager_close_the_writer(writers, tmp_path):
    with _trainer(tmp_path, tensorboard=True) as trainer:
        trainer.fit(_data())
        trainer.fit(_data())  # a second fit: finished, its final evaluation is not logged again
    assert all(w.closes == 1 for w in writers)
    trainer.close()  # closing again does nothing
    assert all(w.closes == 1 for w in writers)

    writer = tb.ScalarWriter(tmp_path / "tb")
    writer.add({"step": 1, "loss": 0.5})
    assert writer.is_open and writers[-1].scalars == [("loss", 0.5, 1)]
    writer.close()
    writer.close()
    assert not writer.is_open and writers[-1].closes == 1


def test_reproduce_tensorboard_opens_writers_and_closes_every_one(writers, tmp_path, capsys):
    smoke = ["reproduce", "coordconv", "--scale", "smoke", "--quiet", "--threads", "1"]
    assert main([*smoke, "--out", str(tmp_path / "plain")]) == 0
    assert writers == []  # without --tensorboard: none, with the package importable
    assert main([*smoke, "--tensorboard", "--out", str(tmp_path / "tb")]) == 0
    assert writers and all(w.closes == 1 for w in writers)
    assert all(w.log_dir.startswith(str(tmp_path / "tb")) for w in writers)
    plain, with_tb = (json.loads((tmp_path / d / "run.json").read_text()) for d in ("plain", "tb"))
    assert "tensorboard" not in with_tb  # not part of the run's identity
    assert set(plain) == set(with_tb)


def test_reproduce_tensorboard_without_the_package_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    out = tmp_path / "run"
    argv = ["reproduce", "coordconv", "--scale", "smoke", "--tensorboard", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--tensorboard needs the tensorboard package" in err
    assert not out.exists()
