"""Probe: does GAT's FGSM gap to FGSM adversarial training move with more training or a wider model?

Trains only the two models that ``fgsm.gat_vs_fgsm_at.acc`` compares (FGSM-AT and GAT) with the
project's own code (``gat.training.train_model``: the same classifier, generator, optimisers, data
order and seeding as ``paperzoo reproduce gat``), the quick config except for the variable under
test, and measures the finding exactly as the experiment does: GAT's test accuracy under FGSM
minus FGSM-AT's, mean over eps 0.1 / 0.2 / 0.3, on the 1,000 mnist5k test digits.

One run per seed trains each model to the largest of ``--steps`` and evaluates it at every
listed step count on the way: ``train_model`` resumes from the checkpoint the shorter run left, so
the first stop (1,500 steps, quick) is the quick run itself and the later stops are the same
run continued (Adam at a constant learning rate; no schedule depends on the total).

Output: one JSON per seed and variant, ``OUT/VARIANT-seed-S.json``, with each model's clean and
FGSM accuracies, GAT's generator statistics and the gap at every stop, and the CPU time.

``--smoke`` starts from the smoke config instead of quick (its 32 test digits; give small
``--steps``): seconds, numbers that mean nothing, as the tests do.

Example (the rule in docs/gat.md, "Quick findings that do not reproduce: why")::

    PYTHONPATH=src /work/bin/cpuslot 1 .venv/bin/python tools/probes/gat_scale.py \
        --seeds 100-107 --steps 1500,3000,4500 --out results/probes/gat-scale
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

import torch

from paperzoo.adversarial.attacks import FGSM
from paperzoo.data.base import load_dataset
from paperzoo.experiments.base import RunContext
from paperzoo.papers.gat.config import CONFIGS
from paperzoo.papers.gat.training import attacked_correct, generator_stats, train_model

MODELS = ("fgsm_at", "gat")


def parse_seeds(text: str) -> list[int]:
    """``"100-107"`` or ``"100,103"`` -> the seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def fgsm_accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> float:
    """Accuracy under FGSM at ``eps``, all test digits in one call (the quick config's
    ``eval_batch`` None, as in ``paperzoo.papers.gat.training.correct_counts``)."""
    return float(attacked_correct(model, FGSM(model, eps=eps), x, y, None)) / len(x)


def run_seed(
    seed: int, steps: list[int], variant: str, overrides: dict, work: Path, *, scale: str = "quick"
) -> dict:
    cfg = dataclasses.replace(CONFIGS[scale], models=MODELS, **overrides)
    ctx = RunContext(scale=scale, seed=seed, out_dir=work, quiet=True)
    split = load_dataset("mnist5k", seed=seed)
    chans, size = split.x_train.shape[1], split.x_train.shape[-1]
    x, y = split.x_test[: cfg.n_test], split.y_test[: cfg.n_test]  # quick: every test digit
    stops = []
    cpu0 = time.process_time()
    for n in steps:
        run_cfg = dataclasses.replace(cfg, steps=n)
        acc: dict[str, dict[str, float]] = {}
        gen: dict[str, float] = {}
        for name in MODELS:
            model, generator, history = train_model(name, split, run_cfg, ctx, chans, size)
            with torch.no_grad():
                row = {"clean": float((model(x).argmax(1) == y).float().mean())}
            for e in cfg.eps:
                row[f"fgsm{e}"] = fgsm_accuracy(model, x, y, e)
            acc[name] = row
            if generator is not None:
                gen = generator_stats(history, n)
        gap = sum(acc["gat"][f"fgsm{e}"] - acc["fgsm_at"][f"fgsm{e}"] for e in cfg.eps) / len(
            cfg.eps
        )
        stops.append({"steps": n, "gap": gap, "accuracy": acc, "generator": gen})
        print(f"{variant} seed {seed} steps {n}: gap {gap:+.4f}", flush=True)  # noqa: T201
    return {
        "probe": "gat_scale",
        "variant": variant,
        "scale": scale,
        "seed": seed,
        "overrides": {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
        "config": {
            "channels": list(cfg.channels),
            "hidden": cfg.hidden,
            "batch_size": cfg.batch_size,
            "lr": cfg.lr,
            "train_eps": cfg.train_eps,
            "alpha": cfg.gat.alpha,
            "c_g": cfg.gat.c_g,
            "eps": list(cfg.eps),
            "gen_hidden": list(cfg.gen_hidden),
        },  # fmt: skip
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "stops": stops,
        "cpu_seconds": round(time.process_time() - cpu0, 1),
    }


def summarise(out: Path) -> str:
    """A markdown table of the gaps per variant, seed and stop in ``out``, with, per stop, the
    mean, the seeds at or above 0 and the 95 % t-interval of the mean (the rule's numbers)."""
    t975 = {7: 2.365, 6: 2.447, 5: 2.571, 4: 2.776, 3: 3.182}  # Student t, 0.975, by df
    rows: dict[tuple[str, int], dict[int, float]] = {}
    for f in sorted(out.glob("*-seed-*.json")):
        r = json.loads(f.read_text())
        for st in r["stops"]:
            rows.setdefault((r["variant"], st["steps"]), {})[r["seed"]] = st["gap"]
    lines = []
    for (variant, n), gaps in sorted(rows.items()):
        seeds = sorted(gaps)
        v = [gaps[s] for s in seeds]
        m = sum(v) / len(v)
        line = f"| {variant} | {n} | " + " | ".join(f"{x:+.3f}" for x in v) + f" | {m:+.4f} | "
        line += f"{sum(x >= 0 for x in v)}/{len(v)} | "
        if len(v) > 1:
            sd = (sum((x - m) ** 2 for x in v) / (len(v) - 1)) ** 0.5
            h = t975.get(len(v) - 1, 2.0) * sd / len(v) ** 0.5
            line += f"{sd:.3f} | [{m - h:+.3f}, {m + h:+.3f}] |"
        else:
            line += "— | — |"
        lines.append(f"seeds {seeds[0]}-{seeds[-1]}\n{line}" if not lines else line)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="100-107", help="e.g. 100-107 or 100,101")
    ap.add_argument("--steps", default="1500,3000,4500", help="step counts evaluated, ascending")
    ap.add_argument("--channels", default=None, help="classifier conv channels, e.g. 32,64")
    ap.add_argument("--hidden", type=int, default=None, help="classifier FC width")
    ap.add_argument("--variant", default=None, help="name in the output files")
    ap.add_argument("--out", type=Path, default=Path("results/probes/gat-scale"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="from the smoke config, e.g. --steps 2,4 (a code check)",
    )
    ap.add_argument(
        "--summary", action="store_true", help="print the table of the JSONs in --out and exit"
    )
    args = ap.parse_args()
    if args.summary:
        print(summarise(args.out))  # noqa: T201
        return
    torch.set_num_threads(args.threads)
    steps = sorted(int(s) for s in args.steps.split(","))
    overrides: dict = {}
    if args.channels:
        overrides["channels"] = tuple(int(c) for c in args.channels.split(","))
    if args.hidden:
        overrides["hidden"] = args.hidden
    scale = "smoke" if args.smoke else "quick"
    variant = args.variant or (
        scale if not overrides else "-".join(f"{k}{v}" for k, v in overrides.items())
    )
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in parse_seeds(args.seeds):
        work = Path(tempfile.mkdtemp(prefix=f"gat-probe-{seed}-"))
        try:
            res = run_seed(seed, steps, variant, overrides, work, scale=scale)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        res["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        path = args.out / f"{variant}-seed-{seed}.json"
        path.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
