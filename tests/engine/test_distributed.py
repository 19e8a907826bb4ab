"""Distributed runs under ``torchrun`` are right on NCCL as on gloo.

A CPU host has no NCCL and no GPU, and gloo accepts tensors on any device, so a run on two gloo
ranks cannot see a CPU tensor handed to an NCCL collective. Here each rank starts its process
group *as on CUDA* (``init_distributed("cuda")``: plain NCCL) through a stand-in (``_FakeNCCL``):
the group is gloo underneath, a tensor asked for on a CUDA device is made on the CPU and labelled
with that device, and every tensor collective first checks its tensors' devices against the
backend that was asked for, as NCCL does ("No backend type associated with device type cpu"), and
logs them: every collective of a CUDA run is on ``cuda:LOCAL_RANK``. The papers that train
data-parallel (ResNet, the Perceiver, the disentanglement study) run at smoke on two ranks this
way; rank 0 alone writes the report, and the disentanglement study, whose grid items are split
over ranks and trained independently, equals a one-process run. Its ranks are given uneven work
under a 3-second timeout: ranks that finish early wait without a collective
(``wait_for_all_ranks``); a ``barrier`` there times out.

With ``PAPERZOO_INJECT_NAN=1:2`` (rank 1's loss NaN at step 2 of every model it trains),
``torchrun -m paperzoo reproduce`` of ResNet and of the disentanglement study ends on both ranks
with results.json recording the divergence.

The test file is also the ranks' script: ``torchrun ... test_distributed.py MODE OUT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from paperzoo.engine.distributed import (
    DistInfo,
    agree_max,
    all_reduce_mean,
    all_reduce_means,
    backend_for,
    barrier,
    check_shared_dir,
    init_distributed,
    served_devices,
    wait_for_all_ranks,
)

WORLD = 2
SHORT = timedelta(seconds=3)  # the process group's timeout in the uneven-work runs
SLOW_S = 8.0  # how long rank 1 lags behind rank 0 there (well past SHORT)

# Tensor collectives (object collectives move their tensors themselves).
_COLLECTIVES = (
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather",
    "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
    "send", "recv", "isend", "irecv",
)  # fmt: skip


# -- in one process --------------------------------------------------------------------------------


def test_a_cuda_run_starts_a_plain_nccl_group() -> None:
    assert backend_for("cpu") == "gloo"
    for device in ("cuda", "cuda:1"):
        assert backend_for(device) == "nccl"
        assert served_devices(backend_for(device)) == {"cuda": "nccl"}  # no gloo beside it


def test_every_helper_collective_of_a_cuda_run_is_on_the_gpu_of_local_rank(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Rank 1 of 2 (LOCAL_RANK 1) of a CUDA run, its process group stood in for in this process:
    the group is asked for on NCCL alone, the rank's GPU is set to cuda:1 before it starts, and
    every collective the module makes (the means, ``agree_max``, ``check_shared_dir``'s
    agreement, ``barrier``) is on cuda:1, the device NCCL serves for this rank."""
    from paperzoo.engine import distributed

    for name, value in (("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "1")):
        monkeypatch.setenv(name, value)
    state: dict = {"initialized": False, "device": 0, "backend": None}
    reduced: list[tuple[torch.device, str]] = []  # (the tensor's device, the op)
    barriers: list[object] = []

    def init_process_group(backend: str | None = None, **kwargs: object) -> None:
        assert state["device"] == 1, "the GPU is set before NCCL starts"
        state.update(initialized=True, backend=backend)

    real_tensor = torch.tensor

    def tensor(data: object, *, device: object = None, **kwargs: object) -> torch.Tensor:
        t = real_tensor(data, **kwargs)  # on the CPU (no GPU here), labelled with the device
        t.asked_device = torch.device(device) if device is not None else t.device
        return t

    def all_reduce(t: torch.Tensor, op: object = dist.ReduceOp.SUM, **kwargs: object) -> None:
        reduced.append((t.asked_device, "max" if op == dist.ReduceOp.MAX else "sum"))
        if op != dist.ReduceOp.MAX:
            t.mul_(2)  # two ranks holding the same values

    monkeypatch.setattr(dist, "init_process_group", init_process_group)
    monkeypatch.setattr(dist, "is_initialized", lambda: state["initialized"])
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    monkeypatch.setattr(dist, "get_backend", lambda group=None: state["backend"])
    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    monkeypatch.setattr(dist, "barrier", lambda device_ids=None, **kw: barriers.append(device_ids))
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: state.update(device=int(d)))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: state["device"])
    monkeypatch.setattr(torch, "tensor", tensor)
    monkeypatch.setattr(distributed.atexit, "register", lambda fn: fn)  # nothing at this exit
    monkeypatch.setattr(distributed, "_requested_backend", None)
    monkeypatch.setattr(distributed, "_checks", 0)
    # the store, with what rank 0 put there for check_shared_dir (its nonce, and the file)
    store = dist.HashStore()
    store.set("paperzoo/shared-dir-1", "abc")
    (tmp_path / ".paperzoo-ranks-1").write_text("abc")
    monkeypatch.setattr(dist.distributed_c10d, "_get_default_store", lambda: store)

    info = init_distributed("cuda")
    assert (info.rank, info.world_size, info.local_rank) == (1, 2, 1)
    assert state["backend"] == "nccl"
    assert distributed.collective_device() == torch.device("cuda", 1)
    assert all_reduce_mean(3.0) == 3.0
    assert all_reduce_means([1.0, 2.0]) == [1.0, 2.0]
    assert agree_max(0.0, 1.0) == [0.0, 1.0]
    check_shared_dir(tmp_path)
    barrier()
    cuda1 = torch.device("cuda", 1)
    assert reduced == [(cuda1, "sum"), (cuda1, "sum"), (cuda1, "max"), (cuda1, "max")]
    assert barriers == [[1]]


def test_served_devices_of_plain_backends() -> None:
    assert served_devices("nccl") == {"cuda": "nccl"}  # NCCL alone: no CPU tensors
    assert served_devices("gloo") == {"cpu": "gloo", "cuda": "gloo"}
    assert served_devices("cpu:gloo,cuda:nccl") == {"cpu": "gloo", "cuda": "nccl"}


def test_outside_torchrun_nothing_is_distributed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert init_distributed("cuda") == DistInfo()
    assert not dist.is_initialized()
    assert all_reduce_mean(2.5) == 2.5
    wait_for_all_ranks("nothing")  # returns at once


# -- the ranks' side -------------------------------------------------------------------------------


class _FakeNCCL:
    """Start the process group as asked (``nccl`` for a CUDA run) but on gloo, and make every
    tensor collective check its tensors' devices against the asked-for backend, as NCCL does.
    No GPU here: ``torch.cuda.set_device`` records the device, ``torch.cuda.current_device``
    returns it, and ``torch.tensor(..., device="cuda:N")`` makes the tensor on the CPU labelled
    ``cuda:N`` (the device a collective is checked and logged with). Every checked call is logged
    to ``log`` (rank, name, devices, backend), so a test can see which collectives ran where."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.asked: str | None = None
        self.device = 0
        real_init = dist.init_process_group
        real_tensor = torch.tensor

        def init(backend: str | None = None, **kwargs):  # noqa: ANN202
            self.asked = str(backend)
            return real_init(backend="gloo", **kwargs)

        def tensor(data, *, device=None, **kwargs):  # noqa: ANN001, ANN202
            if device is None or torch.device(device).type != "cuda":
                return real_tensor(data, device=device, **kwargs)
            t = real_tensor(data, **kwargs)
            t.asked_device = torch.device(device)
            return t

        def set_device(device) -> None:  # noqa: ANN001
            self.device = device if isinstance(device, int) else torch.device(device).index

        dist.init_process_group = init  # type: ignore[assignment]
        torch.tensor = tensor  # type: ignore[assignment]
        torch.cuda.set_device = set_device  # type: ignore[assignment]
        torch.cuda.current_device = lambda: self.device  # type: ignore[assignment]
        for name in _COLLECTIVES:
            setattr(dist, name, self._checked(name, getattr(dist, name)))

    def _served(self) -> set[str]:
        """Device types the asked-for backend serves (torch's own capability table)."""
        assert self.asked is not None, "a collective before init_process_group"
        if ":" in self.asked:
            return {part.split(":")[0] for part in self.asked.split(",")}
        return set(dist.Backend.backend_capability[self.asked])

    def _checked(self, name: str, fn):  # noqa: ANN001, ANN202
        def call(*args, **kwargs):  # noqa: ANN202
            tensors = []
            for a in (*args, *kwargs.values()):
                if isinstance(a, torch.Tensor):
                    tensors.append(a)
                elif isinstance(a, list | tuple):
                    tensors += [t for t in a if isinstance(t, torch.Tensor)]
            devices = sorted({str(getattr(t, "asked_device", t.device)) for t in tensors})
            with open(self.log, "a") as f:
                f.write(f"{dist.get_rank()} {name} {','.join(devices)} {self.asked}\n")
            for kind in {d.split(":")[0] for d in devices}:
                if kind not in self._served():
                    raise RuntimeError(
                        f"No backend type associated with device type {kind} ({self.asked})"
                    )
            return fn(*args, **kwargs)

        return call


def _record_writers(out: Path) -> None:
    """Make every call of the runner's report writer leave ``OUT/wrote-rank-R``."""
    from paperzoo.experiments import runner

    real = runner.write_report

    def write_report(*args, **kwargs):  # noqa: ANN202
        (out.parent / f"{out.name}.wrote-rank-{dist.get_rank()}").touch()
        return real(*args, **kwargs)

    runner.write_report = write_report  # type: ignore[assignment]


def _slow_rank_1() -> None:
    """Rank 1 takes SLOW_S seconds longer over its first disentanglement grid item."""
    from paperzoo.papers.disentanglement import training as dis  # experiment.py imports it at run

    real = dis.evaluate_item

    def evaluate(*args, **kwargs):  # noqa: ANN202
        if dist.get_rank() == 1 and not getattr(evaluate, "slept", False):
            evaluate.slept = True  # type: ignore[attr-defined]
            time.sleep(SLOW_S)
        return real(*args, **kwargs)

    dis.evaluate_item = evaluate


def _worker(mode: str, out: Path) -> int:
    """One rank: ``mode`` is ``primitives`` or a paper's name."""
    torch.set_num_threads(1)
    _FakeNCCL(out.parent / f"{out.name}.collectives")
    if mode == "primitives":
        info = init_distributed("cuda", timeout=SHORT)
        mean = all_reduce_mean(1.0 + 2.0 * info.rank)  # ranks 0 and 1: 1.0 and 3.0
        if info.rank == 1:
            time.sleep(SLOW_S)
        wait_for_all_ranks("uneven work")  # rank 0 waits SLOW_S, past the group's timeout
        result = {"mean": mean, "waited": True}
        try:  # the control: the same lag at a barrier meets the timeout
            if info.rank == 1:
                time.sleep(SLOW_S)
            dist.barrier()
            result["barrier"] = "passed"
        except Exception as err:  # noqa: BLE001 - gloo's timeout error type varies by version
            result["barrier"] = f"raised {type(err).__name__}"
        (out.parent / f"{out.name}.rank-{info.rank}.json").write_text(json.dumps(result))
        os._exit(0)  # the group is broken by the timed-out barrier: no orderly teardown
    if mode == "one-rank":  # torchrun --nproc_per_node=1: still a group, DDP and collectives
        from paperzoo.engine import TrainConfig, Trainer

        info = init_distributed("cuda")
        trainer = Trainer(
            torch.nn.Linear(2, 1),
            None,
            lambda m, b: m(b).sum(),
            config=TrainConfig(steps=1, batch_size=1, progress=False),
            manual=True,
        )
        result = {
            "enabled": info.enabled,
            "world": info.world_size,
            "mean": all_reduce_mean(5.0),
            "ddp": isinstance(trainer._train_model, torch.nn.parallel.DistributedDataParallel),
        }
        (out.parent / f"{out.name}.rank-{info.rank}.json").write_text(json.dumps(result))
        return 0
    uneven = mode == "disentanglement"
    init_distributed("cuda", timeout=SHORT if uneven else None)  # the group as on CUDA
    _record_writers(out)
    if uneven:
        _slow_rank_1()
    from paperzoo.cli import main

    args = ["reproduce", mode, "--scale", "smoke", "--device", "cpu", "--quiet"]
    return main([*args, "--out", str(out)])


# -- the tests that launch ranks -------------------------------------------------------------------


def _launch(
    torchrun: Callable, mode: str, out: Path, nproc: int = WORLD
) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return torchrun([__file__, mode, str(out)], nproc=nproc, env=env, timeout=600)


def _collectives(out: Path) -> list[list[str]]:
    path = out.parent / f"{out.name}.collectives"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _writers(out: Path) -> list[str]:
    return sorted(p.name.rsplit("-", 1)[1] for p in out.parent.glob(f"{out.name}.wrote-rank-*"))


def test_primitives_on_the_backend_asked_for_on_cuda(tmp_path: Path, torchrun: Callable) -> None:
    out = tmp_path / "primitives"
    proc = _launch(torchrun, "primitives", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"primitives.rank-{r}.json").read_text()) for r in (0, 1)]
    assert [r["mean"] for r in ranks] == [2.0, 2.0]
    assert all(r["waited"] for r in ranks)  # the uneven wait outlived the 3-s timeout
    assert ranks[0]["barrier"].startswith("raised")  # while a barrier does not
    calls = _collectives(out)
    assert {c[1] for c in calls} == {"all_reduce"}
    assert {c[0] for c in calls} == {"0", "1"}
    assert all(c[2] == f"cuda:{c[0]}" and c[3] == "nccl" for c in calls)  # rank = LOCAL_RANK


def test_one_process_under_torchrun_still_runs_collectives(
    tmp_path: Path, torchrun: Callable
) -> None:
    """A one-GPU check launches the data-parallel papers with --nproc_per_node=1: DDP and the
    reductions must run there as on eight GPUs, not be skipped for a world of one."""
    out = tmp_path / "one"
    proc = _launch(torchrun, "one-rank", out, nproc=1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "one.rank-0.json").read_text())
    assert result == {"enabled": True, "world": 1, "mean": 5.0, "ddp": True}
    assert [c[1:] for c in _collectives(out)] == [["all_reduce", "cuda:0", "nccl"]]


@pytest.mark.parametrize("paper", ["resnet", "perceiver"])
def test_data_parallel_paper_on_two_ranks_as_on_cuda(
    tmp_path: Path, paper: str, torchrun: Callable
) -> None:
    out = tmp_path / paper
    proc = _launch(torchrun, paper, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "results.json").is_file()
    assert _writers(out) == ["0"]  # rank 0 alone wrote the report
    result = json.loads((out / "results.json").read_text())
    assert result["claims"] and all(c["measured"] is not None for c in result["claims"])
    if paper == "resnet":  # it reduces each net's train loss and error over the ranks
        reduced = [c for c in _collectives(out) if c[1] == "all_reduce"]
        assert reduced and all(c[2] == f"cuda:{c[0]}" and c[3] == "nccl" for c in reduced)


def test_disentanglement_uneven_ranks_equal_one_process(tmp_path: Path, torchrun: Callable) -> None:
    out = tmp_path / "disentanglement"
    proc = _launch(torchrun, "disentanglement", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _writers(out) == ["0"]
    two = json.loads((out / "results.json").read_text())

    from paperzoo.cli import main

    one_out = tmp_path / "one-process"
    args = ["reproduce", "disentanglement", "--scale", "smoke", "--device", "cpu", "--quiet"]
    assert main([*args, "--out", str(one_out), "--threads", "1"]) == 0
    one = json.loads((one_out / "results.json").read_text())
    measured = {c["id"]: c["measured"] for c in one["claims"]}
    assert len(measured) > 10
    assert {c["id"]: c["measured"] for c in two["claims"]} == measured

    # every grid item, trained on whichever rank it was given, as in one process
    def items(result: dict) -> list[dict]:
        return [
            {k: v for k, v in r.items() if k != "weights"} for r in result["details"]["records"]
        ]

    assert items(two) == items(one)


@pytest.mark.parametrize("paper", ["resnet", "disentanglement"])
def test_a_nan_on_one_rank_ends_every_rank_and_is_recorded(
    tmp_path: Path, paper: str, torchrun: Callable
) -> None:
    """``PAPERZOO_INJECT_NAN=1:2``: rank 1's loss is NaN at step 2 of every model it trains. The
    run ends on both ranks in bounded time with results.json: ResNet (a net per rank, the
    nets shared out; rank 1's diverge) records every claim as not measured with the divergence,
    as a data-parallel run does; the disentanglement study records the
    items rank 1 trained as diverged, names them, and summarises the others."""
    out = tmp_path / paper
    args = ["-m", "paperzoo", "reproduce", paper, "--scale", "smoke", "--device", "cpu"]
    args += ["--quiet", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PAPERZOO_INJECT_NAN": "1:2"}
    start = time.monotonic()
    proc = torchrun(args, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.monotonic() - start < 240
    result = json.loads((out / "results.json").read_text())
    if paper == "resnet":
        assert all(c["measured"] is None for c in result["claims"])
        assert all(
            c["why_not_measured"] == ["diverged at step 2: loss nan (on another rank)"]
            for c in result["claims"]
        )
        return
    diverged = result["details"]["diverged"]
    items = [r["id"] for r in result["details"]["records"]]
    assert diverged and items and not set(diverged) & set(items)
    assert all("diverged at step 2 (loss nan)" in why for why in diverged.values())
    note = next(n for n in result["notes"] if "diverged and are left out" in n)
    assert all(item in note for item in diverged)
    assert any(c["measured"] is not None for c in result["claims"])
    # rank 1 trained the random code's WReN (item 1 of the grid): its claims say why
    assert any(
        "random-code: a WReN diverged at step 2" in " ".join(c.get("why_not_measured") or [])
        for c in result["claims"]
    )


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1], Path(sys.argv[2])))


def test_meetings_fit_the_agreed_time_per_step_into_their_seconds() -> None:
    from paperzoo.engine.distributed import MeetingSchedule

    meet = MeetingSchedule(5.0, step=100)
    assert not meet.due(100) and meet.due(101)  # first meeting after the first step
    meet.met(101, per_step=0.1)  # the slowest rank's 100 ms a step: 50 steps fit in 5 s
    assert meet.next == 151 and not meet.due(150) and meet.due(151)
    meet.met(151, per_step=4.8)  # a step of 4.8 s (a Perceiver step on one GPU): every step
    assert meet.next == 152
    meet.met(152, per_step=0.0)  # nothing measurable: meet again after the next step
    assert meet.next == 153
    assert meet.per_step(153) >= 0.0
    with pytest.raises(ValueError, match="seconds between meetings must be > 0"):
        MeetingSchedule(0.0, step=0)


def test_a_launch_past_its_timeout_leaves_no_rank_behind(
    tmp_path: Path, torchrun: Callable
) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(600)\n")
    marker = f"paperzoo-sleeper-{os.getpid()}"
    with pytest.raises(pytest.fail.Exception, match="ran past 20 s; its ranks were killed"):
        torchrun([str(script), marker], env=dict(os.environ), timeout=20)
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if marker.encode() in (proc / "cmdline").read_bytes():
                alive.append(proc.name)
        except OSError:
            continue
    assert alive == []
