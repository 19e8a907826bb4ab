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
   smoke run, no clean provenance, seeds that are not a counted seed set (a look of the seed
   rule at quick scale);
2. the re-judging against the claims the code declares (``rejudge``): a paper this paperzoo does
   not declare, a config the code no longer declares at that scale, an aggregate whose values,
   seeds or code differ from the seed runs beside it, a value of the wrong type for its target.

Every verdict is recomputed from the stored per-seed values (``paperzoo.verdict.intervals``),
against the target the run stored: a target, level or seed rule fixed before the run. Where the
code now declares another target for a claim, or another seed rule, the claim is judged against
what the run stored and does not count ("target changed after the run: ...; rerun to count"),
looser or stricter alike. The paper-number status is the one the code declares (an unverified
number does not count at full scale; one quoted from a maintained reimplementation does). See
docs/verdicts.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from paperzoo.verdict.intervals import ALPHA, LEVEL, LOOKS, SEED_RULE
from paperzoo.verdict.result import (
    ClaimResult,
    Result,
    format_seeds,
    load_result,
    run_label,
)
from paperzoo.verdict.targets import VALIDATION_SEEDS_FROM

__all__ = [
    "Count",
    "Declare",
    "Declared",
    "DeclaredClaim",
    "counts",
    "is_validation_run",
    "rejudge",
    "rule_text",
    "threads_of",
]

_STOP = "not counted: "  # the prefix of a problem that stops a run from counting


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
            holding, judged under the target and seed rule the code declares and, at full
            scale, on verified paper numbers.
        holding: findings whose verdict is ``holds``, counted or not.
        unverified: findings that hold but do not count, their paper number unverified.
        flags: what the re-judging found that does not stop the run from counting (a claim no
            longer declared, a stored kind that differs).
    """

    result: Result
    reason: str | None
    reproduced: tuple[ClaimResult, ...] = ()
    holding: int = 0
    unverified: int = 0
    flags: tuple[str, ...] = ()

    @property
    def counted(self) -> bool:
        return self.reason is None

    @property
    def findings(self) -> int:
        """How many findings the run has (the ``n`` of "k of n")."""
        return len(self.result.findings)

    def notes(self) -> list[str]:
        """What a counted run's headline adds after its label: the holding findings that do not
        count, by why ("2 more hold on unverified paper numbers", "1 holds under a target
        changed after the run, not counted")."""
        out = (
            [f"{self.unverified} more hold on unverified paper numbers"] if self.unverified else []
        )
        changed = sum(
            c.verdict == "holds" and c.not_counted is not None for c in self.result.findings
        )
        if changed:
            verb = "hold" if changed > 1 else "holds"
            out.append(
                f"{changed} {verb} under a target or rule changed after the run, not counted"
            )
        return out

    def why_not_counted(self, cid: str) -> str | None:
        """Why finding ``cid`` does not count although the run does: its target or the seed rule
        changed after the run ("target changed after the run: ..."), or it holds on an
        unverified paper number; None when it counts, or does not hold for another reason, or
        the whole run does not count (``reason``)."""
        c = next((c for c in self.result.findings if c.id == cid), None)
        if self.reason is not None or c is None or any(r.id == cid for r in self.reproduced):
            return None
        if c.not_counted is not None:
            return c.not_counted
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
        commit ..., 98.3% intervals; ...)", or "Findings holding: k of n (...; not counted: why)" for a run that
        does not count."""
        label = f"{run_label(self.result)}, {LEVEL:.1%} intervals"
        if self.reason is None:
            more = "".join(f"; {note}" for note in self.notes())
            return f"Findings reproduced: {len(self.reproduced)} of {self.findings} ({label}{more})"
        return (
            f"Findings holding: {self.holding} of {self.findings} "
            f"({label}; not counted: {self.reason})"
        )

    def record(self) -> dict[str, Any]:
        """The decision as results.json records it (``Result.to_dict(decision)``): the count
        (None when the run does not count), why not, and under ``counting`` the headline, the
        rule the findings were decided by, each finding that does not count although the run
        does and why, the declared diagnosis of each finding not reproduced, and the flags."""
        ids = [c.id for c in self.result.findings]
        uncounted = {cid: why for cid in ids if (why := self.why_not_counted(cid)) is not None}
        return {
            "findings_reproduced": f"{len(self.reproduced)}/{self.findings}"
            if self.reason is None
            else None,
            "not_counted": self.reason,
            "counting": {
                "headline": self.headline(),
                "rule": rule_text(),
                "findings_not_counted": uncounted,
                "diagnoses": self.diagnoses,
                "flags": list(self.flags),
            },
        }


def counts(result: Result, *, declare: Declare, run_dir: str | Path | None = None) -> Count:
    """Whether ``result`` counts as a reproduction, why not, and which findings it reproduces.

    Args:
        result: a run as read by ``load_result`` (or as just made).
        declare: what the code declares for a paper at a scale (``Declare``); every run is
            re-judged against it.
        run_dir: its directory: an aggregate's seed runs (``seed_dirs``) are read from there and
            checked against it (None: not checked).

    Returns:
        The ``Count``: the re-judged result, the reason it does not count (None: it counts), the
        reproduced findings and the rest of what report.md and the summary show.
    """
    judged, problems = rejudge(result, declare, None if run_dir is None else Path(run_dir))
    stop = [p.removeprefix(_STOP) for p in problems if p.startswith(_STOP)]
    reason = judged.not_counted_reason() or (stop[0] if stop else None)
    findings = judged.findings
    return Count(
        result=judged,
        reason=reason,
        reproduced=() if reason else tuple(judged.reproduced()),
        holding=sum(c.verdict == "holds" for c in findings),
        unverified=judged.holding_unverified(),
        flags=tuple(p for p in problems if not p.startswith(_STOP)),
    )


def rule_text() -> str:
    """The seed rule and level in words, as every page states it."""
    looks = ", ".join(format_seeds(list(range(n))) for n in LOOKS)
    return (
        f"a one-sided {LEVEL:.1%} interval on its mean over seeds (Student-t; exact binomial for "
        f"booleans and samples with no spread), {ALPHA:.0%} split over the looks at seeds {looks}"
    )


def is_validation_run(result: Result) -> bool:
    """Whether ``result`` ran on validation seeds only (``VALIDATION_SEEDS_FROM`` and up)."""
    return bool(result.seeds) and all(s >= VALIDATION_SEEDS_FROM for s in result.seeds)


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
    rule_changed = None
    if result.seed_rule is not None and result.seed_rule != SEED_RULE:
        rule_changed = (
            f"seed rule changed after the run: stored {_rule_words(result.seed_rule)}, declared "
            f"{_rule_words(SEED_RULE)}; rerun to count"
        )
    claims: list[ClaimResult] = []
    for spec in declared.claims:
        target, changed = spec.target, rule_changed
        old = stored.pop(spec.id, None)
        if old is None:
            problems.append(f"{spec.id}: declared at {result.scale} but not in this run")
            values: list[Any] = [None] * n
            why: list[str | None] | None = ["not in this run"] * n
        else:
            values, why = list(old.per_seed), old.why_not_measured
            if old.target != target and old.kind == spec.kind == "finding":
                # judged against the target fixed before the run; counts only when rerun
                changed = (
                    f"target changed after the run: stored {old.target!r}, declared "
                    f"{target!r}; rerun to count"
                )
                target = old.target
            elif old.target != target:
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
                    not_counted=changed if spec.kind == "finding" else None,
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


def _rule_words(rule: dict[str, Any]) -> str:
    looks = rule.get("looks")
    return f"level {rule.get('level')}, looks at {looks} seeds"


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


# -- thread counts, as the summary labels runs ---------------------------------------------------


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
