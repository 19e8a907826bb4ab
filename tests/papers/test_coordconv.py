import dataclasses
import json

import pytest
import torch

from paperzoo.data import holdout
from paperzoo.data.not_so_clevr import all_centres, onehot_images
from paperzoo.engine import seeded
from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import run_experiment
from paperzoo.models.coordconv import (
    ConvRegressor,
    CoordConvPainter,
    CoordConvRegressor,
    DeconvPainter,
)
from paperzoo.papers.coordconv import CoordConvExperiment
from paperzoo.papers.coordconv.config import SCHEDULES
from paperzoo.papers.coordconv.training import (
    _accumulating_step,
    _with_l2,
    conv_weights,
    fit,
    fit_classifier,
    fit_regressor,
    load_data,
    max_on_hot_pixel,
)


def test_smoke_run_writes_report(smoke_ctx):
    result = run_experiment("coordconv", smoke_ctx)
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["paper"] == "coordconv" and d["scale"] == "smoke"
    assert {c["id"] for c in d["claims"]} == {c.id for c in result.claims}
    # At smoke scale the deconv nets cannot fit their training points in 4 steps: the findings
    # that presuppose the fit are not measured, and a note says why; everything else is.
    unmeasured = {c["id"] for c in d["claims"] if c["measured"] is None}
    assert unmeasured == {
        "quadrant.classification.deconv.test_acc",
        "uniform.classification.deconv.test_acc",
        "uniform.classification.coordconv_minus_deconv.test_acc",
    }
    assert {c["verdict"] for c in d["claims"] if c["id"] in unmeasured} == {"not measured"}
    assert sum("did not fit its" in n for n in d["notes"]) == 2
    extra = d["details"]["extra"]
    assert all(0.0 <= extra[k] <= 1.0 for k in unmeasured if "minus" not in k)
    checks = {c["id"]: c for c in d["claims"] if c["kind"] == "check"}
    assert checks["painter.coordconv.params"]["holds"] is True
    assert checks["painter.deconv_over_coordconv.params"]["holds"] is True
    # The twin (no AddCoords) cannot see where the pixel is, whatever its weights.
    assert checks["quadrant.regression.conv_twin.position_invariant"]["holds"] is True
    for fig in d["figures"]:
        assert (smoke_ctx.out_dir / fig).stat().st_size > 0
    assert (smoke_ctx.out_dir / "report.md").exists()
    curve = smoke_ctx.out_dir / "runs" / "quadrant-classification-coordconv" / "metrics.jsonl"
    records = [json.loads(line) for line in curve.read_text().splitlines()]
    assert any("val_acc" in r for r in records)  # monitored on validation data
    assert not any(k.startswith("test") for r in records for k in r)


def test_test_data_are_read_only_in_the_final_evaluation(smoke_ctx):
    before = holdout.stats()
    result = run_experiment("coordconv", dataclasses.replace(smoke_ctx, guard_test=True))
    after = holdout.stats()
    # Both splits' test centres were guarded, and read inside final_evaluation() only (an
    # earlier read raises HoldoutAccessError).
    assert after.guarded >= before.guarded + 2
    assert after.final_reads > before.final_reads
    assert result.claims


def test_validation_is_carved_from_the_training_split(smoke_ctx):
    exp = CoordConvExperiment()
    cfg = exp.config("quick")
    data = load_data(cfg, smoke_ctx)
    for kind, (split, train, val, _) in data.items():
        assert len(train) + len(val) == len(split.train)
        assert len(val) == round(cfg.val_fraction * len(split.train))
        pool = {tuple(c) for c in split.train.tolist()}
        held = {tuple(c) for c in val.tolist()}
        assert held <= pool, kind
        assert not held & {tuple(c) for c in train.tolist()}
    # seeded: the same seed carves the same validation points, another seed others
    again = load_data(cfg, smoke_ctx)["uniform"][2]
    other = load_data(cfg, dataclasses.replace(smoke_ctx, seed=1))["uniform"][2]
    assert torch.equal(again, data["uniform"][2]) and not torch.equal(other, again)


@pytest.mark.parametrize("l2", [0.0, 0.5])
def test_micro_batches_give_the_whole_batch_gradient(l2):
    """Chunks of 2 give the whole batch's gradient; with the authors' L2 penalty each chunk's loss
    holds it weighted by its share, so the step's gradient is the whole batch's penalised one."""
    torch.manual_seed(0)
    coords, target = torch.rand(8, 2) * 2 - 1, torch.randint(0, 64 * 64, (8,))

    def loss_fn(model, batch):
        c, t = batch
        return torch.nn.functional.cross_entropy(model(c).flatten(1), t)

    grads = []
    for chunk in (8, 2):
        torch.manual_seed(1)
        model = CoordConvPainter()
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        step_loss = _with_l2(loss_fn, model, l2, chunked=True) if l2 else loss_fn
        _accumulating_step(step_loss, opt, chunk)(model, (coords, target))
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    torch.manual_seed(1)
    model = CoordConvPainter()
    total, _ = _with_l2(loss_fn, model, l2, chunked=False)(model, (coords, target))
    total.backward()
    whole = torch.cat([p.grad.flatten() for p in model.parameters()])
    for g in grads:
        assert torch.allclose(g, whole, rtol=1e-4, atol=1e-6)


def test_micro_batches_all_reduce_once_per_step_under_ddp():
    """A stand-in for DistributedDataParallel counts the backward passes that would all-reduce
    (DDP decides in the forward pass, from require_backward_grad_sync, which no_sync clears)."""
    import contextlib

    class CountingDDP(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module, self.require_backward_grad_sync, self.all_reduces = module, True, 0

        def forward(self, x):
            out = self.module(x)
            if self.require_backward_grad_sync:
                out.register_hook(lambda g: setattr(self, "all_reduces", self.all_reduces + 1))
            return out

        @contextlib.contextmanager
        def no_sync(self):
            self.require_backward_grad_sync = False
            try:
                yield
            finally:
                self.require_backward_grad_sync = True

    def loss_fn(model, batch):
        c, t = batch
        return torch.nn.functional.cross_entropy(model(c), t)

    model = CountingDDP(torch.nn.Linear(2, 4))
    step = _accumulating_step(loss_fn, torch.optim.SGD(model.parameters(), lr=0.1), 2)
    step(model, (torch.rand(8, 2), torch.randint(0, 4, (8,))))  # 4 chunks
    assert model.all_reduces == 1


@pytest.mark.slow
def test_quick_scale_classifier_generalises_to_the_held_out_quadrant(tmp_path):
    """A knife edge at quick scale: the CoordConv classifier alone, quick config, seed 0."""
    from paperzoo.experiments import RunContext
    from paperzoo.papers.coordconv.training import classification_acc

    exp = CoordConvExperiment()
    cfg = exp.config("quick")
    ctx = RunContext(scale="quick", out_dir=tmp_path, quiet=True)
    _, train, val, test = load_data(cfg, ctx)["quadrant"]
    model, _ = fit_classifier("quadrant", "coordconv", train, val, cfg, ctx)
    with ctx.final_evaluation():
        assert classification_acc(model, test) >= 0.99


@pytest.mark.parametrize(("switch", "tracked"), [(0, 0), (2, 2), (None, 4)])
def test_deconv_batch_norms_freeze_their_running_stats_at_the_switch(smoke_ctx, switch, tracked):
    """From step ``running_stats_from`` on, the deconv's batch norms normalise with their running
    statistics and stop updating them (4 steps; the switch at 0, 2, never)."""
    exp = CoordConvExperiment()
    torch.manual_seed(0)
    model = DeconvPainter()
    coords, target = torch.rand(16, 2) * 2 - 1, torch.randint(0, 64 * 64, (16,))

    def loss_fn(m, batch):
        return torch.nn.functional.cross_entropy(m(batch[0]).flatten(1), batch[1])

    fit(
        f"bn-switch-{switch}", model, (coords, target), loss_fn, lambda m: {"val": 0.0},
        steps=4, lr=1e-3, batch_size=8, cfg=exp.config("smoke"), ctx=smoke_ctx,
        running_stats_from=switch,
    )  # fmt: skip
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert [int(m.num_batches_tracked) for m in norms] == [tracked] * len(norms)
    if switch == 0:
        assert all(torch.equal(m.running_mean, torch.zeros_like(m.running_mean)) for m in norms)


def test_regressors_train_the_same_function_in_channels_last(smoke_ctx):
    """The conventional regressor trains in channels-last format (quick and full configs) and
    reaches the parameters of channels-first training up to rounding.

    The comparison runs in float64: in float32 the two layouts' rounding differs with the thread
    count and the CPU. Adam's first step moves every weight by about lr * g / (|g| + eps), so the
    conv bias before a batch norm (gradient zero up to rounding) moves by up to +-lr; and the
    channels-last kernels sum a conv bias's gradient over the 8 x 32 x 32 positions of a one-hot
    batch, terms that nearly cancel (in float32, one output of 32 off by 2.4e-5 to 2.5e-5 at one
    thread on an Intel Xeon and an AMD EPYC, none at two). In float64 all differ by < 1e-11."""
    exp = CoordConvExperiment()
    assert exp.config("quick").channels_last and exp.config("full").channels_last
    g = torch.Generator().manual_seed(0)
    images = torch.zeros(16, 1, 64, 64, dtype=torch.float64)
    images.view(16, -1)[torch.arange(16), torch.randint(0, 64 * 64, (16,), generator=g)] = 1.0
    target = torch.rand(16, 2, generator=g, dtype=torch.float64)

    def loss_fn(m, batch):
        return torch.nn.functional.mse_loss(m(batch[0]), batch[1])

    models = {}
    for layout in (False, True):
        with seeded(0):
            models[layout] = ConvRegressor().double()
        initial = [p.detach().clone() for p in models[layout].parameters()]
        fit(
            f"layout-{layout}", models[layout], (images, target), loss_fn, lambda m: {},
            steps=3, lr=1e-3, batch_size=8, cfg=exp.config("smoke"), ctx=smoke_ctx,
            channels_last=layout,
        )  # fmt: skip
    conv = [m for m in models[True].modules() if isinstance(m, torch.nn.Conv2d)][0]
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    params = zip(models[True].parameters(), initial, strict=True)
    moved = max((p.detach() - p0).abs().max().item() for p, p0 in params)
    assert moved > 1e-3  # Adam's steps (lr 1e-3) moved the weights far beyond the tolerance
    for (name, a), b in zip(
        models[False].named_parameters(), models[True].parameters(), strict=True
    ):
        torch.testing.assert_close(a, b, msg=name)  # float64 tolerances: rtol 1e-7, atol 1e-7
    with torch.no_grad():  # batch statistics
        out = {layout: m.train()(images) for layout, m in models.items()}
    torch.testing.assert_close(out[False], out[True])


def test_max_on_hot_pixel_tells_where_the_max_pool_reads():
    """1.0 when the hot pixel's response dominates every map, 0.0 when the coordinate ramp
    does (the hot pixel then gets no gradient through the max pool)."""
    centres = all_centres()[::37]
    model = CoordConvRegressor()
    convs = [m for m in model.net if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        for conv in convs:
            conv.weight.zero_()
            conv.bias.zero_()
            n = min(conv.in_channels, conv.out_channels, 3)
            k = conv.kernel_size[0] // 2
            conv.weight[range(n), range(n), k, k] = 1.0  # channels 0-2 (x, i, j) pass through
        convs[-1].weight[:, 0, 1, 1] = 10.0  # the hot pixel dominates both outputs
    assert max_on_hot_pixel(model, centres) == 1.0
    with torch.no_grad():
        convs[-1].weight[:, 0, 1, 1] = 0.0
        convs[-1].weight[:, 1, 1, 1] = 1.0  # only the row ramp: the maximum sits on the last row
    assert max_on_hot_pixel(model, centres) < 0.1


def test_l2_penalty_is_on_conv_weights_only():
    """The authors' ``--l2``: l2 x the sum of squared conv kernels (not biases) added to the
    loss; the logged fit loss is the loss without it."""
    torch.manual_seed(0)
    model = CoordConvRegressor()
    x, y = onehot_images(all_centres()[:4]), torch.rand(4, 2)

    def loss_fn(m, batch):
        return torch.nn.functional.mse_loss(m(batch[0]), batch[1])

    weights = conv_weights(model)
    assert len(weights) == 5 and all(w.dim() == 4 for w in weights)
    assert not any(w is m.bias for w in weights for m in model.net)
    total, logged = _with_l2(loss_fn, model, 1e-2, chunked=False)(model, (x, y))
    fit = loss_fn(model, (x, y))
    expected = fit + 1e-2 * sum(w.pow(2).sum() for w in weights)
    torch.testing.assert_close(total, expected)
    torch.testing.assert_close(logged["fit_loss"], fit.detach())
    with torch.no_grad():
        for m in model.net:
            m.bias.add_(5.0)  # biases are not penalised
    total_b, logged_b = _with_l2(loss_fn, model, 1e-2, chunked=False)(model, (x, y))
    penalty = (total_b - logged_b["fit_loss"]).item()  # a difference of larger numbers
    assert penalty == pytest.approx((expected - fit).item(), rel=1e-3)


def test_only_the_quadrant_coordconv_classifier_takes_its_l2(smoke_ctx, monkeypatch):
    """``quadrant_cls_l2`` reaches the CoordConv classifier on the quadrant split, not the
    uniform one nor the deconv nets; every scale declares 0 until quick's 1e-3 is rerun."""
    import paperzoo.papers.coordconv.training as cc

    for scale in ("smoke", "quick", "full"):
        assert CoordConvExperiment().config(scale).quadrant_cls_l2 == 0.0
    seen = []
    real_fit = cc.fit

    def fit(tag, *a, **kw):
        seen.append((tag, kw["l2"]))
        return real_fit(tag, *a, **kw)

    monkeypatch.setattr(cc, "fit", fit)
    cfg = dataclasses.replace(CoordConvExperiment().config("smoke"), quadrant_cls_l2=2e-3)
    data = load_data(cfg, smoke_ctx)
    for kind in ("quadrant", "uniform"):
        _, train, val, _ = data[kind]
        for arch in ("coordconv", "deconv"):
            fit_classifier(kind, arch, train[:16], val[:4], cfg, smoke_ctx)
    assert seen == [
        ("quadrant-classification-coordconv", 2e-3),
        ("quadrant-classification-deconv", 0.0),
        ("uniform-classification-coordconv", 0.0),
        ("uniform-classification-deconv", 0.0),
    ]


def test_schedules():
    assert SCHEDULES["constant"](10) is None
    cosine = SCHEDULES["cosine"](10)
    assert cosine(0) == 1.0 and abs(cosine(10)) < 1e-12
    step = SCHEDULES["step"](1000)  # the authors': x0.1 every 200 of 1,000 epochs, 4 times
    assert [step(s) for s in (0, 199, 200, 400, 600, 800, 999)] == pytest.approx(
        [1.0, 1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-4]
    )
    with pytest.raises(ValueError, match="reg_schedule"):
        dataclasses.replace(CoordConvExperiment().config("quick"), reg_schedule="linear")


def test_regression_trains_with_the_configured_adam_and_penalty(smoke_ctx, monkeypatch):
    """The CoordConv regressor and its twin use ``reg_betas``, ``reg_l2`` and
    ``reg_schedule``; the conv regressor ``adam_betas``, ``conv_reg_l2`` and ``schedule``."""
    import paperzoo.papers.coordconv.training as cc

    seen = []
    real_adam, real_l2 = torch.optim.Adam, cc._with_l2

    def adam(params, **kw):
        seen.append(("adam", kw["betas"]))
        return real_adam(params, **kw)

    def with_l2(loss_fn, model, l2, *, chunked):
        seen.append(("l2", l2))
        return real_l2(loss_fn, model, l2, chunked=chunked)

    monkeypatch.setattr(torch.optim, "Adam", adam)
    monkeypatch.setattr(cc, "_with_l2", with_l2)
    exp = CoordConvExperiment()
    cfg = dataclasses.replace(
        exp.config("smoke"), reg_betas=(0.5, 0.9), reg_l2=3e-5, adam_betas=(0.8, 0.95),
        conv_reg_l2=0.0,
    )  # fmt: skip
    _, train, val, _ = load_data(cfg, smoke_ctx)["quadrant"]
    fit_regressor("coordconv", train[:16], val[:4], cfg, smoke_ctx)
    fit_regressor("conv", train[:16], val[:4], cfg, smoke_ctx)
    assert seen == [("adam", (0.5, 0.9)), ("l2", 3e-5), ("adam", (0.8, 0.95))]


def test_full_scale_is_the_authors_training():
    """Full scale trains as the authors' command lines do (experiment_logs.sh, train.py
    defaults): Adam (0.9, 0.99); the CoordConv regressor 100 epochs of batch 256 over their
    2,407 training points (10 batches an epoch, the last partial) at a constant 0.01 with L2
    1e-5; constant step sizes for the CoordConv painters, x0.1 steps for the deconv nets."""
    full = CoordConvExperiment().config("full")
    assert full.reg_steps == 100 * -(-2407 // 256) == 1000
    assert (full.reg_batch_size, full.reg_betas, full.reg_lr) == (256, (0.9, 0.99), 1e-2)
    assert (full.reg_l2, full.reg_schedule) == (1e-5, "constant")
    assert (full.adam_betas, full.schedule, full.deconv_schedule) == (
        (0.9, 0.99), "constant", "step"
    )  # fmt: skip
    assert full.deconv_running_stats_from == 1.0  # batch statistics throughout, as theirs


def test_the_regression_part_runs_alone(smoke_ctx):
    run_experiment("coordconv", dataclasses.replace(smoke_ctx, part="regression"))
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["part"] == "regression"
    assert {c["id"] for c in d["claims"]} == {
        c.id
        for c in CoordConvExperiment.claims
        if c.id.startswith("quadrant.regression.") and c.applies("smoke")
    }
    assert [x["name"] for x in d["data"]] == ["not-so-clevr-quadrant"]
    assert sorted(p.name for p in (smoke_ctx.out_dir / "runs").iterdir()) == [
        "quadrant-regression-conv", "quadrant-regression-conv_twin",
        "quadrant-regression-coordconv",
    ]  # fmt: skip
    extra = d["details"]["extra"]
    for key in ("constant.test_rmse_px", "coordconv.test_max_on_hot_pixel"):
        assert f"quadrant.regression.{key}" in extra


def test_the_rendering_part_runs_alone_and_matches_the_whole_paper(smoke_ctx, tmp_path):
    """``--part rendering``: the CoordConv painter of Sec. 4.3 alone, its claim only, and the
    same IoU as the whole paper's run at the same seed (every model is seeded from the seed)."""
    run_experiment("coordconv", dataclasses.replace(smoke_ctx, part="rendering"))
    d = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert d["part"] == "rendering"
    assert [c["id"] for c in d["claims"]] == ["quadrant.rendering.coordconv.test_iou"]
    assert sorted(p.name for p in (smoke_ctx.out_dir / "runs").iterdir()) == [
        "quadrant-rendering-coordconv"
    ]
    whole = dataclasses.replace(smoke_ctx, out_dir=tmp_path / "whole")
    run_experiment("coordconv", whole)
    w = json.loads((whole.out_dir / "results.json").read_text())
    iou = {c["id"]: c["measured"] for c in w["claims"]}["quadrant.rendering.coordconv.test_iou"]
    assert d["claims"][0]["measured"] == iou


def test_full_scale_trains_on_the_authors_splits_without_a_hold_out(smoke_ctx):
    """Full trains on the authors' split sizes (uber-research/CoordConv
    data/not_so_clevr_generator.py: quadrant 2,407 / 729, uniform 2,368 / 768), with no
    validation carve (train.py trains on its whole "train" file and evaluates the last weights),
    and counts the authors' epochs with their partial last batch (ceil(n / batch) an epoch)."""
    exp = CoordConvExperiment()
    full = exp.config("full")
    data = load_data(full, dataclasses.replace(smoke_ctx, scale="full"))
    sizes = {k: (len(train), len(val), len(test)) for k, (_, train, val, test) in data.items()}
    assert sizes == {"quadrant": (2407, 0, 729), "uniform": (2368, 0, 768)}
    assert full.partial_batches and full.split_protocol == "authors"

    def epochs(n, batch, count):
        return count * -(-n // batch)

    assert (full.cls_steps, full.render_steps) == (epochs(2407, 16, 50),) * 2 == (7550, 7550)
    assert full.uniform_cls_steps == epochs(2368, 16, 50) == 7400
    assert full.deconv_steps_on("quadrant") == epochs(2407, 32, 1000) == 76000
    assert full.deconv_steps_on("uniform") == epochs(2368, 32, 1000) == 74000
    assert full.conv_reg_steps == full.reg_steps == epochs(2407, 256, 100) == 1000
    plan = dict(exp.plan(full, dataclasses.replace(smoke_ctx, scale="full")))
    assert plan["quadrant-classification-deconv"] == 76000
    assert plan["uniform-classification-deconv"] == 74000
    # quick is unchanged: a seeded 80 / 20 uniform split and a 10 % validation carve
    quick = exp.config("quick")
    assert (quick.split_protocol, quick.val_fraction, quick.partial_batches) == (
        "seeded", 0.1, False
    )  # fmt: skip
    assert quick.deconv_steps_on("uniform") == quick.deconv_steps == 1500


def test_training_fits_are_premise_checks_at_full_and_quick_is_unchanged(smoke_ctx):
    """One kind for the deconv's training fit on both splits at every scale (a check: the
    paper's result is the failure on test points although the net fits its training points);
    the conv regressor's training RMSE, which has no paper number, a check at full and a finding
    at smoke and quick."""
    exp = CoordConvExperiment()

    def declared(scale):
        return {c.id: (c.kind, c.target_at(scale)) for c in exp.claims if c.applies(scale)}

    full, quick = declared("full"), declared("quick")
    assert full["quadrant.classification.deconv.train_acc_premise"] == ("check", ">= 0.99")
    assert full["uniform.classification.deconv.train_acc"] == ("check", ">= 0.99")
    assert full["quadrant.regression.conv.train_rmse_px_premise"] == ("check", "<= 1.0")
    assert "quadrant.classification.deconv.train_acc" not in full
    assert "quadrant.regression.conv.train_rmse_px" not in full
    assert quick["quadrant.classification.deconv.train_acc"] == ("check", ">= 0.9")
    assert quick["uniform.classification.deconv.train_acc"] == ("check", ">= 0.9")
    assert quick["quadrant.regression.conv.train_rmse_px"] == ("finding", "<= 1.0")
    assert not {i for i in quick if i.endswith("_premise")}
    # the deconv's fit is a check on both splits at every scale (ids unchanged)
    for scale in ("smoke", "quick", "full"):
        fits = {i: k for i, (k, _) in declared(scale).items() if ".deconv.train_acc" in i}
        assert len(fits) == 2 and set(fits.values()) == {"check"}, (scale, fits)
    # the run's measurements move to the check's id where the check is declared
    m = {"quadrant.classification.deconv.train_acc": 0.97,
         "quadrant.regression.conv.train_rmse_px": 1.8}  # fmt: skip
    exp._premises_as_checks(m, dataclasses.replace(smoke_ctx, scale="full"))
    assert m == {"quadrant.classification.deconv.train_acc_premise": 0.97,
                 "quadrant.regression.conv.train_rmse_px_premise": 1.8}  # fmt: skip
    m = {"quadrant.classification.deconv.train_acc": 0.97}
    exp._premises_as_checks(m, smoke_ctx)
    assert m == {"quadrant.classification.deconv.train_acc": 0.97}


def test_a_run_without_a_hold_out_curves_the_training_points(smoke_ctx):
    """The full protocol (no validation carve, the authors' splits, partial batches) at smoke
    size: every claim is measured or "not measured" as at quick, the curves are on training
    points, and test data are still read only in the final evaluation."""
    overrides = {"val_fraction": "0", "split_protocol": "authors", "partial_batches": "true"}
    ctx = dataclasses.replace(smoke_ctx, guard_test=True)
    run_experiment("coordconv", ctx, overrides)
    d = json.loads((ctx.out_dir / "results.json").read_text())
    assert {x["name"]: x["n_train"] for x in d["data"]} == {
        "not-so-clevr-quadrant": 2407, "not-so-clevr-uniform": 2368,
    }  # fmt: skip
    assert any("No validation hold-out" in n for n in d["notes"])
    for tag, key in (("quadrant-classification-deconv", "train_acc"),
                     ("quadrant-regression-conv", "train_rmse_px"),
                     ("quadrant-rendering-coordconv", "train_iou")):  # fmt: skip
        lines = (ctx.out_dir / "runs" / tag / "metrics.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        assert any(key in r for r in records), tag
        assert not any(k.startswith(("val_", "test")) for r in records for k in r), tag


# Sec. 4.1 on both splits and the painters' parameter checks: the classification part's claims
CLASSIFICATION_SMOKE = {
    "quadrant.classification.coordconv.test_acc": "finding",
    "quadrant.classification.deconv.train_acc": "check",
    "quadrant.classification.deconv.test_acc": "finding",
    "uniform.classification.coordconv.test_acc": "finding",
    "uniform.classification.deconv.test_acc": "finding",
    "uniform.classification.deconv.train_acc": "check",
    "uniform.classification.coordconv_minus_deconv.test_acc": "finding",
    "painter.coordconv.params": "check",
    "painter.deconv_over_coordconv.params": "check",
}


def test_the_classification_part_runs_alone_and_its_seeds_merge(smoke_ctx, tmp_path):
    """``--part classification``: the four classifiers of Sec. 4.1 (both splits) and nothing of
    regression or rendering; results.json holds exactly the part's claims, with the deconv's fit
    a check on both splits; two seeds of the part merge into one result of the part."""
    from paperzoo.experiments.merging import merge_dirs

    exp = CoordConvExperiment()
    ctx = dataclasses.replace(smoke_ctx, part="classification")
    assert [name for name, _ in exp.plan(exp.config("smoke"), ctx)] == [
        "quadrant-classification-coordconv", "quadrant-classification-deconv",
        "uniform-classification-coordconv", "uniform-classification-deconv",
    ]  # fmt: skip
    run_experiment("coordconv", ctx)
    d = json.loads((ctx.out_dir / "results.json").read_text())
    assert d["part"] == "classification"
    assert {c["id"]: c["kind"] for c in d["claims"]} == CLASSIFICATION_SMOKE
    assert [x["name"] for x in d["data"]] == ["not-so-clevr-quadrant", "not-so-clevr-uniform"]
    assert sorted(p.name for p in (ctx.out_dir / "runs").iterdir()) == [
        "quadrant-classification-coordconv", "quadrant-classification-deconv",
        "uniform-classification-coordconv", "uniform-classification-deconv",
    ]  # fmt: skip
    assert set(d["details"]["params"]) == {"coordconv_painter", "deconv_painter"}
    assert not any("regression" in k or "rendering" in k for k in d["details"]["extra"])
    assert not any("regress" in n.lower() or "rendering" in n for n in d["notes"])
    checks = {c["id"]: c for c in d["claims"] if c["kind"] == "check"}
    assert checks["painter.coordconv.params"]["holds"] is True
    assert len(d["figures"]) == 2
    for fig in d["figures"]:
        assert (ctx.out_dir / fig).stat().st_size > 0

    seed1 = dataclasses.replace(ctx, seed=1, out_dir=tmp_path / "seed1")
    run_experiment("coordconv", seed1)
    merged = merge_dirs([ctx.out_dir, seed1.out_dir], tmp_path / "merged")
    assert (merged.part, merged.seeds) == ("classification", [0, 1])
    assert {c.id for c in merged.claims} == set(CLASSIFICATION_SMOKE)


def test_the_classification_part_at_full_checks_the_deconv_fit_on_both_splits():
    """At full the part's deconv fits are the premise checks of both splits (the quadrant one
    under its full-scale id); an unknown part raises, naming both parts."""
    exp = CoordConvExperiment()
    ctx = RunContext(scale="full", part="classification")
    claims = {c.id: c.kind for c in exp.claims_at(ctx)}
    quadrant_fit = "quadrant.classification.deconv.train_acc"
    assert claims == {
        **{k: v for k, v in CLASSIFICATION_SMOKE.items() if k != quadrant_fit},
        f"{quadrant_fit}_premise": "check",
    }
    plan = dict(exp.plan(exp.config("full"), ctx))
    assert plan == {
        "quadrant-classification-coordconv": 7550, "quadrant-classification-deconv": 76000,
        "uniform-classification-coordconv": 7400, "uniform-classification-deconv": 74000,
    }  # fmt: skip
    parts = "parts: classification, regression, rendering"
    with pytest.raises(ValueError, match=f"has no part 'nosuch'; {parts}"):
        exp.claims_at(RunContext(scale="full", part="nosuch"))
    with pytest.raises(ValueError, match=parts):
        exp.run(exp.config("smoke"), RunContext(scale="smoke", part="painting"))
