"""File helpers: atomic writes, checksums, and the one error a failed write becomes.

Every file paperzoo writes under an output folder goes through ``atomic_write_bytes``: the bytes
go to a temporary file ``.NAME.XXXX.tmp`` beside the target, are fsync'ed and renamed over it, so
a reader (or a rerun after a crash or a full disk) sees the old file or the new one, never half of
one. A write that fails (a full disk, a read-only or unwritable folder) raises ``WriteError``,
one line naming the path and what was being written; ``remove_stale_tmp`` deletes the temporary
files a killed process left behind.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TMP_SUFFIX = ".tmp"
# the temporary files of ``atomic_write_bytes``: ".NAME." + mkstemp's 8 random characters + ".tmp"
_TMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")

# The errors of a disk or folder that cannot take a file, and what to do about each.
_REMEDY = {
    errno.ENOSPC: "free some space, then rerun the same command (it resumes)",
    errno.EDQUOT: "free some of the quota, then rerun the same command (it resumes)",
    errno.EACCES: "make the folder writable, then rerun the same command (it resumes)",
    errno.EPERM: "make the folder writable, then rerun the same command (it resumes)",
    errno.EROFS: "choose a writable --out, or rerun once the filesystem is writable",
}


class WriteError(OSError):
    """A file could not be written: ``str()`` is one line naming the path, what was being written,
    the reason and what to do.

    Args:
        path: the file being written.
        what: what it is, e.g. ``"a checkpoint"``, ``"a figure"``, ``"results.json"``.
        cause: the ``OSError`` the write raised.
    """

    def __init__(self, path: str | os.PathLike[str], what: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.what = what

    def __str__(self) -> str:
        remedy = _REMEDY.get(self.errno or 0)
        return f"cannot write {self.what} to {self.filename}: {self.strerror}" + (
            f"; {remedy}" if remedy else ""
        )


def is_disk_error(err: OSError) -> bool:
    """Whether ``err`` says that a disk or folder cannot take a file (full, over quota, read-only,
    not writable): the errors ``WriteError`` gives a remedy for."""
    return err.errno in _REMEDY


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, what: str = "a file") -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The bytes go to a temporary file in the same directory, are flushed and fsync'ed, and the
    temporary file is renamed over ``path`` (``os.replace`` is atomic on POSIX and Windows).

    Args:
        path: the file to write.
        data: its new contents.
        what: what the file is, for the error message (``"a checkpoint"``).

    Raises:
        WriteError: the folder or the file cannot be written (a full disk, no permission); the
            temporary file is removed and ``path`` is unchanged.
    """
    path = Path(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError) and is_disk_error(err) and not isinstance(err, WriteError):
            raise WriteError(path, what, err) from None
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str, *, what: str = "a file") -> None:
    """``atomic_write_bytes`` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"), what=what)


def atomic_savefig(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """Save the matplotlib figure ``fig`` to ``path`` atomically (``atomic_write_bytes``, so no
    truncated image is ever left); the format is the file's suffix, ``kwargs`` go to
    ``savefig`` (``dpi``)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or None, **kwargs)
    atomic_write_bytes(path, buf.getvalue(), what="a figure")


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether the path ``parts`` match the glob ``pattern`` parts (``**``: any folders)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], pattern[0])
        and _matches(parts[1:], pattern[1:])
    )


def find_files(root: str | os.PathLike[str], pattern: str) -> Iterator[Path]:
    """The files under ``root`` matching ``pattern``, a glob relative to ``root`` as
    ``Path.glob`` reads it (``*`` within a name, ``**`` for any number of folders, e.g.
    ``**/checkpoints/latest.json``), found by a walk that tolerates other processes changing the
    tree meanwhile: a folder that vanishes between being listed and being entered is skipped,
    not an error (``Path.glob`` raises ``FileNotFoundError`` there). Symlinked folders are not
    entered.

    Yields:
        The matching paths, in walk order (one that vanishes during the walk may still come).
    """
    want = tuple(pattern.split("/"))
    for folder, _, names in os.walk(root):  # os.walk skips a folder it cannot list
        base = Path(folder)
        here = base.relative_to(root).parts
        for name in names:
            if _matches((*here, name), want):
                yield base / name


def remove_stale_tmp(root: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files of atomic writes (``.NAME.XXXX.tmp``) under ``root`` that a
    killed process left; call it only while no other process writes there (under the output
    folder's lock). Other processes may still add or remove folders there meanwhile (another
    rank checking that it can write ``--out``).

    Returns:
        The files removed.
    """
    root = Path(root)
    if not root.is_dir():
        return []
    removed = []
    for p in find_files(root, f"**/.*{TMP_SUFFIX}"):
        if _TMP_NAME.fullmatch(p.name) and p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)
            removed.append(p)
    if removed:
        log.info("removed %d unfinished temporary file(s) under %s", len(removed), root)
    return removed
