"""``paperzoo bench``: run the scripts in benchmarks/ (speed and memory against the libraries
users would pick instead) and write their rows as one JSON report, or print a report's table.

Each script's ``main(argv)`` returns its result (``benchmarks/_common.py``); the ratio of every
row (anchor / paperzoo: > 1 means paperzoo is faster) is computed here from the measured values.
Errors a user can fix (an unknown benchmark, an unwritable ``--json FILE``) are ``ValueError``s
(the CLI prints them on one line, exit status 2).
"""

from __future__ import annotations

import json
import logging
import runpy
import sys
from pathlib import Path

log = logging.getLogger("paperzoo")


def _one_line(message: object) -> str:
    """A benchmark's error message on one line."""
    return "; ".join(part.strip() for part in str(message).splitlines() if part.strip())


def bench_dir() -> Path:
    """benchmarks/ of the source checkout (the working directory's, else this package's)."""
    for cand in (Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"):
        if cand.is_dir():
            return cand
    raise ValueError("benchmarks/ not found: run `paperzoo bench` from a source checkout")


SCHEMA = "paperzoo-bench/1"


def ratio(row: dict) -> float:
    """anchor / ours of a row's measured values (lower is better): > 1 means paperzoo is faster."""
    ours, anchor = float(row["values"][row["ours"]]), float(row["values"][row["anchor"]])
    return anchor / ours if ours > 0 else float("inf")


def machine() -> dict:
    """The machine a report was measured on: CPU model, cores, threads, versions, date."""
    import datetime
    import os
    import platform

    import torch

    import paperzoo
    from paperzoo.provenance import cpu_model

    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_available": len(affinity(0)) if affinity else os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "paperzoo": paperzoo.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _check_target(path: Path) -> None:
    """Fail before hours of benchmarks when --json FILE cannot be written."""
    import os

    if path.is_dir():
        raise ValueError(f"--json {path} is a directory; give a file name")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"--json {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--json {path}: {existing} is not writable")


def _result(out: object, name: str) -> dict:
    """A benchmark's returned result, validated, with every row's ratio computed here."""
    if not isinstance(out, dict) or not isinstance(out.get("rows"), list):
        raise TypeError(f"{name}: main() returned {type(out).__name__}, not a result dict")
    out = {**out, "benchmark": name}
    rows = []
    for r in out["rows"]:
        r = dict(r)
        r["ratio"] = ratio(r)  # computed from the measured values, never taken as given
        rows.append(r)
    out["rows"] = rows
    return out


def run_script(script: Path, argv: list[str]) -> dict:
    """Run one benchmark in this process: its ``main(argv)`` returns its result."""
    sys.modules.pop("_common", None)  # the benchmarks' helper, from this benchmarks/ directory
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    try:
        module = runpy.run_path(str(script), run_name=f"paperzoo_bench_{script.stem}")
        if not callable(module.get("main")):
            raise TypeError(f"{script.name} has no main(argv) function")
        return _result(module["main"](list(argv)), script.stem)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.modules.pop("_common", None)


def run(
    name: str | None = None,
    *,
    threads: int | None = None,
    json_path: Path | None = None,
    quick: bool = False,
) -> int:
    """Run benchmark ``name`` (None: every one), each in this process with ``threads`` torch
    threads (passed on as ``--threads``) and at ``--quick`` sizes when ``quick``; write the
    report to ``json_path``. A benchmark that fails is reported and the others still run.

    Returns:
        the exit status: 1 when a benchmark failed, else 0.

    Raises:
        ValueError: an unknown benchmark, or ``json_path`` cannot be written (checked first).
    """
    if json_path is not None:
        _check_target(json_path)
    import torch

    from paperzoo.utils.io import atomic_write_text

    if threads:
        torch.set_num_threads(threads)
    bench = bench_dir()
    scripts = sorted(p for p in bench.glob("*.py") if not p.name.startswith("_"))
    if name:
        known = ", ".join(p.stem for p in scripts)
        scripts = [p for p in scripts if p.stem == name.replace("-", "_")]
        if not scripts:
            raise ValueError(f"no benchmark {name!r} in {bench}; known: {known}")
    argv = (["--threads", str(threads)] if threads else []) + (["--quick"] if quick else [])
    report = {
        "schema": SCHEMA,
        "machine": machine(),
        "command": {"name": name, "threads": threads, "quick": bool(quick)},
        "benchmarks": [],
    }
    failed = False
    for script in scripts:
        sys.stdout.write(f"== {script.stem}\n")
        sys.stdout.flush()
        try:
            result = run_script(script, argv)
        except Exception as err:  # the other benchmarks still run and are reported
            import traceback

            traceback.print_exc()
            failed = True
            msg = f"{type(err).__name__}: {_one_line(err)}"
            result = {"benchmark": script.stem, "error": msg, "skipped": None, "rows": []}
        used = result.get("threads", {}).get("torch")
        if threads and used is not None and used != threads:
            log.warning(
                "%s ran on %s torch thread(s), not --threads %s", script.stem, used, threads
            )
        report["benchmarks"].append(result)
    if json_path is not None:
        text = json.dumps(report, indent=2, allow_nan=True) + "\n"
        try:
            atomic_write_text(json_path, text)
        except OSError as err:
            sys.stdout.write(text)  # the measurements are not lost
            raise ValueError(f"--json {json_path}: {err} (the report went to stdout)") from None
        sys.stdout.write(f"wrote {json_path}\n")
    return 1 if failed else 0


def load_report(path: Path) -> dict:
    """A ``paperzoo bench --json`` report (``ValueError`` for anything else)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"--table {path}: {err}") from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        raise ValueError(f"--table {path}: not a `paperzoo bench --json` report")
    return report


def render_bench_table(report: dict) -> str:
    """The README's performance table: one line per row of a ``paperzoo bench --json`` report."""
    m = report["machine"]
    lines = [
        f"Measured {m['date']} on {m['cpu']} ({m['cores']} cores), {m['threads']} thread(s), "
        f"torch {m['torch']}, paperzoo {m['paperzoo']}"
        + (f", GPU {m['cuda']}" if m.get("cuda") else "")
        + ". Ratio: the anchor's time (or memory) / paperzoo's, > 1 means paperzoo is faster "
        "(or smaller).",
        "",
    ]
    if report.get("command", {}).get("quick"):
        lines += ["**--quick sizes: these numbers say nothing about speed.**", ""]
    lines += [
        "| benchmark | workload | paperzoo | anchor | ratio | agreement check |",
        "|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    others: list[str] = []
    for b in report["benchmarks"]:
        if b.get("error") or b.get("skipped"):
            others.append(f"{b['benchmark']}: {b.get('error') or 'skipped: ' + b['skipped']}")
        for r in b["rows"]:
            a = r.get("agreed")
            if a is None:
                note = r.get("note", "")
                if note not in notes:
                    notes.append(note)
                agreed = f"not compared [{notes.index(note) + 1}]"
            else:
                verdict = "yes" if a["ok"] else "**no**"
                agreed = f"{verdict}: {a['check']}, max diff {a['max_diff']:.1e} (tol {a['tol']:g})"
            lines.append(
                f"| {b['benchmark']} | {r['workload']} | {r['ours']} | {r['anchor']} "
                f"| {ratio(r):.2f} | {agreed} |"
            )
    if notes:
        lines += ["", *(f"[{i}] {n}" for i, n in enumerate(notes, 1))]
    if others:
        lines += ["", *(f"- {o}" for o in others)]
    return "\n".join(lines) + "\n"
