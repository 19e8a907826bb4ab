"""The results.json schema: one claim over the seeds of a run, and one run.

``ClaimResult`` holds a claim's per-seed measurements and computes its verdict from them
(``paperzoo.verdict.targets``); ``Result`` is one run (one seed) or the aggregate of several
seed runs or shards of one paper at one scale, and names what ran: the code (commit and source
digest, ``paperzoo.provenance``), the data (name, source, sizes, SHA-256, fold), the config,
the overrides, the shard, the thread count and the precision. ``to_dict`` / ``from_dict`` write
and read results.json. Whether the run counts is not decided here: ``to_dict`` records the
answer of ``paperzoo.verdict.counts`` it is given (``Count.record``: ``findings_reproduced``,
``not_counted``, ``counting``). ``own_reason`` is the first step of that decision: what the
run's own fields say. Reasons inherited from merged runs are kept in ``marks`` and survive every
re-merge. See docs/verdicts.md.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperzoo.verdict.intervals import LOOKS, SEED_RULE, Decision, decide, sample_std
from paperzoo.verdict.targets import (
    MIN_SEEDS_REPRODUCED,
    VALIDATION_SEEDS_FROM,
    Measured,
    check_measurement,
    evaluate_target,
    is_measured,
    seeds_needed,
    validate_target,
)

__all__ = [
    "DECISION_KEYS",
    "ClaimResult",
    "Result",
    "format_seeds",
    "load_result",
    "next_seeds",
    "own_reason",
    "run_label",
    "scale_label",
]

# The keys of results.json that record the decision of ``paperzoo.verdict.counts`` (written by
# ``Result.to_dict`` from ``Count.record``; rewritten by ``make summary`` when the decision changes).
DECISION_KEYS = ("findings_reproduced", "not_counted", "counting")


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
    # where the paper number is quoted from (a maintained reimplementation), when it is; it counts
    quoted: str | None = None
    # why a seed has no value, per seed (None where measured or no reason is known), e.g.
    # "diverged at step 412 (deconv)"
    why_not_measured: list[str | None] | None = None
    # why this finding does not reproduce at the run's scale, as the code declares it ("the
    # small scale: ...", "our code: ...", "the paper: ..."); set by re-judging, never stored in
    # the claim (the decision records it: ``Count.diagnoses``)
    diagnosis: str | None = None
    # why this finding does not count although it may hold: its target or the seed rule
    # changed after the run ("target changed after the run: ..."); set by re-judging
    not_counted: str | None = None

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
        return sample_std([float(v) for v in self.per_seed])  # type: ignore[arg-type]

    @property
    def holds_on(self) -> int:
        """Number of seeds whose measurement meets the target."""
        return sum(evaluate_target(self.target, v) is True for v in self.per_seed)

    @property
    def decision(self) -> Decision | None:
        """How a finding is decided (``paperzoo.verdict.intervals.decide``: its interval, level
        and method); None for a check or a reported number."""
        if self.kind != "finding" or self.target.strip().lower() == "reported":
            return None
        return decide(self.target, self.per_seed)

    def _mean_meets(self) -> bool:
        mean = self.mean
        assert mean is not None
        t = self.target.strip().lower()
        if t in ("is true", "is false"):  # the mean of booleans is the fraction that are true
            return mean > 0.5 if t == "is true" else mean < 0.5
        return bool(evaluate_target(self.target, mean))

    @property
    def verdict(self) -> str:
        """A finding: ``holds``, ``fails`` or ``inconclusive`` by its interval (``decision``);
        a check (true by construction): ``holds`` when the mean and ``seeds_needed`` of its seeds
        meet the target, ``fragile`` when the mean does and fewer seeds do, else ``fails``; both:
        ``not measured`` without a value on every seed, ``reported`` without a target."""
        if self.target.strip().lower() == "reported":
            return "reported"
        if self.mean is None:
            return "not measured"
        if (decision := self.decision) is not None:
            return decision.verdict
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
        if self.kind != "finding" or self.verdict != "holds" or self.not_counted is not None:
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
        if (decision := self.decision) is not None:
            low, high = decision.interval
            d |= {
                "n": decision.n,
                "interval": [low, high],
                "interval_of": decision.of,
                "level": round(decision.level, 6),
                "method": decision.method,
                "look": decision.look,
            }
        if self.unverified is not None:
            d["unverified"] = self.unverified
        if self.quoted is not None:
            d["quoted"] = self.quoted
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
    # the seed rule and level its findings were decided by when it ran (``SEED_RULE``); None:
    # made before results.json recorded one (decided by the rule in force)
    seed_rule: dict[str, Any] | None = None

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

    def not_counted_reason(self) -> str | None:
        """Why this run, by its own fields, does not count (``own_reason``); None when nothing in
        them stops it. The whole decision, with the re-judging against the declared claims, the
        thread-count confirmation and the validation seeds, is ``paperzoo.verdict.counts``."""
        return own_reason(self)

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

    def to_dict(self, decision: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """results.json: what ran and every measurement, with ``decision`` (``Count.record``:
        whether the run counts, as ``paperzoo.verdict.counts`` decided) in its place; without
        one, the decision keys are left out."""
        findings, checks = self.findings, self.checks
        holding = f"{sum(c.verdict == 'holds' for c in findings)}/{len(findings)}"
        judged = [c for c in checks if c.verdict != "reported"]
        decision = dict(decision or {})
        if unknown := decision.keys() - set(DECISION_KEYS):
            raise ValueError(f"not a decision of counts(): {sorted(unknown)}")
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
            **decision,
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
        d["seed_rule"] = dict(self.seed_rule if self.seed_rule is not None else SEED_RULE)
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
                    quoted=c.get("quoted"),
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
                seed_rule=dict(d["seed_rule"]) if d.get("seed_rule") else None,
            )
        except (KeyError, TypeError, ValueError) as err:
            version = d.get("paperzoo_version", "unknown") if isinstance(d, dict) else "unknown"
            raise ValueError(
                f"{source} is not a paperzoo results file of this version's format "
                f"(paperzoo {version}; problem: {err!r})"
            ) from None
        result.validate(source)
        stored = d.get("not_counted")
        legacy = "counting" not in d  # written before results.json recorded counts()'s answer
        if legacy and stored and stored != result.not_counted_reason():
            result.marks.append(str(stored))  # then it recorded the run's own reason: a mark
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


def own_reason(result: Result) -> str | None:
    """Why ``result`` does not count by its own fields; None when nothing in them stops it: a
    partial run, a modified config, not the scale's own setting, one shard or an incomplete set
    of shards, a mark inherited from merged runs, a smoke run, no clean provenance, seeds that
    are not a counted seed set (in this order; the first found is given)."""
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
    return seeds_problem(result)


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


def seeds_problem(result: Result) -> str | None:
    """Why the seeds are not a counted seed set; None when they are: below full scale the seeds
    of one of the seed rule's looks (0-3, 0-7, 0-15: ``paperzoo.verdict.intervals.LOOKS``), at
    full any test seeds; validation seeds never count."""
    validation = [s for s in result.seeds if s >= VALIDATION_SEEDS_FROM]
    if validation:
        return f"validation seeds {format_seeds(validation)} (selection runs) never count"
    looks = [list(range(n)) for n in LOOKS]
    if result.scale in ("quick", "smoke") and sorted(result.seeds) not in looks:
        if len(result.seeds) < MIN_SEEDS_REPRODUCED:
            return f"a finding counts as reproduced only over {MIN_SEEDS_REPRODUCED} seeds"
        return (
            f"seeds {format_seeds(result.seeds)}: a {result.scale} verdict counts over the "
            f"seeds of a look of the seed rule only ({', '.join(format_seeds(s) for s in looks)})"
        )
    return None


def next_seeds(result: Result) -> list[int]:
    """The seeds the seed rule adds after ``result``: at quick scale, over the seeds of a look
    (0-3, 0-7), while one of its findings is ``inconclusive``, the next look's new seeds (4-7,
    then 8-15); empty when every finding is decided, at the last look, at another scale (which
    runs the seeds it is given), or for seeds that are no look."""
    seeds = sorted(result.seeds)
    if result.scale != "quick" or seeds not in [list(range(n)) for n in LOOKS[:-1]]:
        return []
    if not any(c.verdict == "inconclusive" for c in result.findings):
        return []
    return list(range(len(seeds), LOOKS[LOOKS.index(len(seeds)) + 1]))


def load_result(out_dir: str | Path) -> Result:
    """``Result`` from ``out_dir/results.json``; ``ValueError`` with a one-line reason."""
    path = Path(out_dir) / "results.json"
    try:
        d = json.loads(path.read_text())
    except FileNotFoundError:
        if Path(out_dir).is_file():
            raise ValueError(
                f"{out_dir} is a file, not a run directory (one holding results.json)"
            ) from None
        raise ValueError(f"{path} not found") from None
    except NotADirectoryError:
        raise ValueError(
            f"{out_dir} is a file, not a run directory (one holding results.json)"
        ) from None
    except OSError as err:
        raise ValueError(f"{path} cannot be read: {err.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} is not a paperzoo results file")
    return Result.from_dict(d, str(path))


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


def scale_label(result: Result) -> str:
    """The run's scale and part: ``quick`` or ``full, part classification``."""
    return f"{result.scale}, part {result.part}" if result.part else result.scale


def run_label(result: Result) -> str:
    """What ran, in a few words: ``quick, seeds 0-3, commit 1a4d5126a0c3``."""
    where = scale_label(result)
    s = "seed" if len(result.seeds) == 1 else "seeds"
    return f"{where}, {s} {format_seeds(result.seeds)}, commit {result.commit or 'unknown'}"
