"""Does a run count? One function, ``counts``, answers for ``reproduce``, ``merge``, report.md,
results.json and ``paperzoo summary`` alike: each records or shows the ``Count`` it returns
(``Count.headline``, ``Count.record``, ``Count.why_not_counted``), and none decides on its own.

The verdict layer decides from what it is given: the run, the runs beside it, and what the code
declares for the paper (``Declared``, from a ``Declare`` callable that the run layer supplies:
``paperzoo.experiments.judging.declare``); it imports no experiment, runner or report.

A run's findings count as reproduced only when nothing below stops it, checked in this order
(the first reason found is the one shown):

1. the run's own fields (``own_reason``): a
   partial run (``--max-steps``), a modified config (``--set``), not the scale's own setting, one
   shard or an incomplete set of shards, a mark inherited from the runs it was merged from, a
   smoke run, no clean provenance, seeds that are not a counted seed set;
2. the re-judging against the claims the code declares (``rejudge``): a paper this paperzoo does
   not declare, a config the code no longer declares at that scale, an aggregate whose values,
   seeds or code differ from the seed runs beside it, a value of the wrong type for its target;
3. at quick scale, the thread-count confirmation (``mark_unstable``): a quick verdict counts
   where runs at one and at two threads per process agree; a lone quick run is "not confirmed
   at a second thread count", and a finding whose verdict flips is ``unstable`` and not counted;
4. the validation seeds (``mark_knife_edges``): a finding whose verdict on a run of the same
   paper and scale over validation seeds (100 and up) differs from its verdict here is a
   ``knife edge`` and not counted: another seed draw would read another verdict.

Every verdict is recomputed from the stored per-seed values against the target the code declares
for that claim at that scale (a stored target that differs is flagged and ignored), with the
paper-number status the code declares (an unverified number does not count at full scale; one
quoted from a maintained reimplementation does). See
docs/verdicts.md.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from paperzoo.utils.format import format_number
from paperzoo.verdict.result import (
    ClaimResult,
    Result,
    format_seeds,
    load_result,
    own_reason,
    run_label,
    scale_label,
    seeds_problem,
)
from paperzoo.verdict.targets import VALIDATION_SEEDS_FROM

__all__ = [
    "Count",
    "Declare",
    "Declared",
    "DeclaredClaim",
    "counts",
    "is_validation_run",
    "mark_knife_edges",
    "mark_unstable",
    "rejudge",
    "threads_of",
    "validation_problem",
]

_STOP = "not counted: "  # the prefix of a problem that stops a run from counting
# A run given beside the one judged: its result, and its directory (None: not known).
Twin = Result | tuple[Result, str | Path | None]


@dataclass(frozen=True)
class DeclaredClaim:
    """One claim as the code declares it at one scale."""

    id: str
    statement: str
    paper: float | str | None  # the paper's number
    kind: str  # "finding" or "check"
    target: str  # the target at the scale asked for
    unverified: str | None = None  # why the paper number is not verified (None: verified)
    quoted: str | None = None  # the maintained reimplementation it is quoted from, if any
    # why the finding does not reproduce at this scale: "CAUSE: why" (``validate_diagnosis``)
    diagnosis: str | None = None


@dataclass(frozen=True)
class Declared:
    """What the code declares for one paper at one scale (and part): its claims and config."""

    claims: tuple[DeclaredClaim, ...]
    config: dict[str, Any]  # the scale's config as results.json records one
    # fields added after runs were made -> the value those runs ran with (nested dicts for
    # nested configs); a run that lacks such a field is compared with that value
    ran_before: dict[str, Any] = field(default_factory=dict)


Declare = Callable[[str, str, "str | None"], Declared]
"""``declare(paper, scale, part)``: what the code declares; ``LookupError`` for a paper it does not
declare, ``ValueError`` (one line) for a scale or part it does not."""


@dataclass(frozen=True)
class Count:
    """The answer of ``counts`` for one run.

    Attributes:
        result: the run re-judged against the claims the code declares (``rejudge``).
        reason: why its findings do not count; None when they do.
        reproduced: the findings that count as reproduced (none when the run does not count):
            holding, stable across thread counts and, at full scale, on verified paper numbers.
        holding: findings whose verdict is ``holds``, counted or not.
        unverified: findings that hold but do not count, their paper number unverified.
        unstable: (claim id, every run's verdict and mean) of the findings whose verdict
            differs between thread counts.
        knife_edges: (claim id, its verdict and mean on the validation seeds) of the findings
            whose verdict there differs from the one here.
        flags: what the re-judging found that does not stop the run from counting (a stored
            target that differs from the declared one, a claim no longer declared).
    """

    result: Result
    reason: str | None
    reproduced: tuple[ClaimResult, ...] = ()
    holding: int = 0
    unverified: int = 0
    unstable: tuple[tuple[str, str], ...] = ()
    knife_edges: tuple[tuple[str, str], ...] = ()
    flags: tuple[str, ...] = ()
    consulted: tuple[str, ...] = ()  # the runs beside it that the decision read (where they are)

    @property
    def counted(self) -> bool:
        return self.reason is None

    @property
    def findings(self) -> int:
        """How many findings the run has (the ``n`` of "k of n")."""
        return len(self.result.findings)

    def why_unstable(self, cid: str) -> str | None:
        """Why finding ``cid`` is unstable (every run's verdict); None when it is not."""
        return dict(self.unstable).get(cid)

    def notes(self) -> list[str]:
        """What a counted run's headline adds after its label: the holding findings that do not
        count, by why ("2 more hold on unverified paper numbers", "1 unstable, not counted",
        "2 knife edges, not counted"); a finding both unstable and a knife edge is named once,
        as unstable, so that the numbers add up."""
        out = (
            [f"{self.unverified} more hold on unverified paper numbers"] if self.unverified else []
        )
        if self.unstable:
            out.append(f"{len(self.unstable)} unstable, not counted")
        if edges := len(dict(self.knife_edges).keys() - dict(self.unstable).keys()):
            out.append(f"{edges} knife edge{'s' if edges > 1 else ''}, not counted")
        return out

    def why_knife_edge(self, cid: str) -> str | None:
        """Why finding ``cid`` is a knife edge (its validation verdict); None when it is not."""
        return dict(self.knife_edges).get(cid)

    def why_not_counted(self, cid: str) -> str | None:
        """Why finding ``cid``, holding in a run that counts, is not counted ("unstable: ...",
        "knife edge: ...", "paper number unverified: ..."); None when it counts, or does not
        hold, or the whole run does not count (``reason``)."""
        c = next((c for c in self.result.findings if c.id == cid), None)
        if self.reason is not None or c is None or any(r.id == cid for r in self.reproduced):
            return None
        if (why := self.why_unstable(cid)) is not None:
            return f"unstable: {why}"
        if (why := self.why_knife_edge(cid)) is not None:
            return f"knife edge: {c.verdict} {c.holds_on}/{len(c.per_seed)} here, {why}"
        if c.verdict == "holds" and c.unverified is not None:
            return f"paper number unverified: {c.unverified}"
        return None

    def diagnosis(self, cid: str) -> str | None:
        """Why finding ``cid`` does not reproduce at this scale, as the code declares it ("the
        small scale: ...", "our code: ...", "the paper: ..."); None when it is reproduced here,
        or nothing is declared."""
        c = next((c for c in self.result.findings if c.id == cid), None)
        if c is None or any(r.id == cid for r in self.reproduced):
            return None
        return c.diagnosis

    @property
    def diagnoses(self) -> dict[str, str]:
        """``diagnosis`` of every finding that has one here: claim id -> the text."""
        ids = [c.id for c in self.result.findings]
        return {cid: why for cid in ids if (why := self.diagnosis(cid)) is not None}

    def headline(self) -> str:
        """The one sentence every page gives: "Findings reproduced: k of n (quick, seeds 0-3,
        commit ...; 2 knife edges, not counted)", or "Findings holding: k of n (...; not counted:
        why)" for a run that does not count."""
        label = run_label(self.result)
        if self.reason is None:
            more = "".join(f"; {note}" for note in self.notes())
            return f"Findings reproduced: {len(self.reproduced)} of {self.findings} ({label}{more})"
        return (
            f"Findings holding: {self.holding} of {self.findings} "
            f"({label}; not counted: {self.reason})"
        )

    def record(self) -> dict[str, Any]:
        """The decision as results.json records it (``Result.to_dict(decision)``): the count
        (None when the run does not count), why not, and under ``counting`` the headline, each
        holding finding that does not count and why, the declared diagnosis of each finding not
        reproduced, the flags and the runs consulted."""
        ids = [c.id for c in self.result.findings]
        uncounted = {cid: why for cid in ids if (why := self.why_not_counted(cid)) is not None}
        return {
            "findings_reproduced": f"{len(self.reproduced)}/{self.findings}"
            if self.reason is None
            else None,
            "not_counted": self.reason,
            "counting": {
                "headline": self.headline(),
                "findings_not_counted": uncounted,
                "diagnoses": self.diagnoses,
                "consulted": list(self.consulted),
                "flags": list(self.flags),
            },
        }


def counts(
    result: Result,
    *,
    declare: Declare,
    run_dir: str | Path | None = None,
    twins: Sequence[Twin] | None = None,
    validation: Sequence[Twin] | None = None,
) -> Count:
    """Whether ``result`` counts as a reproduction, why not, and which findings it reproduces.

    Args:
        result: a run as read by ``load_result`` (or as just made).
        declare: what the code declares for a paper at a scale (``Declare``); every run is
            re-judged against it.
        run_dir: its directory: an aggregate's seed runs (``seed_dirs``) are read from there and
            checked against it (None: not checked).
        twins: the runs of the same paper, scale and part given alongside it, each a ``Result``
            or ``(Result, its directory)``; others are ignored, and so is ``result`` itself if
            it is among them. At quick scale they are what confirms the verdicts at a second
            thread count; their order is the one ``unstable`` lists the runs in (``result``
            first where it is not among them). None or empty: a quick run is not confirmed.
        validation: runs over validation seeds, each a ``Result`` or ``(Result, its
            directory)``; those of the same paper and scale (a part run: of its part) that
            nothing else stops from counting decide the knife edges (``mark_knife_edges``).

    Returns:
        The ``Count``: the re-judged result, the reason it does not count (None: it counts), the
        reproduced findings and the rest of what report.md and the summary show.
    """
    judged, problems, reason = _judge(result, run_dir, declare)
    unstable: dict[str, str] = {}
    consulted: list[str] = []
    if reason is None and result.scale == "quick":
        group = []
        for run, where in _group(result, run_dir, twins or ()):
            other = (judged, problems, reason) if run is result else _judge(run, where, declare)
            if other[2] is None:
                group.append((other[0], Path(where).name if where else scale_label(run)))
                if run is not result:
                    consulted.append(_where(run, where, run_dir))
        unstable, reason = mark_unstable(group)
    edges: dict[str, str] = {}
    if reason is None:
        edges, used = _knife_edges(judged, validation or (), declare)
        consulted += [_where(run, where, run_dir) for run, where in used]
    findings = judged.findings
    skip = unstable.keys() | edges.keys()
    reproduced = () if reason else tuple(c for c in judged.reproduced() if c.id not in skip)
    return Count(
        result=judged,
        reason=reason,
        reproduced=reproduced,
        holding=sum(c.verdict == "holds" for c in findings),
        unverified=judged.holding_unverified(),
        unstable=tuple(unstable.items()),
        knife_edges=tuple(edges.items()),
        flags=tuple(p for p in problems if not p.startswith(_STOP)),
        consulted=tuple(consulted),
    )


def _where(run: Result, where: str | Path | None, run_dir: str | Path | None) -> str:
    """A run beside the judged one, named by its directory relative to the judged run's (its
    directory name, or its label, where those are not known)."""
    if where is not None and run_dir is not None:
        return Path(os.path.relpath(where, run_dir)).as_posix()
    return Path(where).name if where is not None else scale_label(run)


def is_validation_run(result: Result) -> bool:
    """Whether ``result`` ran on validation seeds only (``VALIDATION_SEEDS_FROM`` and up)."""
    return bool(result.seeds) and all(s >= VALIDATION_SEEDS_FROM for s in result.seeds)


def mark_knife_edges(
    judged: Result, validation: Sequence[Twin], *, declare: Declare
) -> dict[str, str]:
    """The findings of the re-judged run ``judged`` whose verdict differs on a validation run:
    claim id -> that run's verdict and mean.

    A validation run is used when it is of ``judged``'s paper and scale, of the whole paper or of
    a part that ``judged`` covers (its findings only), and can decide knife edges
    (``validation_problem``). Where several measure a finding, the first that differs counts.
    """
    return _knife_edges(judged, validation, declare)[0]


def _knife_edges(
    judged: Result, validation: Sequence[Twin], declare: Declare
) -> tuple[dict[str, str], list[tuple[Result, str | Path | None]]]:
    """(``mark_knife_edges``, the validation runs used)."""
    edges: dict[str, str] = {}
    used: list[tuple[Result, str | Path | None]] = []
    here = {c.id: c for c in judged.findings}
    for item in validation:
        run, where = item if isinstance(item, tuple) else (item, None)
        if (run.paper, run.scale) != (judged.paper, judged.scale):
            continue
        if run.part is not None and judged.part not in (None, run.part):
            continue
        v, problem = _as_validation(run, where, declare)
        if problem is not None:
            continue
        used.append((run, where))
        label = Path(where).name if where else scale_label(run)
        for c in v.findings:
            mine = here.get(c.id)
            if mine is not None and c.verdict != mine.verdict and c.id not in edges:
                edges[c.id] = (
                    f"{c.verdict} {c.holds_on}/{len(c.per_seed)}, mean "
                    f"{format_number(c.mean, sci_digits=2)} on validation seeds "
                    f"{format_seeds(v.seeds)} ({label})"
                )
    return edges, used


def validation_problem(
    run: Result, where: str | Path | None = None, *, declare: Declare
) -> str | None:
    """Why ``run`` (in ``where``) cannot decide knife edges; None when it can: it ran on
    validation seeds only and nothing but those seeds stops it from counting (its own fields;
    the re-judging: a config the code no longer declares, an aggregate that disagrees with its
    seed runs)."""
    return _as_validation(run, where, declare)[1]


def _as_validation(
    run: Result, where: str | Path | None, declare: Declare
) -> tuple[Result, str | None]:
    """(``run`` re-judged, ``validation_problem``)."""
    if not is_validation_run(run):
        return run, (
            f"seeds {format_seeds(run.seeds)} are not validation seeds "
            f"({VALIDATION_SEEDS_FROM} and up)"
        )
    v, problems = rejudge(run, declare, None if where is None else Path(where))
    stop = [p.removeprefix(_STOP) for p in problems if p.startswith(_STOP)]
    if stop:
        return v, stop[0]
    own = own_reason(v)
    return v, None if own == seeds_problem(v) else own


def _judge(
    result: Result, run_dir: str | Path | None, declare: Declare
) -> tuple[Result, list[str], str | None]:
    """(the re-judged result, its problems, why it does not count before the thread check)."""
    judged, problems = rejudge(result, declare, None if run_dir is None else Path(run_dir))
    stop = [p.removeprefix(_STOP) for p in problems if p.startswith(_STOP)]
    return judged, problems, judged.not_counted_reason() or (stop[0] if stop else None)


def _group(
    result: Result, run_dir: str | Path | None, twins: Sequence[Twin]
) -> list[tuple[Result, str | Path | None]]:
    """``result`` and those of ``twins`` of its paper, scale and part, in the twins' order."""
    pairs = [t if isinstance(t, tuple) else (t, None) for t in twins]
    if not any(run is result for run, _ in pairs):
        pairs.insert(0, (result, run_dir))
    key = (result.paper, result.scale, result.part)
    return [(r, d) for r, d in pairs if (r.paper, r.scale, r.part) == key]


# -- 1. the run's own fields: ``own_reason`` (verdict/result.py) -------------------------------


# -- 2. re-judging: the stored verdicts are not believed --------------------------------------------


def rejudge(
    result: Result, declare: Declare, run_dir: Path | None = None
) -> tuple[Result, list[str]]:
    """``result`` judged again against what the code declares (``declare``), and the problems
    found.

    Each claim's per-seed values are judged against the target the code declares for it at
    the run's scale (and part), with the spec's statement, paper number, ``unverified`` or
    ``quoted`` mark and ``diagnosis``; a stored target that differs is flagged, and so is a stored kind that
    differs (judged as the kind declared: a finding demoted to a check leaves the findings and
    the run still counts). A claim the code no longer declares is dropped (flagged); a
    declared one the run lacks is "not measured". Where ``run_dir`` holds the aggregate's seed
    runs (``seed_dirs``), their values must equal the aggregate's.

    Returns:
        (the re-judged result, one line per problem). Problems that make the run not count
        start with "not counted: " (an unknown paper, an aggregate that disagrees with its
        seed runs); the others are flags shown beside the run.
    """
    problems: list[str] = []
    try:
        declared = declare(result.paper, result.scale, result.part)
    except LookupError:
        return result, [f"not counted: paper {result.paper!r} is not declared by this paperzoo"]
    except ValueError as err:
        return result, [f"not counted: {err}"]
    stored = {c.id: c for c in result.claims}
    n = len(result.seeds)
    claims: list[ClaimResult] = []
    for spec in declared.claims:
        target = spec.target
        old = stored.pop(spec.id, None)
        if old is None:
            problems.append(f"{spec.id}: declared at {result.scale} but not in this run")
            values: list[Any] = [None] * n
            why: list[str | None] | None = ["not in this run"] * n
        else:
            values, why = list(old.per_seed), old.why_not_measured
            if old.target != target:
                problems.append(
                    f"{spec.id}: stored target {old.target!r} is not the declared {target!r} "
                    "(judged against the declared one)"
                )
            if old.kind != spec.kind:
                # judged as declared: a finding now a check leaves the findings (n drops by one,
                # the run still counts); a check now a finding is judged on its stored values
                problems.append(
                    f"{spec.id}: stored as a {old.kind}, declared a {spec.kind} (judged as a "
                    f"{spec.kind})"
                )
        try:
            claims.append(
                ClaimResult(
                    spec.id,
                    spec.statement,
                    spec.paper,
                    values,
                    target,
                    spec.kind,
                    unverified=spec.unverified,
                    quoted=spec.quoted,
                    why_not_measured=why,
                    diagnosis=spec.diagnosis,
                )  # fmt: skip
            )
        except ValueError as err:  # a value of the wrong type for the declared target
            problems.append(f"not counted: {err}")
            return result, problems
    problems += [f"{cid}: stored but no longer declared (not shown)" for cid in stored]
    if not result.overrides and result.config:
        problems += _config_drift(result, declared)
    threads = result.threads
    if run_dir is not None and result.seed_dirs:
        found, threads_seen = _check_against_seeds(result, run_dir)
        problems += found
        if threads is None and len(threads_seen) == 1:  # an aggregate made by merge
            threads = threads_seen.pop()
    return replace(result, claims=claims, threads=threads), problems


def _config_drift(result: Result, declared: Declared) -> list[str]:
    """``not counted: ...`` when a field the run recorded differs from the config the code now
    declares at its scale: it ran another protocol (e.g. restarts that became a variant). Fields
    added after the run, at any depth of a nested config, are not compared (the run could not
    record them); nor are fields the code no longer has."""
    changed = _changed_fields(result.config, declared.config, declared.ran_before)
    if not changed:
        return []
    shown = ", ".join(
        f"{k} {json.dumps(old)[:40]} -> {json.dumps(new)[:40]}" for k, old, new in changed[:3]
    )
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return [
        f"not counted: it ran a {result.scale} config the code no longer declares ({shown}{more})"
    ]


def _changed_fields(
    stored: Any, current: Any, before: dict[str, Any] | None = None, prefix: str = ""
) -> list[tuple[str, Any, Any]]:
    """(dotted field, recorded value, declared value) of every recorded field whose value the
    declared config gives otherwise; nested configs are compared field by field. A declared field
    the run lacks is compared with the value runs made before it ran with (``before``:
    ``Declared.ran_before``), else not at all."""
    before = before or {}
    out: list[tuple[str, Any, Any]] = []
    for k, new in current.items():
        if k not in stored:
            if k in before and not isinstance(before[k], dict):
                old = before[k]
                if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
                    out.append((f"{prefix}{k} (not recorded)", old, new))
            continue
        old = stored[k]
        if isinstance(old, dict) and isinstance(new, dict):
            nested = before.get(k) if isinstance(before.get(k), dict) else None
            out += _changed_fields(old, new, nested, f"{prefix}{k}.")
        elif json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
            out.append((f"{prefix}{k}", old, new))
    return out


def _check_against_seeds(result: Result, run_dir: Path) -> tuple[list[str], set[int | None]]:
    """Problems (``not counted: ...``) where an aggregate's per-seed values, seeds or code
    differ from the seed runs it lists; and the thread counts its seed runs were made at."""
    values: dict[str, list[Any]] = {c.id: [] for c in result.claims}
    seeds: list[int] = []
    threads: set[int | None] = set()
    for d in result.seed_dirs:
        try:
            run = load_result(run_dir / d)
        except ValueError as err:
            return [f"not counted: its seed run {d} cannot be read ({err})"], threads
        if (run.commit, run.source_sha256) != (result.commit, result.source_sha256):
            return [f"not counted: its seed run {d} is of other code ({run.commit})"], threads
        threads.add(threads_of(run))
        seeds += run.seeds
        got = {c.id: c.per_seed for c in run.claims}
        for cid, vals in values.items():
            vals += got.get(cid, [None] * len(run.seeds))
    if seeds != list(result.seeds):
        return [f"not counted: seeds {result.seeds} but its seed runs hold {seeds}"], threads
    for c in result.claims:
        if _canon(values[c.id]) != _canon(c.per_seed):
            why = f"not counted: {c.id} per seed {c.per_seed} but its seed runs say {values[c.id]}"
            return [why], threads
    return [], threads


def _canon(values: list[Any]) -> list[Any]:
    return [None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
            for v in values]  # fmt: skip


# -- 3. the thread-count confirmation of quick runs -------------------------------------------------


def threads_of(result: Result) -> int | None:
    """Torch threads per process of a run: recorded (``threads``) or read from its command's
    ``--threads N``; None when unknown."""
    if result.threads is not None:
        return result.threads
    words = (result.command or "").split()
    for i, w in enumerate(words[:-1]):
        if w == "--threads" and words[i + 1].isdigit():
            return int(words[i + 1])
        if w.startswith("--threads="):
            return int(w.split("=", 1)[1]) if w.split("=", 1)[1].isdigit() else None
    return None


def mark_unstable(runs: Sequence[tuple[Result, str]]) -> tuple[dict[str, str], str | None]:
    """Compare the verdicts of quick runs of one paper (and part) made at different thread
    counts: (claim id -> why it is unstable, a reason none counts or None).

    Args:
        runs: (re-judged result, a label such as its directory name) of the runs that count
            otherwise.

    Returns:
        The findings whose verdict differs between the runs, each with every run's verdict and
        mean; and, when the runs do not cover two thread counts, why none of them counts.
    """
    threads = {threads_of(r) for r, _ in runs}
    if len(threads - {None}) < 2:
        known = ", ".join(f"{t} thread{'s' if t != 1 else ''}" for t in sorted(threads - {None}))
        return {}, (
            "not confirmed at a second thread count (a quick verdict counts where runs at one "
            f"and at two threads per process agree; given: {known or 'thread count unknown'})"
        )
    unstable: dict[str, str] = {}
    ids = dict.fromkeys(c.id for r, _ in runs for c in r.findings)
    for cid in ids:
        cells = [
            (r, label, next((c for c in r.findings if c.id == cid), None)) for r, label in runs
        ]
        verdicts = {c.verdict if c else None for _, _, c in cells}
        if len(verdicts) > 1:
            unstable[cid] = "; ".join(
                f"{c.verdict} {c.holds_on}/{len(c.per_seed)}, mean "
                f"{format_number(c.mean, sci_digits=2)} "
                f"at {threads_of(r)} thread{'s' if threads_of(r) != 1 else ''} ({label})"
                if c else f"absent ({label})"
                for r, label, c in cells
            )  # fmt: skip
    return unstable, None
