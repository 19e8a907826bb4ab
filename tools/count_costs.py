"""Count every paper's full-run cost and store it beside the paper (``paperzoo.cost.store_cost``:
``full_cost.json`` in the paper's folder, e.g. src/paperzoo/papers/resnet/full_cost.json).

    OMP_NUM_THREADS=1 .venv/bin/python tools/count_costs.py [NAME ...]
    .venv/bin/python tools/count_costs.py --table      # docs/cost.md's table, from the file

``paperzoo list --json`` reads the stored counts (``paperzoo.cost``: counting takes minutes).
Rerun this after changing a full config, a plan or a model; tests/test_cost.py fails while a
stored entry's config digest is out of date. With NAMEs only those papers are recounted. Host
work is timed on this machine's CPU (at one thread): count on a quiet host.
"""

from __future__ import annotations

import logging
import sys
import time

from paperzoo.cost import cached_costs, cost_file, store_cost
from paperzoo.experiments import EXPERIMENTS


def table() -> str:
    """The markdown table of docs/cost.md, from the stored counts: the price from FLOP and kernel
    launches alone (before) beside the price with host work and the loader (now), the bound that
    decides each paper and the hours by part (``paperzoo.cost.price_parts``)."""
    from paperzoo.experiments.lookup import get_experiment

    rows = [
        "| paper | FLOP | steps | kernels per step | fixed ms per step | other host ms per step "
        "| GPU-hours, FLOP and launches (before) | GPU-hours, with host and loader (now) "
        "| now / before | bound (share of hours) | hours by part: FLOP / launches / fixed / host "
        "/ loader | CUDA precision |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    costs = cached_costs()
    for name in sorted(costs, key=lambda n: -costs[n]["gpu_hours"]):
        c = costs[name]
        prec = get_experiment(name).cuda_precision
        parts = " / ".join(f"{v:.3g}" for v in c["price_parts"].values())
        rows.append(
            f"| {name} | {c['flop']:.2e} | {c['steps']:,} | {c['kernels_per_step']:,.0f} "
            f"| {c['fixed_seconds_per_step'] * 1e3:.3g} "
            f"| {c['host_seconds_per_step'] * 1e3:.3g} | {c['before_gpu_hours']:.3g} "
            f"| {c['gpu_hours']:.3g} | {c['gpu_hours'] / c['before_gpu_hours']:,.2f} "
            f"| {c['bound']} ({c['bounds'][c['bound']]:.0%}) | {parts} | {prec} |"
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:

    if argv == ["--table"]:
        sys.stdout.write(table())
        return 0

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    names = argv or EXPERIMENTS.names()
    unknown = sorted(set(names) - set(EXPERIMENTS.names()))
    if unknown:
        sys.stderr.write(f"count_costs: unknown paper(s) {', '.join(unknown)}\n")
        return 2
    for name in names:
        start = time.perf_counter()
        try:
            counted = store_cost(name)
        except KeyError as err:  # the paper declares no counter: reported, not stored
            logging.warning("%s: not counted (%s)", name, err.args[0])
            continue
        logging.info(
            "%s: %.3g FLOP, %.3g kernels per step, %.3g GPU-hours, bound by %s (FLOP and "
            "launches alone: %.3g) (%.0f s); wrote %s",
            name, counted["flop"], counted["kernels_per_step"], counted["gpu_hours"],
            counted["bound"], counted["before_gpu_hours"], time.perf_counter() - start,
            cost_file(name),
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
