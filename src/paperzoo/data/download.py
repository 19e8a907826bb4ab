"""Fetching data files on request, verified by SHA-256.

Nothing here runs unless the caller passed ``download=True`` (``--download`` on the command line).
"""

from __future__ import annotations

import hashlib
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from paperzoo.data.base import DataError
from paperzoo.utils.io import atomic_write_bytes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteFile:
    name: str  # file name inside the data set's directory
    url: str  # canonical location
    sha256: str  # expected hex digest of the file as downloaded


class ChecksumError(DataError):
    """A downloaded file does not have the expected SHA-256."""


def download_file(url: str, dest: str | Path, sha256: str, *, timeout: float = 60.0) -> Path:
    """Fetch ``url`` to ``dest``; keep it only if its SHA-256 matches.

    The file is written atomically, so an interrupted or corrupt download never leaves a
    plausible-looking file behind. ``file://`` URLs work too (used by the tests).
    """
    from tqdm.auto import tqdm

    dest = Path(dest)
    log.info("downloading %s -> %s", url, dest)
    h = hashlib.sha256()
    chunks: list[bytes] = []
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (http/file only)
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=dest.name, leave=False) as bar:
                while block := resp.read(1 << 20):
                    h.update(block)
                    chunks.append(block)
                    bar.update(len(block))
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise DataError(f"could not download {url}: {err}") from err
    digest = h.hexdigest()
    if digest != sha256.lower():
        raise ChecksumError(
            f"checksum mismatch for {url}: expected sha256 {sha256}, got {digest}; "
            "the file was not saved"
        )
    atomic_write_bytes(dest, b"".join(chunks))
    return dest


def ensure_files(directory: Path, files: list[RemoteFile], *, download: bool, what: str) -> Path:
    """Make sure every file (or its un-gzipped twin) is in ``directory``; fetch if asked.

    Returns:
        ``directory``.
    """
    missing = [
        f
        for f in files
        if not (directory / f.name).exists()
        and not (directory / f.name.removesuffix(".gz")).exists()
    ]
    if missing and not download:
        names = ", ".join(f.name for f in missing)
        raise DataError(
            f"{what}: missing {names} in {directory}; put the files there or pass --download"
        )
    for f in missing:
        download_file(f.url, directory / f.name, f.sha256)
    return directory
