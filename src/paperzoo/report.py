"""report.md: the paper's numbers beside ours, per seed, with the verdicts and whether they count.

``write_report`` writes a run's ``results.json`` (``paperzoo.verdict.Result.to_dict`` with the
decision of ``paperzoo.verdict.counts`` it is given) and its ``report.md`` from the same
decision: the headline (``Count.headline``: how many findings were reproduced, or why the run
does not count), what ran (command, device, code, data), the
findings and checks tables with each seed's value, mean ± std, target and verdict, the notes and
the figures; a partial run (``--max-steps``) also gets its estimate of the whole run's time and
the loops it was computed from. The verdict rules are in docs/verdicts.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from paperzoo.utils.format import format_number
from paperzoo.utils.io import atomic_savefig, atomic_write_text
from paperzoo.verdict import (
    ClaimResult,
    Count,
    Result,
    evaluate_target,
    format_seeds,
    is_measured,
    rule_text,
    target_line,
)

__all__ = ["plot_findings_by_seed", "render_markdown", "write_report"]

_MARK = {
    "holds": "✅",
    "inconclusive": "❔",
    "fragile": "⚠️",
    "fails": "❌",
    "not measured": "❌",
    "reported": "—",
}


def _fmt(v: Any) -> str:
    return format_number(v, fixed=True)


def _interval_text(c: ClaimResult) -> str:
    """A finding's interval as report.md shows it: ``[low, high]`` on the mean, or on the
    fraction of seeds meeting the target (the binomial rule); ``—`` where there is none."""
    d = c.decision
    if d is None or d.interval[0] is None or d.interval[1] is None:
        return "—"
    text = f"[{_fmt(d.interval[0])}, {_fmt(d.interval[1])}]"
    return text if d.of == "mean" else f"{text} of seeds meeting it"


def _claim_table(
    claims: list[ClaimResult], seeds: list[int], label: str, count: Count, partial: bool = False
) -> list[str]:
    seed_cols = "".join(f" seed {s} |" for s in seeds)
    finding = label == "finding"
    spread = " mean | interval |" if finding else " mean ± std |"
    lines = [
        f"| {label} | paper |{seed_cols}{spread} target | verdict |",
        "|---|---|" + "---|" * len(seeds) + ("---|---|" if finding else "---|") + "---|---|",
    ]
    for c in claims:
        cells = "".join(f" {_fmt(v)} |" for v in c.per_seed)
        if finding:
            ours = f" {_fmt(c.mean) if c.mean is not None else '—'} | {_interval_text(c)} |"
        else:
            ours = " — |" if c.mean is None else f" {_fmt(c.mean)} ± {_fmt(c.std)} |"
        verdict = f"{_MARK[c.verdict]} {c.verdict_text}"
        if c.verdict != "reported":
            verdict += f" ({c.holds_on}/{len(c.per_seed)} seeds meet it)"
        if partial:
            verdict += ", partial"
        if (why := count.why_not_counted(c.id)) is not None:
            verdict += f"; not counted: {why}"
        elif c.unverified is not None:
            verdict += f"; paper number unverified: {c.unverified}"
        if c.quoted is not None:
            verdict += f"; paper number quoted ({c.quoted})"
        lines.append(
            f"| `{c.id}`<br>{c.statement} | {_fmt(c.paper)} |{cells}{ours} {c.target} | {verdict} |"
        )
    return lines


def render_markdown(count: Count) -> str:
    """report.md of the run ``count`` judged: its headline (``Count.headline``), the findings
    table (each claim re-judged, with why a holding finding does not count), the checks, the
    declared diagnosis of each finding not reproduced, notes and figures."""
    result = count.result
    seeds = result.seeds
    lines = [f"# {result.title}", ""]
    if not result.paper_setting:
        lines += [f"**NOT THE PAPER'S SETTING: {result.setting_note}.**", ""]
    code = f"commit {result.commit}" if result.commit else "commit unknown"
    if result.source_sha256:
        code += f", source {result.source_sha256[:12]}"
    lines += [
        f"**{count.headline()}**",
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
    lines += ["## Findings", ""] + _claim_table(result.findings, seeds, "finding", count, partial)
    if result.checks:
        lines += ["", "## Checks (by construction or sanity bounds; never counted as findings)", ""]
        lines += _claim_table(result.checks, seeds, "check", count, partial)
    lines += [
        "",
        f"Findings are decided from {rule_text()}: holds = the interval clears the target, fails = it lies on "
        "the other side, inconclusive = it straddles (a quick run adds seeds while a finding is "
        "inconclusive); not measured = a seed has no value. Checks: holds = the mean and at "
        "least ceil(3n/4) of n seeds meet the target, fragile = the mean does, fewer seeds do, "
        "fails = the mean does not.",
    ]
    if diagnoses := count.diagnoses:
        lines += ["", "## Why these findings do not reproduce here", ""]
        lines += [f"- `{cid}`: {why}" for cid, why in diagnoses.items()]
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
        d = c.decision
        if c.mean is not None:
            ax.axhline(c.mean, color="tab:blue", linewidth=1, alpha=0.6, label="mean")
        if d is not None and d.of == "mean" and d.interval[0] is not None:
            ax.axhspan(*d.interval, color="tab:blue", alpha=0.12,
                       label=f"interval ({d.level:.1%} each side)")  # fmt: skip
        ax.set_xticks(xs, [str(s) for s in result.seeds])
        ax.set_xlabel("seed")
        how = f", {d.method}, look {d.look}" if d is not None and d.look else ""
        paper = f"; paper: {format_number(c.paper, sci_digits=3)}" if c.paper is not None else ""
        ax.set_title(f"{c.id}\n{c.verdict} (n {len(c.per_seed)}{how}){paper}", fontsize=8)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(plotted) :]:
        ax.axis("off")
    fig.tight_layout()
    atomic_savefig(fig, path, dpi=90)
    plt.close(fig)
    return True


def write_report(result: Result, out_dir: str | Path, count: Count) -> tuple[Path, Path]:
    """Write ``out_dir/results.json`` and ``out_dir/report.md`` atomically, both recording
    ``count`` (``paperzoo.verdict.counts`` of ``result``).

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
    text = json.dumps(result.to_dict(count.record()), indent=2) + "\n"
    atomic_write_text(jpath, text, what="the results")
    atomic_write_text(mpath, render_markdown(count), what="the report")
    return jpath, mpath
