"""The output folder's lock: one holder, a second refused naming it, stale locks taken over,
seed processes under their parent's lock."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from paperzoo.utils.lock import LOCK_ENV, LOCK_NAME, FolderBusy, FolderLock, Holder, holding


def _write_holder(folder, *, pid: int, host: str | None = None, heartbeat: float | None = None):
    now = time.time()
    holder = Holder(
        host or socket.gethostname(), pid, "paperzoo reproduce gat", now - 50, heartbeat or now, "t"
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK_NAME).write_text(holder.to_json())


def test_a_second_holder_is_refused_in_one_line_naming_the_first(tmp_path):
    with FolderLock(tmp_path, "paperzoo reproduce gat --out x") as lock:
        held = json.loads((tmp_path / LOCK_NAME).read_text())
        assert held["pid"] == os.getpid() and held["command"] == "paperzoo reproduce gat --out x"
        with pytest.raises(FolderBusy) as err:
            FolderLock(tmp_path, "other").acquire()
        message = str(err.value)
        assert f"pid {os.getpid()} on {socket.gethostname()}" in message
        assert "paperzoo reproduce gat --out x" in message and "\n" not in message
        assert "delete" not in message and "remove" not in message
        assert lock.holder is not None
    assert not (tmp_path / LOCK_NAME).exists()  # released
    with FolderLock(tmp_path):  # and free again
        pass


def test_a_lock_of_a_process_gone_is_taken_over_with_a_warning(tmp_path, caplog):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()  # a pid that no longer runs
    _write_holder(tmp_path, pid=proc.pid)
    (tmp_path / ".results.json.abc123de.tmp").write_text("half")  # a killed writer's
    with FolderLock(tmp_path):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert f"took over the stale lock of {tmp_path}: pid {proc.pid}" in caplog.text
    assert "is no longer running" in caplog.text
    assert not (tmp_path / ".results.json.abc123de.tmp").exists()  # removed on the start


def test_a_lock_on_another_host_is_stale_only_when_its_heartbeat_is_old(tmp_path):
    _write_holder(tmp_path, pid=1, host="elsewhere", heartbeat=time.time() - 5)
    with pytest.raises(FolderBusy, match="pid 1 on elsewhere"):
        FolderLock(tmp_path).acquire()
    _write_holder(tmp_path, pid=1, host="elsewhere", heartbeat=time.time() - 500)
    with FolderLock(tmp_path, stale_seconds=120):
        pass


def test_the_heartbeat_is_refreshed(tmp_path):
    with FolderLock(tmp_path, heartbeat_seconds=0.05):
        first = json.loads((tmp_path / LOCK_NAME).read_text())["heartbeat"]
        deadline = time.monotonic() + 30  # a loaded host may not run the thread at once
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if json.loads((tmp_path / LOCK_NAME).read_text())["heartbeat"] > first:
                break
        assert json.loads((tmp_path / LOCK_NAME).read_text())["heartbeat"] > first


def test_a_folder_inside_or_around_a_held_one_is_refused(tmp_path):
    with FolderLock(tmp_path / "run"):
        with pytest.raises(FolderBusy, match="is in use by another paperzoo run"):
            FolderLock(tmp_path / "run" / "seed-0").acquire()
    with FolderLock(tmp_path / "run" / "seed-0"):
        with pytest.raises(FolderBusy, match="seed-0 is in use"):
            FolderLock(tmp_path / "run").acquire()


def test_seed_processes_work_under_the_parent_lock(tmp_path):
    """A child whose folder is under its parent's lock takes none of its own; another process is
    still refused."""
    child = (
        "import sys, pathlib\n"
        "from paperzoo.utils.lock import holding, LOCK_NAME\n"
        "with holding(pathlib.Path(sys.argv[1])):\n"
        "    print((pathlib.Path(sys.argv[1]) / LOCK_NAME).exists())\n"
    )
    with holding(tmp_path / "run", command="parent"):
        assert LOCK_ENV in os.environ
        out = subprocess.run(
            [sys.executable, "-c", child, str(tmp_path / "run" / "seed-0")],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert out.strip() == "False"  # no lock of its own: the parent's covers it
        env = {k: v for k, v in os.environ.items() if k != LOCK_ENV}
        refused = subprocess.run(
            [sys.executable, "-c", child, str(tmp_path / "run" / "seed-0")],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert refused.returncode != 0 and "FolderBusy" in refused.stderr
    assert LOCK_ENV not in os.environ


def test_taking_the_lock_tolerates_another_rank_probing_the_folder(tmp_path, vanishing):
    # Another rank checks that --out is writable with a folder it makes and removes at once; the
    # holder's walks (nested locks, stale temporary files) must skip it if it goes mid-walk.
    probe = tmp_path / "out" / ".paperzoo-probe-3w1nx68b"
    probe.mkdir(parents=True)
    vanishing(probe)
    with holding(tmp_path / "out"):
        assert (tmp_path / "out" / LOCK_NAME).is_file()
    assert not probe.exists()
