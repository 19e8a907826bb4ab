"""The papers `make gpu-check` runs, from the registry, for tools/gpu_check.sh.

    python tools/gpu_check_plan.py

One line per registered paper, the costliest full run first (its stored price in
src/paperzoo/full_costs.json; a paper without one last, by name), tab-separated: the name, its
limit on CUDA in seconds (``Experiment.gpu_check``: plumbing_s + gpu_s, the default for a paper
that states none), 1 when it runs under torchrun else 0, and the reason for its limit.
"""

from __future__ import annotations

import sys


def plan() -> list[tuple[str, int, bool, str]]:
    """``(name, limit_s, torchrun, reason)`` per registered paper, the costliest first."""
    from paperzoo.cost import cached_costs
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.runner import get_experiment

    costs = cached_costs()
    names = sorted(EXPERIMENTS.names(), key=lambda n: (-costs.get(n, {}).get("gpu_hours", 0.0), n))
    rows = []
    for name in names:
        check = get_experiment(name).gpu_check
        rows.append((name, check.seconds, check.torchrun, check.reason))
    return rows


def main() -> int:
    try:
        rows = plan()
    except Exception as err:  # noqa: BLE001 (any failure to import the package: one line)
        sys.stderr.write(
            f"gpu-check: the papers could not be listed ({type(err).__name__}: {err})\n"
        )
        return 2
    for name, limit, torchrun, reason in rows:
        sys.stdout.write(f"{name}\t{limit}\t{int(torchrun)}\t{reason}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
