"""Knife edges at quick scale: a paper's findings on validation seeds against its test seeds.

    python tools/knife_edges.py --run resnet --out runs/knife   # runs seeds 100-107, then compares
    python tools/knife_edges.py --compare runs/knife/resnet-quick-s100-107 \\
        results/resnet-quick results/resnet-quick-2threads

``--run NAME`` runs ``paperzoo reproduce NAME --scale quick --seeds 100-107 --jobs 2 --threads 1``
into OUT/NAME-quick-s100-107 (one thread per seed, two seeds at a time: 0.4-2.9 CPU-hours a
paper, docs/knife-edges.md; a finished run is not run again: reproduce resumes), then compares it
with the committed test-seed runs ``results/NAME-quick`` and ``results/NAME-quick-2threads``.
``--compare VALIDATION TEST [TEST ...]`` only compares run directories; a VALIDATION run of one
``--part`` is compared on that part's findings.

The comparison prints, per finding, the verdict and mean on each run (every run judged by the
claims as declared now) and marks a finding whose validation verdict differs from a test run's
as a knife edge: its target sits where the seed draw decides the outcome. The decision is
``paperzoo.verdict.mark_knife_edges``, the one the summary counts with once the validation run
is committed under results/validation/; a validation run that cannot decide (other seeds, a
config the code no longer declares: ``validation_problem``) is refused with exit status 2.
A knife edge is fixed at its cause (too few steps, a target at the effect's edge, a baseline
tuned on test seeds), decided on validation seeds only, and listed under "Changed after seeing
test results" in the paper's docs; the exit status is 1 when any finding is a knife edge.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from paperzoo.experiments.judging import declare
from paperzoo.verdict import load_result, mark_knife_edges, rejudge, validation_problem
from paperzoo.verdict.result import ClaimResult, Result, format_seeds

VALIDATION = "100-107"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _cell(c: ClaimResult | None) -> str:
    if c is None:
        return "absent"
    return f"{c.verdict} ({c.holds_on}/{len(c.per_seed)}), {_mean(c.mean)}"


def compare(validation: Result, *tests: Result) -> tuple[list[str], list[str]]:
    """Markdown rows of every finding of the first of ``tests`` (verdict and mean on each run),
    and the ids of the findings whose verdict on the validation seeds differs from one of the
    test runs' (``mark_knife_edges``). Every run is judged by the claims as declared now
    (``rejudge``). A validation run of one part (``--part``) is compared on that part's
    findings only."""
    tests = tuple(rejudge(t, declare)[0] for t in tests)
    edged = set().union(*(mark_knife_edges(t, [validation], declare=declare) for t in tests))
    val = {c.id: c for c in rejudge(validation, declare)[0].claims}
    others = [{c.id: c for c in t.claims} for t in tests[1:]]
    findings = tests[0].findings
    if validation.part is not None:
        findings = [c for c in findings if c.id in val]
    rows, edges = [], []
    for c in findings:
        v = val.get(c.id)
        test_cells = [c, *(o.get(c.id) for o in others)]
        edge = c.id in edged
        if edge:
            edges.append(c.id)
        rows.append(
            f"| `{c.id}` | {c.target} | "
            + " | ".join(_cell(t) for t in test_cells)
            + f" | {_cell(v)} | {'**knife edge**' if edge else ''} |"
        )
    return rows, edges


def report(validation_dir: Path, *test_dirs: Path) -> int:
    validation = load_result(validation_dir)
    if (problem := validation_problem(validation, validation_dir, declare=declare)) is not None:
        sys.stderr.write(f"{validation_dir} cannot decide knife edges: {problem}\n")
        return 2
    tests = [load_result(d) for d in test_dirs]
    for d, t in zip(test_dirs, tests, strict=True):
        if validation.paper != t.paper or validation.scale != t.scale:
            sys.stderr.write(f"{validation_dir} and {d} are not runs of one paper and scale\n")
            return 2
    rows, edges = compare(validation, *tests)
    heads = " | ".join(
        f"test seeds {format_seeds(t.seeds)} ({d.name})"
        for d, t in zip(test_dirs, tests, strict=True)
    )
    part = "" if validation.part is None else f", part {validation.part}"
    lines = [
        f"{validation.paper} ({validation.scale}{part}): validation seeds {validation_dir}",
        f"| finding | target | {heads} | validation seeds {format_seeds(validation.seeds)} | |",
        "|---|---|" + "---|" * len(tests) + "---|---|",
        *rows,
        f"knife edges: {len(edges)} of {len(rows)}" + (f" ({', '.join(edges)})" if edges else ""),
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if edges else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", metavar="NAME", help="run NAME's quick protocol on seeds 100-107")
    parser.add_argument("--out", type=Path, default=Path("runs/knife"))
    parser.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="VALIDATION TEST [TEST ...]: compare a validation-seed run with test-seed runs",
    )
    args = parser.parse_args(argv)
    if args.compare:
        if len(args.compare) < 2:
            parser.error("--compare needs a validation run and at least one test run")
        return report(*args.compare)
    if not args.run:
        parser.error("give --run NAME or --compare VALIDATION TEST")
    out = args.out / f"{args.run}-quick-s{VALIDATION}"
    cmd = [sys.executable, "-m", "paperzoo", "reproduce", args.run, "--scale", "quick"]
    cmd += ["--seeds", VALIDATION, "--jobs", "2", "--threads", "1", "--quiet", "--out", str(out)]
    sys.stdout.write(" ".join(cmd) + "\n")
    sys.stdout.flush()
    if subprocess.call(cmd) not in (0, 1):  # 1: a finding fails, still a result to compare
        return 2
    tests = [Path("results") / f"{args.run}-quick{t}" for t in ("", "-2threads")]
    return report(out, *(t for t in tests if (t / "results.json").is_file()))


if __name__ == "__main__":
    sys.exit(main())
