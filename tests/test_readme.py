"""Every ```python block of README.md runs as is, each in a fresh interpreter (as a reader would
paste it), in a scratch directory, and finishes within a few seconds on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README.read_text(), flags=re.S | re.M)


def test_readme_has_a_snippet_per_paper() -> None:
    text = "\n".join(BLOCKS)
    for piece in (
        "CifarResNet", "GatedGraphNet", "WRM", "CoordConv2d", "BPDA", "EOT", "PathSGD", "DRAW",
        "Perceiver", "mig", "GenerativeAdversarialTrainer",
    ):  # fmt: skip
        assert piece in text, piece


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index: int, tmp_path: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    out = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"README block {index}:\n{BLOCKS[index]}\n{out.stderr[-3000:]}"
