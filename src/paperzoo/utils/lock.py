"""One writer per output folder: a lock file created exclusively, with a heartbeat.

``FolderLock(folder, command)`` creates ``FOLDER/paperzoo.lock`` with ``O_CREAT | O_EXCL``: of
two processes creating it at once exactly one succeeds, also on NFS (v3 and later implement the
exclusive create on the server), which ``flock`` / ``fcntl`` locks do not promise across hosts.
The file says who holds the folder (host, pid, command, start) and when it last showed signs of
life: a thread rewrites its ``heartbeat`` every ``HEARTBEAT_SECONDS``. A second process is
refused with ``FolderBusy``, one line naming the holder.

A lock is stale when its process is gone (same host, no such pid) or its heartbeat is older than
``STALE_SECONDS`` (a process on another host, or a hung one); a stale lock is taken over, with a
warning naming its holder. Taking over goes through a second exclusively created file
(``paperzoo.lock.break``), so that two processes cannot both take over the same stale lock.

The seed processes of a ``--seeds`` run work under their parent's lock, in their own folders
under it: the parent passes the lock down in ``LOCK_ENV`` (``holding``), and a child whose
folder lies under that lock, held by its parent, runs without a lock of its own
(``holding``). Such a child dies with its parent (``die_with_parent``): a child left running
after its parent died would write under a lock that a new run may take over.

The clocks of the hosts that share a folder must agree to well within ``STALE_SECONDS`` (NTP).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperzoo.utils.io import atomic_write_text, find_files, remove_stale_tmp

log = logging.getLogger(__name__)

LOCK_NAME = "paperzoo.lock"
HEARTBEAT_SECONDS = 10.0  # how often the holder refreshes the heartbeat
STALE_SECONDS = 120.0  # a heartbeat older than this: the holder is gone (or hung)
LOCK_ENV = "PAPERZOO_OUT_LOCK"  # the locks seed processes work under: JSON [{path, token, pid}]


class FolderBusy(ValueError):
    """Another live process holds the output folder's lock (one line, naming it)."""


@dataclass(frozen=True)
class Holder:
    """What a lock file says about its holder."""

    host: str
    pid: int
    command: str
    started: float  # Unix seconds
    heartbeat: float  # Unix seconds of the last refresh
    token: str  # unique to this holding

    @classmethod
    def read(cls, path: Path) -> Holder | None:
        """The holder recorded in ``path``; None when the file is gone, or unreadable (being
        written)."""
        try:
            raw: Any = json.loads(path.read_text())
            return cls(
                str(raw["host"]),
                int(raw["pid"]),
                str(raw["command"]),
                float(raw["started"]),
                float(raw["heartbeat"]),
                str(raw["token"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1) + "\n"

    def stale_because(self, stale_seconds: float) -> str | None:
        """Why the holder is gone (its process ended on this host, or its heartbeat is old), or
        None while it lives."""
        if self.host == socket.gethostname() and not _pid_alive(self.pid):
            return f"pid {self.pid} is no longer running on {self.host}"
        age = time.time() - self.heartbeat
        if age > stale_seconds:
            return f"its heartbeat is {age:.0f} s old (stale after {stale_seconds:.0f} s)"
        return None

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        age = max(0.0, time.time() - self.heartbeat)
        return (
            f"pid {self.pid} on {self.host} ({self.command}), started {started}, "
            f"heartbeat {age:.0f} s ago"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class FolderLock:
    """The lock of one output folder (see the module doc); a context manager.

    Args:
        folder: the output folder (created if missing).
        command: what the holder runs, recorded in the lock (the command line).
        heartbeat_seconds: how often the heartbeat is refreshed.
        stale_seconds: a heartbeat older than this marks the lock stale.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        command: str | None = None,
        *,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        stale_seconds: float = STALE_SECONDS,
    ) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.command = command or " ".join(sys.argv)
        self.heartbeat_seconds, self.stale_seconds = heartbeat_seconds, stale_seconds
        self.holder: Holder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._created: list[Path] = []  # the folders acquire made (removed again while empty)

    def acquire(self) -> None:
        """Take the lock (a stale one is taken over), start the heartbeat, and remove the
        temporary files a killed writer left in the folder.

        Raises:
            FolderBusy: a live process holds it.
            paperzoo.utils.io.WriteError: the folder cannot be written.
        """
        self._created = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        try:
            self._acquire()
        except BaseException:
            self._remove_created()
            raise
        remove_stale_tmp(self.folder)
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="paperzoo-lock", daemon=True)
        self._thread.start()

    def _remove_created(self) -> None:
        """Remove the folders ``acquire`` created that are still empty (a refused or failed
        command leaves no trace)."""
        for p in self._created:
            try:
                p.rmdir()
            except OSError:
                return

    def _acquire(self) -> None:
        from paperzoo.utils.io import WriteError, is_disk_error

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            if is_disk_error(err):
                raise WriteError(self.folder, "the output folder", err) from None
            raise
        self._check_nested()
        now = time.time()
        me = Holder(socket.gethostname(), os.getpid(), self.command, now, now, secrets.token_hex(8))
        for _ in range(5):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._take_over_if_stale()
                continue
            except OSError as err:
                if is_disk_error(err):
                    raise WriteError(self.path, "the lock of the output folder", err) from None
                raise
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(me.to_json())
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as err:
                self.path.unlink(missing_ok=True)
                if is_disk_error(err):
                    raise WriteError(self.path, "the lock of the output folder", err) from None
                raise
            self.holder = me
            break
        else:
            raise FolderBusy(f"--out {self.folder}: its lock {self.path} keeps changing hands")

    def _check_nested(self) -> None:
        """Raise ``FolderBusy`` when a live process holds a folder above this one or inside it
        (a ``--seeds`` run's folder and one of its seed folders are one run)."""
        here = self.folder.resolve()
        around = [p / LOCK_NAME for p in here.parents]
        around += [p for p in find_files(here, f"**/{LOCK_NAME}") if p.parent != here]
        for path in around:
            holder = Holder.read(path) if path.is_file() else None
            if holder is not None and holder.stale_because(self.stale_seconds) is None:
                raise FolderBusy(
                    f"--out {self.folder}: {path.parent} is in use by another paperzoo run: "
                    f"{holder.describe()}; wait for it to finish or choose another --out "
                    f"(lock: {path})"
                )

    def _busy(self, holder: Holder | None) -> FolderBusy:
        who = holder.describe() if holder is not None else "a process that is creating it now"
        return FolderBusy(
            f"--out {self.folder} is in use by another paperzoo run: {who}; wait for it to "
            f"finish or choose another --out (lock: {self.path})"
        )

    def _take_over_if_stale(self) -> None:
        """The lock file exists: raise ``FolderBusy`` if its holder lives, else remove it (under
        the break file, so that one process takes it over)."""
        holder = Holder.read(self.path)
        if holder is None:  # being written, or garbage: judge it by its age
            try:
                age = time.time() - self.path.stat().st_mtime
            except FileNotFoundError:
                return  # released meanwhile: try again
            if age <= self.stale_seconds:
                raise self._busy(None)
            why = f"it is unreadable and {age:.0f} s old"
        else:
            why = holder.stale_because(self.stale_seconds)
            if why is None:
                raise self._busy(holder)
        brk = self.path.with_name(LOCK_NAME + ".break")
        try:
            os.close(os.open(brk, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            try:
                if time.time() - brk.stat().st_mtime > self.stale_seconds:
                    brk.unlink(missing_ok=True)  # left by a process that died taking over
                    return
            except FileNotFoundError:
                return
            raise self._busy(holder) from None
        try:
            again = Holder.read(self.path)
            if (again.token if again else None) == (holder.token if holder else None):
                self.path.unlink(missing_ok=True)
                who = holder.describe() if holder is not None else "an unreadable lock"
                log.warning("took over the stale lock of %s: %s (%s)", self.folder, who, why)
        finally:
            brk.unlink(missing_ok=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            if self.holder is None:
                return
            now = Holder.read(self.path)
            if now is None or now.token != self.holder.token:
                log.error(
                    "lost the lock of %s (%s): stopping this run",
                    self.folder, now.describe() if now else "the lock file is gone",
                )  # fmt: skip
                os.kill(os.getpid(), signal.SIGTERM)  # a clean stop: checkpoint, then exit
                return
            self.holder = Holder(**{**self.holder.__dict__, "heartbeat": time.time()})
            try:
                atomic_write_text(self.path, self.holder.to_json(), what="the lock's heartbeat")
            except OSError as err:  # a full disk: the next beat tries again
                log.warning("cannot refresh the heartbeat of %s: %s", self.path, err)

    def release(self) -> None:
        """Stop the heartbeat and remove the lock file if it is still this holder's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.holder is not None:
            now = Holder.read(self.path)
            if now is not None and now.token == self.holder.token:
                self.path.unlink(missing_ok=True)
            self.holder = None
        self._remove_created()

    def passed_down(self) -> dict[str, Any]:
        """What a seed process needs to work under this lock (an entry of ``LOCK_ENV``)."""
        if self.holder is None:
            raise RuntimeError("passed_down: the lock is not held")
        return {"path": str(self.path.resolve()), "token": self.holder.token, "pid": os.getpid()}

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def inherited(folder: str | os.PathLike[str]) -> int | None:
    """The parent's pid when this process works under a lock its parent holds (``LOCK_ENV``)
    and ``folder`` lies under that lock's folder; None otherwise."""
    try:
        locks = json.loads(os.environ.get(LOCK_ENV) or "[]")
        entries = [(Path(x["path"]), str(x["token"]), int(x["pid"])) for x in locks]
    except (ValueError, KeyError, TypeError):
        return None
    here = Path(folder).resolve()
    for path, token, pid in entries:
        holder = Holder.read(path)
        if holder is None or holder.token != token or pid != os.getppid():
            continue
        if here.is_relative_to(path.parent):
            return pid
    return None


@contextmanager
def holding(*folders: str | os.PathLike[str], command: str | None = None) -> Iterator[None]:
    """Hold the locks of ``folders`` for the block. A seed process whose folder lies under its
    parent's lock (``inherited``) works under that one (and dies with its parent:
    ``die_with_parent``); otherwise the folder gets a ``FolderLock`` of its own, passed down to
    the processes this one starts (``LOCK_ENV``, set for the block).

    Raises:
        FolderBusy: another live process holds one of the folders.
    """
    with ExitStack() as stack:
        passed: list[dict[str, Any]] = []
        for folder in folders:
            parent = inherited(folder)
            if parent is not None:
                die_with_parent(parent)
                continue
            lock = stack.enter_context(FolderLock(folder, command))
            passed.append(lock.passed_down())
        if not passed:
            yield
            return
        before = os.environ.get(LOCK_ENV)
        os.environ[LOCK_ENV] = json.dumps(passed)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(LOCK_ENV, None)
            else:
                os.environ[LOCK_ENV] = before


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """Make this process end (SIGKILL) when its parent ``parent`` dies: the kernel's
    parent-death signal on Linux, else a thread that watches the parent pid. A parent that died
    already ends this process at once."""
    armed = False
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGKILL)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="paperzoo-parent-watch", daemon=True).start()
