"""Resume from the command line: a run killed mid-training (SIGKILL) and rerun with the same
``--out`` reports exactly the numbers of an uninterrupted run; SIGTERM stops a multi-seed run
cleanly (children checkpoint, exit 143, the resume command is printed); another command is not
let into a directory that holds a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from paperzoo.cli import main

# ResNet at smoke scale, longer: four nets, a procedural source with augmentation.
STEPS = 40
ARGS = ["reproduce", "resnet", "--scale", "smoke", "--quiet", "--threads", "1"]
ARGS += ["--set", f"steps={STEPS}"]
ENV = os.environ | {"OMP_NUM_THREADS": "1", "PAPERZOO_CHECKPOINT_SECONDS": "0.05"}


pytestmark = pytest.mark.usefixtures("keep_threads")


def _start(args: list[str], **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "paperzoo", *args]
    return subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, **kw)


def _mid_training(out: Path) -> bool:
    """Some model has a checkpoint before its last step."""
    for pointer in out.glob("**/checkpoints/latest.json"):
        try:
            if 0 < json.loads(pointer.read_text())["step"] < STEPS:
                return True
        except (ValueError, OSError):  # being replaced
            pass
    return False


def _wait_for(proc: subprocess.Popen, outs: list[Path], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(_mid_training(o) for o in outs):
        assert proc.poll() is None, "the run ended before it could be stopped"
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.01)


def _claims(out: Path) -> dict[str, list]:
    result = json.loads((out / "results.json").read_text())
    return {c["id"]: c["per_seed"] for c in result["claims"]}


def _final_weights(out: Path) -> dict[str, list]:
    from paperzoo.engine import load_state

    return {
        str(d.relative_to(out)): [t.tolist() for t in load_state(d)[1]["modules"]["model"].values()]
        for d in sorted(out.glob("runs/*/checkpoints"))
    }


def test_sigkilled_run_resumes_to_the_uninterrupted_numbers(tmp_path):
    ref, out = tmp_path / "ref", tmp_path / "run"
    proc = _start([*ARGS, "--seed", "0", "--out", str(out)])
    _wait_for(proc, [out])
    proc.kill()
    assert proc.wait() == -signal.SIGKILL
    assert not (out / "results.json").exists()
    assert main([*ARGS, "--seed", "0", "--out", str(out)]) == 0  # the rerun resumes
    assert main([*ARGS, "--seed", "0", "--out", str(ref)]) == 0  # uninterrupted
    assert _claims(out) == _claims(ref)
    assert _final_weights(out) == _final_weights(ref)  # bitwise, not only the rounded claims
    # Another command is refused in a directory that holds a run (exit 2, nothing touched).
    before = (out / "results.json").read_bytes()
    assert main([*ARGS, "--seed", "1", "--out", str(out)]) == 2
    assert (out / "results.json").read_bytes() == before


def test_sigterm_stops_a_multi_seed_run_cleanly(tmp_path):
    out = tmp_path / "seeds"
    args = [*ARGS, "--seeds", "0-1", "--jobs", "2", "--out", str(out)]
    proc = _start(args, stderr=subprocess.PIPE, text=True)
    _wait_for(proc, [out / "seed-0", out / "seed-1"])
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "resume with:" in err and f"--seeds 0,1 --jobs 2 --out {out}" in err
    for s in (0, 1):
        log = (out / f"seed-{s}" / "log.txt").read_text()
        assert "stopped by SIGTERM" in log and "resume with:" in log
        assert not (out / f"seed-{s}" / "results.json").exists()
    assert not (out / "results.json").exists()


def test_the_printed_resume_command_repeats_the_run():
    from paperzoo.cli import build_parser, run_request

    def cmd(*argv: str) -> str:
        args = build_parser().parse_args(["reproduce", *argv])
        return run_request(args).resume_command()

    assert cmd("gat", "--scale", "smoke", "--set", "steps=4") == (
        "paperzoo reproduce gat --seed 0 --out runs/gat-smoke-s0 --scale smoke --set steps=4"
    )
    assert cmd("ggnn", "--seeds", "0-3", "--jobs", "2", "--threads", "1", "--out", "o d") == (
        "paperzoo reproduce ggnn --seeds 0,1,2,3 --jobs 2 --out 'o d' --scale quick --threads 1"
    )
    assert "--folds 1,2 --data-root r" in cmd("ggnn", "--folds", "1-2", "--data-root", "r")


def test_out_dir_is_claimed_by_one_run(tmp_path):
    from paperzoo.engine import save_state
    from paperzoo.experiments.runner import RunMismatchError, claim_out_dir

    spec = {"paper": "gat", "seed": 0, "config": {"steps": 3, "eps": [0.1, float("nan")]}}
    other = {**spec, "config": {"steps": 4, "eps": [0.1, float("nan")]}}
    assert claim_out_dir(tmp_path, spec) is False  # a fresh directory: recorded
    assert claim_out_dir(tmp_path, spec) is True  # the same run: resume
    assert claim_out_dir(tmp_path, other) is False  # nothing to resume yet: the new run's now
    save_state(tmp_path / "runs" / "m" / "checkpoints", 1, {"w": torch.zeros(1)})
    with pytest.raises(RunMismatchError, match=r"different run \(config.steps 4 -> 3\)"):
        claim_out_dir(tmp_path, spec)
    (tmp_path / "run.json").write_text("{oops")
    with pytest.raises(RunMismatchError, match="run.json is corrupt"):
        claim_out_dir(tmp_path, spec)
    (tmp_path / "run.json").unlink()
    with pytest.raises(RunMismatchError, match="checkpoints without a run.json"):
        claim_out_dir(tmp_path, spec)
    assert not (tmp_path / "run.json").exists()  # refused: nothing written


def test_restart_clears_a_run_while_another_rank_probes_its_folder(tmp_path, monkeypatch):
    import shutil

    from paperzoo.engine import save_state
    from paperzoo.experiments.runner import claim_out_dir, clear_run

    assert claim_out_dir(tmp_path, {"paper": "gat", "seed": 0, "config": {}}) is False
    save_state(tmp_path / "runs" / "m" / "checkpoints", 1, {"w": torch.zeros(1)})
    (tmp_path / "log.txt").write_text("kept\n")
    probe = tmp_path / ".paperzoo-probe-3w1nx68b"  # another rank's, made and removed at once
    probe.mkdir()
    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if probe.exists():  # listed by --restart, gone before it is removed
            probe.rmdir()
        return real(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    clear_run(tmp_path, "gat")
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]


# -- resume by the same code and data only --------------------------------------------------------

GAT = ["reproduce", "gat", "--scale", "smoke", "--quiet", "--threads", "1"]


def _identity(monkeypatch, commit: str) -> None:
    import paperzoo.provenance as provenance

    ident = {"commit": commit, "source_sha256": commit[:1] * 64}
    monkeypatch.setattr(provenance, "code_identity", lambda paper=None: dict(ident))


def test_a_resume_by_other_code_exits_2_and_restart_starts_over(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    _identity(monkeypatch, "aaaaaaaaaaaa")  # the commit with the bug
    assert main([*GAT, "--out", str(out)]) == 0
    first = json.loads((out / "results.json").read_text())
    assert first["commit"] == "aaaaaaaaaaaa"
    assert json.loads((out / "run.json").read_text())["code"]["commit"] == "aaaaaaaaaaaa"
    _identity(monkeypatch, "bbbbbbbbbbbb")  # the fix, committed: the same command
    capsys.readouterr()
    assert main([*GAT, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "commit aaaaaaaaaaaa" in err and "commit bbbbbbbbbbbb" in err and "--restart" in err
    assert json.loads((out / "results.json").read_text()) == first  # nothing overwritten
    (out / "log.txt").write_text("kept\n")
    assert main([*GAT, "--out", str(out), "--restart"]) == 0
    assert json.loads((out / "results.json").read_text())["commit"] == "bbbbbbbbbbbb"
    assert (out / "log.txt").read_text() == "kept\n"
    assert main([*GAT, "--out", str(out)]) == 0  # the same code again: resumes


def test_a_resume_on_other_data_files_is_refused(tmp_path):
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import RunMismatchError, claim_out_dir, run_spec

    root = tmp_path / "data"
    (root / "mnist").mkdir(parents=True)
    (root / "mnist" / "train-images-idx3-ubyte").write_bytes(b"\0" * 64)
    ctx = RunContext(scale="full", data_root=root)
    spec = run_spec("gat", ctx, {"steps": 1}, "mnist")
    out = tmp_path / "run"
    assert claim_out_dir(out, spec) is False
    from paperzoo.engine import save_state

    save_state(out / "runs" / "m" / "checkpoints", 1, {"w": torch.zeros(1)})
    (root / "mnist" / "train-images-idx3-ubyte").write_bytes(b"\1" * 65)  # other files
    with pytest.raises(RunMismatchError, match="other data files.*--restart"):
        claim_out_dir(out, run_spec("gat", ctx, {"steps": 1}, "mnist"))


def test_a_resumed_run_counts_the_wall_time_of_every_session(tmp_path):
    out = tmp_path / "run"
    assert main([*GAT, "--out", str(out)]) == 0
    first = json.loads((out / "results.json").read_text())["wall_seconds"]
    sessions = json.loads((out / "sessions.json").read_text())
    assert len(sessions) == 1 and sessions[0][1] - sessions[0][0] == pytest.approx(first, abs=1.0)
    assert main([*GAT, "--out", str(out)]) == 0  # resumes: every model loads
    again = json.loads((out / "results.json").read_text())
    assert len(json.loads((out / "sessions.json").read_text())) == 2
    assert again["wall_seconds"] >= first
    assert any(n.startswith("resumed: 2 sessions") for n in again["notes"])


def test_a_diverged_run_writes_results_with_exit_0(tmp_path):
    out = tmp_path / "run"
    assert main([*GAT, "--set", "lr=1e30", "--set", "steps=10", "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    for c in result["claims"]:  # reported numbers (checks without a target) stay "reported"
        assert c["verdict"] in ("not measured", "reported") and c["per_seed"] == [None]
        assert c["why_not_measured"][0].startswith("diverged at step ")
    assert {c["verdict"] for c in result["claims"] if c["kind"] == "finding"} == {"not measured"}
    assert "not measured (diverged at step" in (out / "report.md").read_text()


def test_a_plugin_resume_refusal_names_its_package_and_never_commit_none(tmp_path, monkeypatch):
    """A paper of an installed package: the refusal names that package's code, not paperzoo's,
    and code outside a clean checkout as "no git commit", never "commit None"."""
    import importlib.util
    import sys

    from paperzoo.engine import save_state
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.runner import RunMismatchError, claim_out_dir

    pkg = tmp_path / "src" / "calib_paper"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from paperzoo.paper import ClaimSpec, Experiment\n\n"
        "class Paper(Experiment):\n    name = 'calib'\n    title = 't'\n"
        "    claims = (ClaimSpec('a', 'a', 1.0, '>= 0'),)\n"
        "    configs = {'smoke': 1, 'quick': 1, 'full': 1}\n"
        "    def run(self, cfg, ctx): ...\n"
    )
    spec = importlib.util.spec_from_file_location("calib_paper", pkg / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "calib_paper", module)
    spec.loader.exec_module(module)
    monkeypatch.setitem(EXPERIMENTS._factories, "calib", module.Paper)
    out = tmp_path / "run"
    first = {"paper": "calib", "seed": 0, "code": {"commit": "a" * 12, "source_sha256": "a" * 64}}
    assert claim_out_dir(out, first) is False
    save_state(out / "runs" / "m" / "checkpoints", 1, {"w": torch.zeros(1)})
    typo_fixed = {**first, "code": {"commit": None, "source_sha256": "b" * 64}}
    with pytest.raises(RunMismatchError) as info:
        claim_out_dir(out, typo_fixed)
    msg = str(info.value)
    assert f"other code of paper calib's package calib_paper ({pkg.resolve()})" in msg
    assert f"commit {'a' * 12}, source digest {'a' * 12}" in msg
    assert f"no git commit (a changed tree or no git checkout); source digest {'b' * 12}" in msg
    assert "commit None" not in msg and "this paperzoo" not in msg and "--restart" in msg
