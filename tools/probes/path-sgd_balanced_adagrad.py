"""Probe: Path-SGD against AdaGrad from the balanced initialisation, as the training set grows
and on a finer step-size lattice (docs/path-sgd.md, "Quick findings that do not reproduce: why").

It trains only the balanced-init runs the two failing findings compare
(``balanced.pathsgd_vs_adagrad.{train_loss,mean_log10_loss_ratio}``), with the project's own code
and exactly the quick config except for the variable under test:

* the data (``--dataset``; ``--n-train`` examples trained on, drawn stratified from the training
  file, plus quick's 1,000 stratified validation examples; without ``--n-train`` the config's
  (quick: the whole file, which for ``mnist5k`` is quick's own 3,000 / 1,000 split),
* the number of epochs (``--epochs``),
* the step sizes (``--runs opt:lr,...``; the first run is the reference, normally Path-SGD).

For a seed S the data split, the initial weights and the batch order are drawn from the same
streams as ``paperzoo reproduce path-sgd --scale quick --seed S`` (``RunContext.generator``
keys "subset", "val-split", "init"; ``seeded(S)`` around the model and training), so with
``--dataset mnist5k`` and 30 epochs a run repeats the CLI's grid run of that seed.

Output: one JSON per call, ``OUT/DATASET-nN-eE-sS.json``: per run its curves (training loss and
error on the training part, validation error, per epoch; epoch 0 = initialisation), its CPU
seconds, and against the reference run the mean over epochs 1..E of log10(other's training loss
/ reference's) (the findings' measure) and the final training-loss difference (other minus
reference).

    PYTHONPATH=src python tools/probes/path-sgd_balanced_adagrad.py --dataset fashion-mnist \\
        --n-train 12000 --epochs 10 --seed 100 --runs pathsgd:0.01,adagrad:0.01

``--smoke`` starts from the smoke config instead of quick (400 training examples, 100 of them
held out for validation, 200 test, 2 epochs, width 32): seconds, numbers that mean nothing, as
the tests do.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from paperzoo.data import load_dataset
from paperzoo.engine import seeded
from paperzoo.experiments.base import RunContext
from paperzoo.models.small import MLP
from paperzoo.optim import balanced_init_
from paperzoo.papers.path_sgd.config import CONFIGS
from paperzoo.papers.path_sgd.training import mean_log10_ratio, prepare, train_run

OUT = Path("results/probes/path-sgd-balanced-adagrad")


def parse_runs(text: str) -> list[tuple[str, float]]:
    runs = []
    for item in text.split(","):
        opt, lr = item.split(":")
        if opt not in ("pathsgd", "sgd", "adagrad"):
            raise SystemExit(f"unknown optimizer {opt!r}")
        runs.append((opt, float(lr)))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="mnist5k", help="paperzoo data set (default: mnist5k)")
    ap.add_argument(
        "--n-train",
        type=int,
        default=None,
        help="examples trained on (plus n_val held out); default: the whole file",
    )
    ap.add_argument("--epochs", type=int, default=None, help="default: the config's (quick: 30)")
    ap.add_argument("--hidden", type=int, default=None, help="default: the config's (quick: 500)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument(
        "--runs",
        default="pathsgd:0.01,adagrad:0.01",
        help="opt:lr pairs, comma-separated; the first is the reference",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--smoke", action="store_true", help="from the smoke config (a code check)")
    args = ap.parse_args()
    torch.set_num_threads(1)

    scale = "smoke" if args.smoke else "quick"
    cfg = CONFIGS[scale]
    cfg = replace(cfg, epochs=args.epochs or cfg.epochs, hidden=args.hidden or cfg.hidden)
    runs = parse_runs(args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        ctx = RunContext(scale=scale, seed=args.seed, out_dir=Path(tmp), quiet=True)
        split = load_dataset(args.dataset, seed=args.seed)
        n_keep = cfg.n_train if args.n_train is None else args.n_train + cfg.n_val
        split = split.subset(n_keep, cfg.n_test, generator=ctx.generator("subset"))
        data = prepare(split, cfg, ctx.generator("val-split"))
        with seeded(args.seed):
            base = MLP(
                in_features=math.prod(split.x_train.shape[1:]),
                hidden=(cfg.hidden, cfg.hidden),
                num_classes=split.num_classes,
            )
        balanced_init_(base, generator=ctx.generator("init"))
        out = {
            "scale": scale,
            "dataset": args.dataset,
            "n_train": len(data.x_train),
            "n_val": len(data.x_val),
            "hidden": cfg.hidden,
            "epochs": cfg.epochs,
            "batch_size": cfg.batch_size,
            "seed": args.seed,
            "init": "balanced",
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "runs": [],
        }
        done = []
        for opt, lr in runs:
            t0 = time.process_time()
            r = train_run(copy.deepcopy(base), "balanced", opt, lr, data, cfg, ctx)
            cpu = time.process_time() - t0
            done.append(r)
            out["runs"].append(
                {
                    "opt": opt,
                    "lr": lr,
                    "diverged": r.diverged,
                    "cpu_s": round(cpu, 1),
                    "min_val_error": None if r.diverged else min(r.val_error),
                    "min_val_error_epoch": None
                    if r.diverged
                    else r.val_error.index(min(r.val_error)),
                    "train_loss": r.train_loss,
                    "train_error": r.train_error,
                    "val_error": r.val_error,
                }
            )
            sys.stdout.write(
                f"{args.dataset} n={len(data.x_train)} s{args.seed} {opt} {lr:g}: "
                f"final loss {r.final_loss:.5g}, {cpu:.0f} s CPU\n"
            )
            sys.stdout.flush()
    ref = done[0]
    for rec, r in zip(out["runs"], done, strict=True):
        rec["mean_log10_ratio_vs_ref"] = mean_log10_ratio(r, ref)
        rec["final_loss_minus_ref"] = (
            r.final_loss - ref.final_loss if math.isfinite(r.final_loss - ref.final_loss) else None
        )
    args.out.mkdir(parents=True, exist_ok=True)
    name = f"{args.dataset}-n{out['n_train']}-e{cfg.epochs}-s{args.seed}"
    if len(runs) != 2 or runs != [("pathsgd", 0.01), ("adagrad", 0.01)]:
        name += "-" + "_".join(f"{o}{lr:g}" for o, lr in runs)
    path = args.out / f"{name}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    sys.stdout.write(f"{path}\n")


if __name__ == "__main__":
    main()
