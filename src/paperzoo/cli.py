"""The ``paperzoo`` command: list, reproduce, merge, bench."""

from __future__ import annotations

import argparse
import json
import logging
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from paperzoo.utils.allocator import tune_allocator

if TYPE_CHECKING:
    from paperzoo.verdict import Result

log = logging.getLogger("paperzoo")


class UsageError(Exception):
    """Bad arguments or unusable data: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (``prog: error: ...``), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(message: object) -> str:
    """An error message on one line (torch's state-dict errors, for one, span several)."""
    return "; ".join(part.strip() for part in str(message).splitlines() if part.strip())


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N (e.g. 0/4), got {text!r}") from None
    if not (n >= 1 and 0 <= k < n):
        raise argparse.ArgumentTypeError(f"--shard K/N needs 0 <= K < N, got {text!r}")
    return k, n


MAX_SEEDS = 1000  # one process per seed: more is a typo (0-30000 for 0-3), not a plan


def _seeds(text: str) -> list[int]:
    """``0-3``, ``0,2,5`` or ``0-3,7`` -> sorted distinct seeds."""
    seeds: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            a, b = int(lo), int(hi) if hi else int(lo)
            if a < 0 or b < a:
                raise ValueError
            if len(seeds) + b - a + 1 > MAX_SEEDS:
                raise argparse.ArgumentTypeError(f"at most {MAX_SEEDS} seeds, got {text!r}")
            seeds.update(range(a, b + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--seeds takes a range or list of non-negative seeds (0-3, 0,2,5), got {text!r}"
        ) from None
    return sorted(seeds)


def _folds(text: str) -> tuple[int, ...]:
    """``1-10``, ``1,3`` -> sorted distinct official bAbI folds (each >= 1)."""
    try:
        folds = _seeds(text)
    except argparse.ArgumentTypeError:
        folds = []
    if not folds or folds[0] < 1:
        raise argparse.ArgumentTypeError(
            f"--folds takes a range or list of folds >= 1 (1-10, 1,3), got {text!r}"
        )
    return tuple(folds)


def _precision(text: str) -> str:
    from paperzoo.engine.precision import PRECISIONS

    if text not in PRECISIONS:
        raise argparse.ArgumentTypeError(f"--precision takes {', '.join(PRECISIONS)}, got {text!r}")
    return text


def _non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="paperzoo", description="Reproduce deep-learning papers with one command.")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="papers, their claims (kind, targets per scale) and data")
    ls.add_argument("--json", action="store_true", help="machine-readable (schema in the README)")

    r = sub.add_parser("reproduce", help="train, evaluate and report one paper (or --all)")
    r.add_argument("name", nargs="?", help="paper name (see `paperzoo list`)")
    r.add_argument("--all", action="store_true", help="every paper, one after another")
    r.add_argument("--scale", default="quick", choices=("smoke", "quick", "full"))
    seed = r.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=_non_negative, default=0, help="one seed (default 0)")
    seed.add_argument(
        "--seeds", type=_seeds, help="several seeds (0-3, 0,2,5): one process each, aggregated"
    )
    r.add_argument(
        "--jobs", type=_positive, default=1, help="with --seeds: seed processes run at once"
    )
    r.add_argument(
        "--out", type=Path, help="output directory (default runs/NAME-SCALE-sSEED or -seedsA-B)"
    )
    r.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a config field (dotted for nested ones; see `paperzoo config NAME`)",
    )
    r.add_argument("--dataset", help="data set to use (default: the paper's embedded source)")
    r.add_argument("--data-root", type=Path, help="directory with real data in standard layouts")
    r.add_argument("--download", action="store_true", help="fetch missing files (SHA-256 checked)")
    r.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")
    r.add_argument("--threads", type=_positive, help="torch intra-op threads (default: torch's)")
    r.add_argument(
        "--precision",
        type=_precision,
        help="fp32, tf32 (CUDA matmuls and convolutions in TF32) or bf16 (the models' forward "
        "passes under bf16 autocast); default: fp32 on the CPU, on CUDA the paper's own choice "
        "(`paperzoo list --json`: cuda_precision)",
    )
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    fold = r.add_mutually_exclusive_group()
    fold.add_argument(
        "--fold",
        type=_positive,
        help="one bAbI fold of the official files (default: ggnn's full scale runs every fold "
        "present, the other scales fold 1)",
    )
    fold.add_argument(
        "--folds", type=_folds, help="several official bAbI folds (1-10, 1,3): mean ± std over them"
    )
    r.add_argument("--shard", type=_shard, help="K/N: run only slice K of N of a model grid")
    r.add_argument(
        "--restart",
        action="store_true",
        help="start over: clear what an earlier run left in --out (a run resumes only with the "
        "code and data that started it)",
    )
    r.add_argument(
        "--part",
        help="run one part of the paper (e.g. wrm's spheres; see `paperzoo list`): its findings "
        "count for that part only",
    )
    r.add_argument(
        "--max-steps",
        type=_positive,
        metavar="N",
        help="stop every training loop after N steps and estimate the whole run's time on "
        "this device (verdicts marked partial)",
    )

    c = sub.add_parser("config", help="the resolved config of a paper at a scale, as JSON")
    c.add_argument("name", help="paper name (see `paperzoo list`)")
    c.add_argument("--scale", default="quick", choices=("smoke", "quick", "full"))
    c.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")

    m = sub.add_parser("merge", help="combine seed runs (or shards of a grid) into one report")
    m.add_argument("dirs", nargs="+", type=Path, help="output directories of seed runs or shards")
    m.add_argument("--out", type=Path, required=True)

    su = sub.add_parser("summary", help="every paper's finding verdicts in one table")
    su.add_argument("dirs", nargs="+", type=Path, help="result directories (with results.json)")
    su.add_argument("--html", type=Path, help="also write a self-contained HTML page here")

    b = sub.add_parser("bench", help="run benchmarks/ (speed against alternative libraries)")
    b.add_argument("name", nargs="?", help="benchmark name (default: all)")
    b.add_argument(
        "--threads", type=_positive, help="threads for every benchmark (passed on as --threads)"
    )
    b.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write the machine and every benchmark's rows (ratios, agreement checks) to FILE",
    )
    b.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, to test the plumbing (the numbers say nothing about speed)",
    )
    b.add_argument(
        "--table",
        type=Path,
        metavar="FILE",
        help="print the markdown performance table of a --json FILE (runs nothing)",
    )
    return p


def _device(requested: str | None) -> str:
    import torch

    if requested is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {requested}: CUDA is not available on this machine")
    if not (requested == "cpu" or requested.startswith("cuda")):
        raise UsageError(f"--device must be cpu, cuda or cuda:N, got {requested!r}")
    return requested


def list_catalogue() -> dict:
    """The catalogue of ``paperzoo list --json`` (schema ``paperzoo.list/1``)."""
    from paperzoo.cost import cached_costs
    from paperzoo.experiments import EXPERIMENTS, SCALES
    from paperzoo.experiments.runner import get_experiment

    costs = cached_costs()  # counted by tools/count_costs.py (paperzoo.cost)
    papers = []
    for name in EXPERIMENTS.names():
        exp = get_experiment(name)
        cost = costs.get(name)
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
                    }
                    for c in exp.claims
                ],
                # --precision on CUDA without the flag (CPU: fp32); why: docs/<paper>.md
                "cuda_precision": exp.cuda_precision,
                # the price of --scale full: training + evaluation FLOP counted from the models,
                # GPU hours on one H100/H200-class GPU in bf16 (paperzoo.cost); None: not counted
                "full_cost": None if cost is None else _full_cost_entry(name, cost),
            }
        )
    return {"schema": "paperzoo.list/1", "papers": papers}


def _full_cost_entry(name: str, cost: dict) -> dict:
    """``full_cost`` of ``paperzoo list --json``: the stored count, and whether it was made at
    the current full config and plan (else ``tools/count_costs.py NAME`` recounts it)."""
    from paperzoo.cost import config_digest

    entry = {k: cost[k] for k in ("flop", "gpu_hours", "assumptions")}
    entry["current"] = cost.get("config_sha256") == config_digest(name)
    return entry


def cmd_list(args: argparse.Namespace) -> int:
    from paperzoo.cost import UTILISATION

    catalogue = list_catalogue()
    if args.json:
        sys.stdout.write(json.dumps(catalogue, indent=2) + "\n")
        return 0
    for p in catalogue["papers"]:
        sys.stdout.write(f"{p['name']}: {p['title']}\n")
        sys.stdout.write(f"  data: {', '.join(p['datasets'])}; scales: {', '.join(p['scales'])}\n")
        if p["full_cost"] is not None:
            c = p["full_cost"]
            sys.stdout.write(
                f"  full run: {c['flop']:.2g} FLOP, about {c['gpu_hours']:.2g} GPU-hours (one "
                f"H100/H200 in bf16 at {UTILISATION:.0%} of peak; CUDA precision "
                f"{p['cuda_precision']})\n"
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
            sys.stdout.write(f"  - [{c['kind']}] {c['id']}  [{target}]  {c['statement']}\n")
            if c["unverified"]:
                sys.stdout.write(f"      paper number unverified: {c['unverified']}\n")
    return 0


def _cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _child_args(args: argparse.Namespace) -> list[str]:
    """The flags a seed's process repeats from this command (everything but seed, out, threads)."""
    out = ["--scale", args.scale]
    if args.folds:
        out += ["--folds", ",".join(map(str, args.folds))]
    elif args.fold is not None:
        out += ["--fold", str(args.fold)]
    for flag, value in (
        ("--dataset", args.dataset),
        ("--data-root", args.data_root),
        ("--device", args.device),
        ("--precision", args.precision),
    ):
        if value is not None:
            out += [flag, str(value)]
    if args.download:
        out.append("--download")
    if args.part is not None:
        out += ["--part", args.part]
    for item in args.overrides:
        out += ["--set", item]
    if args.max_steps is not None:
        out += ["--max-steps", str(args.max_steps)]
    if args.restart:
        out.append("--restart")
    return out


def _options(args: argparse.Namespace) -> dict[str, object]:
    """The papers' own options that were given (``RunContext.options``)."""
    given = {"fold": args.fold, "folds": args.folds}
    return {k: v for k, v in given.items() if v is not None}


def _overrides(name: str, scale: str, items: list[str]) -> tuple[dict[str, str], object]:
    """(overrides, resolved config) for ``--set`` ``items``; a bad key or value is a UsageError."""
    from paperzoo.experiments.overrides import OverrideError, parse_set
    from paperzoo.experiments.runner import resolve_config

    try:
        overrides = parse_set(items)
        return overrides, resolve_config(name, scale, overrides)
    except OverrideError as err:
        raise UsageError(str(err)) from None


def cmd_config(args: argparse.Namespace) -> int:
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.overrides import config_to_dict

    if args.name not in EXPERIMENTS:
        raise UsageError(f"unknown paper {args.name!r}; known: {', '.join(EXPERIMENTS.names())}")
    _, cfg = _overrides(args.name, args.scale, args.overrides)
    sys.stdout.write(json.dumps(config_to_dict(cfg), indent=2) + "\n")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """``reproduce``; SIGINT / SIGTERM stop it cleanly (models checkpoint, a message says how to
    resume) with exit status 128 + the signal's number (130, 143)."""
    from paperzoo.engine import interrupt

    with interrupt.handling():
        try:
            return _reproduce(args)
        except interrupt.Interrupted as stop:
            sys.stderr.write(
                f"paperzoo: {stop}: the models trained so far are checkpointed; "
                f"resume with:\n  {_resume_command(args)}\n"
            )
            return stop.exit_code


def _default_out(args: argparse.Namespace, name: str) -> Path:
    """Where ``reproduce`` writes when ``--out`` is not given."""
    seeds = args.seeds or [args.seed]
    tag = f"s{seeds[0]}" if args.seeds is None else f"seeds{seeds[0]}-{seeds[-1]}"
    return Path("runs") / f"{name}-{args.scale}-{tag}"


def _resume_command(args: argparse.Namespace) -> str:
    """The command that resumes this ``reproduce`` (the same command, with its ``--out``)."""
    import shlex

    cmd = ["paperzoo", "reproduce", "--all" if args.all else args.name]
    cmd += ["--seeds", ",".join(map(str, args.seeds))] if args.seeds else ["--seed", str(args.seed)]
    if args.jobs > 1:
        cmd += ["--jobs", str(args.jobs)]
    if args.out is not None or not args.all:
        cmd += ["--out", str(args.out if args.out is not None else _default_out(args, args.name))]
    cmd += [a for a in _child_args(args) if a != "--restart"]  # resuming must not start over
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.shard is not None:
        cmd += ["--shard", f"{args.shard[0]}/{args.shard[1]}"]
    if args.quiet:
        cmd.append("--quiet")
    return shlex.join(cmd)


def _reproduce(args: argparse.Namespace) -> int:
    import torch

    from paperzoo.engine import init_distributed, seed_everything
    from paperzoo.engine.precision import default_precision
    from paperzoo.experiments import EXPERIMENTS, RunContext
    from paperzoo.experiments.runner import run_experiment, run_seeds
    from paperzoo.verdict import merge_dirs

    if args.all == bool(args.name):
        raise UsageError("give either a paper NAME or --all")
    names = EXPERIMENTS.names() if args.all else [args.name]
    for n in names:
        if n not in EXPERIMENTS:
            raise UsageError(f"unknown paper {n!r}; known: {', '.join(EXPERIMENTS.names())}")
    if args.data_root is not None and not args.data_root.is_dir():
        if args.data_root.exists() or not args.download:  # --download creates a missing one
            raise UsageError(f"--data-root {args.data_root} is not a directory")
    _check_out_dir(args.out)
    if args.folds and args.data_root is None:
        raise UsageError("--folds reads the official bAbI folds: give --data-root")
    if args.overrides and args.all:
        raise UsageError("--set changes one paper's config: give a paper NAME, not --all")
    overrides = _overrides(args.name, args.scale, args.overrides)[0] if args.name else {}
    seeds = args.seeds or [args.seed]
    multi = args.seeds is not None
    if multi and args.shard is not None:
        raise UsageError("--shard and --seeds don't combine: run each seed's shards, then merge")
    if args.jobs > 1 and not multi:
        raise UsageError("--jobs needs --seeds")
    jobs = min(args.jobs, len(seeds))
    threads = args.threads or max(1, _cores() // jobs)
    if multi and jobs * threads > _cores():
        raise UsageError(
            f"--jobs {jobs} x --threads {threads} exceeds the {_cores()} cores: "
            "processes spinning on shared cores slow every step by up to 50x"
        )
    for name in names:  # before anything is written to --out: data, --dataset, --part
        _check_run(name, args)
    device = _device(args.device)
    dist = init_distributed(device)
    if dist.enabled and device.startswith("cuda"):
        device = f"cuda:{dist.local_rank}"
    not_holding: list[str] = []
    for name in names:
        base = args.out / name if args.all and args.out else args.out
        out = base or _default_out(args, name)
        if multi and not dist.enabled:
            result = run_seeds(
                name,
                seeds,
                out,
                jobs=jobs,
                threads=threads,
                child_args=_child_args(args),
                command=args.command_line,
            )
        else:
            if args.threads:
                torch.set_num_threads(args.threads)
            for seed in seeds:  # under torchrun the seeds run one after another
                seed_everything(seed)
                ctx = RunContext(
                    scale=args.scale,
                    seed=seed,
                    device=device,
                    out_dir=out / f"seed-{seed}" if multi else out,
                    data_root=args.data_root,
                    download=args.download,
                    dataset=args.dataset,
                    quiet=args.quiet,
                    options=_options(args),
                    shard=args.shard,
                    max_steps=args.max_steps,
                    precision=args.precision
                    or default_precision(EXPERIMENTS.create(name).cuda_precision, device),
                    dist=dist,
                    part=args.part,
                    command=args.command_line,
                    restart=args.restart,
                )
                result = run_experiment(name, ctx, overrides)
            if multi and dist.is_main:
                seed_dirs = [out / f"seed-{s}" for s in seeds]
                result = merge_dirs(seed_dirs, out, command=args.command_line)
        if dist.is_main:
            _print_table(result, out)
            not_holding += [
                f"{name}: {c.id} ({c.verdict}{', partial run' if result.partial else ''})"
                for c in result.findings
                if c.verdict not in ("holds", "reported")
            ]
    if not_holding:
        sys.stdout.write("findings that did not hold:\n")
        sys.stdout.write("".join(f"  {line}\n" for line in not_holding))
    return 0


def _check_run(name: str, args: argparse.Namespace) -> None:
    """The checks a run makes before it writes anything (``runner.check_run``): a full run
    without its paper's data, an unsupported ``--dataset`` or an unknown ``--part`` exit 2."""
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import check_run, get_experiment

    ctx = RunContext(
        scale=args.scale,
        data_root=args.data_root,
        download=args.download,
        dataset=args.dataset,
        options=_options(args),
        part=args.part,
    )
    exp = get_experiment(name)
    if args.shard is not None and not exp.has_grid:
        raise UsageError(f"{name} trains no grid of models: --shard does not apply")
    try:
        check_run(exp, ctx)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _print_table(result: Result, out: Path) -> None:
    from paperzoo.report import headline
    from paperzoo.verdict import counts

    w = sys.stdout.write
    seeds = ", ".join(map(str, result.seeds))
    w(f"\n{result.title}  [{result.scale}, seeds {seeds}, {result.wall_seconds:.1f} s]\n")
    w(f"{headline(counts(result, run_dir=out))}\n")
    if result.partial is not None:
        est = result.partial.get("estimate_seconds")
        where = result.partial.get("device")
        w(
            "estimated time of the whole run on "
            + (f"{where}: {_hms(est)} ({est:.0f} s)" if est is not None else f"{where}: unknown")
            + " (loops and steps: report.md)\n"
        )
        priced = _priced_line(result)
        if priced:
            w(priced + "\n")
    w(f"{'claim':<58} {'kind':<7} {'paper':>10} {'ours':>10}  {'target':<22} verdict\n")
    for c in result.claims:
        verdict = (
            c.verdict
            if c.verdict == "reported"
            else f"{c.verdict} ({c.holds_on}/{len(c.per_seed)})"
        )
        w(
            f"{c.id:<58} {c.kind:<7} {_cell(c.paper):>10} {_cell(c.measured):>10}  "
            f"{c.target:<22} {verdict}\n"
        )
    w(f"report: {out / 'report.md'}\n")


def _priced_line(result: Result) -> str | None:
    """A --max-steps run of the full config (no --set, the paper's data, the whole paper): its
    measured estimate beside the priced one (``paperzoo list --json``: ``full_cost``), labelled
    with the device it was measured on; None for any other run."""
    from paperzoo.cost import UTILISATION, cached_costs

    est = result.partial.get("estimate_seconds") if result.partial else None
    cost = cached_costs().get(result.paper)
    if result.scale != "full" or est is None or cost is None or result.part or result.shard:
        return None
    if result.overrides or not result.paper_setting:  # the price is of the paper's own config
        return None
    where = "on the CPU, not comparable" if result.device == "cpu" else f"on {result.device}"
    return (
        f"measured: {est / 3600:.3g} h {where} ({result.precision}) against the priced "
        f"{cost['gpu_hours']:.3g} GPU-hours ({cost['flop']:.2g} FLOP at {UTILISATION:.0%} of one "
        "H100/H200's bf16 peak; paperzoo list --json)"
    )


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def _check_out_dir(out: Path | None) -> None:
    """Fail before any work when ``--out`` (or the first of its parents that exists) is not a
    directory, instead of when the results are written."""
    if out is None:
        return
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == out else f" ({existing} is a file)"
        raise UsageError(f"--out {out} is not a directory{where}")


def cmd_merge(args: argparse.Namespace) -> int:
    from paperzoo.verdict import merge_dirs

    _check_out_dir(args.out)
    out = args.out.resolve()
    for d in args.dirs:
        if d.resolve() == out or out in d.resolve().parents:
            raise UsageError(f"--out {args.out} is one of the runs merged ({d}): choose another")
    try:
        result = merge_dirs(args.dirs, args.out, command=args.command_line)
    except ValueError as err:
        raise UsageError(str(err)) from None
    _print_table(result, args.out)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    from paperzoo.summary import render_summary_html, render_summary_markdown
    from paperzoo.utils.io import atomic_write_text
    from paperzoo.verdict import load_result

    if args.html is not None and args.html.is_dir():
        raise UsageError(f"--html {args.html} is a directory; give a file name")
    try:
        results = [load_result(d) for d in args.dirs]
    except ValueError as err:
        raise UsageError(str(err)) from None
    sys.stdout.write(render_summary_markdown(results, dirs=args.dirs))
    if args.html:
        page = render_summary_html(results, dirs=args.dirs, base=args.html.resolve().parent)
        atomic_write_text(args.html, page)
    return 0


def _bench_dir() -> Path:
    for cand in (Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"):
        if cand.is_dir():
            return cand
    raise UsageError("benchmarks/ not found: run `paperzoo bench` from a source checkout")


BENCH_SCHEMA = "paperzoo-bench/1"


def _bench_ratio(row: dict) -> float:
    """anchor / ours of a row's measured values (lower is better): > 1 means paperzoo is faster."""
    ours, anchor = float(row["values"][row["ours"]]), float(row["values"][row["anchor"]])
    return anchor / ours if ours > 0 else float("inf")


def _bench_machine() -> dict:
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
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _bench_check_target(path: Path) -> None:
    """Fail before hours of benchmarks when --json FILE cannot be written."""
    import os

    if path.is_dir():
        raise UsageError(f"--json {path} is a directory; give a file name")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--json {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--json {path}: {existing} is not writable")


def _bench_result(out: object, name: str) -> dict:
    """A benchmark's returned result, validated, with every row's ratio computed here."""
    if not isinstance(out, dict) or not isinstance(out.get("rows"), list):
        raise TypeError(f"{name}: main() returned {type(out).__name__}, not a result dict")
    out = {**out, "benchmark": name}
    rows = []
    for r in out["rows"]:
        r = dict(r)
        r["ratio"] = _bench_ratio(r)  # computed from the measured values, never taken as given
        rows.append(r)
    out["rows"] = rows
    return out


def _bench_run(script: Path, argv: list[str]) -> dict:
    """Run one benchmark in this process: its ``main(argv)`` returns its result."""
    sys.modules.pop("_common", None)  # the benchmarks' helper, from this benchmarks/ directory
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    try:
        module = runpy.run_path(str(script), run_name=f"paperzoo_bench_{script.stem}")
        if not callable(module.get("main")):
            raise TypeError(f"{script.name} has no main(argv) function")
        return _bench_result(module["main"](list(argv)), script.stem)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        sys.modules.pop("_common", None)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.table is not None:
        if args.json is not None or args.name or args.quick:
            raise UsageError("--table FILE prints the table of an existing report: it runs nothing")
        sys.stdout.write(render_bench_table(_bench_load(args.table)))
        return 0
    if args.json is not None:
        _bench_check_target(args.json)
    import torch

    from paperzoo.utils.io import atomic_write_text

    if args.threads:
        torch.set_num_threads(args.threads)
    bench = _bench_dir()
    scripts = sorted(p for p in bench.glob("*.py") if not p.name.startswith("_"))
    if args.name:
        known = ", ".join(p.stem for p in scripts)
        scripts = [p for p in scripts if p.stem == args.name.replace("-", "_")]
        if not scripts:
            raise UsageError(f"no benchmark {args.name!r} in {bench}; known: {known}")
    argv = (["--threads", str(args.threads)] if args.threads else []) + (
        ["--quick"] if args.quick else []
    )
    report = {
        "schema": BENCH_SCHEMA,
        "machine": _bench_machine(),
        "command": {"name": args.name, "threads": args.threads, "quick": bool(args.quick)},
        "benchmarks": [],
    }
    failed = False
    for script in scripts:
        sys.stdout.write(f"== {script.stem}\n")
        sys.stdout.flush()
        try:
            result = _bench_run(script, argv)
        except Exception as err:  # the other benchmarks still run and are reported
            import traceback

            traceback.print_exc()
            failed = True
            msg = f"{type(err).__name__}: {_one_line(err)}"
            result = {"benchmark": script.stem, "error": msg, "skipped": None, "rows": []}
        used = result.get("threads", {}).get("torch")
        if args.threads and used is not None and used != args.threads:
            log.warning(
                "%s ran on %s torch thread(s), not --threads %s", script.stem, used, args.threads
            )
        report["benchmarks"].append(result)
    if args.json is not None:
        text = json.dumps(report, indent=2, allow_nan=True) + "\n"
        try:
            atomic_write_text(args.json, text)
        except OSError as err:
            sys.stdout.write(text)  # the measurements are not lost
            raise UsageError(f"--json {args.json}: {err} (the report went to stdout)") from None
        sys.stdout.write(f"wrote {args.json}\n")
    return 1 if failed else 0


def _bench_load(path: Path) -> dict:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"--table {path}: {err}") from None
    if not isinstance(report, dict) or report.get("schema") != BENCH_SCHEMA:
        raise UsageError(f"--table {path}: not a `paperzoo bench --json` report")
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
                f"| {_bench_ratio(r):.2f} | {agreed} |"
            )
    if notes:
        lines += ["", *(f"[{i}] {n}" for i, n in enumerate(notes, 1))]
    if others:
        lines += ["", *(f"- {o}" for o in others)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    import shlex

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.command_line = shlex.join(["paperzoo", *argv])
    tune_allocator()  # keep large freed buffers for reuse (see paperzoo.utils.allocator)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "reproduce":
            return cmd_reproduce(args)
        if args.command == "config":
            return cmd_config(args)
        if args.command == "merge":
            return cmd_merge(args)
        if args.command == "summary":
            return cmd_summary(args)
        return cmd_bench(args)
    except UsageError as err:
        sys.stderr.write(f"paperzoo: error: {_one_line(err)}\n")
        return 2
    except Exception as err:
        from paperzoo.data import DataError
        from paperzoo.engine import CheckpointError
        from paperzoo.experiments.runner import SeedRunError

        if isinstance(err, SeedRunError):
            sys.stderr.write(f"paperzoo: error: {err}\n")
            return 1

        if isinstance(err, DataError | CheckpointError | ValueError | KeyError):
            msg = err.args[0] if isinstance(err, KeyError) and err.args else err
            sys.stderr.write(f"paperzoo: error: {_one_line(msg)}\n")
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
