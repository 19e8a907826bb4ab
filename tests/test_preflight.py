"""tools/preflight.py: one line per check, exit 2 at the first failure, in seconds."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "preflight.py"


@pytest.fixture(scope="module")
def preflight():  # noqa: ANN201
    spec = importlib.util.spec_from_file_location("preflight", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="a box without CUDA")
def test_without_cuda_it_fails_fast_with_one_line() -> None:
    start = time.monotonic()
    proc = _run()
    took = time.monotonic() - start
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert (
        proc.stderr.startswith("preflight: cuda: FAILED torch ")
        and "sees no CUDA device" in proc.stderr
    )
    assert [ln.split(":")[1].strip() for ln in proc.stdout.splitlines()] == ["python", "torch"]
    assert took < 30  # the interpreter and torch's import; no paper is imported before the check


def test_on_the_cpu_every_check_passes_one_line_each(tmp_path: Path) -> None:
    proc = _run("--device", "cpu", "--synth", str(tmp_path / "data"), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln.split(":")[1].strip() for ln in lines] == ["python", "torch", "cuda", "papers", "shm", "disk", "data"]  # fmt: skip
    assert all(": ok " in ln for ln in lines) and proc.stderr == ""
    assert "perceiver needs 4.59 GiB on 1 rank(s)" in lines[4]


def test_the_shm_need_is_the_perceivers_batches_in_flight(preflight) -> None:  # noqa: ANN001
    from paperzoo.experiments.runner import resolve_config

    cfg = resolve_config("perceiver", "full")
    image = 3 * cfg.image_size**2 + 8  # uint8 crop, int64 label
    assert preflight.shm_need(["perceiver", "coordconv"], 1) == (
        cfg.workers * cfg.prefetch * cfg.batch_size * image,
        "perceiver",
    )
    # 8 ranks on one machine: each its share of the batch, unless the evaluation's is larger
    per_rank = max(cfg.batch_size // 8, cfg.eval_batch)
    assert (
        preflight.shm_need(["perceiver"], 8)[0] == 8 * cfg.workers * cfg.prefetch * per_rank * image
    )
    assert preflight.shm_need(["coordconv", "wrm"], 1) == (0, "none")


def test_a_small_shm_fails_naming_the_paper(preflight, monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    usage = namedtuple("usage", "total used free")
    real = preflight.shutil.disk_usage
    monkeypatch.setattr(
        preflight.shutil,
        "disk_usage",
        lambda p: usage(64 << 20, 0, 64 << 20) if str(p) == "/dev/shm" else real(p),
    )
    with pytest.raises(preflight.Failed, match=r"shm: FAILED 0.06 GiB free in /dev/shm, perceiver"):
        preflight.check_shm(Path("/dev/shm"), ["coordconv", "perceiver"], 1)
    assert preflight.check_shm(Path("/dev/shm"), ["coordconv"], 1).startswith("shm: ok")


def test_a_torch_below_the_floor_stops_at_the_torch_line(
    preflight,
    monkeypatch,
    capsys,  # noqa: ANN001
) -> None:
    assert preflight.floors() == ("3.10", "2.4")  # as pyproject.toml states them
    monkeypatch.setattr(preflight, "floors", lambda: ("3.10", "99.0"))
    assert preflight.main(["--device", "cpu"]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith("preflight: python: ok")
    assert err == f"preflight: torch: FAILED {torch.__version__} is below the floor 99.0\n"


def test_missing_data_fails_with_the_layout(preflight, capsys, tmp_path: Path) -> None:  # noqa: ANN001
    assert preflight.main(["--device", "cpu", "--papers", "coordconv resnet", "--data-root", str(tmp_path)]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("preflight: data: FAILED CIFAR-10 is the paper's data set at full scale")
    assert err.count("\n") == 1
    assert preflight.main(["--device", "cpu", "--papers", "nosuch"]) == 2
    assert capsys.readouterr().err == "preflight: papers: FAILED unknown paper(s) nosuch\n"
