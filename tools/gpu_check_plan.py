"""The papers `make gpu-check` runs, from the registry, for tools/gpu_check.sh.

    python tools/gpu_check_plan.py [STEPS]

One line per registered paper, the costliest full run first (its stored price in
src/paperzoo/full_costs.json; a paper without one last, by name), tab-separated: the name, its
limit on CUDA in seconds for STEPS (default ``paperzoo.cost.GPU_CHECK_STEPS``, 6) steps per loop (``paperzoo.cost.gpu_check_limit``:
derived from its ``Experiment.gpu_check`` and its counted price), 1 when it runs under torchrun
else 0, and the derivation of its limit.
"""

from __future__ import annotations

import sys


def plan(steps: int | None = None) -> list[tuple[str, int, bool, str]]:
    """``(name, limit_s, torchrun, basis)`` per registered paper, the costliest first."""
    from paperzoo.cost import GPU_CHECK_STEPS, cached_costs, gpu_check_limit
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.lookup import get_experiment

    costs = cached_costs()
    names = sorted(EXPERIMENTS.names(), key=lambda n: (-costs.get(n, {}).get("gpu_hours", 0.0), n))
    rows = []
    for name in names:
        limit = gpu_check_limit(name, GPU_CHECK_STEPS if steps is None else steps)
        rows.append(
            (name, limit["seconds"], get_experiment(name).gpu_check.torchrun, limit["basis"])
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and not args[0].isdigit()):
        sys.stderr.write(f"gpu-check: usage: gpu_check_plan.py [STEPS], got {' '.join(args)}\n")
        return 2
    try:
        rows = plan(int(args[0]) if args else None)
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
