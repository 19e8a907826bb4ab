"""The path-sgd reproduction: smoke pipeline (every claim measured) and the quick-scale claims."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from paperzoo.data import Split, load_dataset
from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import run_experiment
from paperzoo.papers.path_sgd import Config, PathSGDExperiment
from paperzoo.papers.path_sgd import experiment as path_sgd_experiment
from paperzoo.papers.path_sgd import training as path_sgd_training


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
    # From the balanced init AdaGrad ends below Path-SGD at quick scale (docs/path-sgd.md, seeds
    # 100-103: -0.0010 +- 0.0001 in final loss, -0.21 +- 0.05 in mean log10 ratio, 0 of 4 seeds):
    # those two findings fail; every other finding held at all four seeds.
    known = {
        "balanced.pathsgd_vs_adagrad.train_loss",
        "balanced.pathsgd_vs_adagrad.mean_log10_loss_ratio",
    }
    failing = [(c.id, c.measured) for c in result.claims if c.holds is False]
    assert {i for i, _ in failing} <= known, failing


def _class_sorted(split):
    """The same examples, each half sorted by label (a training file written class by class)."""
    i, j = torch.argsort(split.y_train, stable=True), torch.argsort(split.y_test, stable=True)
    return Split(split.x_train[i], split.y_train[i], split.x_test[j], split.y_test[j],
                 split.info, split.num_classes)  # fmt: skip


def test_class_sorted_file_trains_like_a_shuffled_one(smoke_ctx, monkeypatch):
    # Smoke keeps 400 of the digits' training examples: taking the first 400 of a file sorted by
    # class trained on its first three classes only (Path-SGD's final loss 0.29 instead of 1.64,
    # and the AdaGrad comparisons changed sign). The subsets are stratified random draws, and the
    # trainer draws every epoch's batches from a seeded permutation, so the file's order does
    # not matter.
    ctx_sorted = dataclasses.replace(smoke_ctx, out_dir=smoke_ctx.out_dir.parent / "sorted")
    run_experiment("path-sgd", smoke_ctx)
    monkeypatch.setattr(
        path_sgd_experiment,
        "load_dataset",
        lambda *a, **k: _class_sorted(load_dataset(*a, **k)),
    )
    run_experiment("path-sgd", ctx_sorted)
    runs = {}
    for tag, ctx in (("shuffled", smoke_ctx), ("sorted", ctx_sorted)):
        d = json.loads((ctx.out_dir / "results.json").read_text())
        runs[tag] = {(r["init"], r["optimizer"]): r for r in d["details"]["runs"]}
        assert d["data"][0]["n_train"] == 400 and d["data"][0]["n_test"] == 200
    for key in (("balanced", "pathsgd"), ("unbalanced", "pathsgd")):
        a, b = runs["shuffled"][key], runs["sorted"][key]
        assert not a["diverged"] and not b["diverged"]
        assert b["final_train_loss"] == pytest.approx(a["final_train_loss"], rel=0.05)


def test_a_diverging_optimizer_is_recorded_and_its_comparisons_not_measured(smoke_ctx):
    ctx = smoke_ctx  # float32 overflows at once: the loss becomes NaN at the first step
    result = run_experiment("path-sgd", ctx, {"pathsgd_lrs": "[1e38]"})
    d = json.loads((ctx.out_dir / "results.json").read_text())
    runs = [r for r in d["details"]["runs"] if r["optimizer"] == "pathsgd"]
    assert runs and all(r["diverged"] and r["final_train_loss"] is None for r in runs)
    claims = {c.id: c for c in result.claims}
    for init in ("balanced", "unbalanced"):
        for other in ("sgd", "adagrad"):
            for stat in ("train_loss", "mean_log10_loss_ratio"):
                c = claims[f"{init}.pathsgd_vs_{other}.{stat}"]
                assert c.measured is None and c.holds is not True
    note = next(n for n in d["notes"] if n.startswith("Diverged"))
    assert "balanced Path-SGD lr 1e+38" in note and "Every step size diverged" in note


def test_full_scale_reads_the_papers_data_sets():
    # Section 6's four data sets: MNIST is full's default (not a config fallback), the other
    # three are the paper's setting too; a substitute such as Fashion-MNIST is marked.
    exp = PathSGDExperiment()
    assert exp.paper_data == "mnist"
    names = {s: exp.dataset_name(RunContext(scale=s)) for s in ("smoke", "quick", "full")}
    assert names == {"smoke": "digits", "quick": "mnist5k", "full": "mnist"}
    for name in ("mnist", "cifar10", "cifar100", "svhn"):
        assert exp.setting_note(RunContext(scale="full", dataset=name)) is None
    assert exp.setting_note(RunContext(scale="full", dataset="fashion-mnist")) is not None
    assert exp.setting_note(RunContext(scale="full", dataset="mnist5k")) is not None
    assert "default_dataset" not in {f.name for f in dataclasses.fields(Config)}


@pytest.mark.parametrize(("extra", "what"), [([], "MNIST"), (["--dataset", "svhn"], "SVHN")])
def test_full_run_without_data_root_exits_2_and_writes_nothing(tmp_path, capsys, extra, what):
    from paperzoo.cli import main

    out = tmp_path / "out"
    argv = ["reproduce", "path-sgd", "--scale", "full", "--max-steps", "1", "--out", str(out)]
    assert main([*argv, *extra, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0] and "--data-root" in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_dry_run_curves_read_the_first_batches_only(smoke_ctx, monkeypatch):
    # --max-steps N: every curve point and test error reads N batches (of batch_size) of each
    # set; a full dry run predicted 2 x 50,000 examples through the 2 x 4000 MLP per grid point.
    from paperzoo.engine import budget

    seen: list[int] = []
    orig = path_sgd_training.predict

    def spy(net, x, **kw):  # noqa: ANN001, ANN202
        seen.append(len(x))
        return orig(net, x, **kw)

    monkeypatch.setattr(path_sgd_training, "predict", spy)
    exp = PathSGDExperiment()
    cfg = dataclasses.replace(exp.config("smoke"), batch_size=50)
    with budget.capped(budget.StepBudget(2)):
        out = exp.run(cfg, smoke_ctx)
    assert seen and max(seen) == 100  # training (300), validation (100) and test (200) cut
    assert out.measured["invariance.rescaled_net.same_trajectory"] is not None
