"""Ranks of a ``torchrun`` group end together: what one rank sees, every rank acts on.

Two CPU processes (gloo) train one data-parallel model with the Trainer under a process group
whose timeout is short (``SHORT``), so that a rank left waiting in a collective fails the test
in seconds instead of hanging:

The ranks meet at sync points only (every ``log_every`` = 2 steps here, before checkpoints and
evaluations), not at every step:

* ``nan``: ``PAPERZOO_INJECT_NAN=1:2`` makes rank 1's loss NaN at step 2; the NaN gradient
  reaches rank 0's weights, so rank 0's own loss is NaN from step 3. At the sync point after
  step 3 every rank raises ``NonFiniteLossError`` naming step 2, the earliest over the ranks
  (rank 0 is told it was another rank's loss).
* ``stop``: rank 1 alone receives SIGTERM during step 2; every rank stops at the next sync point
  (after step 3: ``trainer.step`` 4), the stop checkpoint is at step 4, and a resumed run ends
  with the weights of an uninterrupted one. Each logged record is the mean over the ranks, the
  same on both (also once resumed).
* ``stop_timed``: as ``stop``, but the ranks log only at the end (``log_every`` past the last
  step): they meet on the wall-time schedule (every ``agree_seconds`` = 0.2 s, about 10 steps of
  20 ms), so rank 1's SIGTERM during step 10 stops both ranks at one step about 10 steps later,
  with a stop checkpoint there, long before the end (the first sync point of the loop).
* ``sweep``: ``reproduce resnet --scale smoke`` on both ranks trains each net on one rank alone
  (``Trainer(local=True)``, the whole batch), the nets shared out by depth, and both ranks'
  results hold every net; ``--set data_parallel=true`` trains every net on both ranks (DDP).
* ``resume``: rank 0 finds a checkpoint, rank 1 none (an ``--out`` the ranks do not share):
  both raise ``CheckpointError`` instead of one resuming while the other starts afresh.
* ``unshared``: each rank's ``--out`` is a directory of its own: every rank fails in one line
  before training.
* ``exited``: rank 1 ends without reaching ``wait_for_all_ranks``; rank 0 stops waiting with
  ``RanksExited`` naming it.

The test file is also the ranks' script: ``torchrun ... test_ranks_agree.py MODE DIR``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from paperzoo.engine import NonFiniteLossError, TrainConfig, Trainer, seeded
from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.faults import INJECT_NAN_ENV, inject_nan_at

WORLD, STEPS = 2, 6
TIMED_STEPS = 400  # stop_timed: 8 s of 20-ms steps if no rank stopped
SHORT = timedelta(seconds=30)  # a rank left waiting in a collective fails after this


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 5, generator=g)
    return x, (x.sum(1) > 0).long()


def _model() -> tuple[nn.Module, torch.optim.Optimizer]:
    with seeded(1):
        m = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
    return m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)


def _cfg(steps: int = STEPS) -> TrainConfig:
    return TrainConfig(steps=steps, batch_size=8, log_every=2, progress=False)


def _loss(model: nn.Module, batch) -> torch.Tensor:  # noqa: ANN001
    x, y = batch
    return F.cross_entropy(model(x), y)


# -- in one process --------------------------------------------------------------------------------


def test_inject_nan_is_parsed_once_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INJECT_NAN_ENV, raising=False)
    assert inject_nan_at() is None
    monkeypatch.setenv(INJECT_NAN_ENV, " 1:17 ")
    assert inject_nan_at() == (1, 17)
    for bad in ("1", "a:2", "1:-2", "1:2:3", ":"):
        monkeypatch.setenv(INJECT_NAN_ENV, bad)
        with pytest.raises(ValueError, match=INJECT_NAN_ENV):
            inject_nan_at()


@pytest.mark.parametrize("manual", [False, True])
def test_inject_nan_in_one_process(monkeypatch: pytest.MonkeyPatch, manual: bool) -> None:
    """Rank 0 of no group: the loss of step 4 is NaN; the steps before it trained as usual, and
    the error, raised at the next sync point (the last step, 6), names step 4."""
    monkeypatch.setenv(INJECT_NAN_ENV, "0:4")
    m, opt = _model()

    def manual_step(model: nn.Module, batch) -> dict:  # noqa: ANN001
        loss = _loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return {"loss": loss}

    trainer = Trainer(
        m,
        None if manual else opt,
        manual_step if manual else _loss,
        config=_cfg(),
        manual=manual,
    )
    with pytest.raises(NonFiniteLossError, match="at step 4") as err:
        trainer.fit(_data())
    assert err.value.step == 4 and not err.value.elsewhere
    assert trainer.step == 6 and [r["step"] for r in trainer.history.records] == [2, 4]
    monkeypatch.setenv(INJECT_NAN_ENV, "1:4")  # another rank: nothing injected here
    m, opt = _model()
    Trainer(m, opt, _loss, config=_cfg()).fit(_data())


# -- the ranks' side -------------------------------------------------------------------------------


def test_the_full_resnet_sweep_is_shared_out_by_depth() -> None:
    from paperzoo.papers.resnet.config import CONFIGS
    from paperzoo.papers.resnet.experiment import ResNetExperiment
    from paperzoo.papers.resnet.training import share_by_depth

    nets = ResNetExperiment().model_names(CONFIGS["full"])  # plain 20-56, ResNet 20-110
    shares = [share_by_depth(nets, DistInfo(r, 8)) for r in range(8)]
    assert sorted(n for share in shares for n in share) == sorted(nets)  # each net once
    assert ["resnet110"] in shares  # the deepest alone: the sweep takes as long as it
    loads = sorted(
        sum(int(n.removeprefix("plain").removeprefix("resnet")) for n in s) for s in shares
    )
    assert loads[-1] == 110 and loads[0] >= 20
    two = [share_by_depth(nets, DistInfo(r, 2)) for r in range(2)]
    assert sorted(two[0] + two[1]) == sorted(nets)
    depth = [sum(int(n.removeprefix("plain").removeprefix("resnet")) for n in s) for s in two]
    assert sorted(depth) == [206, 208]  # of 414 layers in all


def _params(m: nn.Module) -> list[list[float]]:
    return [p.detach().flatten().tolist() for p in m.parameters()]


def _worker(mode: str, out: Path) -> int:
    from paperzoo.engine import CheckpointError, interrupt
    from paperzoo.engine.checkpoint import latest_step
    from paperzoo.engine.distributed import init_distributed, wait_for_all_ranks

    torch.set_num_threads(1)
    info = init_distributed("cpu", timeout=SHORT)
    result: dict = {"rank": info.rank}
    t0 = time.monotonic()
    if mode == "nan":  # PAPERZOO_INJECT_NAN=1:2 in the environment
        m, opt = _model()
        trainer = Trainer(m, opt, _loss, config=_cfg())
        result["broadcast_buffers"] = trainer._train_model.broadcast_buffers  # no BN statistics
        try:
            trainer.fit(_data())
        except NonFiniteLossError as err:
            result.update(error="nan", step=err.step, elsewhere=err.elsewhere, at=trainer.step)
    elif mode == "stop":
        m, opt = _model()
        hist = Trainer(m, opt, _loss, config=_cfg()).fit(_data())
        result["uninterrupted"] = _params(m)
        result["history"] = hist.records

        def loss_and_signal(model: nn.Module, batch) -> torch.Tensor:  # noqa: ANN001
            if info.rank == 1 and trainer.step == 2:
                os.kill(os.getpid(), signal.SIGTERM)
            return _loss(model, batch)

        m, opt = _model()
        trainer = Trainer(m, opt, loss_and_signal, config=_cfg(), out_dir=out / "stop")
        with interrupt.handling():
            try:
                trainer.fit(_data())
            except interrupt.Interrupted as stop:
                result.update(error="interrupted", step=trainer.step, signum=stop.signum)
        dist.barrier()  # rank 0's checkpoint is on disk before any rank resumes
        result["stop_checkpoint"] = latest_step(out / "stop" / "checkpoints")
        m, opt = _model()
        resumed = Trainer(m, opt, _loss, config=_cfg(), out_dir=out / "stop")
        resumed.fit(_data(), resume=True)
        result["resumed"] = _params(m)
        result["resumed_history"] = resumed.history.records
    elif mode == "stop_timed":

        def slow_loss(model: nn.Module, batch) -> torch.Tensor:  # noqa: ANN001
            time.sleep(0.02)
            if info.rank == 1 and trainer.step == 10:
                os.kill(os.getpid(), signal.SIGTERM)
            return _loss(model, batch)

        m, opt = _model()
        cfg = TrainConfig(
            steps=TIMED_STEPS, batch_size=8, log_every=1000, progress=False, agree_seconds=0.2
        )
        trainer = Trainer(m, opt, slow_loss, config=cfg, out_dir=out / "stop")
        with interrupt.handling():
            try:
                trainer.fit(_data())
            except interrupt.Interrupted as stop:
                result.update(error="interrupted", step=trainer.step, signum=stop.signum)
        dist.barrier()  # rank 0's checkpoint is on disk
        result["stop_checkpoint"] = latest_step(out / "stop" / "checkpoints")
    elif mode == "sweep":
        from paperzoo.cli import main
        from paperzoo.papers.resnet import training as resnet_training

        train_one = resnet_training.train_one
        trained: dict[str, list] = {"per_process": [], "data_parallel": []}

        def recording(name, *args, local=False, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
            trained[mode_now].append([name, local])
            return train_one(name, *args, local=local, **kw)

        resnet_training.train_one = recording
        args = ["reproduce", "resnet", "--scale", "smoke", "--device", "cpu", "--quiet"]
        for mode_now, extra in (
            ("per_process", []),
            ("data_parallel", ["--set", "data_parallel=true"]),
        ):
            code = main([*args, *extra, "--out", str(out / mode_now)])
            dist.barrier()  # rank 0 wrote results.json
            res = json.loads((out / mode_now / "results.json").read_text())
            result[mode_now] = {"code": code, "nets": sorted(res["details"]["runs"])}
        result["trained"] = trained
    elif mode == "resume":
        if info.rank == 0:  # an earlier run left a checkpoint at step 3 in rank 0's directory
            m, opt = _model()
            Trainer(m, opt, _loss, config=_cfg(3), out_dir=out / "rank-0", local=True).fit(_data())
        dist.barrier()
        m, opt = _model()
        trainer = Trainer(m, opt, _loss, config=_cfg(), out_dir=out / f"rank-{info.rank}")
        try:
            trainer.fit(_data(), resume=True)
        except CheckpointError as err:
            result.update(error="checkpoint", message=str(err))
    elif mode == "unshared":  # each rank's --out is its own directory under one name
        import contextlib
        import io

        from paperzoo.cli import main

        args = ["reproduce", "resnet", "--scale", "smoke", "--device", "cpu", "--quiet"]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main([*args, "--out", str(out / f"rank-{info.rank}")])
        result.update(code=code, stderr=err.getvalue())
    elif mode == "exited":
        from paperzoo.engine.distributed import RanksExited

        if info.rank == 0:
            try:
                wait_for_all_ranks("the work", poll_s=0.1)
            except RanksExited as err:
                result.update(error="exited", ranks=err.ranks)
    result["seconds"] = time.monotonic() - t0
    (out / f"rank-{info.rank}.json").write_text(json.dumps(result))
    return 0


def _launch(torchrun: Callable, mode: str, out: Path, **env: str) -> list[dict]:
    full_env = {k: v for k, v in os.environ.items() if k != INJECT_NAN_ENV}
    # a rank that dies of a signal prints every thread's Python stack (faulthandler)
    full_env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONFAULTHANDLER="1", **env)
    proc = torchrun([__file__, mode, str(out)], nproc=WORLD, env=full_env, timeout=300)
    wrote = [r for r in range(WORLD) if (out / f"rank-{r}.json").exists()]
    assert proc.returncode == 0, f"ranks that wrote results: {wrote}\n{proc.stderr[-6000:]}"
    return [json.loads((out / f"rank-{r}.json").read_text()) for r in range(WORLD)]


def test_a_nan_on_one_rank_ends_every_rank_at_that_step(tmp_path: Path, torchrun: Callable) -> None:
    ranks = _launch(torchrun, "nan", tmp_path, **{INJECT_NAN_ENV: "1:2"})
    assert [(r["error"], r["step"], r["elsewhere"], r["at"]) for r in ranks] == [
        ("nan", 2, True, 4),
        ("nan", 2, False, 4),
    ]
    assert [r["broadcast_buffers"] for r in ranks] == [False, False]


def test_a_signal_on_one_rank_stops_every_rank_at_one_step(
    tmp_path: Path, torchrun: Callable
) -> None:
    ranks = _launch(torchrun, "stop", tmp_path)
    assert [(r["error"], r["step"], r["signum"]) for r in ranks] == [
        ("interrupted", 4, signal.SIGTERM),
    ] * 2
    assert [r["stop_checkpoint"] for r in ranks] == [4, 4]
    for r in ranks:  # the resumed run continued at step 4 and ended where one run ends
        assert [rec["step"] for rec in r["resumed_history"]] == [2, 4, 6]
        assert r["resumed"] == r["uninterrupted"]
    # each logged record is the mean over the ranks: the same on both, also once resumed
    assert ranks[0]["history"] == ranks[1]["history"]
    assert ranks[0]["resumed_history"] == ranks[1]["resumed_history"]
    for a, b in zip(ranks[0]["resumed_history"], ranks[0]["history"], strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-12)


def test_a_signal_reaches_every_rank_on_the_wall_time_schedule(
    tmp_path: Path, torchrun: Callable
) -> None:
    ranks = _launch(torchrun, "stop_timed", tmp_path)
    steps = {r["step"] for r in ranks}
    assert [(r["error"], r["signum"]) for r in ranks] == [("interrupted", signal.SIGTERM)] * 2
    assert len(steps) == 1  # both ranks stopped after the same step
    (step,) = steps
    # the signal arrived during step 10 (trainer.step 10 -> 11): the next meeting is at most
    # about agree_seconds (10 steps of 20 ms) later; the run's only sync point is step 400
    assert 11 <= step <= 40 < TIMED_STEPS
    assert [r["stop_checkpoint"] for r in ranks] == [step, step]


def test_the_resnet_sweep_trains_one_net_per_process(tmp_path: Path, torchrun: Callable) -> None:
    from paperzoo.papers.resnet.config import CONFIGS
    from paperzoo.papers.resnet.experiment import ResNetExperiment
    from paperzoo.papers.resnet.training import share_by_depth

    nets = sorted(ResNetExperiment().model_names(CONFIGS["smoke"]))
    ranks = _launch(torchrun, "sweep", tmp_path)
    mine = [sorted(n for n, _ in r["trained"]["per_process"]) for r in ranks]
    assert sorted(mine[0] + mine[1]) == nets and not set(mine[0]) & set(mine[1])
    for r in ranks:
        assert all(local for _, local in r["trained"]["per_process"])  # alone: whole batches
        assert mine[r["rank"]] == sorted(share_by_depth(nets, DistInfo(r["rank"], WORLD)))
        assert r["per_process"] == {"code": 0, "nets": nets}  # every rank reads every net
        # data_parallel: every net on every rank, under DDP
        assert sorted(r["trained"]["data_parallel"]) == [[n, False] for n in nets]
        assert r["data_parallel"] == {"code": 0, "nets": nets}


def test_ranks_that_resume_differently_fail_together(tmp_path: Path, torchrun: Callable) -> None:
    ranks = _launch(torchrun, "resume", tmp_path)
    assert [r.get("error") for r in ranks] == ["checkpoint", "checkpoint"]
    assert all("one directory that every rank sees" in r["message"] for r in ranks)


def test_an_out_directory_the_ranks_do_not_share_fails_in_one_line(
    tmp_path: Path, torchrun: Callable
) -> None:
    ranks = _launch(torchrun, "unshared", tmp_path)
    assert [r["code"] for r in ranks] == [2, 2]
    for r in ranks:
        lines = [ln for ln in r["stderr"].splitlines() if ln.startswith("paperzoo: error:")]
        assert len(lines) == 1 and "is not one directory that every rank sees" in lines[0]
    assert "rank 1 does not see rank 0's files" in ranks[1]["stderr"]
    assert not (tmp_path / "rank-0" / "results.json").exists()


def test_a_rank_that_exits_ends_the_wait(tmp_path: Path, torchrun: Callable) -> None:
    ranks = _launch(torchrun, "exited", tmp_path)
    assert ranks[0]["error"] == "exited" and ranks[0]["ranks"] == [1]
    assert ranks[0]["seconds"] < 60


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1], Path(sys.argv[2])))
