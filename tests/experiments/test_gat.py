import json

import pytest

from paperzoo.experiments.runner import run_experiment


def test_smoke_run_writes_report(smoke_ctx):
    result = run_experiment("gat", smoke_ctx)
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["paper"] == "gat"
    assert {c["id"] for c in d["claims"]} == {c.id for c in result.claims}
    assert all(c["measured"] is not None for c in d["claims"])
    assert set(d["details"]["accuracy"]) == {"plain", "dropout", "noise", "fgsm_at", "gat"}
    for fig in d["figures"]:
        assert (smoke_ctx.out_dir / fig).stat().st_size > 0
    assert (smoke_ctx.out_dir / "runs" / "gat" / "checkpoints" / "latest.json").exists()


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path):
    from paperzoo.experiments import RunContext

    result = run_experiment("gat", RunContext(scale="quick", out_dir=tmp_path, quiet=True))
    # The paper's comparisons with FGSM adversarial training (quick: GAT 0.415 below it under
    # FGSM, mean over eps) and with dropout became findings with the paper's ordering as
    # target; they may fail at quick scale. Every other claim must hold.
    known = {"fgsm.gat_vs_fgsm_at.acc", "clean.gat_vs_dropout.acc"}
    failing = {c.id for c in result.claims if c.holds is False}
    assert failing <= known, failing - known
