import json

import pytest
import torch
from torch import nn

from paperzoo.engine import NonFiniteLossError, TrainConfig, Trainer, seeded
from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.trainer import BatchSampler


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


def test_nan_loss_names_the_step():
    m, opt = _model_and_opt()
    calls = {"n": 0}

    def bad_loss(model, batch):
        calls["n"] += 1
        loss = _loss(model, batch)
        return loss * float("nan") if calls["n"] == 4 else loss

    with pytest.raises(NonFiniteLossError, match="at step 3"):
        Trainer(m, opt, bad_loss, config=_cfg(10)).fit(_data())


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


def test_batch_sampler_ranks_partition_the_global_batch():
    full = BatchSampler(20, 8, seed=0, drop_last=True, dist=DistInfo())
    parts = [
        BatchSampler(20, 8, seed=0, drop_last=True, dist=DistInfo(rank=r, world_size=2))
        for r in (0, 1)
    ]
    for step in range(5):
        union = torch.cat([p.indices(step) for p in parts]).sort().values
        assert torch.equal(union, full.indices(step).sort().values)


def test_bad_config_and_data_raise():
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(steps=1, batch_size=0)
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
