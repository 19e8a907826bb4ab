"""The ``paperzoo`` command: parses the arguments and dispatches to ``list``
(``paperzoo.catalogue``), ``config``, ``reproduce`` (``paperzoo.experiments.request``), ``merge``,
``summary``, ``verify`` (``paperzoo.experiments.verifying``) and ``bench`` (``paperzoo.bench``)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from paperzoo.utils.allocator import tune_allocator

if TYPE_CHECKING:
    from paperzoo.experiments.request import RunRequest
    from paperzoo.verdict import Count, Result

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


def build_parser() -> argparse.ArgumentParser:
    from paperzoo.experiments.flags import add_reproduce_flags, positive

    p = _Parser(prog="paperzoo", description="Reproduce deep-learning papers with one command.")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="papers, their claims (kind, targets per scale) and data")
    ls.add_argument("--json", action="store_true", help="machine-readable (schema in the README)")

    r = sub.add_parser("reproduce", help="train, evaluate and report one paper (or --all)")
    r.add_argument("name", nargs="?", help="paper name (see `paperzoo list`)")
    add_reproduce_flags(r)  # (paperzoo.experiments.flags.REPRODUCE_FLAGS)

    la = sub.add_parser(
        "launch",
        help="every cell of a reproduction (paper x seed x shard) a Slurm job or local process",
        description="Split the reproduction into cells (paper x seed, x shard with --shards), "
        "run each as a Slurm job (requeued after preemption) or a local process, and merge "
        "them as `reproduce --seeds` does. Without NAME: continue the launch in --out DIR "
        "(submit only the cells not done and not queued). docs/cluster.md",
    )
    la.add_argument("names", nargs="*", metavar="NAME", help="paper names (see `paperzoo list`)")
    add_reproduce_flags(la)  # (the cells' reproduce options)
    add_launch_flags(la)

    st = sub.add_parser("status", help="where each cell of a launch stands; what to relaunch")
    st.add_argument("dir", type=Path, help="the --out DIR of `paperzoo launch`")
    st.add_argument("--json", action="store_true", help="machine-readable")

    c = sub.add_parser("config", help="the resolved config of a paper at a scale, as JSON")
    c.add_argument("name", help="paper name (see `paperzoo list`)")
    c.add_argument("--scale", default="quick", choices=("smoke", "quick", "full"))
    c.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")

    m = sub.add_parser("merge", help="combine seed runs (or shards of a grid) into one report")
    m.add_argument("dirs", nargs="+", type=Path, help="output directories of seed runs or shards")
    m.add_argument("--out", type=Path, required=True)

    su = sub.add_parser("summary", help="every paper's finding verdicts in one table")
    su.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        help="run directories (with results.json), or folders of runs (each sub-directory with a "
        "results.json, and those of its validation/ folder: e.g. results/); runs over validation "
        "seeds are named, never shown as verdicts (they chose configs)",
    )
    su.add_argument("--html", type=Path, help="also write a self-contained HTML page here")

    v = sub.add_parser(
        "verify",
        help="re-measure every claim from the final weights stored in a run directory and "
        "compare with its results.json (exit 1: a value differs)",
    )
    v.add_argument("dir", type=Path, help="a run directory, or a --seeds run's (its seed runs too)")

    n = sub.add_parser(
        "new", help="write a package for a paper of your own (docs/your-paper.md), ready to install"
    )
    n.add_argument("name", help="the paper's name (lower case, digits, hyphens), e.g. my-paper")
    n.add_argument("--dir", type=Path, help="where to write it (default: ./NAME; must be new)")

    b = sub.add_parser("bench", help="run benchmarks/ (speed against alternative libraries)")
    b.add_argument("name", nargs="?", help="benchmark name (default: all)")
    b.add_argument(
        "--threads", type=positive, help="threads for every benchmark (passed on as --threads)"
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


def add_launch_flags(la: argparse.ArgumentParser) -> None:
    """The options of ``paperzoo launch`` beside the reproduce options."""
    from paperzoo.experiments.flags import non_negative, positive

    la.add_argument(
        "--executor",
        choices=("slurm", "local"),
        help="where the cells run (default: slurm where sbatch is on the PATH, else local)",
    )
    la.add_argument("--partition", help="Slurm partition (sbatch --partition)")
    la.add_argument("--account", help="Slurm account (sbatch --account)")
    la.add_argument("--qos", help="Slurm quality of service (sbatch --qos)")
    la.add_argument(
        "--slurm-opt",
        dest="slurm_opts",
        action="append",
        type=_slurm_opt,
        default=[],
        metavar="KEY=VALUE",
        help="any other sbatch option for every job (e.g. constraint=a100, time=2:00:00); "
        "it overrides paperzoo's own",
    )
    la.add_argument(
        "--retries",
        type=non_negative,
        help="requeues of a cell that fails (not a preemption, not bad arguments; default 2)",
    )
    la.add_argument(
        "--nodes", type=positive, default=1, help="nodes per cell: torchrun over them (srun)"
    )
    la.add_argument(
        "--gpus-per-node",
        type=non_negative,
        help="GPUs per node (default: 1 for a CUDA run, 0 on the CPU); above 1: torchrun",
    )
    la.add_argument(
        "--shards", type=positive, help="split a paper's grid of models into N cells per seed"
    )
    la.add_argument(
        "--merge",
        action="store_true",
        help="(the launch's merge job) merge the done cells, add the seed rule's next seeds",
    )


def _slurm_opt(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (or a bare ``KEY``) of ``--slurm-opt``, without leading dashes."""
    key, _, value = text.partition("=")
    key = key.strip().lstrip("-")
    if not key or any(c.isspace() for c in key) or "\n" in value:
        raise argparse.ArgumentTypeError(f"--slurm-opt takes KEY=VALUE, got {text!r}")
    return key, value


def cmd_list(args: argparse.Namespace) -> int:
    from paperzoo.catalogue import list_catalogue, render_catalogue

    catalogue = list_catalogue()
    if args.json:
        sys.stdout.write(json.dumps(catalogue, indent=2) + "\n")
        return 0
    sys.stdout.write(render_catalogue(catalogue))
    return 0


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

    request = run_request(args)
    with interrupt.handling():
        try:
            return _reproduce(request)
        except interrupt.Interrupted as stop:
            sys.stderr.write(
                f"paperzoo: {stop}: the models trained so far are checkpointed; "
                f"resume with:\n  {request.resume_command()}\n"
            )
            return stop.exit_code


def run_request(args: argparse.Namespace, names: list[str] | None = None) -> RunRequest:
    """The ``RunRequest`` of parsed ``reproduce`` arguments (of the papers ``names``, else
    ``NAME``); a paper NAME and ``--all`` together (or neither), an unknown paper or another
    paper's option is a ``UsageError``."""
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.experiments.flags import read_flags
    from paperzoo.experiments.request import RunRequest

    names = names or ([args.name] if getattr(args, "name", None) else [])
    if args.all == bool(names):
        raise UsageError("give either a paper NAME or --all")
    names = EXPERIMENTS.names() if args.all else names
    for n in names:
        if n not in EXPERIMENTS:
            raise UsageError(f"unknown paper {n!r}; known: {', '.join(EXPERIMENTS.names())}")
    try:
        values = read_flags(args, names)
    except ValueError as err:
        raise UsageError(str(err)) from None
    return RunRequest(names, command=getattr(args, "command_line", None), **values)  # (main)


def _reproduce(request: RunRequest) -> int:
    not_holding: list[str] = []
    unmeasured: list[str] = []
    for name, result, out in request.run():
        count = _print_table(result, out)
        partial = ", partial run" if result.partial else ""
        not_holding += [
            f"{name}: {c.id} ({c.verdict_text}{partial})"
            for c in count.result.findings
            if c.verdict not in ("holds", "reported")
        ]
        unmeasured += [
            f"{name}: {c.id} ({c.verdict_text})"
            for c in count.result.claims
            if c.kind == "check" and c.verdict == "not measured"
        ]
    if not_holding:
        sys.stdout.write("findings that did not hold:\n")
        sys.stdout.write("".join(f"  {line}\n" for line in not_holding))
    if unmeasured:
        sys.stdout.write("checks not measured:\n")
        sys.stdout.write("".join(f"  {line}\n" for line in unmeasured))
    return 0


def _print_table(result: Result, out: Path) -> Count:
    """Print the run's headline and claims (the decision ``judge`` records in its report); return
    that decision."""
    from paperzoo.experiments.judging import judge

    count = judge(result, out)
    result = count.result
    w = sys.stdout.write
    seeds = ", ".join(map(str, result.seeds))
    w(f"\n{result.title}  [{result.scale}, seeds {seeds}, {result.wall_seconds:.1f} s]\n")
    w(f"{count.headline()}\n")
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
    return count


def _priced_line(result: Result) -> str | None:
    """A --max-steps run of the full config (no --set, the paper's data, the whole paper): its
    measured estimate beside the priced one (``paperzoo list --json``: ``full_cost``), labelled
    with the device it was measured on; None for any other run."""
    from paperzoo.cost import stored_cost
    from paperzoo.experiments import EXPERIMENTS

    est = result.partial.get("estimate_seconds") if result.partial else None
    cost = stored_cost(result.paper) if result.paper in EXPERIMENTS else None
    if result.scale != "full" or est is None or cost is None or result.part or result.shard:
        return None
    if result.overrides or not result.paper_setting:  # the price is of the paper's own config
        return None
    where = "on the CPU, not comparable" if result.device == "cpu" else f"on {result.device}"
    return (
        f"measured: {est / 3600:.3g} h {where} ({result.precision}) against the priced "
        f"{cost['gpu_hours']:.3g} GPU-hours (a lower bound on one H100/H200: "
        f"{cost['kernels_per_step']:,.0f} kernels per step, {cost['flop']:.2g} FLOP; "
        "paperzoo list --json)"
    )


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _cell(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def _check_out_dir(out: Path | None) -> None:
    """Fail before any work when ``--out`` is not a directory (``request.check_out_dir``)."""
    from paperzoo.experiments.request import check_out_dir

    try:
        check_out_dir(out)
    except ValueError as err:
        raise UsageError(str(err)) from None


def cmd_launch(args: argparse.Namespace) -> int:
    """``launch``: start or continue a launch; exit 1 when a local cell failed. SIGINT / SIGTERM
    stop the local cells cleanly (they checkpoint); ``launch --out DIR`` continues them."""
    from paperzoo import launch
    from paperzoo.engine import interrupt
    from paperzoo.launch.state import SlurmOptions

    if args.executor == "slurm" and not launch.slurm.available():
        raise UsageError("--executor slurm: sbatch not found (Slurm is not installed here)")
    given = any(
        v is not None for v in (args.partition, args.account, args.qos, args.retries)
    ) or bool(args.slurm_opts)
    options = SlurmOptions(
        partition=args.partition,
        account=args.account,
        qos=args.qos,
        extra=tuple(args.slurm_opts),
        retries=2 if args.retries is None else args.retries,
    )
    with interrupt.handling():
        try:
            if args.names or args.all:
                progress = _launch_new(args, options)
            else:
                progress = _launch_again(args, options if given else None)
        except launch.LaunchError as err:
            raise UsageError(str(err)) from None
        except interrupt.Interrupted as stop:
            sys.stderr.write(
                f"paperzoo: {stop}: the cells running here are checkpointed; continue with:\n"
                f"  paperzoo launch --out {args.out}\n"
            )
            return stop.exit_code
    root = args.out.resolve()
    sys.stdout.write(launch.describe(progress, root))
    from paperzoo.verdict import load_result

    for out in progress.merged.values():
        _print_table(load_result(out), out)
    return 1 if progress.failed else 0


def _launch_new(args: argparse.Namespace, options: object) -> object:
    """``launch NAME...``: the request of the reproduce options, then ``launch.start``."""
    from paperzoo import launch

    if args.merge:
        raise UsageError("--merge continues a launch: give only --out DIR")
    rule = args.seed is None and args.seeds is None
    if args.seed is None:
        args.seed = 0
    request = run_request(args, names=list(dict.fromkeys(args.names)))
    executor = args.executor or launch.default_executor()
    return launch.start(
        request,
        executor=executor,
        slurm_options=options,  # type: ignore[arg-type]
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        shards=args.shards,
        jobs=args.jobs or 1,
        rule=rule,
    )


def _launch_again(args: argparse.Namespace, options: object) -> object:
    """``launch --out DIR``: continue the launch there with the Slurm options given."""
    from paperzoo import launch
    from paperzoo.experiments.flags import REPRODUCE_FLAGS, Flag

    if args.out is None:
        raise UsageError("give paper NAMEs (or --all), or --out DIR of a launch to continue it")
    ignored = {"out", "jobs", "seed"}
    given = [
        f.flag
        for f in REPRODUCE_FLAGS
        if isinstance(f, Flag) and f.dest not in ignored and f.read(args) != f.default
    ] + [k.removeprefix("option ") for k in vars(args) if k.startswith("option ")]
    if args.seed is not None:
        given.append("--seed")
    if args.shards is not None or args.nodes != 1 or args.gpus_per_node is not None:
        given.append("--shards / --nodes / --gpus-per-node")
    if given:
        raise UsageError(
            f"{given[0]} changes the cells: the launch in {args.out} keeps its own options "
            "(continue it with --out DIR and Slurm options only, or choose another --out)"
        )
    return launch.relaunch(
        args.out,
        executor=args.executor,
        slurm_options=options,  # type: ignore[arg-type]
        jobs=args.jobs or 1,
        merge_job=args.merge,
    )


def cmd_status(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from paperzoo import launch

    try:
        s = launch.status(args.dir)
    except launch.LaunchError as err:
        raise UsageError(str(err)) from None
    if args.json:
        data = asdict(s) | {"root": str(s.root)}
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        sys.stdout.write(launch.render_status(s))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from paperzoo.experiments.merging import merge_dirs

    _check_out_dir(args.out)
    out = args.out.resolve()
    for d in args.dirs:  # (runs inside --out, e.g. OUT/seed-0, are the layout --seeds writes)
        if d.resolve() == out:
            raise UsageError(f"--out {args.out} is one of the runs merged ({d}): choose another")
    from paperzoo.utils.lock import holding

    try:
        with holding(args.out, command=args.command_line):
            result = merge_dirs(args.dirs, args.out, command=args.command_line)
    except ValueError as err:
        raise UsageError(str(err)) from None
    _print_table(result, args.out)
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    from paperzoo.experiments.judging import run_dirs
    from paperzoo.summary import render_summary_html, render_summary_markdown
    from paperzoo.utils.io import atomic_write_text
    from paperzoo.verdict import load_result

    if args.html is not None:
        _check_writable_file(args.html, "--html")
    try:
        dirs = run_dirs(args.dirs)
        results = [load_result(d) for d in dirs]
    except ValueError as err:
        raise UsageError(str(err)) from None
    sys.stdout.write(render_summary_markdown(results, dirs=dirs))
    if args.html:
        page = render_summary_html(results, dirs=dirs, base=args.html.resolve().parent)
        try:
            atomic_write_text(args.html, page)
        except OSError as err:
            raise UsageError(f"--html {args.html} cannot be written: {err.strerror}") from None
    return 0


def _check_writable_file(path: Path, flag: str) -> None:
    """A ``UsageError`` (one line) unless ``path`` can be written as a file: not a directory,
    its folder an existing, writable directory."""
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory; give a file name")
    folder = path.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: its folder {folder} does not exist")


def cmd_verify(args: argparse.Namespace) -> int:
    """``verify DIR``: every differing value on its own line; exit 1 when any differs, 2 when
    DIR cannot be verified."""
    import shlex

    from paperzoo.experiments.verifying import verify_dir
    from paperzoo.utils.lock import holding

    if not args.dir.is_dir():
        raise UsageError(f"{args.dir} is not a directory")

    def request_of(command: str) -> RunRequest:
        argv = shlex.split(command)
        parsed = build_parser().parse_args(argv[1:]) if argv[:1] == ["paperzoo"] else None
        if parsed is None or parsed.command != "reproduce":
            raise ValueError("not a paperzoo reproduce command")
        parsed.command_line = command
        try:
            return run_request(parsed)
        except UsageError as err:
            raise ValueError(str(err)) from None

    with holding(args.dir, command=args.command_line):  # (verify.json is written there)
        outcome = verify_dir(args.dir, request_of)
    for d in outcome.differences:
        sys.stdout.write(d.line() + "\n")
    bad = len(outcome.differences)
    sys.stdout.write(
        f"verify {args.dir}: {outcome.compared} stored values compared with what the stored "
        + (f"weights give: {bad} differ\n" if bad else "weights give: all equal\n")
    )
    return 1 if bad else 0


def cmd_new(args: argparse.Namespace) -> int:
    from paperzoo.scaffold import new_package

    folder = args.dir if args.dir is not None else Path(args.name)
    try:
        written = new_package(args.name, folder)
    except (ValueError, OSError) as err:
        raise UsageError(str(err)) from None
    sys.stdout.write(
        f"wrote {len(written)} files to {folder}/\n"
        f"next: pip install -e '{folder}[test]' && paperzoo reproduce {args.name} --scale smoke\n"
    )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from paperzoo import bench

    if args.table is not None:
        if args.json is not None or args.name or args.quick:
            raise UsageError("--table FILE prints the table of an existing report: it runs nothing")
        sys.stdout.write(bench.render_bench_table(bench.load_report(args.table)))
        return 0
    return bench.run(args.name, threads=args.threads, json_path=args.json, quick=args.quick)


# The modules of the ``paperzoo[repro]`` extra: the reproductions need them, the library does not.
REPRO_MODULES = ("matplotlib", "mlxtend", "PIL", "safetensors", "tqdm")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``paperzoo`` command; a missing reproduction dependency is named in one line."""
    try:
        return _main(argv)
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] not in REPRO_MODULES:
            raise
        sys.stderr.write(
            f"paperzoo: error: {err.name} is not installed; the reproductions need it: "
            "pip install 'paperzoo[repro]'\n"
        )
        return 1


def _main(argv: Sequence[str] | None) -> int:
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
        if args.command == "launch":
            return cmd_launch(args)
        if args.command == "status":
            return cmd_status(args)
        if args.command == "summary":
            return cmd_summary(args)
        if args.command == "new":
            return cmd_new(args)
        if args.command == "verify":
            return cmd_verify(args)
        return cmd_bench(args)
    except UsageError as err:
        sys.stderr.write(f"paperzoo: error: {_one_line(err)}\n")
        return 2
    except Exception as err:
        from paperzoo.data import DataError
        from paperzoo.engine import CheckpointError
        from paperzoo.experiments.request import SeedRunError
        from paperzoo.utils.io import WriteError, is_disk_error

        if isinstance(err, SeedRunError):
            sys.stderr.write(f"paperzoo: error: {err}\n")
            return 1

        if isinstance(err, OSError) and is_disk_error(err):  # a full disk, a read-only folder
            said = err if isinstance(err, WriteError) else f"{err.filename}: {err.strerror}"
            sys.stderr.write(f"paperzoo: error: {_one_line(said)}\n")
            return 2
        if isinstance(err, DataError | CheckpointError | ValueError | KeyError):
            msg = err.args[0] if isinstance(err, KeyError) and err.args else err
            sys.stderr.write(f"paperzoo: error: {_one_line(msg)}\n")
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
