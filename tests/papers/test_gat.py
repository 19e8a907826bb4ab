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


def test_pgd_is_evaluated_at_every_fgsm_eps(smoke_ctx):
    run_experiment("gat", smoke_ctx)
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    for name in ("plain", "fgsm_at", "gat"):
        row = d["details"]["accuracy"][name]
        assert {k for k in row if k.startswith("pgd")} == {"pgd0.1", "pgd0.2", "pgd0.3"}
    measured = {c["id"]: c["measured"] for c in d["claims"]}
    assert measured["pgd.gat.acc"] == d["details"]["accuracy"]["gat"]["pgd0.1"]


def test_generator_bound_is_the_shared_training_budget(smoke_ctx):
    # One budget for FGSM-AT, noise training and GAT's generator: the generator's perturbations
    # never exceed train_eps (they used a separate, larger bound before).
    run_experiment("gat", smoke_ctx, overrides={"train_eps": "0.05"})
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    gen = d["details"]["generator"]
    assert 0 < gen["gen_linf"] <= 0.05 + 1e-6
    assert 0 <= gen["fooling_rate"] <= 1


def test_every_scale_shares_one_budget_and_evaluates_pgd_at_the_fgsm_eps():
    from dataclasses import fields

    from paperzoo.papers.gat.config import Config
    from paperzoo.papers.gat.experiment import GATExperiment

    names = {f.name for f in fields(Config)}
    assert "gen_scale" not in names and "pgd_eps" not in names  # no second budget to drift
    for cfg in GATExperiment.configs.values():
        assert 0 < cfg.train_eps <= max(cfg.eps)


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path):
    from paperzoo.experiments import RunContext

    result = run_experiment("gat", RunContext(scale="quick", out_dir=tmp_path, quiet=True))
    # The paper's comparisons with FGSM adversarial training and with dropout are findings with
    # the paper's ordering as target; they may fail at quick scale (see docs/gat.md). Every
    # other claim must hold.
    known = {"fgsm.gat_vs_fgsm_at.acc", "clean.gat_vs_dropout.acc"}
    failing = {c.id for c in result.claims if c.holds is False}
    assert failing <= known, failing - known


def test_full_scale_reads_the_papers_cifar_data_sets():
    # Full is the paper's setting: CIFAR-10 by default (not the 5,000 embedded digits, the
    # fallback before), CIFAR-100 its other data set; a digit set there is a substitute.
    from paperzoo.experiments import RunContext
    from paperzoo.papers.gat.experiment import GATExperiment

    exp = GATExperiment()
    assert exp.paper_data == "cifar10"
    assert exp.dataset_name(RunContext(scale="full")) == "cifar10"
    assert exp.dataset_name(RunContext(scale="quick")) == "mnist5k"
    assert exp.setting_note(RunContext(scale="full")) is None
    assert exp.setting_note(RunContext(scale="full", dataset="cifar100")) is None
    assert exp.setting_note(RunContext(scale="full", dataset="mnist")) is not None


def test_full_run_without_data_root_exits_2_and_writes_nothing(tmp_path, capsys):
    from paperzoo.cli import main

    out = tmp_path / "out"
    argv = ["reproduce", "gat", "--scale", "full", "--max-steps", "1", "--out", str(out)]
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CIFAR-10" in err[0] and "--data-root" in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_attacks_in_batches_see_every_test_image_once():
    # The full scale attacks eval_batch images at a time (a 10,000-image FGSM held gigabytes of
    # activations); the accuracy is the same as one call over all images.
    import torch

    from paperzoo.adversarial.attacks import FGSM
    from paperzoo.papers.gat.training import attacked_correct

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3)).eval()
    x, y = torch.rand(11, 3, 2, 2), torch.randint(0, 3, (11,))
    whole = int(attacked_correct(model, FGSM(model, eps=0.1), x, y, None))
    for batch in (1, 4, 11, 64):
        assert int(attacked_correct(model, FGSM(model, eps=0.1), x, y, batch)) == whole


def test_dry_run_cuts_the_evaluation_to_the_step_budget(smoke_ctx):
    # Under --max-steps N the attacks read the first N training-size batches of test images only.
    from dataclasses import replace

    from paperzoo.engine import budget
    from paperzoo.papers.gat.experiment import GATExperiment

    exp = GATExperiment()
    cfg = replace(exp.config("smoke"), n_test=None, eval_batch=4)
    with budget.capped(budget.StepBudget(2)):
        out = exp.run(cfg, smoke_ctx)
    assert out.details["n_test"] == 2 * cfg.batch_size


def test_a_selection_run_trains_only_the_named_models_on_validation_images(tmp_path):
    # The validation-seed decision of c_g (docs/gat.md): GAT and FGSM-AT alone, evaluated on
    # images held out of the training set; the comparisons with untrained models not measured.
    from dataclasses import replace

    from paperzoo.experiments import RunContext
    from paperzoo.papers.gat.experiment import GATExperiment

    ctx = RunContext(scale="smoke", seed=100, out_dir=tmp_path / "out", quiet=True, guard_test=True)
    overrides = {"n_val": "24", "models": '["gat", "fgsm_at"]', "gat.c_g": "0"}
    result = run_experiment("gat", ctx, overrides)
    by_id = {c.id: c.measured for c in result.claims}
    assert by_id["fgsm.gat_vs_fgsm_at.acc"] is not None and by_id["gen.linf"] is not None
    assert by_id["fgsm.eps0.1.gat_vs_plain.acc"] is None
    assert by_id["clean.gat_vs_dropout.acc"] is None
    d = json.loads((ctx.out_dir / "results.json").read_text())
    assert d["details"]["evaluated_on"] == "validation"
    assert d["details"]["n_test"] == 24  # the held-out images, below the smoke test cap of 32
    assert set(d["details"]["accuracy"]) == {"gat", "fgsm_at"}
    assert sorted(p.name for p in (ctx.out_dir / "runs").iterdir()) == ["fgsm_at", "gat"]
    quick = GATExperiment.configs["quick"]
    with pytest.raises(ValueError, match="models must be among"):
        replace(quick, models=("gan",))
    with pytest.raises(ValueError, match="n_val must be"):
        replace(quick, n_val=0)
