"""results.json and report.md: the paper's numbers beside ours, with verdicts computed over seeds.

The verdict protocol (``DESIGN.md``, "Verdicts"): every claim is a ``finding`` (an empirical
result the paper reports) or a ``check`` (holds by construction, or a sanity bound). Each claim
is measured at every seed of a run; per claim the report gives each seed's value, the mean and
std, on how many seeds the target is met and a verdict:

- ``holds``: the mean meets the target and so do at least ``ceil(3n/4)`` of the ``n`` seeds;
- ``fragile``: the mean meets it, fewer seeds do;
- ``fails``: the mean does not meet it;
- ``not measured``: some seed has no measurement (missing, ``None``, NaN or infinite: a run
  that diverged); it fails;
- ``reported``: a descriptive number with no target (checks only).

A finding counts as *reproduced* only when it holds over at least 4 seeds (at ``full`` scale,
where one run is expensive, over the seeds that were run) of a run that is its scale's own
setting, as configured. ``Result.not_counted_reason`` says why a run does not count: smoke,
partial (``--max-steps``: every loop stopped early; such a run carries an estimate of the whole
run's time instead, under ``"partial"`` in results.json), a modified config (``--set``), a
substitute data set ("not the paper's setting"), one shard or an incomplete set of shards, or
too few seeds. A result names what ran: the commit and source digest (``paperzoo.provenance``),
the data (name, source, sizes, SHA-256, fold), the config, the overrides and the shard.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperzoo.utils.io import atomic_write_text

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"  # a finite decimal number, as float() reads
_CMP = re.compile(rf"^\s*(>=|<=|==|>|<)\s*({_NUM})\s*$", re.IGNORECASE)
_WITHIN = re.compile(rf"^\s*within\s+(\d+\.?\d*|\.\d+)\s*%\s+of\s+({_NUM})\s*$", re.IGNORECASE)

Measured = float | int | bool | None
VERDICTS = ("holds", "fragile", "fails", "not measured", "reported")
MIN_SEEDS_REPRODUCED = 4  # a finding counts as reproduced at smoke/quick only over this many seeds
# The protocol's test seeds: a quick verdict counts over these only (DESIGN.md, "Seeds"); other
# seed sets are reported with their seeds named. Seeds from VALIDATION_SEEDS_FROM up are for
# selection runs (configs decided on validation seeds) and never count.
PROTOCOL_SEEDS = (0, 1, 2, 3)
VALIDATION_SEEDS_FROM = 100
# '== n' on counts: the mean of n integers equal to x may differ from x by float round-off
# (0.1 * 3 / 3), never by more than this relative amount.
_INT_EQ_TOL = 1e-9
_MARK = {"holds": "✅", "fragile": "⚠️", "fails": "❌", "not measured": "❌", "reported": "—"}


def validate_target(target: str) -> None:
    """Raise ``ValueError`` unless ``target`` is a target string ``evaluate_target`` understands.

    Its numbers must be finite (``<= 1e999`` reads as infinity, a target that always holds), and
    ``== x`` compares integers only (a count): equality on a float needs a tolerance, written
    ``within P% of x``."""
    t = target.strip().lower()
    if t in ("reported", "is true", "is false"):
        return
    m = _CMP.match(t) or _WITHIN.match(t)
    if m is None:
        raise ValueError(f"cannot parse claim target {target!r}")
    if not all(math.isfinite(float(g)) for g in m.groups() if g is not None and g[0] not in "<>="):
        raise ValueError(f"claim target {target!r} has a number that is not finite")
    if m.re is _CMP and m.group(1) == "==" and not re.fullmatch(r"[-+]?\d+", m.group(2)):
        raise ValueError(
            f"claim target {target!r}: equality on a float needs a tolerance "
            f"(write 'within P% of {m.group(2)}'); '==' compares integers (counts) only"
        )


def is_boolean_target(target: str) -> bool:
    """Whether ``target`` is ``"is true"`` / ``"is false"`` (it judges booleans, not numbers)."""
    return target.strip().lower() in ("is true", "is false")


def check_measurement(target: str, measured: Measured, claim: str = "claim") -> None:
    """Raise ``TypeError`` naming ``claim`` when a boolean meets a numeric target or a number a
    boolean one (a wrong claim declaration, not a failed finding)."""
    t = target.strip().lower()
    if measured is None or t == "reported":
        return
    if is_boolean_target(t) and not isinstance(measured, bool):
        raise TypeError(f"{claim}: target {target!r} needs a boolean measurement, got {measured!r}")
    if not is_boolean_target(t) and isinstance(measured, bool):
        raise TypeError(f"{claim}: target {target!r} needs a number, got the boolean {measured}")


def is_measured(value: Measured) -> bool:
    """False for a missing (``None``), NaN or infinite measurement (a run that diverged)."""
    if value is None:
        return False
    return isinstance(value, bool) or math.isfinite(float(value))


def evaluate_target(target: str, measured: Measured) -> bool | None:
    """Whether ``measured`` meets ``target``; ``None`` only for a ``"reported"`` target.

    Targets: ``">= x"``, ``"> x"``, ``"<= x"``, ``"< x"``, ``"== x"``, ``"within P% of x"``
    (two-sided: for a parameter count, not for an error or an accuracy, where beating the paper is
    no failure: those are ``"<= x"`` / ``">= x"``), ``"is true"``, ``"is false"``, and
    ``"reported"`` (no target). A missing, NaN or infinite measurement never meets a target; a
    boolean against a numeric target, or the reverse, is a ``ValueError``.
    """
    validate_target(target)
    t = target.strip().lower()
    if t == "reported":
        return None
    if not is_measured(measured):
        return False
    try:
        check_measurement(target, measured)
    except TypeError as err:
        raise ValueError(str(err)) from None
    if is_boolean_target(t):
        return measured is (t == "is true")
    value = float(measured)  # type: ignore[arg-type]
    if m := _CMP.match(t):
        op, x = m.group(1), float(m.group(2))
        return {
            ">=": value >= x,
            "<=": value <= x,
            ">": value > x,
            "<": value < x,
            "==": abs(value - x) <= _INT_EQ_TOL * max(1.0, abs(x)),  # a mean of counts
        }[op]
    m = _WITHIN.match(t)
    assert m is not None  # validate_target accepted it
    pct, x = float(m.group(1)), float(m.group(2))
    return abs(value - x) <= pct / 100.0 * abs(x)


def target_line(target: str) -> float | None:
    """The number a target compares against (for plots); ``None`` for boolean/reported targets."""
    t = target.strip().lower()
    if m := _CMP.match(t):
        return float(m.group(2))
    if m := _WITHIN.match(t):
        return float(m.group(2))
    return None


def seeds_needed(n: int) -> int:
    """Seeds that must meet the target for ``holds``: ``ceil(3n/4)``."""
    return math.ceil(3 * n / 4)


@dataclass
class ClaimResult:
    """One claim over the seeds of a run: its measurements and the verdict computed from them."""

    id: str
    statement: str
    paper: float | str | None
    per_seed: list[Measured]
    target: str
    kind: str = "finding"
    # why the paper number its full target rests on is not verified (None: verified)
    unverified: str | None = None
    # why a seed has no value, per seed (None where measured or no reason is known), e.g.
    # "diverged at step 412 (deconv)"
    why_not_measured: list[str | None] | None = None

    def __post_init__(self) -> None:
        for v in self.per_seed:  # a boolean against a numeric target (or the reverse) is a bug
            try:
                check_measurement(str(self.target), v, f"claim {self.id}")
            except TypeError as err:
                raise ValueError(str(err)) from None

    @property
    def measured(self) -> Measured:
        """The single seed's value, or the mean over seeds."""
        return self.per_seed[0] if len(self.per_seed) == 1 else self.mean

    @property
    def mean(self) -> float | None:
        if not self.per_seed or not all(is_measured(v) for v in self.per_seed):
            return None
        return statistics.fmean(float(v) for v in self.per_seed)  # type: ignore[arg-type]

    @property
    def std(self) -> float | None:
        if self.mean is None:
            return None
        vals = [float(v) for v in self.per_seed]  # type: ignore[arg-type]
        return statistics.stdev(vals) if len(vals) > 1 else 0.0

    @property
    def holds_on(self) -> int:
        """Number of seeds whose measurement meets the target."""
        return sum(evaluate_target(self.target, v) is True for v in self.per_seed)

    def _mean_meets(self) -> bool:
        mean = self.mean
        assert mean is not None
        t = self.target.strip().lower()
        if t in ("is true", "is false"):  # the mean of booleans is the fraction that are true
            return mean > 0.5 if t == "is true" else mean < 0.5
        return bool(evaluate_target(self.target, mean))

    @property
    def verdict(self) -> str:
        if self.target.strip().lower() == "reported":
            return "reported"
        if self.mean is None:
            return "not measured"
        if not self._mean_meets():
            return "fails"
        return "holds" if self.holds_on >= seeds_needed(len(self.per_seed)) else "fragile"

    @property
    def holds(self) -> bool | None:
        """True when the verdict is ``holds``; None for a reported number; else False."""
        v = self.verdict
        return None if v == "reported" else v == "holds"

    def counts_at(self, scale: str) -> bool:
        """Whether this claim counts as a reproduced finding of a run at ``scale`` that counts:
        a finding that holds, on a verified paper number at full scale."""
        if self.kind != "finding" or self.verdict != "holds":
            return False
        return not (scale == "full" and self.unverified is not None)

    @property
    def verdict_text(self) -> str:
        """The verdict with why a seed is not measured (``not measured (diverged at step N)``)."""
        why = [w for w in self.why_not_measured or [] if w]
        if self.verdict == "not measured" and why:
            return f"not measured ({'; '.join(dict.fromkeys(why))})"
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "statement": self.statement,
            "paper": self.paper,
            "target": self.target,
            "per_seed": [v if is_measured(v) else None for v in self.per_seed],
            "mean": self.mean,
            "std": self.std,
            "holds_on": f"{self.holds_on}/{len(self.per_seed)}",
            "verdict": self.verdict,
        }
        if self.unverified is not None:
            d["unverified"] = self.unverified
        if self.why_not_measured and any(self.why_not_measured):
            d["why_not_measured"] = list(self.why_not_measured)
        if len(self.per_seed) == 1:
            d["measured"] = d["per_seed"][0]
            d["holds"] = self.holds
        return d


@dataclass
class Result:
    """One run (one seed) or the aggregate of several seed runs of one paper at one scale."""

    paper: str
    title: str
    scale: str
    seeds: list[int]
    device: str
    wall_seconds: float
    paperzoo_version: str
    torch_version: str
    data: list[dict[str, Any]]
    claims: list[ClaimResult]
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    shard: tuple[int, int] | None = None  # (k, n) when this run covers one slice of a grid
    seed_dirs: list[str] = field(default_factory=list)  # an aggregate: the seed runs it read
    config: dict[str, Any] = field(default_factory=dict)  # the resolved config that ran
    overrides: dict[str, str] = field(default_factory=dict)  # --set KEY=VALUE applied to it
    # --max-steps runs: {"max_steps", "estimate_seconds", "loops", ...}; None: a complete run
    partial: dict[str, Any] | None = None
    commit: str | None = None  # git HEAD of the source (``+dirty``: local changes); None: unknown
    source_sha256: str | None = None  # digest of the package's source (paperzoo.provenance)
    # None: the scale's own setting; else why not (a substitute data set, a subset of folds)
    setting_note: str | None = None
    part: str | None = None  # --part: the part of the paper this run covers; None: all of it
    # merged shards: {"n": shards in the grid, "merged": the shard indices combined}
    shards: dict[str, Any] | None = None
    command: str | None = None  # the command line that made this result, when recorded
    # reasons not to count inherited from the results this one was merged from, that its own
    # fields no longer show (they survive every re-merge)
    marks: list[str] = field(default_factory=list)
    threads: int | None = None  # torch's intra-op threads per process (None: not recorded)
    precision: str = "fp32"  # --precision (paperzoo.engine.precision); older results: fp32
    host: str | None = None  # CPU model and cores (and GPU) it ran on; None: not recorded

    @property
    def paper_setting(self) -> bool:
        """Whether the run is its scale's own setting (at full: the paper's data and protocol)."""
        return self.setting_note is None

    @property
    def shards_missing(self) -> list[int]:
        """Shard indices of the grid that a merged result lacks (empty when not merged)."""
        if not self.shards:
            return []
        return sorted(set(range(int(self.shards["n"]))) - set(self.shards["merged"]))

    def provenance_problem(self) -> str | None:
        """Why this result does not name the code that made it; None when it does (a clean
        commit and a source digest)."""
        if not self.commit:
            return "no provenance: no commit recorded"
        if self.commit.endswith("+dirty"):
            return f"made from a dirty tree ({self.commit})"
        if not self.source_sha256:
            return "no provenance: no source digest recorded"
        return None

    def seeds_problem(self) -> str | None:
        """Why the seeds here are not a counted seed set; None when they are: the protocol's test
        seeds 0-3 below full scale, any test seeds at full; validation seeds never count."""
        validation = [s for s in self.seeds if s >= VALIDATION_SEEDS_FROM]
        if validation:
            return f"validation seeds {format_seeds(validation)} (selection runs) never count"
        if self.scale in ("quick", "smoke") and sorted(self.seeds) != list(PROTOCOL_SEEDS):
            if len(self.seeds) < MIN_SEEDS_REPRODUCED:
                return f"a finding counts as reproduced only over {MIN_SEEDS_REPRODUCED} seeds"
            return (
                f"seeds {format_seeds(self.seeds)}: a {self.scale} verdict counts over the "
                f"protocol's seeds {format_seeds(list(PROTOCOL_SEEDS))} only"
            )
        return None

    def not_counted_reason(self) -> str | None:
        """Why the verdicts here do not count as reproduced findings; None when they do."""
        if self.partial is not None:
            return f"PARTIAL run: --max-steps {self.partial['max_steps']}, every loop stopped early"
        if self.overrides:
            sets = " ".join(f"--set {k}={v}" for k, v in self.overrides.items())
            return f"modified config: {sets}"
        if self.setting_note is not None:
            return f"not the paper's setting: {self.setting_note}"
        if self.shard is not None:
            return f"one slice of a grid (shard {self.shard[0]}/{self.shard[1]})"
        if self.shards_missing:
            missing = ",".join(map(str, self.shards_missing))
            return f"incomplete grid: shards {missing} of {self.shards['n']} not merged"
        if self.marks:
            return self.marks[0]
        if self.scale == "smoke":
            return "smoke runs only prove the pipeline"
        if (problem := self.provenance_problem()) is not None:
            return problem
        return self.seeds_problem()

    def reproduced(self) -> list[ClaimResult]:
        """The findings that count as reproduced (none when the run does not count)."""
        if not self.counts_as_reproduction:
            return []
        return [c for c in self.findings if c.counts_at(self.scale)]

    @property
    def findings(self) -> list[ClaimResult]:
        return [c for c in self.claims if c.kind == "finding"]

    def holding_unverified(self) -> int:
        """Findings that hold but do not count at this scale (their paper number unverified)."""
        return sum(c.verdict == "holds" and not c.counts_at(self.scale) for c in self.findings)

    @property
    def checks(self) -> list[ClaimResult]:
        return [c for c in self.claims if c.kind == "check"]

    @property
    def counts_as_reproduction(self) -> bool:
        """Whether verdicts here can count as reproduced findings (``not_counted_reason``)."""
        return self.not_counted_reason() is None

    @property
    def all_hold(self) -> bool:
        """No claim fails, is fragile or unmeasured (reported numbers aside)."""
        return all(c.holds is not False for c in self.claims)

    def to_dict(self) -> dict[str, Any]:
        findings, checks = self.findings, self.checks
        holding = f"{sum(c.verdict == 'holds' for c in findings)}/{len(findings)}"
        reproduced = f"{len(self.reproduced())}/{len(findings)}"
        judged = [c for c in checks if c.verdict != "reported"]
        d: dict[str, Any] = {
            "paper": self.paper,
            "title": self.title,
            "scale": self.scale,
            "seeds": list(self.seeds),
        }
        if len(self.seeds) == 1:
            d["seed"] = self.seeds[0]
        d |= {
            "device": self.device,
            "precision": self.precision,
            "wall_seconds": round(self.wall_seconds, 1),
            "paperzoo_version": self.paperzoo_version,
            "torch_version": self.torch_version,
            "commit": self.commit,
            "source_sha256": self.source_sha256,
            "paper_setting": self.paper_setting,
            "setting_note": self.setting_note,
            "part": self.part,
            "command": self.command,
            "data": self.data,
            "claims": [c.to_dict() for c in self.claims],
            "findings_reproduced": reproduced if self.counts_as_reproduction else None,
            "not_counted": self.not_counted_reason(),
            "findings_holding": holding,
            "checks_holding": f"{sum(c.verdict == 'holds' for c in judged)}/{len(judged)}",
            "figures": self.figures,
            "notes": self.notes,
            "config": self.config,
            "overrides": self.overrides,
            "details": self.details,
        }
        d["shard"] = list(self.shard) if self.shard is not None else None
        if self.shards is not None:
            d["shards"] = self.shards
        if self.marks:
            d["marks"] = list(self.marks)
        if self.threads is not None:
            d["threads"] = self.threads
        if self.host is not None:
            d["host"] = self.host
        if self.partial is not None:  # the marker: verdicts of a run whose loops stopped early
            d["partial"] = True
            d["max_steps"] = self.partial["max_steps"]
            d["estimate_seconds"] = self.partial["estimate_seconds"]
            d["estimate"] = self.partial
        if self.seed_dirs:
            d["seed_dirs"] = list(self.seed_dirs)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "results.json") -> Result:
        """Read back what ``to_dict`` wrote; ``ValueError`` naming ``source`` if it is not that."""
        try:
            claims = [
                ClaimResult(
                    c["id"],
                    c["statement"],
                    c["paper"],
                    list(c["per_seed"]),
                    c["target"],
                    c["kind"],
                    unverified=c.get("unverified"),
                    why_not_measured=c.get("why_not_measured"),
                )
                for c in d["claims"]
            ]
            seeds = [int(s) for s in d["seeds"]]
            result = cls(
                paper=d["paper"],
                title=d["title"],
                scale=d["scale"],
                seeds=seeds,
                device=d["device"],
                wall_seconds=float(d["wall_seconds"]),
                paperzoo_version=d["paperzoo_version"],
                torch_version=d["torch_version"],
                data=list(d["data"]),
                claims=claims,
                figures=list(d.get("figures", [])),
                notes=list(d.get("notes", [])),
                details=dict(d.get("details", {})),
                shard=tuple(d["shard"]) if d.get("shard") else None,  # type: ignore[arg-type]
                seed_dirs=list(d.get("seed_dirs", [])),
                config=dict(d["config"]),
                overrides=dict(d["overrides"]),
                partial=dict(d["estimate"]) if d.get("partial") else None,
                commit=d.get("commit"),  # absent in results of paperzoo before provenance
                source_sha256=d.get("source_sha256"),
                setting_note=d.get("setting_note"),
                part=d.get("part"),
                shards=dict(d["shards"]) if d.get("shards") else None,
                command=d.get("command"),
                marks=list(d.get("marks", [])),
                threads=d.get("threads"),
                precision=str(d.get("precision", "fp32")),  # results before --precision: fp32
                host=d.get("host"),
            )
        except (KeyError, TypeError, ValueError) as err:
            version = d.get("paperzoo_version", "unknown") if isinstance(d, dict) else "unknown"
            raise ValueError(
                f"{source} is not a paperzoo results file of this version's format "
                f"(paperzoo {version}; problem: {err!r})"
            ) from None
        result.validate(source)
        stored = d.get("not_counted")
        if stored and stored != result.not_counted_reason():  # a mark its fields do not show
            result.marks.append(str(stored))
        return result

    def validate(self, source: str = "results.json") -> None:
        """Raise ``ValueError`` naming ``source`` and the claim if a value cannot be judged."""
        if not self.seeds:
            raise ValueError(f"{source}: no seeds")
        for c in self.claims:
            if c.kind not in ("finding", "check"):
                raise ValueError(
                    f"{source}: claim {c.id} has kind {c.kind!r} (expected 'finding' or 'check')"
                )
            try:
                validate_target(str(c.target))
            except ValueError as err:
                raise ValueError(f"{source}: claim {c.id}: {err}") from None
            for v in c.per_seed:
                if not (v is None or isinstance(v, bool | int | float)):
                    raise ValueError(f"{source}: claim {c.id} has a non-numeric measurement {v!r}")

            if len(c.per_seed) != len(self.seeds):
                raise ValueError(
                    f"{source}: claim {c.id} has {len(c.per_seed)} measurements "
                    f"for {len(self.seeds)} seeds"
                )


def load_result(out_dir: str | Path) -> Result:
    """``Result`` from ``out_dir/results.json``; ``ValueError`` with a one-line reason."""
    path = Path(out_dir) / "results.json"
    try:
        d = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} is not a paperzoo results file")
    return Result.from_dict(d, str(path))


def data_identity(data: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What makes two runs' data the same: name, sizes, fold and SHA-256 (the directory they
    were read from only where no digest was recorded). Generated data are drawn from the run's
    seed by the package's own code (GG-NN's quick bAbI folds: each seed its own draw, task 18's
    number of test questions too), so their digest and test size differ from seed to seed by
    design and are not compared: the code is (its source digest, ``check_same_run``)."""
    out: list[tuple[Any, ...]] = []
    for d in data:
        if d.get("source") == "generated":
            out.append((d.get("name"), "generated", d.get("n_train"), d.get("fold")))
        elif d.get("sha256"):
            out.append(
                (d.get("name"), d.get("n_train"), d.get("n_test"), d.get("fold"), d["sha256"])
            )
        else:
            out.append(
                (d.get("name"), d.get("source"), d.get("n_train"), d.get("n_test"), d.get("fold"))
            )
    return out


def check_same_run(runs: list[Result], what: str = "runs") -> None:
    """Raise ``ValueError`` (one line) unless ``runs`` share paper, scale, version, code (commit
    and source digest), data, setting, part and precision: what may be merged into one verdict."""
    if not runs:
        raise ValueError("nothing to merge")
    keys = ("paper", "scale", "paperzoo_version", "commit", "source_sha256", "setting_note", "part")
    keys += ("precision",)  # fp32 / tf32 / bf16 runs measure different numerics
    for key in keys:
        values = sorted({str(getattr(r, key)) for r in runs})
        if len(values) > 1:
            shown = ", ".join(v[:16] for v in values)
            raise ValueError(f"{what} must share one {key}, got {shown}")
    first = data_identity(runs[0].data)
    for r in runs[1:]:
        if data_identity(r.data) != first:
            names = sorted({str(d.get("name")) for x in runs for d in x.data})
            raise ValueError(
                f"{what} must read the same data (name, sizes, fold, SHA-256); "
                f"seed {format_seeds(r.seeds)} differs from seed {format_seeds(runs[0].seeds)} "
                f"({', '.join(names)})"
            )


def aggregate(runs: list[Result], seed_dirs: list[str] | None = None) -> Result:
    """Combine single-paper runs at different seeds into one result with per-seed values.

    The runs must be of the same code and data (``check_same_run``), declare the same claims
    with the same kinds and targets (targets are fixed before the run), and have distinct seeds.
    The aggregate's ``wall_seconds`` is the sum over the runs.
    """
    if not runs:
        raise ValueError("nothing to aggregate")
    first = runs[0]
    check_same_run(runs, "seed runs")
    for key in ("config", "overrides"):
        if any(getattr(r, key) != getattr(first, key) for r in runs[1:]):
            raise ValueError(f"seed runs must share one {key} (they ran different settings)")
    if any(r.shard is not None for r in runs):
        raise ValueError("shards are combined with the experiment's merge, not as seed runs")
    caps = sorted({str(r.partial["max_steps"]) if r.partial else "none" for r in runs})
    if len(caps) > 1:
        raise ValueError(f"seed runs must share one --max-steps, got {', '.join(caps)}")
    spec = [(c.id, c.kind, c.target) for c in first.claims]
    for r in runs[1:]:
        if [(c.id, c.kind, c.target) for c in r.claims] != spec:
            raise ValueError(
                f"seed {r.seeds} declares other claims or targets than seed {first.seeds}"
            )
    shards = {json.dumps(r.shards, sort_keys=True) for r in runs}
    if len(shards) > 1:
        raise ValueError("seed runs must merge the same shards of one grid (their 'shards' differ)")
    order = sorted(range(len(runs)), key=lambda i: runs[i].seeds)
    runs = [runs[i] for i in order]
    seeds = [s for r in runs for s in r.seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seed runs repeat a seed: {seeds}")
    validation = [s for s in seeds if s >= VALIDATION_SEEDS_FROM]
    if validation and len(validation) < len(seeds):
        raise ValueError(
            f"validation seeds {format_seeds(validation)} (selection runs) cannot be merged with "
            f"test seeds {format_seeds([s for s in seeds if s < VALIDATION_SEEDS_FROM])}"
        )

    def why(r: Result, i: int) -> list[str | None]:
        w = r.claims[i].why_not_measured
        return list(w) if w else [None] * len(r.claims[i].per_seed)

    claims = [
        ClaimResult(
            c.id,
            c.statement,
            c.paper,
            [v for r in runs for v in r.claims[i].per_seed],
            c.target,
            c.kind,
            unverified=c.unverified,
            why_not_measured=[w for r in runs for w in why(r, i)],
        )
        for i, c in enumerate(first.claims)
    ]
    threads = {r.threads for r in runs}
    notes: list[str] = []
    for note in dict.fromkeys(n for r in runs for n in r.notes):
        holders = [r for r in runs if note in r.notes]
        if len(holders) == len(runs):
            notes.append(note)
        else:
            notes.append(
                f"seed {', '.join(map(str, (s for r in holders for s in r.seeds)))}: {note}"
            )
    return Result(
        paper=first.paper,
        title=first.title,
        scale=first.scale,
        seeds=seeds,
        device=", ".join(sorted({r.device for r in runs})),
        wall_seconds=sum(r.wall_seconds for r in runs),
        paperzoo_version=first.paperzoo_version,
        torch_version=", ".join(sorted({r.torch_version for r in runs})),
        data=first.data,
        claims=claims,
        notes=notes,
        seed_dirs=[seed_dirs[i] for i in order] if seed_dirs else [],
        config=first.config,
        overrides=first.overrides,
        partial=combine_partial([r.partial for r in runs]),
        commit=first.commit,
        source_sha256=first.source_sha256,
        setting_note=first.setting_note,
        part=first.part,
        shards=first.shards,
        marks=list(dict.fromkeys(m for r in runs for m in r.marks)),
        threads=threads.pop() if len(threads) == 1 else None,
        precision=first.precision,
        host="; ".join(dict.fromkeys(r.host for r in runs if r.host)) or None,
    )


def combine_partial(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The partial record of runs made one after another (seeds, shards): None if none is
    partial; else the cap, the summed estimate (None if one is unknown) and each run's record."""
    known = [p for p in parts if p is not None]
    if not known:
        return None
    estimates = [p.get("estimate_seconds") for p in known]
    return {
        "max_steps": known[0]["max_steps"],
        "estimate_seconds": None if None in estimates else round(sum(estimates), 1),
        "device": ", ".join(sorted({str(p.get("device")) for p in known})),
        "not_estimated": known[0].get("not_estimated", []),
        "runs": known,
    }


def format_seeds(seeds: list[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0-3,7"``."""
    parts: list[str] = []
    s = sorted(seeds)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        parts.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ",".join(parts)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:.4f}".rstrip("0").rstrip(".")
    return str(v)


def run_label(result: Result) -> str:
    """What ran, in a few words: ``quick, seeds 0-3, commit 1a4d5126a0c3``."""
    where = f"{result.scale}, part {result.part}" if result.part else result.scale
    s = "seed" if len(result.seeds) == 1 else "seeds"
    return f"{where}, {s} {format_seeds(result.seeds)}, commit {result.commit or 'unknown'}"


def headline(result: Result) -> str:
    """ "Findings reproduced: k of n (quick, seeds 0-3, commit ...)", or why they don't count."""
    findings = result.findings
    why = result.not_counted_reason()
    if why is None:
        k = len(result.reproduced())
        unverified = result.holding_unverified()
        more = f"; {unverified} more hold on unverified paper numbers" if unverified else ""
        return f"Findings reproduced: {k} of {len(findings)} ({run_label(result)}{more})"
    k = sum(c.verdict == "holds" for c in findings)
    return f"Findings holding: {k} of {len(findings)} ({run_label(result)}; not counted: {why})"


def _claim_table(
    claims: list[ClaimResult], seeds: list[int], label: str, partial: bool = False
) -> list[str]:
    seed_cols = "".join(f" seed {s} |" for s in seeds)
    lines = [
        f"| {label} | paper |{seed_cols} mean ± std | target | verdict |",
        "|---|---|" + "---|" * len(seeds) + "---|---|---|",
    ]
    for c in claims:
        cells = "".join(f" {_fmt(v)} |" for v in c.per_seed)
        spread = "—" if c.mean is None else f"{_fmt(c.mean)} ± {_fmt(c.std)}"
        verdict = f"{_MARK[c.verdict]} {c.verdict_text}"
        if c.verdict != "reported":
            verdict += f" ({c.holds_on}/{len(c.per_seed)})"
        if partial:
            verdict += ", partial"
        if c.unverified is not None:
            verdict += f"; paper number unverified: {c.unverified}"
        lines.append(
            f"| `{c.id}`<br>{c.statement} | {_fmt(c.paper)} |{cells} {spread} | {c.target} "
            f"| {verdict} |"
        )
    return lines


def render_markdown(result: Result) -> str:
    """report.md: the headline, the findings table, the checks, notes and figures."""
    seeds = result.seeds
    lines = [f"# {result.title}", ""]
    if not result.paper_setting:
        lines += [
            f"**NOT THE PAPER'S SETTING: {result.setting_note}. None of its findings counts as "
            "reproduced.**",
            "",
        ]
    code = f"commit {result.commit}" if result.commit else "commit unknown"
    if result.source_sha256:
        code += f", source {result.source_sha256[:12]}"
    lines += [
        f"**{headline(result)}**",
        "",
        f"`{result.command or _command(result)}` on {result.device}"
        f"{f' [{result.host}]' if result.host else ''} ({result.precision}), "
        f"{result.wall_seconds:.1f} s{' (sum over seeds)' if len(seeds) > 1 else ''} "
        f"(paperzoo {result.paperzoo_version}, torch {result.torch_version}, {code})",
        "",
    ]
    if result.data:
        lines += ["Data: " + "; ".join(_data_text(d) for d in result.data), ""]
    partial = result.partial is not None
    if partial:
        lines += _partial_lines(result)
    lines += ["## Findings", ""] + _claim_table(result.findings, seeds, "finding", partial)
    if result.checks:
        lines += ["", "## Checks (by construction or sanity bounds; never counted as findings)", ""]
        lines += _claim_table(result.checks, seeds, "check", partial)
    lines += [
        "",
        "Verdicts: holds = the mean and at least ceil(3n/4) of n seeds meet the target; "
        "fragile = the mean meets it, fewer seeds do; fails = the mean does not; not measured = "
        "a seed has no value (counts as failing).",
    ]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    if result.figures:
        lines += ["", "## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in result.figures]
    if result.seed_dirs:
        lines += ["", "Seed runs: " + ", ".join(f"[{d}]({d}/report.md)" for d in result.seed_dirs)]
    return "\n".join(lines) + "\n"


def _command(result: Result) -> str:
    """The command that made ``result``, rebuilt from it (when the run did not record one)."""
    seeds = result.seeds
    cmd = f"paperzoo reproduce {result.paper} --scale {result.scale} "
    cmd += f"--seed {seeds[0]}" if len(seeds) == 1 else f"--seeds {format_seeds(seeds)}"
    if result.part:
        cmd += f" --part {result.part}"
    cmd += "".join(f" --set {k}={v}" for k, v in result.overrides.items())
    if result.partial is not None:
        cmd += f" --max-steps {result.partial['max_steps']}"
    return cmd


def _data_text(d: dict[str, Any]) -> str:
    """One data set of results.json as report.md names it."""
    extra = f", fold {d['fold']}" if d.get("fold") is not None else ""
    if d.get("sha256"):
        extra += f", SHA-256 {str(d['sha256'])[:12]}"
    return f"{d['name']} ({d['source']}, {d['n_train']} train / {d['n_test']} test{extra})"


def _hms(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _loop_rows(loops: list[dict[str, Any]], depth: int = 0) -> list[str]:
    rows = []
    for lp in loops:
        per, est = lp.get("seconds_per_iteration"), lp.get("estimate_seconds")
        rows.append(
            f"| {'&nbsp;&nbsp;' * depth}{lp['desc']} | {lp['kind']} | {lp['run']} "
            f"| {lp['planned']} | {'—' if per is None else f'{per:.4g}'} "
            f"| {'—' if est is None else _hms(est)} |"
        )
        rows += _loop_rows(lp.get("children", []), depth + 1)
    return rows


def _partial_lines(result: Result) -> list[str]:
    """report.md: the partial-run banner, the estimate and the loops it was computed from."""
    p = result.partial
    assert p is not None
    est = p.get("estimate_seconds")
    runs = p.get("runs", [p])
    lines = [
        f"**PARTIAL RUN (--max-steps {p['max_steps']}): every training loop stopped after "
        f"{p['max_steps']} steps; the verdicts below are not a reproduction.**",
        "",
        f"Estimated time of the whole run on {p.get('device')}: "
        + (
            "unknown (a loop ran no step in this run: it was loaded from an earlier run in this "
            "--out; a fresh --out measures every loop)"
            if est is None
            else f"{_hms(est)} ({est:.0f} s)"
        )
        + (f", summed over {len(runs)} runs" if len(runs) > 1 else "")
        + ". Each loop's planned steps times its measured time per step (the first step, "
        "warm-up, left out); repeated parts (models, restarts) scaled by their count; "
        "everything else (data, model construction, evaluation) counted as it ran here.",
        "",
    ]
    left_out = p.get("not_estimated") or []
    if left_out:
        lines += ["Not in the estimate: " + "; ".join(left_out) + ".", ""]
    lines += [
        "| loop | kind | steps run | planned | s / step | estimate (h:mm:ss) |",
        "|---|---|---|---|---|---|",
        *_loop_rows(runs[0].get("loops", [])),
        "",
    ]
    return lines


def plot_findings_by_seed(result: Result, path: str | Path) -> bool:
    """Each finding's per-seed values against its target line; False when nothing to plot."""
    plotted = [c for c in result.findings if c.per_seed]
    if not plotted:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(3, len(plotted))
    rows = math.ceil(len(plotted) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
    for ax, c in zip(axes.flat, plotted, strict=False):
        xs = list(range(len(c.per_seed)))
        ys = [float(v) if is_measured(v) else math.nan for v in c.per_seed]
        colours = ["tab:green" if evaluate_target(c.target, v) else "tab:red" for v in c.per_seed]
        ax.scatter(xs, ys, c=colours, zorder=3)
        line = target_line(c.target)
        if line is not None:
            ax.axhline(line, color="k", linestyle="--", linewidth=1, label=f"target {c.target}")
        if c.mean is not None:
            ax.axhline(c.mean, color="tab:blue", linewidth=1, alpha=0.6, label="mean")
        ax.set_xticks(xs, [str(s) for s in result.seeds])
        ax.set_xlabel("seed")
        ax.set_title(f"{c.id}\n{c.verdict}", fontsize=8)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(plotted) :]:
        ax.axis("off")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_report(result: Result, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``out_dir/results.json`` and ``out_dir/report.md`` atomically.

    A multi-seed result also gets ``figures/findings_by_seed.png`` (each finding's per-seed values
    against its target line).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rel = "figures/findings_by_seed.png"
    if len(result.seeds) > 1 and rel not in result.figures:
        if plot_findings_by_seed(result, out / rel):
            result.figures.append(rel)
    jpath, mpath = out / "results.json", out / "report.md"
    atomic_write_text(jpath, json.dumps(result.to_dict(), indent=2) + "\n")
    atomic_write_text(mpath, render_markdown(result))
    return jpath, mpath
