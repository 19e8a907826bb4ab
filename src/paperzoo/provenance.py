"""Which code produced a result: the git commit of a source checkout, and a digest of the source.

``results.json`` records both, so that a verdict names exactly what ran and ``paperzoo merge``
can refuse to combine runs of different code. A paper from an installed package is identified by
that package's code (``code_identity(paper)``). ``commit`` is the checkout's HEAD (short hash),
with ``+dirty`` when the package's own files differ from it; outside a git checkout (an
installed wheel) it is ``None`` and ``source_sha256`` alone identifies the code.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
from pathlib import Path
from typing import TypedDict

PACKAGE_DIR = Path(__file__).resolve().parent


class CodeIdentity(TypedDict):
    commit: str | None  # short git hash (``+dirty`` with local changes to the package); None
    source_sha256: str  # SHA-256 over the package's .py files (paths and contents)


def source_sha256(package_dir: Path = PACKAGE_DIR) -> str:
    """SHA-256 over every ``.py`` file under ``package_dir``: relative path and bytes, sorted (a
    single module's file: that file alone)."""
    h = hashlib.sha256()
    files = [package_dir] if package_dir.is_file() else sorted(package_dir.rglob("*.py"))
    root = package_dir.parent if package_dir.is_file() else package_dir
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_commit(package_dir: Path = PACKAGE_DIR) -> str | None:
    """HEAD of the git checkout holding ``package_dir`` (short hash, ``+dirty`` when files of the
    package differ from it; a single module's file: its folder's); None outside a checkout or
    without git."""
    if package_dir.is_file():
        package_dir = package_dir.parent
    top = _git(["rev-parse", "--show-toplevel"], package_dir)
    if not top or not (package_dir.is_relative_to(Path(top).resolve())):
        return None
    head = _git(["rev-parse", "--short=12", "HEAD"], package_dir)
    if not head:
        return None
    status = _git(["status", "--porcelain", "--", "."], package_dir)
    return f"{head}+dirty" if status else head


def code_identity(paper: object | None = None) -> CodeIdentity:
    """The identity of the code of ``paper`` (an experiment): the package that defines its class,
    paperzoo's for the papers built in, and the running paperzoo's when None. A paper of an
    installed package (``paperzoo.papers`` entry point) is identified by its own package's commit
    and source digest. Computed once per package and process."""
    return _identity(package_dir(paper))


def package_dir(paper: object | None = None) -> Path:
    """The code that defines ``paper``'s class: the directory of its top-level package, or the
    file of a top-level module (a one-file package); paperzoo's directory when None or for the
    papers built in."""
    import sys

    if paper is None:
        return PACKAGE_DIR
    top = type(paper).__module__.split(".")[0]
    file = getattr(sys.modules.get(top), "__file__", None)
    if top == "paperzoo" or file is None:
        return PACKAGE_DIR
    path = Path(file).resolve()
    return path.parent if path.name == "__init__.py" else path


@functools.cache
def _identity(package: Path) -> CodeIdentity:
    return {"commit": git_commit(package), "source_sha256": source_sha256(package)}


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux: /proc/cpuinfo; elsewhere ``platform.processor()``)."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def host_identity(device: str) -> str:
    """Where a run ran, for reading its wall time: the CPU model and the cores the process may
    use, and the GPU's name on CUDA (e.g. ``Intel(R) Xeon(R) Processor, 2 cores``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 0
    host = f"{cpu_model()}, {cores} cores"
    if device.startswith("cuda"):
        import torch

        if torch.cuda.is_available():
            host += f"; {torch.cuda.get_device_name(torch.device(device))}"
    return host
