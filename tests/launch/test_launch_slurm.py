"""``paperzoo launch --executor slurm`` on a real Slurm cluster (``../shared/tools/slurm-local.sh``
starts a one-node one; ``.ci/run`` does): skipped where ``sbatch`` is not on the PATH or the
cluster does not answer.

A launch of two papers over seeds 0-3 merges to the per-seed values and verdicts of ``reproduce
--seeds 0-3 --jobs 1``; a cell requeued while running resumes to an uninterrupted run's values; a
cancelled cell is failed in ``status`` and ``launch`` again resubmits only it; a bad Slurm option
or a missing partition is one line and exit 2, nothing submitted."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from paperzoo.cli import main
from paperzoo.launch import status
from paperzoo.launch.state import LaunchState, read_events


def _slurm_answers() -> bool:
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return False
    try:
        proc = subprocess.run(["sinfo", "-h"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


# Every run is at --threads 1 (in this process and in the jobs) whatever the caller's count.
pytestmark = [
    pytest.mark.skipif(not _slurm_answers(), reason="no Slurm cluster answers here"),
    pytest.mark.fixed_threads,
]

RUN = ["--scale", "smoke", "--threads", "1", "--quiet"]
SLURM = ["--executor", "slurm", "--slurm-opt", "cpus-per-task=1"]
WAIT_S = 900  # the node may be shared: jobs can queue


@pytest.fixture(autouse=True)
def _keep_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _wait(until: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def _claims(out: Path) -> dict[str, tuple[list, str]]:
    result = json.loads((out / "results.json").read_text())
    return {c["id"]: (c["per_seed"], c["verdict"]) for c in result["claims"]}


def _merged(out: Path) -> bool:
    return status(out).merged


def test_a_launch_of_two_papers_merges_to_reproduce_seeds(tmp_path):
    out, ref = tmp_path / "launch", tmp_path / "ref"
    start = time.monotonic()
    argv = ["launch", "gat", "path-sgd", "--seeds", "0-3", *RUN, *SLURM, "--out", str(out)]
    assert main(argv) == 0
    assert time.monotonic() - start < 60  # it submits and returns
    for paper in ("gat", "path-sgd"):  # the reference, while the jobs run
        args = ["reproduce", paper, "--seeds", "0-3", "--jobs", "1", *RUN, "--out"]
        assert main([*args, str(ref / paper)]) == 0
    _wait(lambda: _merged(out), "the merge job")
    s = status(out)
    assert [r.state for r in s.cells] == ["done"] * 8 and s.relaunch is None
    assert all(r.job and "_" in r.job for r in s.cells)
    for paper in ("gat", "path-sgd"):
        assert json.loads((out / paper / "results.json").read_text())["seeds"] == [0, 1, 2, 3]
        assert _claims(out / paper) == _claims(ref / paper)


STEPS = 60  # ResNet at smoke, longer: four nets, checkpointed every 0.05 s


def _mid_training(out: Path) -> bool:
    for pointer in out.glob("**/checkpoints/latest.json"):
        try:
            if 0 < json.loads(pointer.read_text())["step"] < STEPS:
                return True
        except (ValueError, OSError):
            pass
    return False


def test_a_cell_requeued_while_running_resumes_to_the_uninterrupted_values(tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERZOO_CHECKPOINT_SECONDS", "0.05")  # (sbatch passes it on)
    out, ref = tmp_path / "launch", tmp_path / "ref"
    args = ["resnet", "--seed", "0", *RUN, "--set", f"steps={STEPS}"]
    assert main(["launch", *args, *SLURM, "--out", str(out)]) == 0
    job = LaunchState.load(out).jobs[0]
    _wait(lambda: _mid_training(out / "seed-0"), "a checkpoint mid-training", timeout=600)
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=60)
    # a requeued job waits about two minutes before it may start again: let it start now
    _wait(
        lambda: (
            subprocess.run(
                ["scontrol", "update", f"jobid={job}", "starttime=now"], capture_output=True
            ).returncode
            == 0
        ),
        "the requeued job to be pending",
        timeout=120,
    )
    assert main(["reproduce", *args, "--out", str(ref)]) == 0  # uninterrupted
    _wait(lambda: _merged(out), "the requeued cell and the merge")
    (row,) = status(out).cells
    assert row.state == "done" and row.attempts == 2
    state = LaunchState.load(out)
    assert [e.kind for e in read_events(state.events_file(0))].count("end") == 2
    assert "resumed from step" in state.log_file(0).read_text()
    assert _claims(out) == _claims(ref)


def test_a_cancelled_cell_is_failed_and_launch_again_resubmits_only_it(tmp_path, capsys):
    out = tmp_path / "launch"
    argv = ["launch", "path-sgd", "--seeds", "0-1", *RUN, *SLURM, "--out", str(out)]
    assert main(argv) == 0
    first = LaunchState.load(out)
    subprocess.run(["scancel", first.jobs[1]], check=True, timeout=60)
    _wait(lambda: first.done(0), "seed 0")
    _wait(
        lambda: [r.state for r in status(out).cells] == ["done", "failed"],
        "the cancelled cell to show as failed",
        timeout=120,
    )
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"relaunch what is missing or failed:\n  paperzoo launch --out {out}" in text
    assert main(argv) == 0  # the same command again
    again = LaunchState.load(out)
    assert again.jobs[0] == first.jobs[0] and again.jobs[1] != first.jobs[1]
    assert "submitted 1 cell(s)" in capsys.readouterr().out
    _wait(lambda: _merged(out), "the resubmitted cell and the merge")
    assert sum(e.kind == "start" for e in read_events(again.events_file(0))) == 1
    assert json.loads((out / "results.json").read_text())["seeds"] == [0, 1]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--slurm-opt", "no-such-option=1"], "no-such-option"),
        (["--partition", "no-such-partition"], "partition"),
    ],
)
def test_a_bad_slurm_option_or_partition_is_one_line_and_exit_2(tmp_path, capsys, extra, says):
    out = tmp_path / "launch"
    assert main(["launch", "gat", *RUN, "--seed", "0", *SLURM, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert LaunchState.load(out).jobs == {}  # nothing submitted
