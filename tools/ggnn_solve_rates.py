"""Solve rates of GG-NN training variants over ten folds: one run per fold and seed, or K runs.

    python tools/ggnn_solve_rates.py --data-root /tmp/babi/babi_data --out /tmp/g \\
        --name adam-torch7 --set 'adam="torch7"' --task babi16 --seeds 0-7

runs ``paperzoo reproduce ggnn --scale full --part models --set 'tasks=["TASK"]' SET --seed S
--threads 1`` for each seed (one after another, ``nice -n 10``; a seed whose results.json
exists is not run again) under OUT/NAME-TASK/sS and prints, as one JSON line, the runs at test
accuracy >= 0.99 over all runs (seeds x folds), per seed and fold. ``--summary`` reads the
existing directories only.

``--inits K`` trains, per fold, K initialisations (and batch orders) of seed 0's runs as one
batched model instead (``train_restarts`` with attempts 0 .. K-1, the full config with SET; the
split is seed 0's for all K: with the authors' seed handling the same indices on every fold),
and tests each; about a quarter of the CPU time of K seeds. Results go to OUT/NAME-TASK.json;
each fold's training resumes from its checkpoints under OUT/NAME-TASK, so delete that folder
before running a NAME again with other SET values.
The study behind docs/ggnn.md ("Why one run in four gets stuck").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SOLVED = 0.99


def seeds_of(text: str) -> list[int]:
    """``0-7`` or ``0,3,5`` as a list of seeds."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def run_seed(args: argparse.Namespace, seed: int, out: Path) -> None:
    if (out / "results.json").exists():
        return
    cmd = [
        "nice", "-n", "10", sys.executable, "-m", "paperzoo", "reproduce", "ggnn",
        "--scale", "full", "--data-root", args.data_root, "--part", "models",
        "--set", f'tasks=["{args.task}"]', *[x for s in args.set for x in ("--set", s)],
        "--seed", str(seed), "--threads", "1", "--out", str(out),
    ]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def summary(root: Path, task: str, seeds: list[int]) -> dict:
    per_seed = {}
    for seed in seeds:
        path = root / f"s{seed}" / "results.json"
        if path.exists():
            details = json.loads(path.read_text())["details"]["ggnn"][task]
            per_seed[seed] = [round(a, 4) for a in details["test_acc_per_fold"]]
    accs = [a for v in per_seed.values() for a in v]
    solved = sum(a >= SOLVED for a in accs)
    return {
        "variant": root.name,
        "task": task,
        "runs": len(accs),
        "solved": solved,
        "solve_rate": round(solved / len(accs), 4) if accs else None,
        "mean": round(sum(accs) / len(accs), 4) if accs else None,
        "solved_per_seed": {s: sum(a >= SOLVED for a in v) for s, v in per_seed.items()},
        "per_seed": per_seed,
    }


def run_inits(args: argparse.Namespace, path: Path) -> dict:
    """K runs per fold trained as one batched model; their test accuracies per fold."""
    import torch

    from paperzoo.data import babi
    from paperzoo.engine import derive_seed
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.overrides import apply_overrides, parse_set
    from paperzoo.papers.ggnn import GGNNExperiment
    from paperzoo.papers.ggnn.config import _fold_key, task_setting
    from paperzoo.papers.ggnn.training import _split_train, graph_eval, train_restarts

    torch.set_num_threads(1)
    name = args.task
    cfg = apply_overrides(GGNNExperiment().config("full"), parse_set(args.set))
    s = task_setting(name, cfg)
    per_fold: dict[int, list[float]] = {}
    val: dict[int, list[float]] = {}  # the selected checkpoints' validation accuracies
    for fold in range(1, 11):
        task = babi.load_official(name, Path(args.data_root), fold=fold, require_fold=True)
        ctx = RunContext(
            scale="full", seed=args.seed, out_dir=path.with_suffix("") / f"fold{fold}", quiet=True
        )
        split_seed = derive_seed(ctx.seed, name, *_fold_key(cfg, fold), "split")
        train_g, val_g = _split_train(task.train, s.n_train, cfg.n_val, split_seed, cfg.split)
        ex = {
            part: babi.examples(task, g, annotation_dim=s.annotation_dim, question_type=0)
            for part, g in (("train", train_g), ("val", val_g), ("test", task.test[: cfg.n_test]))
        }
        key = (f"fold{fold}", "q1")
        runs = train_restarts(name, task, cfg, ctx, ex["train"], ex["val"], key, range(args.inits))
        per_fold[fold] = [round(graph_eval(m, task.kind, ex["test"])[0], 4) for m, _ in runs]
        val[fold] = [round(score[0], 4) for _, score in runs]
    path.write_text(json.dumps({"test": per_fold, "val": val}))
    return {"test": per_fold, "val": val}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--name", required=True)
    p.add_argument("--set", action="append", default=[], help="a config override (repeatable)")
    p.add_argument("--task", default="babi16")
    p.add_argument("--seeds", default="0-7")
    p.add_argument("--summary", action="store_true", help="read existing runs only")
    p.add_argument("--inits", type=int, default=0, help="K runs per fold batched")
    p.add_argument("--seed", type=int, default=0, help="with --inits: the run seed")
    args = p.parse_args()
    if args.inits:
        tag = f"-s{args.seed}" if args.seed else ""
        path = args.out / f"{args.name}-{args.task}{tag}.json"
        record = json.loads(path.read_text()) if path.exists() else run_inits(args, path)
        per_fold = record.get("test", record)  # (the first runs stored test accuracies only)
        val = record.get("val", {})
        accs = [a for v in per_fold.values() for a in v]
        solved = sum(a >= SOLVED for a in accs)
        out = {
            "variant": args.name,
            "task": args.task,
            "seed": args.seed,
            "runs": len(accs),
            "solved": solved,
            "solve_rate": round(solved / len(accs), 4),
            "mean": round(sum(accs) / len(accs), 4),
            "solved_per_init": [
                sum(v[k] >= SOLVED for v in per_fold.values()) for k in range(args.inits)
            ],
            "val_at_100": sum(a >= 1.0 for v in val.values() for a in v) if val else None,
            "per_fold": per_fold,
            "val": val,
        }
        sys.stdout.write(json.dumps(out) + "\n")
        return
    root = args.out / f"{args.name}-{args.task}"
    seeds = seeds_of(args.seeds)
    if not args.summary:
        for seed in seeds:
            run_seed(args, seed, root / f"s{seed}")
    sys.stdout.write(json.dumps(summary(root, args.task, seeds)) + "\n")


if __name__ == "__main__":
    main()
