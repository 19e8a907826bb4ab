"""Knife edges at quick scale: a paper's findings on validation seeds against its test seeds.

    python tools/knife_edges.py --run resnet --out runs/knife   # runs seeds 100-107, then compares
    python tools/knife_edges.py --compare runs/knife/resnet-quick-s100-107 results/resnet-quick

``--run NAME`` runs ``paperzoo reproduce NAME --scale quick --seeds 100-107 --jobs 2 --threads 1``
into OUT/NAME-quick-s100-107 (one thread per seed, two seeds at a time: about 20 minutes of wall
time per paper on two cores; a finished run is not run again: reproduce resumes), then compares it
with the committed test-seed run ``results/NAME-quick``. ``--compare VALIDATION TEST`` only
compares two run directories.

The comparison prints, per finding, the verdict and mean on each seed set and marks a finding
whose verdict differs as a knife edge: its target sits where the seed draw decides the outcome.
A knife edge is fixed at its cause (too few steps, a target at the effect's edge, a baseline
tuned on test seeds), decided on validation seeds only, and listed under "Changed after seeing
test results" in the paper's docs; the exit status is 1 when any finding is a knife edge.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from paperzoo.verdict import load_result
from paperzoo.verdict.result import Result

VALIDATION = "100-107"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def compare(validation: Result, test: Result) -> tuple[list[str], list[str]]:
    """Markdown rows of every finding of ``test`` (verdict and mean on both seed sets), and the
    ids of the findings whose verdicts differ."""
    val = {c.id: c for c in validation.claims}
    rows, edges = [], []
    for c in test.findings:
        v = val.get(c.id)
        v_verdict = "absent" if v is None else v.verdict
        edge = v_verdict != c.verdict
        if edge:
            edges.append(c.id)
        rows.append(
            f"| `{c.id}` | {c.target} | {c.verdict} ({c.holds_on}/{len(c.per_seed)}), "
            f"{_mean(c.mean)} | {v_verdict}"
            + ("" if v is None else f" ({v.holds_on}/{len(v.per_seed)}), {_mean(v.mean)}")
            + f" | {'**knife edge**' if edge else ''} |"
        )
    return rows, edges


def report(validation_dir: Path, test_dir: Path) -> int:
    validation, test = load_result(validation_dir), load_result(test_dir)
    if validation.paper != test.paper or validation.scale != test.scale:
        sys.stderr.write(f"{validation_dir} and {test_dir} are not runs of one paper and scale\n")
        return 2
    rows, edges = compare(validation, test)
    lines = [
        f"{test.paper} ({test.scale}): test seeds {test_dir}, validation seeds {validation_dir}",
        "| finding | target | test seeds: verdict, mean | validation seeds | |",
        "|---|---|---|---|---|",
        *rows,
        f"knife edges: {len(edges)} of {len(rows)}" + (f" ({', '.join(edges)})" if edges else ""),
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if edges else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", metavar="NAME", help="run NAME's quick protocol on seeds 100-107")
    parser.add_argument("--out", type=Path, default=Path("runs/knife"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("VALIDATION", "TEST"))
    args = parser.parse_args(argv)
    if args.compare:
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
    return report(out, Path("results") / f"{args.run}-quick")


if __name__ == "__main__":
    sys.exit(main())
