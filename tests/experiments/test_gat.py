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
    failing = [c.id for c in result.claims if c.holds is False]
    assert not failing, failing
