"""The ggnn reproduction: smoke run in the suite, quick run on demand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import run_experiment

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "babi"


def _check(out: Path) -> dict:
    res = json.loads((out / "results.json").read_text())
    assert res["paper"] == "ggnn"
    ids = {c["id"] for c in res["claims"]}
    assert "babi.task19.ggsnn.test_acc" in ids and "seq.eulerian.ggsnn.test_acc" in ids
    for c in res["claims"]:
        assert isinstance(c["measured"], float), c["id"]
        if c["id"].endswith(".test_acc") and "minus" not in c["id"]:
            assert 0.0 <= c["measured"] <= 1.0
    assert (out / res["figures"][0]).is_file()
    return res


def test_smoke_run_measures_every_claim(smoke_ctx: RunContext) -> None:
    run_experiment("ggnn", smoke_ctx)
    res = _check(smoke_ctx.out_dir)
    assert res["data"][0]["source"] == "generated"


def test_smoke_run_on_the_official_file_layout(tmp_path: Path) -> None:
    ctx = RunContext(
        scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=FIXTURES, fold=1
    )
    run_experiment("ggnn", ctx)
    res = _check(ctx.out_dir)
    assert all(d["source"].startswith(str(FIXTURES)) for d in res["data"])


@pytest.mark.slow
def test_quick_run_all_claims_hold(tmp_path: Path) -> None:
    ctx = RunContext(scale="quick", out_dir=tmp_path / "out", quiet=True)
    result = run_experiment("ggnn", ctx)
    assert all(c.holds is not False for c in result.claims), [
        (c.id, c.measured) for c in result.claims if c.holds is False
    ]
