"""No run silently wrong, from the command line: a changed checkpoint is refused in one line, a
second run into a live ``--out`` is refused while the first finishes with its own values, a full
disk is one line and the rerun after freeing it equals an uninterrupted run, a killed ``--seeds``
parent takes its seed processes with it, and ``paperzoo verify`` catches edited results."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paperzoo.cli import main
from paperzoo.utils.lock import LOCK_NAME

GAT = ["reproduce", "gat", "--scale", "smoke", "--quiet", "--threads", "1"]
ENV = os.environ | {"OMP_NUM_THREADS": "1", "PAPERZOO_CHECKPOINT_SECONDS": "0.05"}


pytestmark = pytest.mark.usefixtures("keep_threads")


def _claims(out: Path) -> dict[str, list]:
    result = json.loads((out / "results.json").read_text())
    return {c["id"]: c["per_seed"] for c in result["claims"]}


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert lines and lines[-1].startswith("paperzoo: error: "), err
    assert sum(ln.startswith("paperzoo: error: ") for ln in lines) == 1, err
    return lines[-1]


@pytest.fixture(scope="module")
def gat_run(tmp_path_factory) -> Path:
    """A finished GAT smoke run (not to be changed: tests copy it)."""
    out = tmp_path_factory.mktemp("gat") / "run"
    assert main([*GAT, "--out", str(out)]) == 0
    return out


def _copy(run: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run, to)
    return to


def test_same_size_corruption_of_a_finished_model_is_refused_in_one_line(gat_run, tmp_path, capsys):
    out = _copy(gat_run, tmp_path / "run")
    weights = out / "runs" / "plain" / "checkpoints" / "step_00000003.safetensors"
    data = bytearray(weights.read_bytes())
    data[-4096:-1024] = bytes(3072)  # a quarter of a weight tensor zeroed; the size unchanged
    weights.write_bytes(bytes(data))
    before = (out / "results.json").read_bytes()
    capsys.readouterr()
    assert main([*GAT, "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"{weights} does not match the SHA-256" in line and "--restart" in line
    assert "diverged" not in line
    assert (out / "results.json").read_bytes() == before


def test_a_changed_checkpoint_mid_training_is_skipped_not_taken_for_a_divergence(tmp_path):
    """Random bytes over the newest checkpoint of a killed run: the resume falls back to the one
    before it (a warning names the file) and ends with the uninterrupted run's numbers."""
    out, ref = tmp_path / "run", tmp_path / "ref"
    args = [*GAT, "--set", "steps=200"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "paperzoo", *args, "--out", str(out)], env=ENV,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    ckpts = out / "runs" / "plain" / "checkpoints"
    deadline = time.monotonic() + 120
    while len(json.loads(_read_or(ckpts / "latest.json", "{}")).get("checkpoints", {})) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "no two checkpoints"
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    newest = json.loads((ckpts / "latest.json").read_text())["stem"]
    tensors = ckpts / f"{newest}.safetensors"
    data = bytearray(tensors.read_bytes())
    data[-2048:-1024] = os.urandom(1024)
    tensors.write_bytes(bytes(data))
    done = subprocess.run(
        [sys.executable, "-m", "paperzoo", *args, "--out", str(out)], env=ENV,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{tensors} does not match the SHA-256" in done.stderr
    assert main([*args, "--out", str(ref)]) == 0
    assert _claims(out) == _claims(ref)
    notes = json.loads((out / "results.json").read_text())["notes"]
    assert not any("diverged" in n for n in notes)


def _read_or(path: Path, default: str) -> str:
    try:
        return path.read_text()
    except (FileNotFoundError, ValueError):
        return default


def test_a_second_run_into_a_live_out_is_refused_and_the_first_keeps_its_values(
    gat_run, tmp_path, capsys
):
    out = tmp_path / "run"
    args = [*GAT, "--set", "steps=200", "--out", str(out)]
    first = subprocess.Popen(
        [sys.executable, "-m", "paperzoo", *args], env=ENV, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (out / LOCK_NAME).exists():
        assert first.poll() is None and time.monotonic() < deadline, "the first run never locked"
        time.sleep(0.01)
    for other in (["--set", "lr=0.01"], ["--seed", "1"]):  # other settings, another seed
        capsys.readouterr()
        assert main([*args, *other]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert f"--out {out} is in use by another paperzoo run: pid {first.pid}" in line
        assert "delete" not in line and "remove" not in line
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    ref = tmp_path / "ref"
    assert main([*GAT, "--set", "steps=200", "--out", str(ref)]) == 0
    assert _claims(out) == _claims(ref)
    assert json.loads((out / "run.json").read_text())["config"]["lr"] == 0.001
    assert not (out / LOCK_NAME).exists()


def _mount_tmpfs(where: Path) -> bool:
    where.mkdir()
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True
    )
    return done.returncode == 0


@pytest.mark.parametrize("disk", ["tmpfs", "injected"])
def test_a_full_disk_is_one_line_and_the_rerun_equals_an_uninterrupted_run(
    disk, gat_run, tmp_path, capsys, monkeypatch
):
    """With a tmpfs (where this user may mount one): filled but for 300 KB, about half of what
    the run writes; else every fsync from the 12th on fails with ENOSPC."""
    root = tmp_path / "disk"
    mounted = disk == "tmpfs" and _mount_tmpfs(root)
    if disk == "tmpfs" and not mounted:
        pytest.skip("cannot mount a tmpfs here (the injected variant runs instead)")
    try:
        out = root / "run"
        if mounted:
            ballast = root / "ballast"
            free = os.statvfs(root).f_bavail * os.statvfs(root).f_frsize
            ballast.write_bytes(bytes(free - 300_000))
        else:
            root.mkdir(exist_ok=True)
            calls = []
            real = os.fsync

            def fsync(fd: int) -> None:
                calls.append(fd)
                if len(calls) >= 12:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                real(fd)

            monkeypatch.setattr(os, "fsync", fsync)
        capsys.readouterr()
        assert main([*GAT, "--out", str(out)]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert "No space left on device" in line and str(out) in line
        assert not list(out.rglob(".*.tmp"))  # nothing half-written left behind
        for png in out.rglob("*.png"):
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if mounted:
            ballast.unlink()  # free the space
        else:
            monkeypatch.undo()
        assert main([*GAT, "--out", str(out)]) == 0  # the rerun resumes
        assert _claims(out) == _claims(gat_run)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=False)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_a_seeds_parent_takes_its_seed_processes_with_it(tmp_path):
    out = tmp_path / "seeds"
    args = [*GAT, "--set", "steps=400", "--seeds", "0-1", "--jobs", "2", "--out", str(out)]
    parent = subprocess.Popen(
        [sys.executable, "-m", "paperzoo", *args], env=ENV, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while not all(next((out / f"seed-{s}").glob("runs/*/checkpoints/latest.json"), None)
                  for s in (0, 1)):  # fmt: skip
        assert parent.poll() is None and time.monotonic() < deadline, "the seeds never trained"
        time.sleep(0.05)
    seeds = _children(parent.pid)
    assert len(seeds) == 2 and all(_alive(p) for p in seeds)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in seeds) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in seeds), "a seed process outlived its parent by 10 s"
    # the lock of the dead parent is stale: the rerun takes it over and resumes
    again = [*GAT, "--seeds", "0-1", "--jobs", "2", "--out", str(out), "--restart"]
    rerun = subprocess.run(
        [sys.executable, "-m", "paperzoo", *again], env=ENV, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert "took over the stale lock" in rerun.stderr


def test_verify_recomputes_the_claims_and_names_an_edited_value(gat_run, tmp_path, capsys):
    out = _copy(gat_run, tmp_path / "run")
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "all equal" in capsys.readouterr().out
    assert main(["summary", str(out)]) == 0
    assert "never verified" not in capsys.readouterr().out
    result = json.loads((out / "results.json").read_text())
    claim = next(c for c in result["claims"] if c["kind"] == "finding")
    true_value = claim["per_seed"][0]
    claim["per_seed"] = [true_value + 0.25]
    (out / "results.json").write_text(json.dumps(result, indent=2))
    assert main(["summary", str(out)]) == 0  # changed since it was verified
    assert "never verified" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"{claim['id']}: results.json has {true_value + 0.25!r}" in printed
    assert f"the stored weights give {true_value!r}" in printed
    assert main(["summary", str(out)]) == 0
    assert "failed verification: 1 stored value(s) differ" in capsys.readouterr().out
    assert main(["verify", str(tmp_path)]) == 2  # not a run directory
    assert "holds no results.json" in _one_error_line(capsys.readouterr().err)


def test_verify_catches_a_forged_aggregate_and_its_seed_runs(tmp_path, capsys):
    out = tmp_path / "seeds"
    assert main([*GAT, "--seeds", "0-1", "--jobs", "1", "--out", str(out)]) == 0
    forged = []
    for path in (out / "results.json", out / "seed-1" / "results.json"):
        result = json.loads(path.read_text())
        claim = next(c for c in result["claims"] if c["kind"] == "finding")
        claim["per_seed"][-1] += 0.25  # seed 1's value, consistently
        forged.append(claim["id"])
        path.write_text(json.dumps(result, indent=2))
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"seed 1 ({out / 'seed-1'}): {forged[1]}" in printed
    assert f"aggregate ({out}): {forged[0]}" in printed
    assert f"seed 0 ({out / 'seed-0'})" not in printed


def test_an_unwritable_checkpoint_folder_is_one_line_naming_what_was_written(
    tmp_path, capsys, monkeypatch
):
    """A read-only checkpoints folder (simulated: this user may be root, who writes anywhere)."""
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kw):  # noqa: A002 - tempfile's own name
        if dir is not None and Path(dir).name == "checkpoints":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dir))
        return real(*args, dir=dir, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    out = tmp_path / "run"
    capsys.readouterr()
    assert main([*GAT, "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("paperzoo: error: cannot write a checkpoint to ")
    assert "/checkpoints/step_" in line and "Permission denied; make the folder writable" in line
    assert not (out / LOCK_NAME).exists()  # the lock is released on the way out
