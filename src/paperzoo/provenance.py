"""Which code produced a result: the git commit of a source checkout, and a digest of the source.

``results.json`` records both, so that a verdict names exactly what ran and ``paperzoo merge``
can refuse to combine runs of different code. ``commit`` is the checkout's HEAD (short hash),
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
    """SHA-256 over every ``.py`` file under ``package_dir``: relative path and bytes, sorted."""
    h = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        h.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
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
    package differ from it); None outside a checkout or without git."""
    top = _git(["rev-parse", "--show-toplevel"], package_dir)
    if not top or not (package_dir.is_relative_to(Path(top).resolve())):
        return None
    head = _git(["rev-parse", "--short=12", "HEAD"], package_dir)
    if not head:
        return None
    status = _git(["status", "--porcelain", "--", "."], package_dir)
    return f"{head}+dirty" if status else head


@functools.cache
def code_identity() -> CodeIdentity:
    """The identity of the running paperzoo (computed once per process)."""
    return {"commit": git_commit(), "source_sha256": source_sha256()}


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
