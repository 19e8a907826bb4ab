"""``paperzoo list``: every registered paper, its data, claims (kind, targets per scale) and the
price of its full run, as JSON (schema ``paperzoo.list/1``) or as text.

A paper appears here by being registered (``paperzoo.experiments.EXPERIMENTS``, a paper of an
installed package included); its data are the names in ``Experiment.datasets`` ("generated" when
it declares none); why it has no full run is each ``Experiment.full_not_run`` entry's reason. Its
full-run price is the count ``tools/count_costs.py`` stored for its current full config, else
counted when listed (``paperzoo.cost.paper_cost``: a paper of an installed package is always
counted when listed, from its ``Experiment.plan`` and ``Experiment.full_cost``); ``None`` only for
a paper that declares no counter.
"""

from __future__ import annotations

from typing import Any

SCHEMA = "paperzoo.list/1"


def list_catalogue() -> dict[str, Any]:
    """The catalogue of ``paperzoo list --json`` (schema ``paperzoo.list/1``)."""
    from paperzoo.cost import paper_cost
    from paperzoo.experiments import EXPERIMENTS, SCALES
    from paperzoo.experiments.lookup import get_experiment

    papers = []
    for name in EXPERIMENTS.names():
        exp = get_experiment(name)
        cost = paper_cost(name)  # stored by tools/count_costs.py, else counted now
        papers.append(
            {
                "name": name,
                "title": exp.title,
                "datasets": list(exp.datasets) or ["generated"],
                "scales": list(SCALES),
                "claims": [
                    {
                        "id": c.id,
                        "kind": c.kind,
                        "statement": c.statement,
                        "paper": c.paper,
                        "scales": list(c.scales),  # where it is measured (most: every scale)
                        "targets": c.targets(),
                        # why the paper number is not verified (None: verified, source in docs)
                        "unverified": c.unverified,
                        # where it is quoted from when the paper's text was not read (it counts)
                        "quoted": c.quoted,
                    }
                    for c in exp.claims
                ],
                # why there is no full run (Experiment.full_not_run): reason, what it needs
                "full_not_run": [
                    {"part": e.part, "why": e.why, "needs": list(e.needs), "label": e.label}
                    for e in exp.full_not_run
                ],
                # --precision on CUDA without the flag (CPU: fp32); why: docs/<paper>.md
                "cuda_precision": exp.cuda_precision,
                # the price of --scale full (paperzoo.cost): FLOP, kernel launches and host work
                # counted from the models, a lower bound on GPU hours on one H100/H200-class GPU
                # (bound: what decides it; basis says what it rests on); None: no counter
                "full_cost": None if cost is None else full_cost_entry(cost),
            }
        )
    return {"schema": SCHEMA, "papers": papers}


def full_cost_entry(cost: dict[str, Any]) -> dict[str, Any]:
    """``full_cost`` of ``paperzoo list --json`` from ``paper_cost``: the price and what it rests
    on (``stored``: read from the paper's full_cost.json at the current config, else counted now)."""
    keys = (
        "flop", "gpu_hours", "before_gpu_hours", "flop_gpu_hours", "steps", "kernels_per_step",
        "host_seconds_per_step", "fixed_seconds_per_step", "kernel_seconds", "price_parts",
        "hook_seconds", "bound", "bounds", "launch_bound", "basis", "assumptions", "stored",
    )  # fmt: skip
    return {k: cost[k] for k in keys}


def render_catalogue(catalogue: dict[str, Any]) -> str:
    """The text of ``paperzoo list``: per paper its data, the price of its full run and one line
    per claim with its targets."""
    from paperzoo.utils.work import KERNEL_SECONDS, UTILISATION

    words = {"FLOP": "FLOP", "launches": "kernel launches", "host": "host work"}
    lines: list[str] = []
    for p in catalogue["papers"]:
        lines.append(f"{p['name']}: {p['title']}")
        lines.append(f"  data: {', '.join(p['datasets'])}; scales: {', '.join(p['scales'])}")
        for e in p.get("full_not_run", []):
            part = f" (part {e['part']})" if e["part"] else ""
            lines.append(f"  full{part}: not run: {e['why']}")
        if p["full_cost"] is None:
            lines.append(
                "  full run: not priced (the paper declares no cost counter: Experiment.plan "
                "and Experiment.full_cost)"
            )
        else:
            c = p["full_cost"]
            lines.append(
                f"  full run: at least {c['gpu_hours']:.2g} GPU-hours on one H100/H200, bound by "
                f"{words.get(c['bound'], 'the data loader')} ({c['steps']:,} steps of "
                f"{c['kernels_per_step']:,.0f} kernels at {KERNEL_SECONDS * 1e6:.0f} us, a fixed "
                f"{c['fixed_seconds_per_step'] * 1e3:.2g} ms and "
                f"{c['host_seconds_per_step'] * 1e3:.2g} ms of other host work, {c['flop']:.2g} "
                f"FLOP at {UTILISATION:.0%} of the bf16 peak; CUDA precision "
                f"{p['cuda_precision']})"
            )
        for c in p["claims"]:
            t = {s: v for s, v in c["targets"].items() if s != "smoke"} or c["targets"]
            if len(t) == 2 and len(set(t.values())) == 1:
                target = t["quick"]
            elif len(t) == 1:
                ((s, v),) = t.items()
                target = f"{s} only: {v}"
            else:
                target = "; ".join(f"{s} {v}" for s, v in t.items())
            lines.append(f"  - [{c['kind']}] {c['id']}  [{target}]  {c['statement']}")
            if c["unverified"]:
                lines.append(f"      paper number unverified: {c['unverified']}")
            if c["quoted"]:
                lines.append(f"      paper number quoted ({c['quoted']})")
    return "".join(f"{line}\n" for line in lines)
