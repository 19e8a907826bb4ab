"""Solve rates of GG-NN training variants: one full-scale models-only run per seed, ten folds.

    python tools/ggnn_solve_rates.py --data-root /tmp/babi/babi_data --out /tmp/g \\
        --name adam-torch7 --set 'adam="torch7"' --task babi16 --seeds 0-7

runs ``paperzoo reproduce ggnn --scale full --part models --set 'tasks=["TASK"]' SET --seed S
--threads 1`` for each seed (one after another, ``nice -n 10``; a seed whose results.json
exists is not run again) under OUT/NAME-TASK/sS and prints, as one JSON line, the runs at test
accuracy >= 0.99 over all runs (seeds x folds), per seed and fold. ``--summary`` reads the
existing directories only. The study behind docs/ggnn.md ("Why one run in four gets stuck").
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--name", required=True)
    p.add_argument("--set", action="append", default=[], help="a config override (repeatable)")
    p.add_argument("--task", default="babi16")
    p.add_argument("--seeds", default="0-7")
    p.add_argument("--summary", action="store_true", help="read existing runs only")
    args = p.parse_args()
    root = args.out / f"{args.name}-{args.task}"
    seeds = seeds_of(args.seeds)
    if not args.summary:
        for seed in seeds:
            run_seed(args, seed, root / f"s{seed}")
    sys.stdout.write(json.dumps(summary(root, args.task, seeds)) + "\n")


if __name__ == "__main__":
    main()
