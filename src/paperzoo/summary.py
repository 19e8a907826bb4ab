"""The project's front page: every paper's verdicts, quick and full side by side.

``paperzoo summary DIR... [--html FILE]`` reads the ``results.json`` of each run directory and
renders one page (Markdown on stdout, HTML in ``FILE``) that says, per paper:

- at each scale that ran, how many of the paper's findings were reproduced, or, for a run that
  does not count as a reproduction, why not (a modified config, a partial run, not the paper's
  setting, one shard of a grid, fewer than 4 seeds, a smoke run);
- at ``full`` scale where no run was given, why none was made (each paper's
  ``Experiment.full_not_run``: its data are not reachable from this project's machines, it needs
  a GPU, or it is a CPU run not made yet);
- each finding's paper number, our mean ± std, the target and the verdict at each scale;
- links, relative to the page, to each run's ``report.md`` and its per-seed figure.

Whether a run counts, and which of its findings are reproduced, is ``paperzoo.verdict.counts``:
the page shows its answer, the same one ``reproduce`` prints and report.md states. The page does
not believe the files it reads: every verdict is recomputed from the stored per-seed values
(an interval on the mean, ``paperzoo.verdict.intervals``) against the target the run stored (a
target or seed rule the code has changed since does not count), an aggregate is checked against
the seed runs beside it, and a run of a config the code no longer declares does not count. Runs
over validation seeds (100 and up) chose configs: they are named, never shown as verdicts.
Across a paper's findings the page states the control it applies (``across_findings``).

Verdicts are coloured by CSS classes (``v-holds``, ``v-inconclusive``, ``v-fails``,
``v-fragile``, ``v-not-measured``, ``v-reported``), never by emoji: headless browsers without an emoji font
draw those as empty boxes. Nothing here judges a claim: the verdicts are the ones
``paperzoo.verdict`` computed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from paperzoo.experiments.base import Experiment, NotRun
from paperzoo.experiments.judging import judge_runs
from paperzoo.experiments.verifying import verification_flag
from paperzoo.utils.format import format_number
from paperzoo.verdict import (
    ALPHA,
    LOOKS,
    ClaimResult,
    Count,
    Result,
    format_seeds,
    holm,
    is_validation_run,
    rule_text,
    scale_label,
    threads_of,
)
from paperzoo.verdict.intervals import LOOK_ALPHA

__all__ = ["across_findings", "render_summary_html", "render_summary_markdown"]

_VERDICT_CLASS = {
    "holds": "v-holds",
    "inconclusive": "v-inconclusive",
    "fails": "v-fails",
    "fragile": "v-fragile",
    "not measured": "v-not-measured",
    "reported": "v-reported",
}


# -- the page's model: papers, their runs, the reasons --------------------------------------------


@dataclass
class _Run:
    count: Count  # ``paperzoo.verdict.counts`` of the run, given its paper's other quick runs
    dir: Path | None

    @property
    def result(self) -> Result:
        return self.count.result  # re-judged against the declared claims

    @property
    def reason(self) -> str | None:
        return self.count.reason

    @property
    def flags(self) -> list[str]:
        verified = verification_flag(self.dir)  # never verified, or failed (paperzoo verify)
        return list(self.count.flags) + ([verified] if verified else [])

    @property
    def part(self) -> str | None:
        return self.result.part

    @property
    def label(self) -> str:
        label = scale_label(self.result)
        if self.dir is not None:
            label += f" ({self.dir.name})"
        return label

    def counts(self) -> tuple[int, int]:
        """(findings reproduced, findings): holding, stable and on verified paper numbers where
        the run counts; holding where it does not (its headline then says "holding")."""
        c = self.count
        return (len(c.reproduced) if c.counted else c.holding), c.findings


@dataclass
class _Paper:
    name: str
    title: str
    quick: list[_Run]
    full: list[_Run]
    other: list[_Run]  # smoke runs and any other scale
    not_run: tuple[NotRun, ...]
    # the paper's runs over validation seeds (they chose configs; never counted): their labels
    validation: tuple[str, ...] = ()

    @property
    def runs(self) -> list[_Run]:
        return self.quick + self.full + self.other


def _papers(results: Sequence[Result], dirs: Sequence[str | Path] | None) -> list[_Paper]:
    if dirs is not None and len(dirs) != len(results):
        raise ValueError(f"{len(results)} results but {len(dirs)} directories")
    where: list[Path | None] = (
        [Path(d) for d in dirs] if dirs is not None else [None] * len(results)
    )
    runs = list(zip(results, where, strict=True))
    by_name: dict[str, _Paper] = {}
    for (r, d), count in zip(runs, judge_runs(results, where), strict=True):
        if is_validation_run(r):  # selection runs: named, not shown as verdicts
            continue
        paper = by_name.setdefault(r.paper, _Paper(r.paper, r.title, [], [], [], ()))
        run = _Run(count, d)
        {"quick": paper.quick, "full": paper.full}.get(r.scale, paper.other).append(run)
    checks = [(r, d) for r, d in runs if is_validation_run(r)]
    for r, d in checks:
        if r.paper in by_name:
            label = f"{scale_label(r)}, validation seeds {format_seeds(r.seeds)}" + (
                f" ({d.name})" if d is not None else ""
            )
            by_name[r.paper].validation += (label,)
    for paper in by_name.values():
        done = {run.part for run in paper.full}
        declared = _declared(paper.name)
        if None in done or declared is None:  # a full run of the whole paper, or unknown paper
            paper.not_run = ()
        else:
            entries = declared.full_not_run
            paper.not_run = tuple(e for e in entries if e.part is None or e.part not in done)

    def rank(p: _Paper) -> tuple[float, str]:
        declared = _declared(p.name)
        return (declared.order if declared is not None else float("inf"), p.name)

    return sorted(by_name.values(), key=rank)


_VALIDATION_TEXT = "validation seeds: selection runs that chose configs, never counted"


def _declared(name: str) -> Experiment | None:
    """The experiment this paperzoo declares under ``name`` (None: not a known paper)."""
    from paperzoo.experiments import EXPERIMENTS

    return EXPERIMENTS.create(name) if name in EXPERIMENTS else None


def _num(v: Any) -> str:
    return format_number(v, sci_digits=2)


def _spread(c: ClaimResult) -> str:
    """Our number: a finding's mean and interval over its seeds (or, decided by the binomial
    rule, how many seeds meet the target), a check's mean ± std."""
    if c.mean is None:
        return "not measured"
    d = c.decision
    if all(isinstance(v, bool) for v in c.per_seed):  # the mean of booleans is a fraction
        return f"true on {sum(c.per_seed)} of {len(c.per_seed)}"  # type: ignore[arg-type]
    if d is not None and d.of != "mean":  # no spread: decided by how many seeds meet it
        return f"{_num(c.mean)} on every seed ({c.holds_on} of {d.n} meet the target)"
    if len(c.per_seed) == 1:
        return _num(c.per_seed[0])
    if d is not None and d.interval[0] is not None:
        return f"{_num(c.mean)} [{_num(d.interval[0])}, {_num(d.interval[1])}]"
    return f"{_num(c.mean)} ± {_num(c.std)}"


def _verdict_text(c: ClaimResult) -> str:
    if c.verdict == "reported":
        return "reported"
    return f"{c.verdict_text} ({len(c.per_seed)} seed{'s' if len(c.per_seed) != 1 else ''})"


def _noted_verdict(c: ClaimResult, run: _Run, notes: dict[str, int]) -> str:
    """A verdict cell of a findings table (Markdown or HTML): why a finding does not count is
    written once under the table (``notes``: reason -> its number, added to here) and named by
    its number."""
    why = run.count.why_not_counted(c.id)
    if why is None or c.verdict == "reported":
        return _verdict_text(c)
    n = notes.setdefault(why, len(notes) + 1)
    return f"{_verdict_text(c)} (not counted: note {n})"


def _link(path: Path, base: Path | None) -> str:
    """``path`` as a URL relative to the page's directory ``base`` (or as given)."""
    rel = os.path.relpath(path, base) if base is not None else str(path)
    return quote(Path(rel).as_posix())


def _figure(run: _Run) -> str | None:
    """The run's per-seed figure (``figures/findings_by_seed.png``) if it lists one."""
    figs = run.result.figures
    return next((f for f in figs if f.endswith("findings_by_seed.png")), figs[0] if figs else None)


def _headline(run: _Run) -> str:
    return run.count.headline()


def _headline_class(run: _Run) -> str:
    k, n = run.counts()
    if run.reason is not None:
        return "h-uncounted"
    return "h-all" if k == n else "h-some" if k > 0 else "h-none"


def _meta(run: _Run) -> str:
    r = run.result
    bits = [f"seeds {format_seeds(r.seeds)}", f"on {r.device}", f"{r.wall_seconds / 60:.0f} min"]
    if len(r.seeds) > 1:
        bits[-1] += " (sum over seeds)"
    bits.append(f"commit {r.commit or 'unknown'}")
    threads = threads_of(r)
    if threads is not None:
        bits.append(f"{threads} thread{'s' if threads != 1 else ''} per process")
    if r.partial is not None and r.partial.get("estimate_seconds") is not None:
        bits.append(f"whole run estimated at {r.partial['estimate_seconds'] / 3600:.1f} h")
    data = ", ".join(
        f"{d.get('name')} ({d.get('source')}, {d.get('n_train')} train / {d.get('n_test')} test)"
        for d in r.data
    )
    if data:
        bits.append(f"data: {data}")
    return "; ".join(bits)


def _claim_rows(paper: _Paper) -> tuple[list[_Run], list[tuple[str, str, Any, list]]]:
    """The columns (one per run) and rows (claim id, statement, paper's number, per-run claim)
    of the paper's findings table: claims are matched by id across runs (ids are stable)."""
    runs = paper.runs
    order: dict[str, tuple[str, Any]] = {}
    for run in runs:
        for c in run.result.findings:
            order.setdefault(c.id, (c.statement, c.paper))
    rows = []
    for cid, (statement, number) in order.items():
        cells = [next((c for c in run.result.findings if c.id == cid), None) for run in runs]
        rows.append((cid, statement, number, cells))
    return runs, rows


def _diagnoses(paper: _Paper) -> list[tuple[str, str, str]]:
    """(claim id, scale, why) for each finding a run of ``paper`` does not reproduce and the code
    gives a diagnosis for at that run's scale (``Count.diagnosis``), each text once."""
    seen: dict[tuple[str, str, str], None] = {}
    for run in paper.runs:
        for cid, why in run.count.diagnoses.items():
            seen.setdefault((cid, run.result.scale, why), None)
    return list(seen)


def _twin_lines(paper: _Paper) -> list[str]:
    """What the paper's quick runs at other thread counts show: on the seeds they share with the
    first quick run, on how many findings the per-seed values are identical, and the largest
    difference (a record that the numbers reproduce across thread counts; no verdict rests on
    it)."""
    if len(paper.quick) < 2:
        return []
    first, out = paper.quick[0], []
    for other in paper.quick[1:]:
        a, b = first.result, other.result
        shared = sorted(set(a.seeds) & set(b.seeds))
        if threads_of(a) == threads_of(b) or not shared:
            continue
        same, diffs = 0, []
        theirs = {c.id: c for c in b.findings}
        for c in a.findings:
            o = theirs.get(c.id)
            if o is None:
                continue
            x = [c.per_seed[a.seeds.index(s)] for s in shared]
            y = [o.per_seed[b.seeds.index(s)] for s in shared]
            same += x == y
            diffs += [abs(float(u) - float(v)) for u, v in zip(x, y, strict=True)
                      if u is not None and v is not None and u != v]  # fmt: skip
        biggest = f"; largest difference {_num(max(diffs))}" if diffs else ""
        out.append(
            f"{other.label} against {first.label}, seeds {format_seeds(shared)}: per-seed values "
            f"identical on {same} of {len(a.findings)} findings{biggest}"
        )
    return out


def _holm_line(run: _Run) -> str | None:
    """Holm's rule across the run's findings: how many of its holds survive a familywise error
    rate of ``ALPHA`` over the looks; None for a run that does not count or holds none."""
    held = [c for c in run.result.findings if c.verdict == "holds"]
    if run.reason is not None or not held:
        return None
    return (
        f"Holm across its {len(run.result.findings)} findings (familywise {ALPHA:.0%} over the "
        f"looks, {LOOK_ALPHA:.2%} at each): {len(_holm_kept(run))} of {len(held)} holds survive"
    )


def across_findings(results: Sequence[Result], dirs: Sequence[str | Path] | None = None) -> str:
    """What the verdicts of ``results`` mean together: the rule each finding is decided by, what
    a reader should expect of that many verdicts at the declared level, and the control applied
    across a paper's findings (Holm's rule, per counted run). Markdown, one paragraph."""
    return _across(_papers(results, dirs))


def _holm_kept(run: _Run) -> set[str]:
    """The ids of the findings that hold and survive Holm's rule across the run's findings."""
    findings = run.result.findings
    ps = [d.p_value if (d := c.decision) is not None and d.verdict == "holds" else None
          for c in findings]  # fmt: skip
    return {c.id for c, kept in zip(findings, holm(ps), strict=True) if kept}


def _across(papers: list[_Paper]) -> str:
    counted, seen = [], set()
    for run in (run for p in papers for run in p.quick + p.full if run.reason is None):
        key = (run.result.paper, run.result.scale, run.part)
        if key not in seen:  # one run per paper, scale and part (not its twin at 2 threads)
            seen.add(key)
            counted.append(run)
    n = sum(len(run.result.findings) for run in counted)
    reproduced = sum(len(run.count.reproduced) for run in counted)
    kept = sum(len(_holm_kept(run) & {c.id for c in run.count.reproduced}) for run in counted)
    looks = ", ".join(format_seeds(list(range(k))) for k in LOOKS)
    quick = [c for run in counted if run.result.scale == "quick" for c in run.result.findings]
    tally = ", ".join(
        f"{sum(c.verdict == v for c in quick)} {v}"
        for v in ("holds", "inconclusive", "fails", "not measured")
        if any(c.verdict == v for c in quick)
    )
    return (
        f"At quick scale, {len(quick)} findings: {tally}. "
        f"Each finding is decided, by a rule fixed before the run, from {rule_text()}. A finding "
        f"whose true mean sits exactly on its target reads `holds` with probability at most "
        f"{ALPHA:.0%}, whichever look a quick run stops at (the first of {looks} at which no "
        f"finding is inconclusive). The {len(counted)} runs that count (one per paper, scale and "
        f"part) judge {n} findings and reproduce {reproduced}: were every one of the {n} exactly on its target, at most "
        f"{ALPHA * n:.1f} false holds would be expected. No correction across a paper's findings "
        "changes a verdict; Holm's rule over each run's findings (any false hold in a run at "
        f"most {ALPHA:.0%}) is shown beside each run, and keeps {kept} of the {reproduced} "
        "reproduced findings.\n"
    )


# -- Markdown ---------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_overview_cell(paper: _Paper, scale: str, base: Path | None) -> str:
    runs = paper.quick if scale == "quick" else paper.full
    out = []
    for run in runs:
        text = _headline(run)
        threads = threads_of(run.result)
        if scale == "quick" and threads is not None and len(runs) > 1:
            text = f"{threads} thread{'s' if threads != 1 else ''}: {text}"
        if run.dir is not None:
            text = f"[{text}]({_link(run.dir / 'report.md', base)})"
        out.append(text)
    if scale == "full":
        out += [f"not run{f' ({e.part})' if e.part else ''}: {e.label}" for e in paper.not_run]
    if not out:
        out = ["not run"]
    return _md_cell("; ".join(out))


def render_summary_markdown(
    results: Sequence[Result],
    *,
    dirs: Sequence[str | Path] | None = None,
    base: Path | None = None,
    overview_only: bool = False,
) -> str:
    """Every paper's verdicts as Markdown: one overview row per paper (quick | full), then each
    paper's findings with one column group per run.

    Args:
        results: runs as read by ``paperzoo.verdict.load_result``, any papers and scales.
        dirs: the run directory of each result (same order), for the links to its report.
        base: the directory of the page the Markdown goes into; links are made relative to it
            (None: the directories as given).
        overview_only: only the one-row-per-paper table (the README's).

    Returns:
        The Markdown text, ending in a newline.
    """
    papers = _papers(results, dirs)
    lines = ["| paper | quick | full |", "|---|---|---|"]
    for p in papers:
        lines.append(
            f"| `{p.name}` | {_md_overview_cell(p, 'quick', base)} "
            f"| {_md_overview_cell(p, 'full', base)} |"
        )
    lines += ["", _across(papers).rstrip("\n")]
    if overview_only:
        return "\n".join(lines) + "\n"
    for p in papers:
        lines += ["", f"## `{p.name}`: {_md_cell(p.title)}", ""]
        for run in p.runs:
            line = f"- {run.label}: **{_headline(run)}**"
            if run.dir is not None:
                line += f", [report]({_link(run.dir / 'report.md', base)})"
                fig = _figure(run)
                if fig:
                    line += f", [per-seed figure]({_link(run.dir / fig, base)})"
            lines.append(line)
            lines += [f"  - flagged: {_md_cell(f)}" for f in run.flags]
            if (holm_line := _holm_line(run)) is not None:
                lines.append(f"  - {holm_line}")
        for e in p.not_run:
            lines.append(
                f"- full{f', part {e.part}' if e.part else ''}: not run, {e.label}: {e.why}"
            )
        lines += [f"- {label}: {_VALIDATION_TEXT}" for label in p.validation]
        lines += [f"- thread counts: {_md_cell(t)}" for t in _twin_lines(p)]
        runs, rows = _claim_rows(p)
        if not rows:
            continue
        head = "| finding | paper |" + "".join(
            f" {_md_cell(run.label)}: ours | target | verdict |" for run in runs
        )
        lines += ["", head, "|---|---|" + "---|---|---|" * len(runs)]
        notes: dict[str, int] = {}  # why a finding that holds does not count -> its note number
        for cid, statement, number, cells in rows:
            row = f"| `{cid}`<br>{_md_cell(statement)} | {_md_cell(_num(number))} |"
            for run, c in zip(runs, cells, strict=True):
                if c is None:
                    row += " — | — | — |"
                else:
                    verdict = _md_cell(_noted_verdict(c, run, notes))
                    row += f" {_spread(c)} | {_md_cell(c.target)} | {verdict} |"
            lines.append(row)
        if notes:
            lines += ["", "Why a finding above that holds is not counted:"]
            lines += [f"- note {n}: {_md_cell(why)}" for why, n in notes.items()]
        if diagnoses := _diagnoses(p):
            lines += ["", "Why a finding does not reproduce (the experiment is on the page named):"]
            lines += [f"- `{cid}` ({scale}): {_md_cell(why)}" for cid, scale, why in diagnoses]
    return "\n".join(lines) + "\n"


# -- HTML -------------------------------------------------------------------------------------------

_CSS = """
body{font-family:"DejaVu Sans","Liberation Sans",Arial,sans-serif;margin:24px 32px;color:#1d2125;
  font-size:14px;line-height:1.4;max-width:1500px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 8px}
h2 small{font-weight:normal;color:#555;font-size:14px}
h2 code{font-size:17px}
table.overview code{font-size:13px}
p.lede{color:#333;margin:4px 0 12px;max-width:1100px}
table{border-collapse:collapse}
th,td{border:1px solid #d0d5da;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f5;font-weight:600}
code{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:12px}
a{color:#0b5cad}
.legend span{margin-right:6px}
.v{display:inline-block;border-radius:3px;padding:0 6px;white-space:nowrap;font-weight:600}
.v-holds{background:#d3f0d8;color:#10561f}
.v-fragile{background:#fbe7b5;color:#6b4a00}
.v-fails{background:#f8d3d0;color:#8a1712}
.v-not-measured{background:#f8d3d0;color:#8a1712;font-style:italic}
.v-reported{background:#e9ecef;color:#444}
.v-inconclusive{background:#e3e8f7;color:#23356b}
.uncounted .v{opacity:.6}
.h{display:inline-block;border-radius:4px;padding:2px 8px;font-weight:600}
.h-all{background:#d3f0d8;color:#10561f}
.h-some{background:#fbe7b5;color:#6b4a00}
.h-none{background:#f8d3d0;color:#8a1712}
.h-uncounted{background:#e9ecef;color:#333;border:1px dashed #888}
.h-notrun{background:#eef1f4;color:#333;border:1px solid #c3cad1}
.why{display:block;color:#5a3d00;font-size:12px;margin-top:2px}
table.overview{margin:8px 0 24px}
table.overview td{min-width:320px}
table.overview td:first-child{min-width:0}
section.paper{border-top:2px solid #d0d5da;padding:16px 0 20px}
.runs{display:grid;grid-template-columns:1fr 1fr;gap:16px;margin-bottom:12px;align-items:start}
.run{border:1px solid #d0d5da;border-radius:6px;padding:10px 12px;background:#fafbfc}
.run h3{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:#555;margin:0 0 6px}
.run.notrun{background:#f6f7f9}
.meta{color:#555;font-size:12px;margin:6px 0}
.run img{max-width:100%;border:1px solid #e1e4e8;margin-top:6px;display:block}
table.findings{font-size:13px;width:100%}
table.findings td.claim{max-width:420px}
table.findings td.claim span{color:#555;font-size:12px}
table.findings th.run{text-align:center;border-bottom:2px solid #adb5bd}
td.num{white-space:nowrap;font-variant-numeric:tabular-nums}
"""


def _v(c: ClaimResult, text: str) -> str:
    title = ", ".join(_num(v) for v in c.per_seed)
    return (
        f"<span class='v {_VERDICT_CLASS[c.verdict]}' title='per seed: {escape(title)}'>"
        f"{escape(text)}</span>"
    )


def _html_headline(run: _Run) -> str:
    out = f"<span class='h {_headline_class(run)}'>{escape(_headline(run))}</span>"
    return out


def _html_notrun(e: NotRun, *, short: bool, paper: str | None = None) -> str:
    """Why there is no full run: the label, then the reason (``short``: the reason is the
    label's tooltip, and the label links to ``paper``'s section, where it is written out)."""
    part = f" ({e.part})" if e.part else ""
    label = f"not run{escape(part)}: {escape(e.label)}"
    if short:
        if paper is not None:
            label = f"<a href='#{escape(paper)}'>{label}</a>"
        return f"<span class='h h-notrun' title='{escape(e.why)}'>{label}</span>"
    return f"<span class='h h-notrun'>{label}</span><span class='why'>{escape(e.why)}</span>"


def _html_overview_cell(paper: _Paper, scale: str, base: Path | None) -> str:
    runs = paper.quick if scale == "quick" else paper.full
    items = []
    for run in runs:
        text = _html_headline(run)
        if run.part:
            text = f"part {escape(run.part)}: {text}"
        threads = threads_of(run.result)
        if scale == "quick" and threads is not None and len(runs) > 1:
            text = f"{threads} thread{'s' if threads != 1 else ''}: {text}"
        if run.dir is not None:
            text += f" <a href='{_link(run.dir / 'report.md', base)}'>report</a>"
        items.append(text)
    if scale == "full":
        items += [_html_notrun(e, short=True, paper=paper.name) for e in paper.not_run]
    return "<br>".join(items) or "<span class='h h-notrun'>not run</span>"


def _html_run_card(run: _Run, base: Path | None) -> str:
    parts = [
        f"<div class='run{' uncounted' if run.reason else ''}'>",
        f"<h3>{escape(run.label)}</h3>",
        _html_headline(run),
        f"<div class='meta'>{escape(_meta(run))}</div>",
    ]
    parts += [f"<div class='why'>Flagged: {escape(f)}</div>" for f in run.flags]
    if (holm_line := _holm_line(run)) is not None:
        parts.append(f"<div class='meta'>{escape(holm_line)}</div>")
    r = run.result
    judged = [c for c in r.checks if c.verdict != "reported"]
    if judged:
        held = sum(c.verdict == "holds" for c in judged)
        parts.append(
            f"<div class='meta'>checks (by construction or sanity bounds, never counted as "
            f"findings): {held} of {len(judged)} hold</div>"
        )
    if run.dir is not None:
        parts.append(
            f"<div><a href='{_link(run.dir / 'report.md', base)}'>report.md</a> &middot; "
            f"<a href='{_link(run.dir / 'results.json', base)}'>results.json</a></div>"
        )
        fig = _figure(run)
        if fig:
            src = _link(run.dir / fig, base)
            parts.append(
                f"<a href='{src}'><img src='{src}' alt='{escape(r.paper)}: each finding per seed "
                f"against its target' loading='lazy'></a>"
            )
    parts.append("</div>")
    return "\n".join(parts)


def _html_findings(paper: _Paper) -> str:
    runs, rows = _claim_rows(paper)
    if not rows:
        return ""
    out = ["<table class='findings'>", "<tr><th rowspan='2'>finding</th><th rowspan='2'>paper</th>"]
    out += [f"<th colspan='3' class='run'>{escape(run.label)}</th>" for run in runs]
    out.append(
        "</tr><tr>" + "<th>ours (mean [interval])</th><th>target</th><th>verdict</th>" * len(runs)
    )
    out.append("</tr>")
    notes: dict[str, int] = {}  # why a finding that holds does not count -> its note number
    for cid, statement, number, cells in rows:
        row = (
            f"<tr><td class='claim'><code>{escape(cid)}</code><br><span>{escape(statement)}"
            f"</span></td><td>{escape(_num(number))}</td>"
        )
        for run, c in zip(runs, cells, strict=True):
            cls = " class='uncounted'" if run.reason else ""
            if c is None:
                row += "<td>—</td><td>—</td><td>—</td>"
            else:
                row += (
                    f"<td class='num'>{escape(_spread(c))}</td><td class='num'>"
                    f"{escape(c.target)}</td><td{cls}>{_v(c, _noted_verdict(c, run, notes))}</td>"
                )
        out.append(row + "</tr>")
    out.append("</table>")
    if notes:
        out.append("<p>Why a finding above that holds is not counted:</p>")
        out.append("<ul>")
        out += [f"<li>note {n}: {escape(why)}</li>" for why, n in notes.items()]
        out.append("</ul>")
    if diagnoses := _diagnoses(paper):
        out.append("<p>Why a finding does not reproduce (the experiment is on the page named):</p>")
        out.append("<ul>")
        out += [
            f"<li><code>{escape(cid)}</code> ({escape(scale)}): {escape(why)}</li>"
            for cid, scale, why in diagnoses
        ]
        out.append("</ul>")
    return "\n".join(out)


def render_summary_html(
    results: Sequence[Result],
    *,
    dirs: Sequence[str | Path] | None = None,
    base: Path | None = None,
    title: str = "paperzoo: which of the papers' findings were reproduced",
) -> str:
    """The front page: one self-contained HTML document (CSS inline, figures linked).

    An overview table (one row per paper: quick | full), then per paper a card per run
    (headline, why it does not count where it does not, links to report.md and results.json,
    the per-seed figure), a card per part not run at full scale with the reason, and the
    findings table with one column group per run.

    Args:
        results: runs as read by ``paperzoo.verdict.load_result``, any papers and scales.
        dirs: the run directory of each result (same order), for links and figures.
        base: the directory the HTML file is written to; links are relative to it (None: the
            directories as given).
        title: the page's title and heading.

    Returns:
        The HTML text, ending in a newline.
    """
    papers = _papers(results, dirs)
    legend = " ".join(
        f"<span class='v {cls}'>{escape(v)}</span>" for v, cls in _VERDICT_CLASS.items()
    )
    parts = [
        "<!doctype html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        "<p class='lede'>Each paper's findings (the empirical results it reports) measured by "
        "<code>paperzoo reproduce NAME</code>. <b>quick</b>: small models on embedded data, "
        "about 5 CPU-minutes a seed, seeds 0-3 and more only where a finding is inconclusive. "
        "<b>full</b>: the paper's own setting (data, model, schedule); where none was run, the "
        "reason. Runs with a modified config, partial runs (<code>--max-steps</code>), single "
        "shards and runs not in the paper's setting are shown but never counted.</p>",
        f"<p class='legend'>Verdicts: {legend} &mdash; a finding is decided by {escape(rule_text())}"
        ": holds when the interval clears the target, fails when it lies on the other side, "
        "inconclusive when it straddles; not measured: a seed has no value. A check (true by "
        "construction) holds when the mean and 3 of 4 seeds meet it, fragile when fewer do. "
        "Ours: the mean and its interval. Hover a verdict for the per-seed values.</p>",
        f"<p class='lede'>{escape(_across(papers)).replace('`', '')}</p>",
        "<table class='overview'><tr><th>paper</th><th>quick</th><th>full</th></tr>",
    ]
    for p in papers:
        parts.append(
            f"<tr><td><a href='#{escape(p.name)}'><code>{escape(p.name)}</code></a></td>"
            f"<td>{_html_overview_cell(p, 'quick', base)}</td>"
            f"<td>{_html_overview_cell(p, 'full', base)}</td></tr>"
        )
    parts.append("</table>")
    for p in papers:
        parts.append(f"<section class='paper' id='{escape(p.name)}'>")
        parts.append(f"<h2><code>{escape(p.name)}</code> <small>{escape(p.title)}</small></h2>")
        cards = [_html_run_card(run, base) for run in p.runs]
        if not p.quick:
            cards.insert(0, "<div class='run notrun'><h3>quick</h3>"
                         "<span class='h h-notrun'>no quick run given</span></div>")  # fmt: skip
        for e in p.not_run:
            cards.append(
                f"<div class='run notrun'><h3>full{escape(f', part {e.part}' if e.part else '')}"
                f"</h3>{_html_notrun(e, short=False)}</div>"
            )
        parts.append("<div class='runs'>" + "\n".join(cards) + "</div>")
        parts += [
            f"<div class='why'>{escape(label)}: {escape(_VALIDATION_TEXT)}</div>"
            for label in p.validation
        ]
        parts += [f"<div class='meta'>thread counts: {escape(t)}</div>" for t in _twin_lines(p)]
        parts.append(_html_findings(p))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
