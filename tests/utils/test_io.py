"""Atomic writes: a full disk or an unwritable folder is one error naming the path and what was
written, and leaves neither a truncated file nor a temporary one."""

from __future__ import annotations

import errno
import os

import pytest

from paperzoo.utils.io import WriteError, atomic_savefig, atomic_write_text, remove_stale_tmp


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError) as err:
        atomic_write_text(path, "new", what="the results")
    message = str(err.value)
    assert message.startswith(f"cannot write the results to {path}: No space left on device")
    assert "free some space" in message and "\n" not in message
    assert err.value.errno == errno.ENOSPC
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left


def test_an_unwritable_folder_is_a_write_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user writes anywhere (root)")
        with pytest.raises(WriteError, match="cannot write a figure to .*: Permission denied"):
            atomic_write_text(folder / "x.png", "x", what="a figure")
    finally:
        folder.chmod(0o700)


def test_figures_are_written_whole(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    atomic_savefig(fig, tmp_path / "figures" / "f.png", dpi=30)
    plt.close(fig)
    assert (tmp_path / "figures" / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list((tmp_path / "figures").glob(".*"))


def test_stale_temporary_files_are_removed(tmp_path):
    (tmp_path / "runs" / "m" / "checkpoints").mkdir(parents=True)
    stale = tmp_path / "runs" / "m" / "checkpoints" / ".step_00000003.json.k2j3_x9a.tmp"
    stale.write_text("{")
    keep = tmp_path / "runs" / "m" / "checkpoints" / "latest.json"
    keep.write_text("{}")
    theirs = tmp_path / ".notes.tmp"  # not a name atomic writes make
    theirs.write_text("mine")
    assert remove_stale_tmp(tmp_path) == [stale]
    assert not stale.exists() and keep.exists() and theirs.exists()


def test_a_folder_removed_during_the_sweep_is_skipped(tmp_path, vanishing):
    stale = tmp_path / "m" / ".results.json.k2j3_x9a.tmp"
    stale.parent.mkdir()
    stale.write_text("{")
    probe = tmp_path / ".paperzoo-probe-3w1nx68b"
    probe.mkdir()
    vanishing(probe)
    assert remove_stale_tmp(tmp_path) == [stale]
    assert not probe.exists()  # it was listed, then removed before the walk went in


def test_find_files_reads_globs_as_path_glob_does(tmp_path):
    from paperzoo.utils.io import find_files

    (tmp_path / "runs" / "m" / "checkpoints").mkdir(parents=True)
    files = ["paperzoo.lock", "runs/paperzoo.lock", "runs/m/curves.json"]
    files += ["runs/m/checkpoints/latest.json", "runs/.x.json.k2j3_x9a.tmp"]
    for f in files:
        (tmp_path / f).write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "runs", target_is_directory=True)
    patterns = ["**/paperzoo.lock", "runs/*/curves.json", "**/checkpoints/latest.json", "**/.*.tmp"]
    patterns += ["*.lock", "runs/*", "**/m/*", "missing/**/x"]
    for pattern in patterns:
        found = sorted(p.relative_to(tmp_path).as_posix() for p in find_files(tmp_path, pattern))
        expected = [p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern)]
        expected = sorted(p for p in expected if (tmp_path / p).is_file() and "link" not in p)
        assert found == expected, pattern
    assert sorted(p.name for p in find_files(tmp_path, "**/paperzoo.lock")) == ["paperzoo.lock"] * 2
    assert list(find_files(tmp_path / "missing", "**/*")) == []
