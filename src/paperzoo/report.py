"""results.json and report.md: the paper's numbers beside ours, with verdicts computed over seeds.

The verdict protocol (``DESIGN.md``, "Verdicts"): every claim is a ``finding`` (an empirical
result the paper reports) or a ``check`` (holds by construction, or a sanity bound). Each claim
is measured at every seed of a run; per claim the report gives each seed's value, the mean and
std, on how many seeds the target is met and a verdict:

- ``holds``: the mean meets the target and so do at least ``ceil(3n/4)`` of the ``n`` seeds;
- ``fragile``: the mean meets it, fewer seeds do;
- ``fails``: the mean does not meet it;
- ``not measured``: some seed has no measurement (missing, ``None`` or NaN); it fails;
- ``reported``: a descriptive number with no target (checks only).

A finding counts as *reproduced* only when it holds over at least 4 seeds (at ``full`` scale,
where one run is expensive, over the seeds that were run); smoke runs never count, and neither
do partial runs (``--max-steps``: every loop stopped early; they carry an estimate of the whole
run's time instead, under ``"partial"`` in results.json).
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

_CMP = re.compile(r"^\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")
_WITHIN = re.compile(r"^\s*within\s+([0-9.]+)\s*%\s+of\s+([-+0-9.eE]+)\s*$")

Measured = float | int | bool | None
VERDICTS = ("holds", "fragile", "fails", "not measured", "reported")
MIN_SEEDS_REPRODUCED = 4  # a finding counts as reproduced at smoke/quick only over this many seeds
_MARK = {"holds": "✅", "fragile": "⚠️", "fails": "❌", "not measured": "❌", "reported": "—"}


def validate_target(target: str) -> None:
    """Raise ``ValueError`` unless ``target`` is a target string ``evaluate_target`` understands."""
    t = target.strip().lower()
    if t in ("reported", "is true", "is false") or _CMP.match(t) or _WITHIN.match(t):
        return
    raise ValueError(f"cannot parse claim target {target!r}")


def is_measured(value: Measured) -> bool:
    """False for a missing (``None``) or NaN measurement."""
    if value is None:
        return False
    return isinstance(value, bool) or not math.isnan(float(value))


def evaluate_target(target: str, measured: Measured) -> bool | None:
    """Whether ``measured`` meets ``target``; ``None`` only for a ``"reported"`` target.

    Targets: ``">= x"``, ``"> x"``, ``"<= x"``, ``"< x"``, ``"== x"``, ``"within P% of x"``,
    ``"is true"``, ``"is false"``, and ``"reported"`` (no target). A missing or NaN measurement
    never meets a target.
    """
    validate_target(target)
    t = target.strip().lower()
    if t == "reported":
        return None
    if not is_measured(measured):
        return False
    if t in ("is true", "is false"):
        if not isinstance(measured, bool):
            raise ValueError(f"target {target!r} needs a boolean measurement, got {measured!r}")
        return measured is (t == "is true")
    value = float(measured)  # type: ignore[arg-type]
    if m := _CMP.match(t):
        op, x = m.group(1), float(m.group(2))
        return {
            ">=": value >= x,
            "<=": value <= x,
            ">": value > x,
            "<": value < x,
            "==": value == x,
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

    @property
    def findings(self) -> list[ClaimResult]:
        return [c for c in self.claims if c.kind == "finding"]

    @property
    def checks(self) -> list[ClaimResult]:
        return [c for c in self.claims if c.kind == "check"]

    @property
    def counts_as_reproduction(self) -> bool:
        """Whether verdicts here can count as reproduced findings (enough seeds, not smoke, not
        a partial run)."""
        if self.scale == "smoke" or self.shard is not None or self.partial is not None:
            return False
        return self.scale == "full" or len(self.seeds) >= MIN_SEEDS_REPRODUCED

    @property
    def all_hold(self) -> bool:
        """No claim fails, is fragile or unmeasured (reported numbers aside)."""
        return all(c.holds is not False for c in self.claims)

    def to_dict(self) -> dict[str, Any]:
        findings, checks = self.findings, self.checks
        holding = f"{sum(c.verdict == 'holds' for c in findings)}/{len(findings)}"
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
            "wall_seconds": round(self.wall_seconds, 1),
            "paperzoo_version": self.paperzoo_version,
            "torch_version": self.torch_version,
            "data": self.data,
            "claims": [c.to_dict() for c in self.claims],
            "findings_reproduced": holding if self.counts_as_reproduction else None,
            "findings_holding": holding,
            "checks_holding": f"{sum(c.verdict == 'holds' for c in judged)}/{len(judged)}",
            "figures": self.figures,
            "notes": self.notes,
            "config": self.config,
            "overrides": self.overrides,
            "details": self.details,
        }
        if self.shard is not None:
            d["shard"] = list(self.shard)
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
                    c["id"], c["statement"], c["paper"], list(c["per_seed"]), c["target"], c["kind"]
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
            )
        except (KeyError, TypeError, ValueError) as err:
            version = d.get("paperzoo_version", "unknown") if isinstance(d, dict) else "unknown"
            raise ValueError(
                f"{source} is not a paperzoo results file of this version's format "
                f"(paperzoo {version}; problem: {err!r})"
            ) from None
        result.validate(source)
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


def aggregate(runs: list[Result], seed_dirs: list[str] | None = None) -> Result:
    """Combine single-paper runs at different seeds into one result with per-seed values.

    The runs must come from one paper, scale and paperzoo version, declare the same claims with
    the same kinds and targets (targets are fixed before the run), and have distinct seeds.
    The aggregate's ``wall_seconds`` is the sum over the runs.
    """
    if not runs:
        raise ValueError("nothing to aggregate")
    first = runs[0]
    for key in ("paper", "scale", "paperzoo_version"):
        values = sorted({str(getattr(r, key)) for r in runs})
        if len(values) > 1:
            raise ValueError(f"seed runs must share one {key}, got {', '.join(values)}")
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
    order = sorted(range(len(runs)), key=lambda i: runs[i].seeds)
    runs = [runs[i] for i in order]
    seeds = [s for r in runs for s in r.seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seed runs repeat a seed: {seeds}")
    claims = [
        ClaimResult(
            c.id,
            c.statement,
            c.paper,
            [v for r in runs for v in r.claims[i].per_seed],
            c.target,
            c.kind,
        )
        for i, c in enumerate(first.claims)
    ]
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


def headline(result: Result) -> str:
    """ "Findings reproduced: k of n (quick, 4 seeds)", or why the verdicts don't count yet."""
    findings = result.findings
    k = sum(c.verdict == "holds" for c in findings)
    n_seeds = len(result.seeds)
    seeds = f"{n_seeds} seed{'s' if n_seeds != 1 else ''}"
    if result.counts_as_reproduction:
        return f"Findings reproduced: {k} of {len(findings)} ({result.scale}, {seeds})"
    why = (
        f"PARTIAL run: --max-steps {result.partial['max_steps']}, every loop stopped early"
        if result.partial is not None
        else "smoke runs only prove the pipeline"
        if result.scale == "smoke"
        else "one slice of a grid"
        if result.shard is not None
        else f"a finding counts as reproduced only over {MIN_SEEDS_REPRODUCED} seeds"
    )
    return f"Findings holding: {k} of {len(findings)} ({result.scale}, {seeds}; {why})"


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
        verdict = f"{_MARK[c.verdict]} {c.verdict}"
        if c.verdict != "reported":
            verdict += f" ({c.holds_on}/{len(c.per_seed)})"
        if partial:
            verdict += ", partial"
        lines.append(
            f"| `{c.id}`<br>{c.statement} | {_fmt(c.paper)} |{cells} {spread} | {c.target} "
            f"| {verdict} |"
        )
    return lines


def render_markdown(result: Result) -> str:
    """report.md: the headline, the findings table, the checks, notes and figures."""
    seeds = result.seeds
    seed_flag = f"--seed {seeds[0]}" if len(seeds) == 1 else f"--seeds {format_seeds(seeds)}"
    seed_flag += "".join(f" --set {k}={v}" for k, v in result.overrides.items())
    if result.partial is not None:
        seed_flag += f" --max-steps {result.partial['max_steps']}"
    lines = [
        f"# {result.title}",
        "",
        f"**{headline(result)}**",
        "",
        f"`paperzoo reproduce {result.paper} --scale {result.scale} {seed_flag}` "
        f"on {result.device}, {result.wall_seconds:.1f} s"
        f"{' (sum over seeds)' if len(seeds) > 1 else ''} "
        f"(paperzoo {result.paperzoo_version}, torch {result.torch_version})",
        "",
    ]
    if result.data:
        lines.append("Data: " + "; ".join(
            f"{d['name']} ({d['source']}, {d['n_train']} train / {d['n_test']} test)"
            for d in result.data
        ))  # fmt: skip
        lines.append("")
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


def _summary_rows(results: list[Result]) -> tuple[list[list[str]], list[list[str]]]:
    papers, findings = [], []
    for r in results:
        d = r.to_dict()
        scale = r.scale if r.partial is None else f"{r.scale} (PARTIAL, --max-steps)"
        papers.append([
            r.paper, scale, format_seeds(r.seeds), d["findings_reproduced"] or "—",
            d["findings_holding"], d["checks_holding"],
        ])  # fmt: skip
        for c in r.findings:
            spread = "—" if c.mean is None else f"{_fmt(c.mean)} ± {_fmt(c.std)}"
            findings.append([
                r.paper, c.id, _fmt(c.paper), spread, c.target,
                f"{_MARK[c.verdict]} {c.verdict} ({c.holds_on}/{len(c.per_seed)})"
                + (", partial" if r.partial is not None else ""),
            ])  # fmt: skip
    return papers, findings


_SUMMARY_HEADS = (
    ["paper", "scale", "seeds", "findings reproduced", "findings holding", "checks holding"],
    ["paper", "finding", "paper's number", "ours (mean ± std)", "target", "verdict"],
)


def render_summary_markdown(results: list[Result]) -> str:
    """One Markdown page of every paper's finding verdicts (``paperzoo summary``)."""
    lines: list[str] = []
    for head, rows in zip(_SUMMARY_HEADS, _summary_rows(results), strict=True):
        if lines:
            lines.append("")
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in rows:
            cells = [f"`{v}`" if head[i] == "finding" else v for i, v in enumerate(row)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_summary_html(results: list[Result]) -> str:
    """The same tables as ``render_summary_markdown`` as one self-contained HTML page."""
    from html import escape

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>paperzoo summary</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin-bottom:2em}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f3f3f3}</style></head><body><h1>paperzoo: findings by paper</h1>",
    ]
    for head, rows in zip(_SUMMARY_HEADS, _summary_rows(results), strict=True):
        parts.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
