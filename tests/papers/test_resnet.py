"""The `resnet` reproduction: smoke run end to end, helpers, and (slow) the quick-scale claims."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import build_result, run_experiment
from paperzoo.papers.resnet import training
from paperzoo.papers.resnet.experiment import ResNetExperiment


def test_smoke_run_measures_every_claim(smoke_ctx: RunContext) -> None:
    result = run_experiment("resnet", smoke_ctx)
    res = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    declared = {c.id for c in ResNetExperiment.claims if c.applies("smoke")}
    assert {c["id"] for c in res["claims"]} == declared
    assert "test_err.resnet110" not in declared  # full only
    assert all(c["measured"] is not None for c in res["claims"])
    # the architecture sizes are exact at every scale
    sizes = {c.id: c for c in result.claims}
    assert sizes["params.resnet56"].measured == 853_018 and sizes["params.resnet56"].holds
    assert sizes["macs.resnet50_imagenet"].holds
    assert (smoke_ctx.out_dir / res["figures"][0]).is_file()
    assert (smoke_ctx.out_dir / "runs" / "plain14" / "metrics.jsonl").is_file()


def test_shards_merge_into_the_full_result(tmp_path: Path) -> None:
    exp = ResNetExperiment()
    cfg = replace(exp.config("smoke"), steps=2, eval_every=0, loss_window=1)
    shards = []
    for k in range(2):
        ctx = RunContext(scale="smoke", out_dir=tmp_path / f"s{k}", quiet=True, shard=(k, 2))
        outcome = exp.run(cfg, ctx)
        shards.append(build_result(exp, outcome, ctx, 1.0).to_dict())
        assert len(outcome.details["runs"]) == 2
    assert shards[0]["claims"][0]["measured"] is None  # plain14 trained in the other shard
    merged = exp.merge(shards, RunContext(scale="smoke", out_dir=tmp_path / "m"))
    assert set(merged.details["runs"]) == set(exp.model_names(cfg))
    assert all(v is not None for v in merged.measured.values())


def test_table6_depths_are_judged_at_full_scale_only(tmp_path: Path) -> None:
    exp = ResNetExperiment()
    claims = {c.id: c for c in exp.claims}
    for d, err in ((32, 7.51), (44, 7.17), (110, 6.43)):
        claim = claims[f"test_err.resnet{d}"]
        assert claim.scales == ("full",) and claim.target_at("full") == f"<= {1.1 * err:.2f}"
    # The full scale's extra nets on the smoke data (named: not the paper's setting), two steps:
    # each depth's test error is measured.
    cfg = replace(
        exp.config("smoke"), more=("resnet32",), steps=2, eval_every=0, loss_window=1, n_test=16
    )
    ctx = RunContext(scale="full", out_dir=tmp_path / "full", quiet=True, dataset="digits")
    outcome = exp.run(cfg, ctx)
    assert outcome.measured["test_err.resnet32"] == pytest.approx(
        100 * outcome.details["runs"]["resnet32"]["test_err"]
    )
    assert outcome.measured["test_err.resnet110"] is None  # not trained: not measured
    result = build_result(exp, outcome, ctx, 1.0)
    assert {c.id for c in result.claims} >= {"test_err.resnet32", "test_err.resnet44"}


def test_batches_are_the_same_global_batch_for_any_rank_split() -> None:
    exp = ResNetExperiment()
    cfg = replace(exp.config("smoke"), batch_size=8, pad=2, flip=True)
    x = torch.rand(20, 1, 6, 6)
    y = torch.arange(20)
    batches = training.batches(x, y, cfg, seed=3)
    xb, yb = batches(5, torch.Generator().manual_seed(11))
    again, _ = batches(5, torch.Generator().manual_seed(11))
    assert xb.shape == (8, 1, 6, 6) and torch.equal(xb, again)  # a function of (seed, step)
    assert len(set(yb.tolist())) == 8  # no repeats within a batch


def test_lr_schedule_milestones_and_warmup() -> None:
    cfg = ResNetExperiment().config("full")
    f110 = training.lr_schedule(cfg, 110)
    f56 = training.lr_schedule(cfg, 56)
    assert f110(0) == pytest.approx(0.1) and f110(400) == 1.0 and f56(0) == 1.0
    assert f56(31_999) == 1.0 and f56(32_000) == pytest.approx(0.1)
    assert f56(48_000) == pytest.approx(0.01) and f56(63_999) == pytest.approx(0.01)


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path: Path) -> None:
    ctx = RunContext(scale="quick", seed=0, out_dir=tmp_path / "out", quiet=True)
    result = run_experiment("resnet", ctx)
    # the whole ordering of Fig. 6: plain-56 > plain-20 > ResNet-20 > ResNet-56 (training loss)
    failing = [c.id for c in result.claims if c.holds is not True]
    assert not failing, failing


def test_quick_data_are_digits_pooled_to_7x7(tmp_path: Path) -> None:
    exp = ResNetExperiment()
    cfg = exp.config("quick")
    ctx = RunContext(scale="quick", out_dir=tmp_path)
    data, info, num_classes = training.load_data(exp.dataset_name(ctx), cfg, ctx)
    assert data["x"].shape == (4000, 1, 7, 7) and data["x_test"].shape == (1000, 1, 7, 7)
    assert info.name == "mnist5k" and num_classes == 10
    assert data["x"].mean(0).abs().max() < 1e-5  # per-pixel mean subtracted (§4.2)
    # 4x4 average pooling of the 28x28 digits, before the mean subtraction
    ctx = RunContext(scale="quick", out_dir=tmp_path)
    raw = training.load_data(exp.dataset_name(ctx), replace(cfg, downsample=1), ctx)[0]
    pooled = torch.nn.functional.avg_pool2d(raw["x"], 4)
    assert torch.allclose(data["x"], pooled, atol=1e-5)


def test_full_test_error_targets_are_one_sided() -> None:
    # Beating the paper is no failure: ResNet-110 at 6.0 % (paper 6.43) holds; it failed against
    # the two-sided "within 10% of 6.43" before. Above the paper plus 10 % still fails.
    from paperzoo.verdict import evaluate_target

    claims = {c.id: c for c in ResNetExperiment.claims}
    t110 = claims["test_err.resnet110"].target_at("full")
    assert evaluate_target(t110, 6.0) is True and evaluate_target(t110, 3.0) is True
    assert evaluate_target(t110, 7.2) is False
    for cid in ("test_err.residual_shallow", "test_err.residual_deep"):
        claim = claims[cid]
        assert evaluate_target(claim.target_at("full"), 0.5 * claim.paper) is True
        assert evaluate_target(claim.target_at("full"), 1.2 * claim.paper) is False
    # parameter counts stay two-sided
    assert claims["params.resnet110"].target_at("full").startswith("within")


def test_each_scale_reads_its_own_data_set_and_full_the_papers() -> None:
    exp = ResNetExperiment()
    names = {s: exp.dataset_name(RunContext(scale=s)) for s in ("smoke", "quick", "full")}
    assert names == {"smoke": "digits", "quick": "mnist5k", "full": "cifar10"}
    assert exp.setting_note(RunContext(scale="full")) is None
    assert exp.setting_note(RunContext(scale="quick")) is None
    assert "cifar10" in (exp.setting_note(RunContext(scale="full", dataset="mnist5k")) or "")
    cfg_fields = {f for f in exp.config("full").__dataclass_fields__}
    assert "dataset" not in cfg_fields  # one place names the default: no config to disagree


def test_full_run_without_data_root_exits_2_and_writes_nothing(tmp_path: Path, capsys) -> None:
    from paperzoo.cli import main

    out = tmp_path / "out"
    argv = ["reproduce", "resnet", "--scale", "full", "--max-steps", "1", "--out", str(out)]
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CIFAR-10" in err[0] and "--data-root" in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_dry_run_evaluates_the_first_batches_only(tmp_path: Path, monkeypatch) -> None:
    # --max-steps N: the validation and test errors read N training-size batches, not the whole
    # sets (9 nets x 15,000 images were most of a full dry run's time).
    from paperzoo.engine import budget

    exp = ResNetExperiment()
    cfg = replace(exp.config("smoke"), steps=2, eval_every=0, loss_window=1, n_test=None)
    ctx = RunContext(scale="smoke", out_dir=tmp_path, quiet=True, dataset="mnist5k")
    data, _, k = training.load_data(exp.dataset_name(ctx), replace(cfg, n_val=1200), ctx)
    seen: list[int] = []
    orig = training.error_rate

    def spy(model, x, y, device):  # noqa: ANN001, ANN202
        seen.append(len(x))
        return orig(model, x, y, device)

    monkeypatch.setattr(training, "error_rate", spy)
    with budget.capped(budget.StepBudget(1)):
        training.train_one("resnet8", replace(cfg, n_val=1200), ctx, data, k)
    # validation (1,200) and test (1,000) images cut to one training batch
    assert seen and max(seen) == cfg.batch_size


def test_batch_norm_is_synchronised_under_ddp_on_cuda_only() -> None:
    """On CUDA under a process group the CIFAR nets normalise over the whole global batch
    (SyncBatchNorm); one process, or gloo ranks on the CPU, keep plain batch norm."""
    from torch import nn

    from paperzoo.engine.distributed import DistInfo
    from paperzoo.models.resnet import CifarResNet
    from paperzoo.papers.resnet.training import sync_batch_norm

    def kinds(model: nn.Module) -> set[type]:
        return {type(m) for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)}

    group = DistInfo(rank=0, world_size=2, group=True)
    single = DistInfo()
    model = CifarResNet(depth=8, base_width=8)
    for dist, device in ((single, "cuda:0"), (group, "cpu"), (single, "cpu")):
        assert kinds(sync_batch_norm(model, dist, device)) == {nn.BatchNorm2d}
    synced = sync_batch_norm(CifarResNet(depth=8, base_width=8), group, "cuda:1")
    assert kinds(synced) == {nn.SyncBatchNorm}
    one = DistInfo(rank=0, world_size=1, group=True)  # torchrun --nproc_per_node=1
    assert kinds(sync_batch_norm(CifarResNet(depth=8, base_width=8), one, "cuda")) == {
        nn.SyncBatchNorm
    }
    assert synced.state_dict().keys() == model.state_dict().keys()  # checkpoints still load
