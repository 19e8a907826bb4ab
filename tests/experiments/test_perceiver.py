"""The Perceiver reproduction: smoke pipeline and (slow) the quick-scale claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import get_experiment, run_experiment


def test_smoke_run_measures_every_claim(smoke_ctx: RunContext) -> None:
    result = run_experiment("perceiver", smoke_ctx)
    data = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    declared = {c.id for c in get_experiment("perceiver").claims}
    assert {c["id"] for c in data["claims"]} == declared
    assert all(c["measured"] is not None for c in data["claims"])
    by_id = {c.id: c for c in result.claims}
    # Structural claims hold at any scale: exact invariance and the ImageNet parameter count.
    assert by_id["permuted.perceiver.invariant"].measured is True
    assert by_id["params.imagenet_config"].holds is True
    for fig in data["figures"]:
        assert (smoke_ctx.out_dir / fig).stat().st_size > 0
    assert {"accuracy", "attention"} <= {Path(f).stem for f in data["figures"]}


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path: Path) -> None:
    ctx = RunContext(scale="quick", seed=0, out_dir=tmp_path / "out", quiet=True)
    result = run_experiment("perceiver", ctx)
    # The paper's comparison on permuted pixels (Perceiver above the ConvNet) was added as a
    # finding without a quick measurement of it yet; it may fail here, nothing else may.
    known = {"permuted.perceiver_vs_convnet.test_acc"}
    failing = [(c.id, c.measured, c.target) for c in result.claims if c.holds is False]
    assert {i for i, _, _ in failing} <= known, failing
