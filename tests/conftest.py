"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperzoo.experiments import RunContext

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def smoke_ctx(tmp_path: Path) -> RunContext:
    """A run context for ``--scale smoke`` writing into a temporary directory."""
    return RunContext(scale="smoke", seed=0, device="cpu", out_dir=tmp_path / "out", quiet=True)
