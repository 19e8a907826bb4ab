"""``--seeds --jobs N --device cuda``: the seed processes spread over the GPUs this process may
use, one ``CUDA_VISIBLE_DEVICES`` each (torch.cuda and the seed processes are stood in for)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch

from paperzoo.experiments import request as req
from paperzoo.experiments.request import RunRequest, gpu_slots


@pytest.fixture
def four_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_slots_follow_the_visible_gpus(four_gpus, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert gpu_slots("cuda", 3) == ["0", "1", "2"]
    assert gpu_slots(None, 6) == ["0", "1", "2", "3", "0", "1"]
    assert gpu_slots("cuda:2", 3) is None  # one device asked for: every seed there
    assert gpu_slots("cpu", 3) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    assert gpu_slots("cuda", 3) == ["5", "7", "5"]


def test_concurrent_seeds_get_different_gpus(four_gpus, monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    seen: list[tuple[str | None, int]] = []  # (CUDA_VISIBLE_DEVICES, seeds running with it)
    running: dict[str, int] = {}
    lock = threading.Lock()

    class FakeSeed:
        def __init__(self, cmd, stdout, stderr, env) -> None:  # noqa: ANN001
            self.gpu = env.get("CUDA_VISIBLE_DEVICES")
            with lock:
                running[self.gpu] = running.get(self.gpu, 0) + 1
                seen.append((self.gpu, running[self.gpu]))

        def wait(self) -> int:
            time.sleep(0.2)
            with lock:
                running[self.gpu] -= 1
            return 0

    monkeypatch.setattr(subprocess, "Popen", FakeSeed)
    monkeypatch.setattr(req, "merge_dirs", lambda dirs, out, command: "merged")
    request = RunRequest(("coordconv",), seeds=(0, 1, 2, 3, 4), jobs=2, device="cuda")
    assert req.run_seeds(request, "coordconv", tmp_path) == "merged"
    assert len(seen) == 5 and {g for g, _ in seen} <= {"0", "1"}
    assert all(n == 1 for _, n in seen)  # never two seeds on one GPU at once
