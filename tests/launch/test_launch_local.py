"""``paperzoo launch --executor local`` and ``paperzoo status``: the cells' merge equals
``reproduce --seeds``; a launch run again runs only the cells not done; the seed rule's
``next_seeds`` adds cells; bad requests are one line and exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

import paperzoo.verdict
from paperzoo.cli import main
from paperzoo.launch import launching, status
from paperzoo.launch.plan import PaperPlan, Resources
from paperzoo.launch.state import LaunchState, read_events, write_event

# Every run is at --threads 1 (in this process and in the cells) whatever the caller's count.
pytestmark = pytest.mark.fixed_threads
RUN = ["--scale", "smoke", "--threads", "1", "--quiet"]


@pytest.fixture(autouse=True)
def _keep_threads():
    """``main(... --threads 1)`` sets torch's thread count for the process: restore it."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _claims(out: Path) -> dict[str, tuple[list, str]]:
    result = json.loads((out / "results.json").read_text())
    return {c["id"]: (c["per_seed"], c["verdict"]) for c in result["claims"]}


def _starts(out: Path) -> list[int]:
    state = LaunchState.load(out)
    return [
        sum(e.kind == "start" for e in read_events(state.events_file(i)))
        for i in range(len(state.cells))
    ]


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> tuple[Path, Path]:
    """path-sgd at smoke over seeds 0-1: (the launch's DIR, reproduce --seeds' DIR)."""
    root = tmp_path_factory.mktemp("launch")
    out, ref = root / "launch", root / "ref"
    n = torch.get_num_threads()
    try:
        args = ["path-sgd", "--seeds", "0-1", *RUN]
        assert main(["launch", *args, "--executor", "local", "--out", str(out)]) == 0
        assert main(["reproduce", *args, "--jobs", "1", "--out", str(ref)]) == 0
    finally:
        torch.set_num_threads(n)
    return out, ref


def test_the_merged_cells_equal_reproduce_seeds(launched):
    out, ref = launched
    assert _claims(out) == _claims(ref)
    result = json.loads((out / "results.json").read_text())
    assert result["seeds"] == [0, 1] and result["seed_dirs"] == ["seed-0", "seed-1"]
    s = status(out)
    assert [r.state for r in s.cells] == ["done", "done"] and s.merged and s.relaunch is None


def test_a_launch_run_again_runs_only_the_cells_not_done(launched, capsys):
    out, _ = launched
    assert main(["launch", "--out", str(out)]) == 0
    assert _starts(out) == [1, 1]  # nothing ran again
    (out / "seed-1" / "results.json").unlink()
    s = status(out)
    assert [r.state for r in s.cells] == ["done", "failed"]
    assert s.relaunch == f"paperzoo launch --out {out}"
    assert main(["launch", "--out", str(out)]) == 0
    assert _starts(out) == [1, 2]  # seed 1 alone, resumed from its final checkpoints
    assert "ran 1 cell(s) here" in capsys.readouterr().out
    assert status(out).merged


def test_the_seed_rule_adds_the_cells_next_seeds_asks_for(tmp_path, monkeypatch):
    asked = []

    def next_seeds(result):
        asked.append(list(result.seeds))
        return [1] if list(result.seeds) == [0] else []

    monkeypatch.setattr(launching, "PROTOCOL_SEEDS", (0,))
    monkeypatch.setattr(paperzoo.verdict, "next_seeds", next_seeds)
    out = tmp_path / "rule"
    assert main(["launch", "path-sgd", *RUN, "--executor", "local", "--out", str(out)]) == 0
    assert asked == [[0], [0, 1]]
    assert json.loads((out / "results.json").read_text())["seeds"] == [0, 1]


def test_status_names_failed_and_missing_cells_and_the_relaunch(tmp_path, capsys):
    res = Resources(1, 1, 2, 8, 900, 100.0, 2)
    plan = PaperPlan("gat", ".", ("--scale", "full"), None, res)
    state = LaunchState(tmp_path, "local", "paperzoo launch gat", {"gat": plan})
    state.add(plan.cells([0, 1], tmp_path))
    state.jobs[0] = "pid 5"
    write_event(state.events_file(0), "5", "start", "here")
    write_event(state.events_file(0), "5", "end", "1")
    state.save()
    assert main(["status", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "gat/seed-0" in text and "failed" in text and "exit 1" in text
    assert "gat/seed-1" in text and "missing" in text
    assert f"relaunch what is missing or failed:\n  paperzoo launch --out {tmp_path}\n" in text
    assert main(["status", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["cells"]
    assert [r["state"] for r in rows] == ["failed", "missing"]


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["gat", "--shard", "0/2"], "give --shards N"),
        (["gat", "--restart"], "--restart would start every requeued cell over"),
        (["gat", "--shards", "2"], "gat trains no grid"),
        (["gat", "--nodes", "2"], "gat trains each model on one GPU"),
        (["gat", "nope"], "unknown paper 'nope'"),
        (["gat", "--jobs", "2", "--executor", "slurm"], None),
    ],
)
def test_bad_launches_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, says):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm here
    err = _error(capsys, ["launch", *args, "--out", str(tmp_path / "out")])
    assert says is None or says in err
    assert not (tmp_path / "out" / "launch.json").exists()


def test_a_malformed_slurm_option_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["launch", "gat", "--slurm-opt", "=x", "--out", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--slurm-opt takes KEY=VALUE" in err


def test_no_slurm_is_one_line_and_local_is_the_default(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    err = _error(capsys, ["launch", "gat", "--executor", "slurm", "--out", str(tmp_path / "o")])
    assert "sbatch not found" in err
    assert launching.default_executor() == "local"
    monkeypatch.setenv("PATH", os.environ["PATH"])


def test_status_and_relaunch_of_a_folder_without_a_launch_exit_2(tmp_path, capsys):
    assert "holds no launch" in _error(capsys, ["status", str(tmp_path)])
    assert "holds no launch" in _error(capsys, ["launch", "--out", str(tmp_path)])
    assert "give paper NAMEs" in _error(capsys, ["launch"])


def test_a_relaunch_keeps_the_launchs_own_reproduce_options(launched, capsys):
    out, _ = launched
    err = _error(capsys, ["launch", "--out", str(out), "--scale", "full"])
    assert "--scale changes the cells" in err


def test_shards_of_a_grid_merge_per_seed_to_the_unsharded_run(tmp_path):
    out, ref = tmp_path / "launch", tmp_path / "ref"
    args = ["resnet", "--seed", "0", *RUN]
    assert main(["launch", *args, "--shards", "2", "--executor", "local", "--out", str(out)]) == 0
    assert [c.id for c in LaunchState.load(out).cells] == [
        "resnet/seed-0/shard-0",
        "resnet/seed-0/shard-1",
    ]
    seed_run = json.loads((out / "seed-0" / "results.json").read_text())
    assert seed_run["shards"] == {"n": 2, "merged": [0, 1]}
    assert main(["reproduce", *args, "--out", str(ref)]) == 0
    assert _claims(out) == _claims(ref)
