"""The README's performance section: one row per comparison, from the committed bench reports.

    .venv/bin/python tools/bench_overview.py [--write] [--check]

Reads results/bench-1thread.json and results/bench-2threads.json (`paperzoo bench --threads T
--json FILE`), groups their rows into the comparisons below (workload family, anchor) and prints
one Markdown row per comparison with the range of ratios at one and at two threads and whether
the outputs agreed. With --write it replaces README.md's block between `<!-- bench:start -->` and
`<!-- bench:end -->` with that table, and docs/benchmarks.md's block between
`<!-- bench-tables:start -->` and `<!-- bench-tables:end -->` with every row of both reports
(`paperzoo bench --table FILE`). --check exits 1 if either file would change.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from paperzoo.bench import render_bench_table

ROOT = Path(__file__).resolve().parents[1]
REPORTS = (ROOT / "results" / "bench-1thread.json", ROOT / "results" / "bench-2threads.json")
Row = dict
Pick = Callable[[str, Row], bool]


def _mem(r: Row) -> bool:
    return r.get("measure") != "seconds"


def _ggnn(ours: tuple[str, ...], anchors: tuple[str, ...], mem: bool) -> Pick:
    return lambda b, r: (
        b == "ggnn" and r["ours"] in ours and r["anchor"] in anchors and _mem(r) == mem
    )


# (workload family, what paperzoo runs, the anchor, which rows); ratio = anchor / paperzoo.
COMPARISONS: list[tuple[str, str, str, Pick]] = [
    ("PGD l_inf, 40 steps, SmallCNN, 500 examples: time", "paperzoo PGD", "torchattacks",
     lambda b, r: b == "attacks"),
    ("GG-NN propagation, one matrix tied over steps, edge lists (bAbI x100 .. 100k nodes): time",
     "ours-tied", "PyG GatedGraphConv",
     _ggnn(("ours-tied",), ("pyg-bi",), False)),
    ("the same, graphs prepared (our plan / PyG's CSR): time", "ours-tied-plan",
     "PyG GatedGraphConv, faster path", _ggnn(("ours-tied-plan",), ("pyg-bi", "pyg-bi-csr"), False)),
    ("GG-NN, the paper's per-direction model: time", "ours",
     "PyG RGCNConv + GRUCell (equal work)", _ggnn(("ours",), ("pyg-typed", "pyg-typed-fast"), False)),
    ("the same: memory saved for backward", "ours", "PyG RGCNConv + GRUCell",
     _ggnn(("ours",), ("pyg-typed", "pyg-typed-fast"), True)),
    ("GG-NN, the paper's per-direction model (more work than PyG's): time", "ours, ours-plan",
     "PyG GatedGraphConv", _ggnn(("ours", "ours-plan"), ("pyg-bi", "pyg-bi-csr"), False)),
    ("GG-NN: memory saved for backward", "ours-tied, ours", "PyG GatedGraphConv",
     _ggnn(("ours-tied", "ours"), ("pyg-bi",), True)),
    ("GG-NN against a dense-adjacency GG-NN: time", "ours", "dense GG-NN",
     _ggnn(("ours",), ("dense",), False)),
    ("BetaVAE, FactorVAE, MIG, SAP, modularity, 10k samples: time", "paperzoo.metrics",
     "disentanglement_lib-style reference",
     lambda b, r: b == "metrics" and not r["workload"].startswith(("DCI", "all"))),
    ("DCI (exact, batched, 256 bins), 10k samples: time", "paperzoo.metrics",
     "disentanglement_lib-style reference",
     lambda b, r: b == "metrics" and r["workload"].startswith("DCI")),
    ("all six metrics together (exact, batched, fast, all but DCI): time", "paperzoo.metrics",
     "disentanglement_lib-style reference",
     lambda b, r: b == "metrics" and r["workload"].startswith("all")),
    ("Perceiver training step, 28x28x1 and 64x64x3, equal parameters: time", "paperzoo",
     "perceiver-pytorch", lambda b, r: b == "perceiver" and not _mem(r)),
    ("the same: memory saved for backward", "paperzoo", "perceiver-pytorch",
     lambda b, r: b == "perceiver" and _mem(r)),
    ("Path-SGD step against plain SGD (its overhead), MLP 2x4000 and SmallCNN", "PathSGD",
     "torch.optim.SGD", lambda b, r: b == "path_sgd"),
    ("ResNet-20/56 training step, batch 128: fraction of the fp32 matmul peak",
     "contiguous, channels-last, compiled", "fp32 matmul peak",
     lambda b, r: b == "resnet" and r["anchor"] == "fp32 matmul peak"),
    ("ResNet-20/56 training step: channels-last or compiled against contiguous",
     "channels_last, compiled", "contiguous",
     lambda b, r: b == "resnet" and r["anchor"] == "contiguous"),
    ("every convolutional training path of the experiments (44 paths, quick and full)",
     "channels-last", "contiguous", lambda b, r: b == "conv_layout"),
]  # fmt: skip


def _rows(report: dict) -> list[tuple[str, Row]]:
    return [(b["benchmark"], r) for b in report["benchmarks"] for r in b["rows"]]


def _threads(report: dict) -> str:
    n = report["machine"]["threads"]
    return f"ratio, {n} thread{'s' if n != 1 else ''}"


def _range(rows: list[Row]) -> str:
    if not rows:
        return "—"
    lo, hi = min(r["ratio"] for r in rows), max(r["ratio"] for r in rows)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def _agreement(rows: list[Row]) -> str:
    checked = [r for r in rows if r.get("agreed")]
    if not checked:
        return "not compared"
    bad = sum(not r["agreed"]["ok"] for r in checked)
    if bad:
        return f"**no** on {bad} of {len(checked)}"
    return "yes" if len(checked) == len(rows) else f"yes ({len(checked)} of {len(rows)} checked)"


def overview(reports: list[dict]) -> str:
    """The Markdown table: one row per comparison, ratio ranges per report (thread count)."""
    heads = [_threads(rep) for rep in reports]
    lines = [
        "| workload | paperzoo | anchor | " + " | ".join(heads) + " | outputs agree |",
        "|---|---|---|" + "---|" * len(heads) + "---|",
    ]
    used: set[int] = set()
    for family, ours, anchor, pick in COMPARISONS:
        per = [[r for b, r in _rows(rep) if pick(b, r)] for rep in reports]
        for rows in per:
            used.update(id(r) for r in rows)
        ranges = " | ".join(_range(rows) for rows in per)
        lines.append(f"| {family} | {ours} | {anchor} | {ranges} | {_agreement(per[0])} |")
    left = [(b, r) for rep in reports for b, r in _rows(rep) if id(r) not in used]
    if left:  # a new benchmark row must get a comparison above, not vanish from the README
        names = sorted({f"{b}: {r['ours']} vs {r['anchor']}" for b, r in left})
        raise SystemExit(f"bench rows in no comparison of tools/bench_overview.py: {names}")
    return "\n".join(lines) + "\n"


def _splice(text: str, start: str, end: str, body: str, name: str) -> str:
    if start not in text or end not in text:
        raise SystemExit(f"{name} has no {start} ... {end} block")
    head, rest = text.split(start, 1)
    return f"{head}{start}\n{body}{end}{rest.split(end, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the README and docs blocks")
    ap.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    args = ap.parse_args(argv)
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in REPORTS]
    table = overview(reports)
    if not (args.write or args.check):
        sys.stdout.write(table)
        return 0
    full = "\n".join(
        f"### `paperzoo bench --table {p.relative_to(ROOT)}`\n\n{render_bench_table(rep)}"
        for p, rep in zip(REPORTS, reports, strict=True)
    )
    readme, docs = ROOT / "README.md", ROOT / "docs" / "benchmarks.md"
    new = {
        readme: _splice(readme.read_text("utf-8"), "<!-- bench:start -->", "<!-- bench:end -->",
                        table, "README.md"),
        docs: _splice(docs.read_text("utf-8"), "<!-- bench-tables:start -->",
                      "<!-- bench-tables:end -->", full, "docs/benchmarks.md"),
    }  # fmt: skip
    changed = [p for p, t in new.items() if p.read_text("utf-8") != t]
    if args.check:
        for p in changed:
            sys.stdout.write(f"would change {p.relative_to(ROOT)}\n")
        return 1 if changed else 0
    for p in changed:
        p.write_text(new[p], encoding="utf-8")
        sys.stdout.write(f"wrote {p.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
