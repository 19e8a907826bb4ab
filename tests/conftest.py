"""Shared test fixtures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from paperzoo.experiments import RunContext

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def smoke_ctx(tmp_path: Path) -> RunContext:
    """A run context for ``--scale smoke`` writing into a temporary directory."""
    return RunContext(scale="smoke", seed=0, device="cpu", out_dir=tmp_path / "out", quiet=True)


IMAGENET_CLASSES = ("n01440764", "n01443537", "n01484850")


def _write_imagenet(root: Path, *, train: int = 2, val: int = 1, size: int = 256) -> Path:
    """A tiny ImageNet in the ILSVRC2012 folder layout, DIR/imagenet/{train,val}/<wnid>/*.JPEG:
    random JPEGs in three class folders; returns DIR."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, n in (("train", train), ("val", val)):
        for c in IMAGENET_CLASSES:
            d = root / "imagenet" / split / c
            d.mkdir(parents=True)
            for i in range(n):
                pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(d / f"{c}_{i}.JPEG", quality=90)
    return root


@pytest.fixture
def write_imagenet():
    """``write_imagenet(root, *, train=2, val=1, size=256) -> root`` (``_write_imagenet``)."""
    return _write_imagenet


@pytest.fixture
def keep_threads():
    """``main(... --threads 1)`` sets torch's thread count for the process: restore it."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children, theirs, ...), read from /proc; [] without it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def _torchrun(
    args: Sequence[str],
    *,
    nproc: int = 2,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """``python -m torch.distributed.run --standalone --nproc_per_node=NPROC ARGS`` (gloo). When
    it runs past ``timeout`` seconds, or the test is stopped meanwhile (pytest-timeout), torchrun
    and every process below it are killed: torchrun starts each rank in a session of its own,
    so a rank would otherwise outlive its test (and hold its output open). Skips without gloo."""
    import tempfile

    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd += [f"--nproc_per_node={nproc}", *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if proc.poll() is None:  # past the timeout, or the test was stopped
                for pid in [proc.pid, *_descendants(proc.pid)]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                proc.wait()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if timed_out:
        pytest.fail(f"torchrun ran past {timeout:g} s; its ranks were killed\n{stderr[-6000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


@pytest.fixture(scope="session")
def torchrun() -> Callable[..., subprocess.CompletedProcess]:
    """``torchrun(args, *, nproc=2, env=None, timeout=300) -> CompletedProcess`` (``_torchrun``)."""
    return _torchrun


@pytest.fixture
def vanishing(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """``vanishing(folder)``: ``folder`` is removed right before a walk (``os.scandir``) enters
    it, as another process's short-lived folder (a rank's ``--out`` probe) goes between being
    listed and being entered."""

    def arm(folder: Path) -> None:
        real = os.scandir

        def scandir(path="."):
            if os.fspath(path) == os.fspath(folder) and folder.exists():
                folder.rmdir()
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)

    return arm
