"""The sbatch scripts a launch writes: what they ask Slurm for, and what the cell's script does
on Slurm's warning signal and on a failure, run here under bash with stubs for the run and for
``scontrol`` (no Slurm needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from paperzoo.launch import slurm
from paperzoo.launch.plan import PaperPlan, Resources
from paperzoo.launch.state import LaunchState, SlurmOptions, read_events

CPU = Resources(
    nodes=1, gpus_per_node=0, cpus_per_task=1, mem_gb=4, time_s=900, estimate_s=60, threads=1
)


def _state(root: Path, resources: Resources = CPU, **slurm_options) -> LaunchState:
    plan = PaperPlan("resnet", ".", ("--scale", "full"), None, resources)
    state = LaunchState(
        root, "slurm", "paperzoo launch", {"resnet": plan}, slurm=SlurmOptions(**slurm_options)
    )
    state.add(plan.cells([0, 1], root))
    return state


def _sbatch_lines(script: str) -> list[str]:
    return [ln.removeprefix("#SBATCH ") for ln in script.splitlines() if ln.startswith("#SBATCH")]


def test_a_cell_script_asks_for_the_resources_a_warning_signal_and_requeue(tmp_path):
    state = _state(
        tmp_path, partition="gpu", account="lab", qos="high", extra=(("constraint", "a100"),)
    )
    script = slurm.cell_script(state, [0, 1])
    lines = _sbatch_lines(script)
    assert lines[0] == "--array=0,1"
    for want in ("--time=0:15:00", "--cpus-per-task=1", "--mem=4G", "--requeue"):
        assert want in lines
    assert f"--signal=B:USR1@{slurm.WARN_S}" in lines
    # pass-through options come last: they override paperzoo's own
    assert lines[-4:] == ["--partition=gpu", "--account=lab", "--qos=high", "--constraint=a100"]
    assert "srun" not in script and "torch.distributed.run" not in script
    assert "reproduce resnet --seed 1 --out" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)  # valid bash


def test_several_nodes_run_torchrun_under_srun_with_a_rendezvous(tmp_path):
    gpus = Resources(
        nodes=2, gpus_per_node=4, cpus_per_task=16, mem_gb=64, time_s=3600, estimate_s=1000,
        threads=2,
    )  # fmt: skip
    script = slurm.cell_script(_state(tmp_path, gpus), [1])
    lines = _sbatch_lines(script)
    assert {"--nodes=2", "--ntasks-per-node=1", "--gpus-per-node=4"} <= set(lines)
    assert 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)' in script
    assert "export MASTER_ADDR MASTER_PORT" in script
    run = next(ln for ln in script.splitlines() if ln.startswith("  1) cmd=("))
    for word in (
        "-m torch.distributed.run",
        "--nnodes=2",
        "--nproc_per_node=4",
        "--rdzv_backend=c10d",
        '"--rdzv_id=$SLURM_JOB_ID"',
        '"--rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT"',
        "-m paperzoo reproduce resnet --seed 1",
    ):
        assert word in run
    assert 'srun --kill-on-bad-exit=1 "${cmd[@]}" &' in script
    # the rendezvous address is set before the command that names it
    assert script.index("MASTER_ADDR=") < script.index("case $cell in")
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_the_merge_job_waits_for_every_cell_and_ends_when_one_fails_for_good(tmp_path):
    script = slurm.merge_script(_state(tmp_path, partition="p"), ["12", "13_4"])
    lines = _sbatch_lines(script)
    assert lines[:2] == ["--dependency=afterok:12:13_4", "--kill-on-invalid-dep=yes"]
    assert "--partition=p" in lines and not any("gpus" in ln for ln in lines)
    assert f"launch --out {tmp_path} --merge" in script


# -- the cell's script at work, under bash, with stubs ------------------------------------------


def _stub_world(tmp_path: Path, run_body: str, monkeypatch) -> tuple[LaunchState, Path, dict]:
    """A launch whose cell 0 runs ``run_body`` (bash) instead of paperzoo, and a ``scontrol``
    on the PATH that records its arguments; returns (state, the script, its environment)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "scontrol.calls"
    (bin_dir / "scontrol").write_text(f'#!/bin/bash\necho "$@" >> {calls}\n')
    (bin_dir / "scontrol").chmod(0o755)
    run = tmp_path / "run.sh"
    run.write_text(run_body)
    monkeypatch.setattr(slurm, "_python", lambda: ["bash", str(run)])
    state = _state(tmp_path / "launch", retries=2)
    path = slurm.write_script(state.work / "cells.sbatch", slurm.cell_script(state, [0]))
    (state.work / "events").mkdir(parents=True)
    env = os.environ | {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_ARRAY_TASK_ID": "0",
        "SLURM_JOB_ID": "77",
    }
    return state, path, env


def test_a_failed_run_is_requeued_at_most_retries_times(tmp_path, monkeypatch):
    state, script, env = _stub_world(tmp_path, "exit 1\n", monkeypatch)
    for attempt in range(3):  # two retries, then the failure stands
        rc = subprocess.run(["bash", str(script)], env=env, timeout=30).returncode
        assert rc == (0 if attempt < 2 else 1)
    events = read_events(state.events_file(0))
    assert [e.kind for e in events] == ["start", "end", "retry"] * 2 + ["start", "end"]
    assert (tmp_path / "scontrol.calls").read_text().splitlines() == ["requeue 77"] * 2


def test_bad_arguments_are_not_retried(tmp_path, monkeypatch):
    state, script, env = _stub_world(tmp_path, "exit 2\n", monkeypatch)
    assert subprocess.run(["bash", str(script)], env=env, timeout=30).returncode == 2
    assert [e.kind for e in read_events(state.events_file(0))] == ["start", "end"]
    assert not (tmp_path / "scontrol.calls").exists()


@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGTERM])
def test_the_warning_signal_stops_the_run_and_requeues_it(tmp_path, monkeypatch, signum):
    # the run: SIGTERM makes it "checkpoint" (write a file) and exit 143, as paperzoo does
    body = f"sleep 60 & s=$!\ntrap 'kill $s; touch {tmp_path}/checkpointed; exit 143' TERM\nwait\n"
    state, script, env = _stub_world(tmp_path, body, monkeypatch)
    proc = subprocess.Popen(["bash", str(script)], env=env)
    deadline = time.monotonic() + 20
    while not read_events(state.events_file(0)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)  # the run's trap is set
    proc.send_signal(signum)
    rc = proc.wait(timeout=20)
    assert (tmp_path / "checkpointed").exists()
    kinds = [(e.kind, e.value) for e in read_events(state.events_file(0))]
    calls = tmp_path / "scontrol.calls"
    if signum == signal.SIGUSR1:  # Slurm's warning: the script requeues its own job
        assert rc == 0 and kinds[1:3] == [("end", "143"), ("requeue", kinds[2][1])]
        assert calls.read_text().splitlines() == ["requeue 77"]
    else:  # SIGTERM: Slurm requeues or cancels the job itself
        assert rc == 143 and kinds[1:] == [("end", "143")]
        assert not calls.exists()
