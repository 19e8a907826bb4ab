"""The ``paperzoo`` command: list, reproduce, merge, bench."""

from __future__ import annotations

import argparse
import json
import logging
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from paperzoo.utils.allocator import tune_allocator

log = logging.getLogger("paperzoo")


class UsageError(Exception):
    """Bad arguments or unusable data: reported as one line, exit code 2."""


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N (e.g. 0/4), got {text!r}") from None
    if not (n >= 1 and 0 <= k < n):
        raise argparse.ArgumentTypeError(f"--shard K/N needs 0 <= K < N, got {text!r}")
    return k, n


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="paperzoo", description="Reproduce deep-learning papers with one command."
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="papers, their claims, scales and data sources")

    r = sub.add_parser("reproduce", help="train, evaluate and report one paper (or --all)")
    r.add_argument("name", nargs="?", help="paper name (see `paperzoo list`)")
    r.add_argument("--all", action="store_true", help="every paper, one after another")
    r.add_argument("--scale", default="quick", choices=("smoke", "quick", "full"))
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", type=Path, help="output directory (default runs/NAME-SCALE-sSEED)")
    r.add_argument("--dataset", help="data set to use (default: the paper's embedded source)")
    r.add_argument("--data-root", type=Path, help="directory with real data in standard layouts")
    r.add_argument("--download", action="store_true", help="fetch missing files (SHA-256 checked)")
    r.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")
    r.add_argument("--threads", type=_positive, help="torch intra-op threads (default: torch's)")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--fold", type=_positive, default=1, help="bAbI fold of the official files")
    r.add_argument("--shard", type=_shard, help="K/N: run only slice K of N of a model grid")

    m = sub.add_parser("merge", help="combine the results of shards into one report")
    m.add_argument("dirs", nargs="+", type=Path, help="output directories of the shards")
    m.add_argument("--out", type=Path, required=True)

    b = sub.add_parser("bench", help="run benchmarks/ (speed against alternative libraries)")
    b.add_argument("name", nargs="?", help="benchmark name (default: all)")
    b.add_argument("--threads", type=_positive)
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


def cmd_list() -> int:
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.runner import get_experiment

    for name in EXPERIMENTS.names():
        exp = get_experiment(name)
        data = ", ".join(exp.datasets) if exp.datasets else "generated"
        sys.stdout.write(f"{name}: {exp.title}\n  data: {data}; scales: smoke, quick, full\n")
        for c in exp.claims:
            sys.stdout.write(f"  - {c.id}  [{c.target}]  {c.statement}\n")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import torch

    from paperzoo.engine import init_distributed, seed_everything
    from paperzoo.experiments import EXPERIMENTS, RunContext
    from paperzoo.experiments.runner import run_experiment

    if args.all == bool(args.name):
        raise UsageError("give either a paper NAME or --all")
    names = EXPERIMENTS.names() if args.all else [args.name]
    for n in names:
        if n not in EXPERIMENTS:
            raise UsageError(f"unknown paper {n!r}; known: {', '.join(EXPERIMENTS.names())}")
    if args.data_root is not None and not args.data_root.is_dir() and not args.download:
        raise UsageError(f"--data-root {args.data_root} is not a directory")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = _device(args.device)
    dist = init_distributed(device)
    if dist.enabled and device.startswith("cuda"):
        device = f"cuda:{dist.local_rank}"
    failed = []
    for name in names:
        seed_everything(args.seed)
        out = args.out if args.out and not args.all else None
        if args.all and args.out:
            out = args.out / name
        out = out or Path("runs") / f"{name}-{args.scale}-s{args.seed}"
        ctx = RunContext(
            scale=args.scale,
            seed=args.seed,
            device=device,
            out_dir=out,
            data_root=args.data_root,
            download=args.download,
            dataset=args.dataset,
            quiet=args.quiet,
            fold=args.fold,
            shard=args.shard,
            dist=dist,
        )
        result = run_experiment(name, ctx)
        if dist.is_main:
            _print_table(result.to_dict(), out)
            if not result.all_hold:
                failed.append(name)
    if failed:
        log.warning("claims that did not hold (see the reports): %s", ", ".join(failed))
    return 0


def _print_table(res: dict, out: Path) -> None:
    w = sys.stdout.write
    w(f"\n{res['title']}  [{res['scale']}, {res['wall_seconds']} s]\n")
    w(f"{'claim':<58} {'paper':>10} {'ours':>10}  {'target':<22} holds\n")
    for c in res["claims"]:
        holds = {True: "yes", False: "NO", None: "-"}[c["holds"]]
        paper, ours = c["paper"], c["measured"]
        w(f"{c['id']:<58} {_cell(paper):>10} {_cell(ours):>10}  {c['target']:<22} {holds}\n")
    w(f"report: {out / 'report.md'}\n")


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def cmd_merge(args: argparse.Namespace) -> int:
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import build_result, get_experiment
    from paperzoo.report import write_report

    results = []
    for d in args.dirs:
        path = d / "results.json"
        try:
            results.append(json.loads(path.read_text()))
        except FileNotFoundError:
            raise UsageError(f"{path} not found") from None
        except json.JSONDecodeError as err:
            raise UsageError(f"{path} is not valid JSON: {err}") from None
    papers = {r.get("paper") for r in results}
    scales = {r.get("scale") for r in results}
    if len(papers) != 1 or len(scales) != 1:
        raise UsageError(f"shards must come from one paper and scale, got {papers} / {scales}")
    exp = get_experiment(papers.pop())
    ctx = RunContext(scale=scales.pop(), seed=results[0].get("seed", 0), out_dir=args.out)
    outcome = exp.merge(results, ctx)
    wall = sum(float(r.get("wall_seconds", 0.0)) for r in results)
    result = build_result(exp, outcome, ctx, wall)
    write_report(result, args.out)
    _print_table(result.to_dict(), args.out)
    return 0


def _bench_dir() -> Path:
    for cand in (Path.cwd() / "benchmarks", Path(__file__).resolve().parents[2] / "benchmarks"):
        if cand.is_dir():
            return cand
    raise UsageError("benchmarks/ not found: run `paperzoo bench` from a source checkout")


def cmd_bench(args: argparse.Namespace) -> int:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    bench = _bench_dir()
    scripts = sorted(p for p in bench.glob("*.py") if not p.name.startswith("_"))
    if args.name:
        scripts = [p for p in scripts if p.stem == args.name.replace("-", "_")]
        if not scripts:
            raise UsageError(f"no benchmark {args.name!r} in {bench}")
    saved_argv = sys.argv
    try:
        for script in scripts:
            sys.stdout.write(f"== {script.stem}\n")
            sys.stdout.flush()
            sys.argv = [str(script)]  # the benchmark parses its own (default) arguments
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved_argv
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    tune_allocator()  # keep large freed buffers for reuse (see paperzoo.utils.allocator)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command == "list":
            return cmd_list()
        if args.command == "reproduce":
            return cmd_reproduce(args)
        if args.command == "merge":
            return cmd_merge(args)
        return cmd_bench(args)
    except UsageError as err:
        sys.stderr.write(f"paperzoo: error: {err}\n")
        return 2
    except Exception as err:
        from paperzoo.data import DataError
        from paperzoo.engine import CheckpointError

        if isinstance(err, DataError | CheckpointError | ValueError | KeyError):
            msg = err.args[0] if isinstance(err, KeyError) and err.args else err
            sys.stderr.write(f"paperzoo: error: {msg}\n")
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
