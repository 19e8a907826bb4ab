"""Probe: is gradient masking in FGSM adversarial training what spreads GAT's gap to it?

On 8 of the 16 committed quick seeds FGSM-AT is more accurate under FGSM at eps 0.2 than at 0.1,
and those seeds have its lowest PGD accuracy (docs/gat.md, "The seed rule's later looks"): the
signature of single-step adversarial training that masks its gradient. If that is the cause, an
FGSM-AT whose training attack cannot mask the gradient so easily should lose the signature and
keep its accuracy at small eps.

Per seed the probe trains three classifiers with the project's own code
(``gat.training.train_model``, as ``paperzoo reproduce gat`` does: the same network, data order,
seeding and quick config): GAT; FGSM-AT exactly as the experiment trains it; and FGSM-AT whose
training attack starts from a uniformly random point of the eps ball and takes one signed step of
1.25 eps, projected back into the ball (Wong, Rice & Kolter 2020, "Fast is better than free":
``PGD(steps=1, alpha=1.25 eps, random_start=True)``). The variant is made by handing
``train_model``'s FGSM-AT branch that attack in place of FGSM for its training only
(``training_attack``); its checkpoints live in a folder of their own. Every model is evaluated by
the experiment's own ``gat.training.evaluate``: clean, FGSM and 20-step PGD at eps 0.1 / 0.2 / 0.3,
on the 1,000 mnist5k test digits.

Output: ``OUT/seed-S.json`` with each model's accuracies, whether its FGSM accuracy rises
anywhere with eps (``fgsm_rises``), and GAT's FGSM gap to each FGSM-AT (the finding's
definition: GAT's accuracy under FGSM minus the other's, mean over eps). ``--summary`` prints
the table of the JSONs in ``OUT``.

``--smoke`` uses the smoke config (its 32 test digits, a few steps): seconds, numbers that mean
nothing, as the tests do.

Example (docs/gat.md; validation seeds only)::

    PYTHONPATH=src .venv/bin/python tools/probes/gat_fgsm_at_masking.py \
        --seeds 100-107 --out results/probes/gat-fgsm-at-masking
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch

import paperzoo.papers.gat.training as gat_training
from paperzoo.adversarial.attacks import PGD
from paperzoo.data.base import load_dataset
from paperzoo.experiments.base import RunContext
from paperzoo.experiments.flags import seed_list
from paperzoo.papers.gat.config import CONFIGS

VARIANTS = ("fgsm_at", "fgsm_at_random_start")


def random_start_fgsm(model: torch.nn.Module, *, eps: float) -> PGD:
    """Wong et al.'s single-step attack: a uniform start in the l_inf ball, one signed step of
    1.25 eps, projected back into the ball and the image box."""
    return PGD(model, eps=eps, alpha=1.25 * eps, steps=1, random_start=True)


@contextlib.contextmanager
def training_attack(factory) -> Iterator[None]:
    """Within the block, ``train_model``'s FGSM-AT builds its training attack with ``factory``
    (called as ``FGSM(model, eps=...)`` is) instead of FGSM; restored on leaving."""
    saved = gat_training.FGSM
    gat_training.FGSM = factory
    try:
        yield
    finally:
        gat_training.FGSM = saved


def rises(acc: dict[str, float], eps: tuple[float, ...]) -> bool:
    """Whether the FGSM accuracy is higher at some eps than at a smaller one."""
    xs = [acc[f"fgsm{e}"] for e in eps]
    return any(xs[i + 1] > xs[i] for i in range(len(xs) - 1))


def run_seed(seed: int, work: Path, *, scale: str = "quick") -> dict:
    cfg = CONFIGS[scale]
    split = load_dataset("mnist5k", seed=seed)
    chans, size = split.x_train.shape[1], split.x_train.shape[-1]
    x, y = split.x_test[: cfg.n_test], split.y_test[: cfg.n_test]
    cpu0 = time.process_time()
    acc: dict[str, dict[str, float]] = {}
    for name in ("gat", *VARIANTS):
        ctx = RunContext(scale=scale, seed=seed, out_dir=work / name, quiet=True)
        base = "fgsm_at" if name in VARIANTS else name
        swap = training_attack(random_start_fgsm) if name == "fgsm_at_random_start" else None
        with swap or contextlib.nullcontext():
            model, _, _ = gat_training.train_model(base, split, cfg, ctx, chans, size)
        acc[name] = gat_training.evaluate({base: model}, x, y, cfg, ctx)[base]
        print(f"seed {seed} {name}: {acc[name]}", flush=True)  # noqa: T201
    eps = tuple(cfg.eps)

    def gap(other: str) -> float:
        return sum(acc["gat"][f"fgsm{e}"] - acc[other][f"fgsm{e}"] for e in eps) / len(eps)

    return {
        "probe": "gat_fgsm_at_masking",
        "scale": scale,
        "seed": seed,
        "steps": cfg.steps,
        "train_eps": cfg.train_eps,
        "eps": list(eps),
        "accuracy": acc,
        "fgsm_rises": {name: rises(acc[name], eps) for name in VARIANTS},
        "gap": {name: gap(name) for name in VARIANTS},
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "cpu_seconds": round(time.process_time() - cpu0, 1),
    }


def summarise(out: Path) -> str:
    """A markdown table, one row per seed and FGSM-AT variant: its FGSM and PGD accuracies,
    whether its FGSM accuracy rises with eps, and GAT's gap to it; then per variant the mean gap,
    its sample standard deviation and the seeds whose accuracy rises."""
    recs = [json.loads(f.read_text()) for f in sorted(out.glob("seed-*.json"))]
    lines = [
        "| seed | FGSM-AT | FGSM 0.1 / 0.2 / 0.3 | PGD 0.1 | rises | GAT minus it |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(recs, key=lambda r: r["seed"]):
        for name in VARIANTS:
            a = r["accuracy"][name]
            fgsm = " / ".join(f"{a['fgsm' + str(e)]:.3f}" for e in r["eps"])
            pgd = a["pgd" + str(r["eps"][0])]
            rise = "yes" if r["fgsm_rises"][name] else "no"
            lines.append(
                f"| {r['seed']} | {name} | {fgsm} | {pgd:.3f} | {rise} | {r['gap'][name]:+.3f} |"
            )
    for name in VARIANTS:
        gaps = [r["gap"][name] for r in recs]
        if not gaps:
            continue
        m = math.fsum(gaps) / len(gaps)
        sd = (
            math.sqrt(math.fsum((g - m) ** 2 for g in gaps) / (len(gaps) - 1))
            if len(gaps) > 1
            else 0.0
        )
        n_rise = sum(r["fgsm_rises"][name] for r in recs)
        lines.append(
            f"\n{name}: gap mean {m:+.4f}, sd {sd:.4f}, {sum(g >= 0 for g in gaps)}/{len(gaps)} "
            f"at or above 0; FGSM accuracy rises with eps on {n_rise}/{len(recs)} seeds"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=seed_list, default="100-107", help="e.g. 100-107 or 100,101")
    ap.add_argument("--out", type=Path, default=Path("results/probes/gat-fgsm-at-masking"))
    ap.add_argument("--summary", action="store_true", help="print --out's table and exit")
    ap.add_argument("--smoke", action="store_true", help="the smoke config (a code check)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.summary:
        print(summarise(args.out))  # noqa: T201
        return
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    for seed in args.seeds:
        work = Path(tempfile.mkdtemp(prefix=f"gat-masking-{seed}-"))
        try:
            res = run_seed(seed, work, scale="smoke" if args.smoke else "quick")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        (args.out / f"seed-{seed}.json").write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
