"""Why three CoordConv quick findings do not reproduce: one model, one variant, one seed.

docs/coordconv.md, "Quick findings that do not reproduce: why", holds the rule this probe
serves and its results. Each call trains one model of the quick config with the project's own
training functions (``paperzoo.papers.coordconv.training``: ``load_data``,
``fit_classifier``, ``fit_regressor``, the metrics), changed only in the variable under test,
and writes one JSON to ``--out`` (default ``results/probes/coordconv-why/``).

Models and variants (everything else is quick's config; ``base`` is quick itself):

``quadrant-cls``: the CoordConv classifier on the quadrant split
  (``quadrant.classification.coordconv.test_acc``, quick ``>= 0.95``)
    base    quick (1,000 steps of 16, Adam (0.9, 0.999), cosine decay, 0.01)
    order   the same initial weights (seeded by ``--seed``), another batch order (the trainer
            seeded by ``--seed + 1000``)
    l2      the authors' grid's L2 penalty: 1e-3 x the sum of squared conv kernels added to the
            loss (their ``--l2 0.001``)
    he      He-normal weights and zero biases (the authors' initialisation) with our [-1, 1]
            inputs
``uniform-deconv``: the deconv classifier on the uniform split
  (``uniform.classification.deconv.test_acc``, quick ``<= 0.95``)
    base       quick (1,500 steps of 32, batch statistics for 750, frozen running ones for 750)
    steps2x    3,000 steps, the switch at half (1,500)
    batchstats batch statistics throughout (the authors' protocol), quick's 1,500 steps
``regressor``: the CoordConv regressor on the quadrant split
  (``quadrant.regression.coordconv.test_rmse_px``, quick ``<= 1.0``)
    base      quick (300 steps of 32, Adam (0.9, 0.999), cosine decay, 0.01, no L2)
    order     the same initial weights, another batch order (``--seed + 1000``; ``--order``
              picks another offset)
    steps10x  3,000 steps, otherwise quick
    authors   the authors' recipe, the full config's: 1,000 steps of 256 with the partial last
              batch, Adam (0.9, 0.99), a constant 0.01, L2 1e-5

The data are quick's: the seeded splits and the seeded 10 % validation carve of ``--seed``
(``load_data``); the test points are read once, after training. ``order`` and ``he`` patch the
names ``seeded`` and ``CoordConvPainter`` of the training module for the duration of one fit,
so the project's ``fit_classifier`` / ``fit_regressor`` run unchanged around them; ``l2`` sets
the config's ``quadrant_cls_l2``, which the project's classifier adds to each micro-batch's loss
(weighted by the micro-batch's share, so the step's loss holds it once).

``--smoke`` runs the same code from the smoke config instead of quick (``authors`` then takes the
full recipe's optimiser at smoke's steps and batch): seconds, numbers that mean nothing, as the
tests do.

Run one thread per process, as the validation runs did::

    PYTHONPATH=src /work/bin/cpuslot 1 python tools/probes/coordconv_why.py \
        --model quadrant-cls --variant base --seed 105
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from paperzoo.experiments.base import RunContext
from paperzoo.models.coordconv import CoordConvPainter, he_normal_
from paperzoo.papers.coordconv import training
from paperzoo.papers.coordconv.config import CONFIGS

VARIANTS = {
    "quadrant-cls": ("base", "order", "l2", "he"),
    "uniform-deconv": ("base", "steps2x", "batchstats"),
    "regressor": ("base", "order", "steps10x", "authors"),
}
PAINTER_L2 = 1e-3  # the authors' classification grid: --l2 0 and 0.001
ORDER_OFFSET = 1000  # the trainer's seed is --seed + this in the "order" variants


@contextlib.contextmanager
def patched(name: str, value: Any) -> Iterator[None]:
    """Replace ``training.NAME`` by ``value`` for the block."""
    old = getattr(training, name)
    setattr(training, name, value)
    try:
        yield
    finally:
        setattr(training, name, old)


def init_seeded_by(seed: int) -> Any:
    """A stand-in for ``training.seeded`` that seeds model construction with ``seed`` whatever
    the run's seed is (the trainer, and so the batch order, keeps the run's)."""
    real = training.seeded
    return lambda _run_seed: real(seed)


def he_painter() -> CoordConvPainter:
    painter = CoordConvPainter()
    he_normal_(painter)
    return painter


def run(model: str, variant: str, seed: int, order: int, *, smoke: bool = False) -> dict[str, Any]:
    # quick's quadrant classifier without L2 (quick's own config takes 1e-3): every variant
    # starts from that, and ``l2`` sets the penalty through the config
    scale = "smoke" if smoke else "quick"
    cfg = dataclasses.replace(CONFIGS[scale], quadrant_cls_l2=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        ctx = RunContext(scale=scale, seed=seed, out_dir=Path(tmp), quiet=True)
        data = training.load_data(cfg, ctx)
        quad_train, quad_val, quad_test = data["quadrant"][1:]
        uni_train, uni_val, uni_test = data["uniform"][1:]
        train_ctx = ctx
        stack = contextlib.ExitStack()
        if variant == "order":
            train_ctx = dataclasses.replace(ctx, seed=seed + order)
            stack.enter_context(patched("seeded", init_seeded_by(seed)))
        elif variant == "he":
            stack.enter_context(patched("CoordConvPainter", he_painter))
        elif variant == "l2":
            cfg = dataclasses.replace(cfg, quadrant_cls_l2=PAINTER_L2)
        elif variant == "steps2x":
            cfg = dataclasses.replace(cfg, deconv_steps=2 * cfg.deconv_steps)
        elif variant == "batchstats":
            cfg = dataclasses.replace(cfg, deconv_running_stats_from=1.0)
        elif variant == "steps10x":
            cfg = dataclasses.replace(cfg, reg_steps=10 * cfg.reg_steps)
        elif variant == "authors":
            full = CONFIGS["full"]
            cfg = dataclasses.replace(
                cfg,
                **{
                    k: getattr(full, k)
                    for k in ("reg_steps", "reg_lr", "reg_batch_size", "reg_betas", "reg_l2")
                },
                reg_schedule=full.reg_schedule,
            )
            if smoke:  # the full recipe's optimiser, smoke's steps and batch
                smoke_cfg = CONFIGS["smoke"]
                cfg = dataclasses.replace(
                    cfg, reg_steps=smoke_cfg.reg_steps, reg_batch_size=smoke_cfg.reg_batch_size
                )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        out: dict[str, Any] = {}
        with stack:
            if model == "quadrant-cls":
                net, hist = training.fit_classifier(
                    "quadrant", "coordconv", quad_train, quad_val, cfg, train_ctx
                )
            elif model == "uniform-deconv":
                net, hist = training.fit_classifier(
                    "uniform", "deconv", uni_train, uni_val, cfg, train_ctx
                )
            else:
                net, hist = training.fit_regressor(
                    "coordconv", quad_train, quad_val, cfg, train_ctx
                )
        cpu = time.process_time() - cpu0
        if model == "regressor":
            mean_loc = quad_train.float().mean(0)
            train_rmse = training.rmse_px(net, quad_train)
            const_train = training.constant_rmse_px(mean_loc, quad_train)
            out.update(
                train_rmse_px=train_rmse,
                val_rmse_px=training.rmse_px(net, quad_val),
                constant_train_rmse_px=const_train,
                escaped=training.escaped_constant(train_rmse, const_train),
                max_on_hot_pixel=training.max_on_hot_pixel(net, quad_train),
                test_rmse_px=training.rmse_px(net, quad_test),  # read once, last
                constant_test_rmse_px=training.constant_rmse_px(mean_loc, quad_test),
            )
        else:
            train_pts, val_pts, test_pts = (
                (quad_train, quad_val, quad_test)
                if model == "quadrant-cls"
                else (uni_train, uni_val, uni_test)
            )
            out.update(
                train_acc=training.classification_acc(net, train_pts),
                val_acc=training.classification_acc(net, val_pts),
                test_acc=training.classification_acc(net, test_pts),  # read once, last
            )
        metric = next(
            (k for r in hist.records for k in r if k.endswith(("_acc", "_rmse_px"))), None
        )
        if metric is not None:  # the validation curve the run logged (every 250 steps)
            steps, values = hist.series(metric)
            out["curve"] = {
                "metric": metric,
                "steps": steps,
                "values": [round(v, 4) for v in values],
            }
        out["cpu_s"] = round(cpu, 1)
        out["wall_s"] = round(time.perf_counter() - wall0, 1)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(VARIANTS), required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--order", type=int, default=ORDER_OFFSET, help="order: trainer seed offset")
    p.add_argument("--out", type=Path, default=Path("results/probes/coordconv-why"))
    p.add_argument("--smoke", action="store_true", help="from the smoke config (a code check)")
    args = p.parse_args()
    if args.variant not in VARIANTS[args.model]:
        p.error(f"--variant for {args.model}: one of {VARIANTS[args.model]}")
    torch.set_num_threads(1)
    res = run(args.model, args.variant, args.seed, args.order, smoke=args.smoke)
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    record = {
        "model": args.model,
        "variant": args.variant,
        "scale": "smoke" if args.smoke else "quick",
        "seed": args.seed,
        "trainer_seed": args.seed + args.order if args.variant == "order" else args.seed,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "commit": commit,
        **res,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    tag = f"-o{args.order}" if args.variant == "order" and args.order != ORDER_OFFSET else ""
    path = args.out / f"{args.model}-{args.variant}{tag}-s{args.seed}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    sys.stdout.write(json.dumps({k: v for k, v in record.items() if k != "curve"}) + "\n")


if __name__ == "__main__":
    main()
