"""The options of ``paperzoo reproduce``, declared once: ``REPRODUCE_FLAGS``.

Each entry of the table (a ``Flag``) says how its option is parsed and shown in ``--help``, and
what becomes of its value: whether the run sees it (a ``RunContext`` field of the same name),
whether each seed's process of a multi-seed run repeats it, whether the command that resumes an
interrupted run repeats it, and whether it is part of the run's identity in ``run.json``. The
``reproduce`` parser (``add_reproduce_flags``), the ``RunRequest`` (its values by ``dest``), the
``RunContext`` of each run, the seed processes' command lines, the resume command and
``run.json`` are all made from this table, in its order: a new option is one entry.

The papers' own options (``Experiment.options``, e.g. GG-NN's ``--folds``) take the place of the
``PaperOptions`` entry: they are repeated for the seeds of the paper declaring them and in the
resume command, reach that paper's run as ``RunContext.options`` and are recorded under
``options`` in ``run.json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paperzoo.experiments.base import Option, RunContext

MAX_SEEDS = 1000  # one process per seed: more is a typo (0-30000 for 0-3), not a plan


# -- value types (argparse ``type``: a bad value is an ``ArgumentTypeError``) --------------------


def shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N) with 0 <= K < N."""
    try:
        k, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N (e.g. 0/4), got {text!r}") from None
    if not (n >= 1 and 0 <= k < n):
        raise argparse.ArgumentTypeError(f"--shard K/N needs 0 <= K < N, got {text!r}")
    return k, n


def seed_list(text: str) -> list[int]:
    """``0-3``, ``0,2,5`` or ``0-3,7`` -> sorted distinct seeds (at most ``MAX_SEEDS``)."""
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


def precision(text: str) -> str:
    """One of ``paperzoo.engine.precision.PRECISIONS``."""
    from paperzoo.engine.precision import PRECISIONS

    if text not in PRECISIONS:
        raise argparse.ArgumentTypeError(f"--precision takes {', '.join(PRECISIONS)}, got {text!r}")
    return text


def _integer(text: str, least: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if v < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}, got {v}")
    return v


def non_negative(text: str) -> int:
    """An integer >= 0."""
    return _integer(text, 0)


def positive(text: str) -> int:
    """An integer >= 1."""
    return _integer(text, 1)


# -- the table's entries ----------------------------------------------------------------------


class _Always:
    def __repr__(self) -> str:
        return "ALWAYS"


ALWAYS: Any = _Always()  # ``Flag.absent_when``: the key is always in run.json


@dataclass(frozen=True)
class Flag:
    """One option of ``paperzoo reproduce``.

    Args:
        flag: the option, e.g. ``"--data-root"``.
        help: one line for ``--help`` (None: none).
        parse: turns the command-line text into the value (argparse ``type``); None: the option
            is a switch (``True`` when given).
        unparse: turns the value back into command-line text for the seeds and the resume
            command (default ``str``).
        exclusive: a group name; options of one group cannot be given together.
        dest: the value's name in the ``RunRequest`` (and ``RunContext``); default: the flag
            without dashes, ``-`` as ``_``.
        default: the value when the option is not given (default None; a switch: False, a
            repeated option: ``()``).
        choices: the values allowed.
        metavar: the value's name in ``--help`` (default: ``DEST``).
        repeated: the option may be given several times; its value is the tuple of the values
            in order.
        seeds: each seed's process of a multi-seed run repeats it.
        resume: the command that resumes an interrupted run repeats it.
        context: the run sees it: ``RunContext`` has a field ``dest`` that gets the value.
        record: part of the run's identity in ``run.json`` (a resumed run must match it):
            ``True`` records the value as given, a callable records what it returns for the
            run's ``RunContext`` (the value the run used, in JSON form); False: not recorded.
        absent_when: the recorded value at which ``run.json`` leaves the key out, so that the
            records of runs made before the option existed still match (``ALWAYS``: never).
    """

    flag: str
    help: str | None = None
    parse: Callable[[str], Any] | None = None
    unparse: Callable[[Any], str] = str
    exclusive: str | None = None
    _: KW_ONLY
    dest: str = ""
    default: Any = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    repeated: bool = False
    seeds: bool = False
    resume: bool = False
    context: bool = False
    record: bool | Callable[[RunContext], Any] = False
    absent_when: Any = ALWAYS

    def __post_init__(self) -> None:
        if not self.flag.startswith("--"):
            raise ValueError(f"a reproduce option starts with --, got {self.flag!r}")
        if not self.dest:
            object.__setattr__(self, "dest", self.flag.lstrip("-").replace("-", "_"))
        if self.default is None and (self.repeated or self.parse is None):
            object.__setattr__(self, "default", () if self.repeated else False)
        if self.repeated and self.parse is None:
            raise ValueError(f"{self.flag}: a repeated option takes a value (parse)")

    def add_to(self, parser: argparse.ArgumentParser, groups: dict[str, Any]) -> None:
        """Add the option to ``parser`` (to its mutually exclusive group ``exclusive``, made
        once and kept in ``groups``)."""
        kwargs: dict[str, Any] = {"dest": self.dest, "help": self.help}
        if self.parse is None:
            kwargs |= {"action": "store_true", "default": bool(self.default)}
        else:
            kwargs |= {"type": self.parse, "default": None if self.repeated else self.default}
            if self.repeated:
                kwargs["action"] = "append"  # (argparse appends to a copy of a list default)
            if self.choices is not None:
                kwargs["choices"] = self.choices
            if self.metavar is not None:
                kwargs["metavar"] = self.metavar
        _target(parser, groups, self.exclusive).add_argument(self.flag, **kwargs)

    def read(self, args: argparse.Namespace) -> Any:
        """The option's value in parsed ``args`` (a repeated one as a tuple)."""
        value = getattr(args, self.dest)
        return tuple(value or ()) if self.repeated else value

    def argv(self, value: Any) -> list[str]:
        """The command-line words that give ``value`` again; none for None, False or ``()``."""
        if value is None or value is False:
            return []
        if self.parse is None:
            return [self.flag]
        if self.repeated:
            return [word for item in value for word in (self.flag, self.unparse(item))]
        return [self.flag, self.unparse(value)]

    def recorded(self, ctx: RunContext) -> Any:
        """The value ``run.json`` records for the run of ``ctx`` (``record``)."""
        if callable(self.record):
            return self.record(ctx)
        return _json(ctx.flags.get(self.dest, self.default))


@dataclass(frozen=True)
class PaperOptions:
    """The place of the papers' own options (``Experiment.options``) in the table: they reach
    the run of a paper declaring them as ``RunContext.options`` (by ``Option.dest``), are
    repeated for its seeds and in the resume command, and are recorded under ``options``."""

    dest: str = "options"
    seeds: bool = True
    resume: bool = True
    context: bool = False  # (``RunContext.options`` holds one paper's options: ``given``)
    record: bool = True
    absent_when: Any = ALWAYS

    def add_to(self, parser: argparse.ArgumentParser, groups: dict[str, Any]) -> None:
        """Add every registered paper's options; those of one ``exclusive`` group cannot be
        given together. A given option's value is kept under ``option FLAG``."""
        for flag, (opt, papers) in paper_options().items():
            target = _target(parser, groups, opt.exclusive)
            kwargs: dict[str, Any] = {"dest": f"option {flag}", "default": argparse.SUPPRESS}
            if opt.parse is None:
                kwargs["action"] = "store_true"
            else:
                kwargs |= {"type": _option_type(opt.parse), "metavar": opt.dest.upper()}
            target.add_argument(flag, help=f"{', '.join(papers)} only: {opt.help}", **kwargs)

    def read(self, args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
        """The papers' options given in ``args``, by flag.

        Raises:
            ValueError: an option that no paper of ``names`` declares.
        """
        given: dict[str, Any] = {}
        for flag, (_, papers) in paper_options().items():
            if f"option {flag}" not in vars(args):
                continue
            if not set(papers) & set(names):
                raise ValueError(f"{flag} is an option of {', '.join(papers)}, not of {names[0]}")
            given[flag] = getattr(args, f"option {flag}")
        return given

    @staticmethod
    def given(options: Mapping[str, Any], name: str | None) -> list[tuple[Option, Any]]:
        """The options in ``options`` (by flag) with their values: those paper ``name`` declares,
        in its order; with ``name`` None every given one, in the papers' order."""
        if name is None:
            found = paper_options()
            return [(found[flag][0], options[flag]) for flag in found if flag in options]
        from paperzoo.experiments.lookup import get_experiment

        return [(o, options[o.flag]) for o in get_experiment(name).options if o.flag in options]

    def argv(self, options: Mapping[str, Any], name: str | None) -> list[str]:
        """The words that give ``options`` again (see ``given``)."""
        return [word for opt, value in self.given(options, name) for word in opt.argv(value)]

    def recorded(self, ctx: RunContext) -> Any:
        """The paper's options the run of ``ctx`` was given, by ``Option.dest``."""
        return {k: _json(v) for k, v in ctx.options.items()}


def paper_options() -> dict[str, tuple[Option, tuple[str, ...]]]:
    """Every registered paper's own options by flag: (the option, the papers declaring it), in
    the papers' name order and each paper's declaration order."""
    from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment

    found: dict[str, tuple[Option, tuple[str, ...]]] = {}
    for name in EXPERIMENTS.names():
        for opt in get_experiment(name).options:
            first, papers = found.get(opt.flag, (opt, ()))
            found[opt.flag] = (first, (*papers, name))
    return found


def _target(parser: argparse.ArgumentParser, groups: dict[str, Any], exclusive: str | None) -> Any:
    """``parser``, or its mutually exclusive group ``exclusive`` (made once, kept in
    ``groups``)."""
    if exclusive is None:
        return parser
    if exclusive not in groups:
        groups[exclusive] = parser.add_mutually_exclusive_group()
    return groups[exclusive]


def _option_type(parse: Callable[[str], object]) -> Callable[[str], object]:
    """``parse`` for argparse: its ``ValueError`` is the one-line usage error."""

    def option_type(text: str) -> object:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return option_type


def _json(value: Any) -> Any:
    """``value`` as run.json holds it (tuples as lists, paths as strings)."""
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    return str(value) if isinstance(value, Path) else value


def _resolved(path: Path | None) -> str | None:
    return str(Path(path).resolve()) if path is not None else None


# -- the table --------------------------------------------------------------------------------

# In this order the options are listed by --help and repeated by the seeds and the resume command.
# Some are written by ``RunRequest.child_argv`` / ``resume_command`` themselves (seeds: False,
# resume: False below): --all, --seed, --seeds, --jobs and --out (each seed has its own seed,
# --out and --threads; the resume command names the seeds and the --out the run wrote to).
REPRODUCE_FLAGS: tuple[Flag | PaperOptions, ...] = (
    Flag("--all", "every paper, one after another"),
    Flag(
        "--seed",
        "one seed (default: at quick scale the seed rule's seeds 0-3, then 4-7 and 8-15 while a "
        "finding is inconclusive; else 0)",
        non_negative,
        exclusive="seed",
    ),
    Flag(
        "--seeds",
        "exactly these seeds (0-3, 0,2,5): one process each, aggregated",
        seed_list,
        exclusive="seed",
    ),
    Flag(
        "--jobs",
        "seed processes run at once (default: 1 with --seeds; the cores under the seed rule)",
        positive,
    ),
    Flag("--out", "output directory (default runs/NAME-SCALE-sSEED, -seedsA-B or -looks)", Path),
    Flag(
        "--scale",
        parse=str,
        default="quick",
        choices=("smoke", "quick", "full"),
        seeds=True,
        resume=True,
        context=True,
        record=lambda ctx: ctx.scale,
    ),
    PaperOptions(),
    Flag(
        "--dataset",
        "data set to use (default: the paper's embedded source)",
        str,
        seeds=True,
        resume=True,
        context=True,
        # (run.json records the data set the run reads: ``runner.run_spec``)
    ),
    Flag(
        "--data-root",
        "directory with real data in standard layouts",
        Path,
        seeds=True,
        resume=True,
        context=True,
        record=lambda ctx: _resolved(ctx.data_root),
    ),
    Flag(
        "--device",
        "cpu, cuda or cuda:N (default: cuda if present)",
        str,
        seeds=True,
        resume=True,
    ),
    Flag(
        "--precision",
        "fp32, tf32 (CUDA matmuls and convolutions in TF32) or bf16 (the models' forward "
        "passes under bf16 autocast); default: fp32 on the CPU, on CUDA the paper's own choice "
        "(`paperzoo list --json`: cuda_precision)",
        precision,
        seeds=True,
        resume=True,
        # the run's precision (the paper's default where not given): ``RunRequest.context``
        record=lambda ctx: ctx.precision,
        absent_when="fp32",
    ),
    Flag(
        "--download",
        "fetch missing files (SHA-256 checked)",
        seeds=True,
        resume=True,
        context=True,
    ),
    Flag(
        "--part",
        "run one part of the paper (e.g. wrm's spheres; see `paperzoo list`): its findings "
        "count for that part only",
        str,
        seeds=True,
        resume=True,
        context=True,
        record=lambda ctx: ctx.part,
        absent_when=None,
    ),
    Flag(
        "--set",
        "change a config field (dotted for nested ones; see `paperzoo config NAME`)",
        str,
        dest="overrides",
        metavar="KEY=VALUE",
        repeated=True,
        seeds=True,
        resume=True,
        # (run.json records the config they make: ``runner.run_spec``)
    ),
    Flag(
        "--max-steps",
        "stop every training loop after N steps and estimate the whole run's time on "
        "this device (verdicts marked partial)",
        positive,
        metavar="N",
        seeds=True,
        resume=True,
        context=True,
        record=lambda ctx: ctx.max_steps,
        absent_when=None,
    ),
    Flag(
        "--restart",
        "start over: clear what an earlier run left in --out (a run resumes only with the "
        "code and data that started it)",
        seeds=True,
        context=True,
    ),
    Flag(
        "--tensorboard",
        "also write TensorBoard event files of every training loop (OUT/.../tensorboard; needs "
        "the tensorboard package)",
        seeds=True,
        resume=True,
        context=True,
    ),
    Flag(
        "--threads",
        "torch intra-op threads of each run (default: with several seeds, the cores divided "
        "among the seed processes running at once, each one's OMP_NUM_THREADS and "
        "MKL_NUM_THREADS set to it over the caller's; with one seed, torch's own default, "
        "which follows OMP_NUM_THREADS)",
        positive,
        resume=True,
    ),
    Flag(
        "--shard",
        "K/N: run only slice K of N of a model grid",
        shard,
        unparse=lambda kn: f"{kn[0]}/{kn[1]}",
        resume=True,
        context=True,
        record=lambda ctx: list(ctx.shard) if ctx.shard else None,
    ),
    Flag("--quiet", "no progress bars", resume=True, context=True),
)


def flag_defaults() -> dict[str, Any]:
    """Every option's value when not given, by ``dest`` (the papers' options: none given)."""
    return {f.dest: {} if isinstance(f, PaperOptions) else f.default for f in REPRODUCE_FLAGS}


def add_reproduce_flags(parser: argparse.ArgumentParser) -> None:
    """Add the table's options to the ``reproduce`` parser, in the table's order."""
    groups: dict[str, Any] = {}  # exclusive group name -> its argparse group
    for f in REPRODUCE_FLAGS:
        f.add_to(parser, groups)


def read_flags(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """Every option's value in parsed ``args`` by ``dest``, for a run of the papers ``names``.

    Raises:
        ValueError: a paper's option that no paper of ``names`` declares.
    """
    return {
        f.dest: f.read(args, names) if isinstance(f, PaperOptions) else f.read(args)
        for f in REPRODUCE_FLAGS
    }


def flag_argv(
    values: Mapping[str, Any], which: Callable[[Flag | PaperOptions], bool], name: str | None
) -> Iterator[str]:
    """The words that repeat the options ``which`` selects (``seeds`` or ``resume``) with
    ``values`` (by ``dest``), in the table's order; the papers' options: those of paper
    ``name`` (None: every given one)."""
    for f in REPRODUCE_FLAGS:
        if which(f):
            value = values.get(f.dest, {} if isinstance(f, PaperOptions) else f.default)
            yield from f.argv(value, name) if isinstance(f, PaperOptions) else f.argv(value)


def recorded_flags(ctx: RunContext) -> dict[str, Any]:
    """The options that are part of the run's identity in ``run.json``, for the run of
    ``ctx``: ``{dest: value}`` (keys whose value is their ``absent_when`` left out)."""
    record: dict[str, Any] = {}
    for f in REPRODUCE_FLAGS:
        if f.record:
            value = f.recorded(ctx)
            if f.absent_when is ALWAYS or value != f.absent_when:
                record[f.dest] = value
    return record


def context_flags(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``RunContext`` fields the options give (``context``), from ``values`` by ``dest``."""
    return {f.dest: values[f.dest] for f in REPRODUCE_FLAGS if f.context}
