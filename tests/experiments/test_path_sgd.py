"""The path-sgd reproduction: smoke pipeline (every claim measured) and the quick-scale claims."""

import dataclasses
import json
from pathlib import Path

import pytest

from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import run_experiment


def test_smoke_run_measures_every_claim(smoke_ctx):
    result = run_experiment("path-sgd", smoke_ctx)
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["paper"] == "path-sgd" and d["scale"] == "smoke"
    assert {c["id"] for c in d["claims"]} == {c.id for c in result.claims}
    assert all(c["measured"] is not None for c in d["claims"]), d["claims"]
    claims = {c["id"]: c for c in d["claims"]}
    # Exact invariance does not need a long run: it holds at smoke scale already.
    assert claims["invariance.rescaled_net.same_trajectory"]["holds"] is True
    assert claims["invariance.rescaled_net.sgd_rel_diff"]["holds"] is True
    for fig in d["figures"]:
        assert (smoke_ctx.out_dir / fig).stat().st_size > 0
    runs = d["details"]["runs"]
    assert {(r["init"], r["optimizer"]) for r in runs} == {
        (i, o) for i in ("balanced", "unbalanced") for o in ("pathsgd", "sgd", "adagrad")
    }
    chosen = d["details"]["chosen_lr"]["balanced.pathsgd"]
    metrics = smoke_ctx.out_dir / "runs" / f"balanced-pathsgd-lr{chosen:g}" / "metrics.jsonl"
    assert metrics.exists()


def test_unknown_dataset_is_rejected(smoke_ctx):
    with pytest.raises(ValueError, match="path-sgd does not support --dataset"):
        run_experiment("path-sgd", dataclasses.replace(smoke_ctx, dataset="imagenet"))


@pytest.mark.skipif(
    not Path("/usr/share/datasets/fashion-mnist").is_dir(), reason="Debian's Fashion-MNIST absent"
)
def test_smoke_on_fashion_mnist(smoke_ctx):
    result = run_experiment("path-sgd", dataclasses.replace(smoke_ctx, dataset="fashion-mnist"))
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["data"][0]["name"] == "fashion-mnist" and d["data"][0]["n_train"] == 400
    assert all(c.measured is not None for c in result.claims)


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path):
    result = run_experiment("path-sgd", RunContext(scale="quick", out_dir=tmp_path, quiet=True))
    # From the balanced init AdaGrad ends below Path-SGD at quick scale (docs/path-sgd.md:
    # -0.0011 in final loss, -0.26 in mean log10 ratio); those two findings may fail here.
    known = {
        "balanced.pathsgd_vs_adagrad.train_loss",
        "balanced.pathsgd_vs_adagrad.mean_log10_loss_ratio",
    }
    failing = [(c.id, c.measured) for c in result.claims if c.holds is False]
    assert {i for i, _ in failing} <= known, failing
