"""Does a run count? One function, ``counts``, answers for ``reproduce``, ``merge``, report.md and
``paperzoo summary`` alike.

A run's findings count as reproduced only when nothing below stops it, checked in this order
(the first reason found is the one shown):

1. the run's own fields (``own_reason``, what results.json records as ``not_counted``): a
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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from paperzoo.utils.format import format_number
from paperzoo.verdict.result import ClaimResult, Result, format_seeds, load_result, scale_label
from paperzoo.verdict.targets import MIN_SEEDS_REPRODUCED, PROTOCOL_SEEDS, VALIDATION_SEEDS_FROM

__all__ = [
    "Count",
    "counts",
    "is_validation_run",
    "mark_knife_edges",
    "mark_unstable",
    "own_reason",
    "rejudge",
    "threads_of",
    "validation_problem",
]

_STOP = "not counted: "  # the prefix of a problem that stops a run from counting
# A run given beside the one judged: its result, and its directory (None: not known).
Twin = Result | tuple[Result, str | Path | None]


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


def counts(
    result: Result,
    *,
    run_dir: str | Path | None = None,
    twins: Sequence[Twin] | None = None,
    validation: Sequence[Twin] | None = None,
) -> Count:
    """Whether ``result`` counts as a reproduction, why not, and which findings it reproduces.

    Args:
        result: a run as read by ``load_result`` (or as just made).
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
    judged, problems, reason = _judge(result, run_dir)
    unstable: dict[str, str] = {}
    if reason is None and result.scale == "quick":
        group = []
        for run, where in _group(result, run_dir, twins or ()):
            other = (judged, problems, reason) if run is result else _judge(run, where)
            if other[2] is None:
                group.append((other[0], Path(where).name if where else scale_label(run)))
        unstable, reason = mark_unstable(group)
    edges = mark_knife_edges(judged, validation or ()) if reason is None else {}
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
    )


def is_validation_run(result: Result) -> bool:
    """Whether ``result`` ran on validation seeds only (``VALIDATION_SEEDS_FROM`` and up)."""
    return bool(result.seeds) and all(s >= VALIDATION_SEEDS_FROM for s in result.seeds)


def mark_knife_edges(judged: Result, validation: Sequence[Twin]) -> dict[str, str]:
    """The findings of the re-judged run ``judged`` whose verdict differs on a validation run:
    claim id -> that run's verdict and mean.

    A validation run is used when it is of ``judged``'s paper and scale, of the whole paper or of
    a part that ``judged`` covers (its findings only), and can decide knife edges
    (``validation_problem``). Where several measure a finding, the first that differs counts.
    """
    edges: dict[str, str] = {}
    here = {c.id: c for c in judged.findings}
    for item in validation:
        run, where = item if isinstance(item, tuple) else (item, None)
        if (run.paper, run.scale) != (judged.paper, judged.scale):
            continue
        if run.part is not None and judged.part not in (None, run.part):
            continue
        v, problem = _as_validation(run, where)
        if problem is not None:
            continue
        label = Path(where).name if where else scale_label(run)
        for c in v.findings:
            mine = here.get(c.id)
            if mine is not None and c.verdict != mine.verdict and c.id not in edges:
                edges[c.id] = (
                    f"{c.verdict} {c.holds_on}/{len(c.per_seed)}, mean "
                    f"{format_number(c.mean, sci_digits=2)} on validation seeds "
                    f"{format_seeds(v.seeds)} ({label})"
                )
    return edges


def validation_problem(run: Result, where: str | Path | None = None) -> str | None:
    """Why ``run`` (in ``where``) cannot decide knife edges; None when it can: it ran on
    validation seeds only and nothing but those seeds stops it from counting (its own fields;
    the re-judging: a config the code no longer declares, an aggregate that disagrees with its
    seed runs)."""
    return _as_validation(run, where)[1]


def _as_validation(run: Result, where: str | Path | None) -> tuple[Result, str | None]:
    """(``run`` re-judged, ``validation_problem``)."""
    if not is_validation_run(run):
        return run, (
            f"seeds {format_seeds(run.seeds)} are not validation seeds "
            f"({VALIDATION_SEEDS_FROM} and up)"
        )
    v, problems = rejudge(run, None if where is None else Path(where))
    stop = [p.removeprefix(_STOP) for p in problems if p.startswith(_STOP)]
    if stop:
        return v, stop[0]
    own = own_reason(v)
    return v, None if own == _seeds_problem(v) else own


def _judge(result: Result, run_dir: str | Path | None) -> tuple[Result, list[str], str | None]:
    """(the re-judged result, its problems, why it does not count before the thread check)."""
    judged, problems = rejudge(result, None if run_dir is None else Path(run_dir))
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


# -- 1. the run's own fields ------------------------------------------------------------------------


def own_reason(result: Result) -> str | None:
    """Why ``result`` does not count by its own fields (``Result.not_counted_reason``, what
    results.json records as ``not_counted``); None when nothing in them stops it."""
    if result.partial is not None:
        return f"PARTIAL run: --max-steps {result.partial['max_steps']}, every loop stopped early"
    if result.overrides:
        sets = " ".join(f"--set {k}={v}" for k, v in result.overrides.items())
        return f"modified config: {sets}"
    if result.setting_note is not None:
        return f"not the paper's setting: {result.setting_note}"
    if result.shard is not None:
        return f"one slice of a grid (shard {result.shard[0]}/{result.shard[1]})"
    if result.shards_missing:
        missing = ",".join(map(str, result.shards_missing))
        return f"incomplete grid: shards {missing} of {result.shards['n']} not merged"  # type: ignore[index]
    if result.marks:
        return result.marks[0]
    if result.scale == "smoke":
        return "smoke runs only prove the pipeline"
    if (problem := _provenance_problem(result)) is not None:
        return problem
    return _seeds_problem(result)


def _provenance_problem(result: Result) -> str | None:
    """Why ``result`` does not name the code that made it; None when it does (a clean commit
    and a source digest)."""
    if not result.commit:
        return "no provenance: no commit recorded"
    if result.commit.endswith("+dirty"):
        return f"made from a dirty tree ({result.commit})"
    if not result.source_sha256:
        return "no provenance: no source digest recorded"
    return None


def _seeds_problem(result: Result) -> str | None:
    """Why the seeds are not a counted seed set; None when they are: the protocol's test seeds
    0-3 below full scale, any test seeds at full; validation seeds never count."""
    validation = [s for s in result.seeds if s >= VALIDATION_SEEDS_FROM]
    if validation:
        return f"validation seeds {format_seeds(validation)} (selection runs) never count"
    if result.scale in ("quick", "smoke") and sorted(result.seeds) != list(PROTOCOL_SEEDS):
        if len(result.seeds) < MIN_SEEDS_REPRODUCED:
            return f"a finding counts as reproduced only over {MIN_SEEDS_REPRODUCED} seeds"
        return (
            f"seeds {format_seeds(result.seeds)}: a {result.scale} verdict counts over the "
            f"protocol's seeds {format_seeds(list(PROTOCOL_SEEDS))} only"
        )
    return None


# -- 2. re-judging: the stored verdicts are not believed --------------------------------------------


def rejudge(result: Result, run_dir: Path | None = None) -> tuple[Result, list[str]]:
    """``result`` judged again against what the code declares, and the problems found.

    Each claim's per-seed values are judged against the target its ``ClaimSpec`` declares at
    the run's scale (and part), with the spec's statement, paper number and ``unverified`` or
    ``quoted`` mark; a stored target that differs is flagged, and so is a stored kind that
    differs (judged as the kind declared: a finding demoted to a check leaves the findings and
    the run still counts). A claim the code no longer declares is dropped (flagged); a
    declared one the run lacks is "not measured". Where ``run_dir`` holds the aggregate's seed
    runs (``seed_dirs``), their values must equal the aggregate's.

    Returns:
        (the re-judged result, one line per problem). Problems that make the run not count
        start with "not counted: " (an unknown paper, an aggregate that disagrees with its
        seed runs); the others are flags shown beside the run.
    """
    from paperzoo.experiments import EXPERIMENTS, RunContext

    problems: list[str] = []
    if result.paper not in EXPERIMENTS:
        return result, [f"not counted: paper {result.paper!r} is not declared by this paperzoo"]
    exp = EXPERIMENTS.create(result.paper)
    try:
        specs = exp.claims_at(RunContext(scale=result.scale, part=result.part))
    except ValueError as err:
        return result, [f"not counted: {err}"]
    stored = {c.id: c for c in result.claims}
    n = len(result.seeds)
    claims: list[ClaimResult] = []
    for spec in specs:
        target = spec.target_at(result.scale)
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
                )  # fmt: skip
            )
        except ValueError as err:  # a value of the wrong type for the declared target
            problems.append(f"not counted: {err}")
            return result, problems
    problems += [f"{cid}: stored but no longer declared (not shown)" for cid in stored]
    if not result.overrides and result.config:
        problems += _config_drift(result, exp.config(result.scale))
    threads = result.threads
    if run_dir is not None and result.seed_dirs:
        found, threads_seen = _check_against_seeds(result, run_dir)
        problems += found
        if threads is None and len(threads_seen) == 1:  # an aggregate made by merge
            threads = threads_seen.pop()
    return replace(result, claims=claims, threads=threads), problems


def _config_drift(result: Result, declared: Any) -> list[str]:
    """``not counted: ...`` when a field the run recorded differs from the config the code now
    declares at its scale: it ran another protocol (e.g. restarts that became a variant). Fields
    added after the run, at any depth of a nested config, are not compared (the run could not
    record them); nor are fields the code no longer has."""
    from paperzoo.experiments.overrides import config_to_dict

    changed = _changed_fields(result.config, config_to_dict(declared), _ran_before(declared))
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
    the run lacks is compared with the value runs made before it ran with (``before``, from
    ``experiments.base.added_later``), else not at all."""
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


def _ran_before(cfg: Any) -> dict[str, Any]:
    """The ``added_later`` fields of a config (nested configs as nested dicts): field -> the
    value runs made before the field existed ran with."""
    import dataclasses

    from paperzoo.experiments.base import RAN_BEFORE
    from paperzoo.experiments.overrides import config_to_dict

    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        return {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        if RAN_BEFORE in f.metadata:
            out[f.name] = config_to_dict(f.metadata[RAN_BEFORE])
        elif nested := _ran_before(getattr(cfg, f.name)):
            out[f.name] = nested
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
