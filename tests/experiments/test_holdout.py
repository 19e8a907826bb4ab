"""Selection hygiene, per experiment: a smoke run with guarded test data (``guard_test``) passes
only if no step before the final evaluation reads the test data (DESIGN.md, "Selection
hygiene"; ``paperzoo.data.holdout``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from paperzoo.data import holdout
from paperzoo.experiments import EXPERIMENTS, RunContext
from paperzoo.experiments.runner import run_experiment

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "babi"

# Every paper the registry holds: the ten and any installed plugin.
PAPERS = EXPERIMENTS.names()


def _guarded_run(name: str, ctx: RunContext) -> None:
    before = holdout.stats()
    result = run_experiment(name, dataclasses.replace(ctx, guard_test=True))
    after = holdout.stats()
    # The run guarded its test data and read them, in the final evaluation only (any earlier
    # read would have raised HoldoutAccessError).
    assert after.guarded > before.guarded, f"{name} never passed its test data to ctx.holdout"
    assert after.final_reads > before.final_reads, f"{name} never read its guarded test data"
    assert result.claims


@pytest.mark.parametrize("name", PAPERS)
def test_test_data_are_read_only_in_the_final_evaluation(name: str, smoke_ctx: RunContext) -> None:
    _guarded_run(name, smoke_ctx)


def test_ggnn_official_files_are_read_only_in_the_final_evaluation(tmp_path: Path) -> None:
    ctx = RunContext(scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=FIXTURES)
    _guarded_run("ggnn", ctx)
