"""The front page (``paperzoo.summary``): quick and full side by side, verdicts by CSS class,
links that resolve from the page, and the reason a run does not count."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from paperzoo.experiments.base import ClaimSpec
from paperzoo.experiments.judging import declare, judge
from paperzoo.report import write_report
from paperzoo.summary import render_summary_html, render_summary_markdown
from paperzoo.verdict import (
    ClaimResult,
    Result,
    aggregate,
    load_result,
    rejudge,
    threads_of,
)

# The claims the fixtures measure, declared for every paper the tests name (the summary re-judges
# stored values against the claims the code declares: ``paperzoo.verdict.rejudge``).
_SPECS = (
    ClaimSpec("split.acc", "accuracy on the split", 1.0, ">= 0.95"),
    ClaimSpec("split.gap", "A beats B", 0.1, ">= 0.7"),
    ClaimSpec("params", "parameter count", 7553, "== 7553", kind="check"),
)


@pytest.fixture(autouse=True)
def _declared_claims(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    from paperzoo.experiments import EXPERIMENTS

    if request.node.get_closest_marker("real_claims"):  # judges the committed runs
        return
    for name in EXPERIMENTS.names():
        monkeypatch.setattr(type(EXPERIMENTS.create(name)), "claims", _SPECS)


def _result(
    paper: str = "coordconv",
    scale: str = "quick",
    seeds: tuple[int, ...] = (0, 1, 2, 3),
    *,
    values: tuple[float, ...] = (1.0, 0.99, 1.0, 0.98),
    other: tuple[float, ...] = (0.5, 0.4, 0.6, 0.5),
    **kw,
) -> Result:
    n = len(seeds)
    claims = [
        ClaimResult("split.acc", "accuracy on the split", 1.0, list(values[:n]), ">= 0.95"),
        ClaimResult("split.gap", "A beats B", 0.1, list(other[:n]), ">= 0.7"),
        ClaimResult("params", "parameter count", 7553, [7553] * n, "== 7553", kind="check"),
    ]
    return Result(
        paper=paper,
        title=f"The {paper} paper",
        scale=scale,
        seeds=list(seeds),
        device="cpu",
        wall_seconds=600.0,
        paperzoo_version="0.2.0",
        torch_version="2.13.0",
        data=[{"name": "gen", "source": "generated", "n_train": 10, "n_test": 5}],
        claims=claims,
        **({"commit": "0123456789ab", "source_sha256": "f" * 64} | kw),
    )


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.imgs: list[str] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        self.classes += (a.get("class") or "").split()


def _parse(html: str) -> _Links:
    p = _Links()
    p.feed(html)
    return p


# Emoji and pictographs (✅ U+2705, ❌ U+274C, ⚠ U+26A0 ...) and the emoji variation selector:
# Chromium on Debian has no font for them and draws empty boxes.
_EMOJI = re.compile("[\u2190-\u2bff\ufe0f\U0001f000-\U0001faff]")


def test_quick_and_full_side_by_side_with_verdict_classes_and_no_emoji() -> None:
    full = _result(scale="full", values=(0.9, 0.91, 0.9, 0.89), other=(0.8, 0.81, 0.79, 0.8))
    quick = [_result(threads=1), _result(threads=2)]
    html = render_summary_html([*quick, full])
    assert "<th>quick</th><th>full</th>" in html  # the overview's two columns
    # one column group per run in the findings table, quick first
    groups = re.findall(r"<th colspan='3' class='run'>([^<]*)</th>", html)
    assert groups == ["quick", "quick", "full"]
    classes = _parse(html).classes
    for cls in ("v-holds", "v-fails", "h-some"):
        assert cls in classes, cls
    # the full run: split.acc's interval lies below 0.95 (fails), split.gap's above 0.7 (holds)
    label = "seeds 0-3, commit 0123456789ab, 98.3% intervals"
    assert f"Findings reproduced: 1 of 2 (full, {label})" in html
    assert f"Findings reproduced: 1 of 2 (quick, {label})" in html
    # one seed has no interval: its findings are inconclusive, and say so
    one = render_summary_html([_result(scale="full", seeds=(0,), values=(0.99,), other=(0.8,))])
    assert "Findings reproduced: 0 of 2 (full, seed 0" in one and "v-inconclusive" in one
    assert not _EMOJI.search(html)
    assert not _EMOJI.search(render_summary_markdown([*quick, full]))


def test_figure_and_report_links_resolve_relative_to_the_page(tmp_path: Path) -> None:
    results_dir = tmp_path / "results"
    dirs = [results_dir / "coordconv-quick", results_dir / "wrm quick"]  # a space: quoted
    write_report(_result(), dirs[0], judge(_result(), dirs[0]))
    write_report(_result("wrm"), dirs[1], judge(_result("wrm"), dirs[1]))
    loaded = [load_result(d) for d in dirs]
    (tmp_path / "docs").mkdir()  # a page in another directory: links go through ..
    for base in (results_dir, tmp_path / "docs"):
        page = _parse(render_summary_html(loaded, dirs=dirs, base=base))
        files = [h for h in page.hrefs if not h.startswith("#")]
        assert {Path(unquote(h)).name for h in files} == {
            "report.md",
            "results.json",
            "findings_by_seed.png",
        }
        assert len(page.imgs) == 2
        for link in files + page.imgs:
            assert not Path(unquote(link)).is_absolute()
            assert (base / unquote(link)).is_file(), link
        assert "figures/findings_by_seed.png" in page.imgs[0]
    md = render_summary_markdown(loaded, dirs=dirs, base=tmp_path / "docs")
    for link in re.findall(r"\]\(([^)]+)\)", md):
        assert (tmp_path / "docs" / unquote(link)).is_file(), link


def test_a_modified_config_run_says_why_it_does_not_count() -> None:
    modified = _result(overrides={"steps": "5"})
    assert modified.not_counted_reason() is not None
    assert "modified config" in modified.not_counted_reason()  # type: ignore[operator]
    html = render_summary_html([modified])
    assert "modified config" in html and "--set steps=5" in html
    assert "findings reproduced" not in html.split("<table class='overview'>")[1]
    assert "h-uncounted" in _parse(html).classes
    assert "h-all" not in _parse(html).classes and "h-some" not in _parse(html).classes
    md = render_summary_markdown([modified], overview_only=True)
    assert "not counted: modified config" in md and "--set steps=5" in md
    assert "findings reproduced" not in md


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"seeds": (0, 1)}, "only over 4 seeds"),
        ({"scale": "smoke"}, "smoke runs"),
        ({"shard": (0, 3)}, "shard 0/3"),
        ({"partial": {"max_steps": 3, "estimate_seconds": 7200.0}}, "--max-steps 3"),
    ],
)
def test_every_run_that_does_not_count_names_why(kw: dict, why: str) -> None:
    r = _result(**kw)
    reason = r.not_counted_reason()
    assert reason is not None and why in reason
    assert why in render_summary_html([r])
    assert _result().not_counted_reason() is None
    assert _result(scale="full", seeds=(0,)).not_counted_reason() is None


def test_boolean_findings_read_as_counts_not_means() -> None:
    r = _result(seeds=(0, 1, 2, 3))
    r.claims[0] = ClaimResult(
        "flagged", "the checklist flags it", None, [True] * 3 + [False], "is true"
    )
    specs = (ClaimSpec("flagged", "the checklist flags it", None, "is true"), *_SPECS[1:])
    from paperzoo.experiments import EXPERIMENTS

    type(EXPERIMENTS.create("coordconv")).claims = specs  # undone by the autouse fixture
    html = render_summary_html([r])
    assert "true on 3 of 4" in html and "0.75" not in html


def test_not_the_papers_setting_does_not_count() -> None:
    r = _result(scale="full", seeds=(0,))
    r.setting_note = "--dataset mnist5k instead of the paper's MNIST"  # type: ignore[attr-defined]
    reason = r.not_counted_reason()
    assert reason is not None and "not the paper's setting" in reason
    assert "mnist5k" in render_summary_html([r])


def test_papers_without_a_full_run_say_why_and_a_part_replaces_its_entry() -> None:
    from html import escape

    from paperzoo.experiments import EXPERIMENTS

    html = render_summary_html([_result("resnet")])
    assert "not run: needs CIFAR-10 and a GPU" in html
    assert "CIFAR-10" in html  # the sentence resnet declares (full_not_run)
    (why,) = [e.why for e in EXPERIMENTS.create("resnet").full_not_run]
    overview = html.split("<section", 1)[0]  # the overview's cell: the reason on hover, a link
    assert f"title='{escape(why)}'><a href='#resnet'>not run: needs CIFAR-10" in overview
    assert "needs a GPU" in render_summary_markdown([_result("draw")], overview_only=True)
    wrm_parts = {e.part for e in EXPERIMENTS.create("wrm").full_not_run}
    assert wrm_parts == {"spheres", "mnist"}
    spheres = _result("wrm", scale="full", seeds=(0,))
    spheres.part = "spheres"  # type: ignore[attr-defined]  # a --part run
    md = render_summary_markdown([_result("wrm"), spheres], overview_only=True)
    row = next(line for line in md.splitlines() if line.startswith("| `wrm`"))
    assert "(full, part spheres, " in row and "not run (mnist): needs a GPU" in row
    assert "not run (spheres)" not in row
    # a full run of the whole paper leaves no reason behind
    whole = render_summary_html([_result("resnet"), _result("resnet", "full", (0,))])
    assert "not run" not in whole


def test_every_paper_has_a_full_scale_reason_and_papers_keep_the_readme_order() -> None:
    from paperzoo.experiments import EXPERIMENTS

    assert all(EXPERIMENTS.create(name).full_not_run for name in EXPERIMENTS.names())
    md = render_summary_markdown([_result("gat"), _result("resnet")], overview_only=True)
    rows = [line.split("`")[1] for line in md.splitlines()[2:] if line.startswith("| `")]
    assert rows == ["resnet", "gat"]


# -- the generated README tables, docs/results.md and results/index.html ---------------------------

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_tool_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.real_claims
def test_the_committed_front_page_and_readme_tables_are_up_to_date() -> None:
    """README's results and performance tables, docs/results.md, docs/benchmarks.md's tables and
    results/index.html are what `make summary` makes from the committed runs: after adding or
    changing a run under results/, run `make summary`."""
    if not (ROOT / "results" / "bench-1thread.json").is_file():
        pytest.skip("not a source checkout with results/")
    assert _tool("update_summary").main(["--readme", "--check"]) == 0
    assert _tool("bench_overview").main(["--check"]) == 0


def test_every_committed_run_names_the_clean_code_that_made_it() -> None:
    """Every results.json under results/ (aggregates and seed runs) has a commit, not
    dirty, and a source digest; a run without them is shown but never counted, so committing
    one only adds a row that says "not counted"."""
    found = sorted((ROOT / "results").rglob("results.json"))
    if not found:
        pytest.skip("not a source checkout with results/")
    missing = []
    for path in found:
        r = load_result(path.parent)
        commit = r.commit or ""
        if not re.fullmatch(r"[0-9a-f]{7,40}", commit) or not r.source_sha256:
            missing.append(f"{path.relative_to(ROOT)}: commit={r.commit!r}")
    assert not missing, "runs without provenance:\n" + "\n".join(missing)


def test_every_committed_bench_row_is_in_a_readme_comparison() -> None:
    tool = _tool("bench_overview")
    import json

    reports = [json.loads(p.read_text()) for p in tool.REPORTS if p.is_file()]
    if not reports:
        pytest.skip("no committed bench reports")
    table = tool.overview(reports)  # raises SystemExit naming a row that fits no comparison
    assert len(table.splitlines()) == 2 + len(tool.COMPARISONS)


# -- the summary does not believe the files it reads ----------------------------------------------


def test_a_target_loosened_after_the_run_is_judged_as_stored_and_does_not_count(
    tmp_path: Path,
) -> None:
    """The code now declares split.gap ">= 0.7"; the run stored ">= 0" (as if the target had
    been loosened after seeing it, or the file edited): it is judged against what it stored,
    and does not count until rerun."""
    r = _result(other=(0.5, 0.4, 0.6, 0.5))
    r.claims[1] = ClaimResult("split.gap", "A beats B", 0.1, list(r.claims[1].per_seed), ">= 0")
    write_report(r, tmp_path / "t1", judge(r, tmp_path / "t1"))
    run = load_result(tmp_path / "t1")
    judged, _ = rejudge(run, declare)
    assert judged.claims[1].verdict == "holds" and judged.claims[1].target == ">= 0"
    md = render_summary_markdown([run], dirs=[tmp_path / "t1"])
    assert "Findings reproduced: 1 of 2" in md and "reproduced: 2 of 2" not in md
    why = "target changed after the run: stored '>= 0', declared '>= 0.7'; rerun to count"
    assert why in md


def test_an_aggregate_that_disagrees_with_its_seed_runs_does_not_count(tmp_path: Path) -> None:
    seeds = []
    for s in range(4):
        r = _result(seeds=(s,), values=((0.9, 0.91, 0.89, 0.9)[s],), other=(0.8,), threads=1)
        write_report(r, tmp_path / f"seed-{s}", judge(r, tmp_path / f"seed-{s}"))
        seeds.append(load_result(tmp_path / f"seed-{s}"))
    agg = aggregate(seeds, [f"seed-{s}" for s in range(4)])
    assert agg.claims[0].verdict == "fails"
    agg.claims[0] = ClaimResult("split.acc", "accuracy on the split", 1.0, [1.0] * 4, ">= 0.95")
    write_report(agg, tmp_path, judge(agg, tmp_path))
    edited = load_result(tmp_path)
    _, problems = rejudge(edited, declare, tmp_path)
    assert any(p.startswith("not counted: split.acc per seed") for p in problems)
    md = render_summary_markdown([edited], dirs=[tmp_path])
    assert "split.acc per seed [1.0, 1.0, 1.0, 1.0] but its seed runs say [0.9" in md


def test_a_thread_count_decides_nothing_and_the_twins_say_what_they_show() -> None:
    one = _result(threads=1, other=(0.8, 0.81, 0.79, 0.8))
    two = _result(threads=2, other=(0.8, 0.81, 0.79, 0.6))  # one seed differs at two threads
    md = render_summary_markdown([one, two], dirs=[Path("x-quick"), Path("x-quick-2threads")])
    overview = md.split("\n## ")[0]
    assert "1 thread: Findings reproduced: 2 of 2" in overview  # each run counts on its own
    assert "2 threads: Findings reproduced: 1 of 2" in overview
    assert (
        "thread counts: quick (x-quick-2threads) against quick (x-quick), seeds 0-3: per-seed "
        "values identical on 1 of 2 findings; largest difference 0.2"
    ) in md
    # the thread count is read from the recorded command when not recorded as a field
    cmd = _result(command="paperzoo reproduce coordconv --seeds 0-3 --jobs 1 --threads 2")
    assert threads_of(cmd) == 2 and threads_of(_result()) is None


def test_validation_seed_runs_are_named_as_selection_runs_and_decide_nothing() -> None:
    one = _result(threads=1)
    seeds = tuple(range(100, 108))
    val = _result(seeds=seeds, values=(1.0, 0.9, 0.9, 1.0) * 2, other=(0.5,) * 8, threads=1)
    dirs = [Path("x-quick"), Path("validation/x-quick-s100-107")]
    md = render_summary_markdown([one, val], dirs=dirs)
    assert "x-quick-s100-107): **" not in md  # the validation run has no line of its own
    assert "- quick, validation seeds 100-107 (x-quick-s100-107): validation seeds" in md
    assert md.split("\n## ")[0] == render_summary_markdown([one], dirs=dirs[:1]).split("\n## ")[0]


def test_runs_without_provenance_or_from_a_dirty_tree_are_shown_not_counted() -> None:
    for kw, why in (
        ({"commit": None}, "no commit recorded"),
        ({"commit": "0123456789ab+dirty"}, "dirty tree"),
        ({"source_sha256": None}, "no source digest"),
    ):
        r = _result(**kw)
        assert why in (r.not_counted_reason() or "")
        assert why in render_summary_markdown([r], overview_only=True)


def test_an_unverified_paper_number_does_not_count_at_full(monkeypatch) -> None:
    from paperzoo.experiments import EXPERIMENTS

    specs = (
        ClaimSpec("split.acc", "accuracy", 1.0, ">= 0.95", unverified="not in the paper's text"),
        *_SPECS[1:],
    )
    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", specs)
    full = _result(scale="full", values=(0.99, 1.0, 0.98, 1.0), other=(0.8, 0.81, 0.79, 0.8))
    md = render_summary_markdown([full])
    assert "Findings reproduced: 1 of 2" in md  # split.acc holds but does not count
    assert "1 more hold on unverified paper numbers" in md  # the row says why, as report.md
    # the verdict cell names a note; the reason is written once, under the table
    assert "holds (4 seeds) (not counted: note 1)" in md
    assert md.count("not in the paper's text") == 1
    assert "- note 1: paper number unverified: not in the paper's text" in md
    page = render_summary_html([full])  # the same on the HTML page
    assert "holds (4 seeds) (not counted: note 1)</span>" in page
    assert page.count("not in the paper&#x27;s text") == 1
    assert "<li>note 1: paper number unverified: not in the paper&#x27;s text</li>" in page


def test_a_run_of_a_config_the_code_no_longer_declares_does_not_count() -> None:
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.overrides import config_to_dict

    declared = config_to_dict(get_experiment("coordconv").config("full"))
    key = next(iter(declared))
    old = _result(scale="full", seeds=(0,), config={**declared, key: "another protocol"})
    _, problems = rejudge(old, declare)
    assert any(p.startswith("not counted: it ran a full config") and key in p for p in problems)
    assert "findings reproduced" not in render_summary_markdown([old], overview_only=True)
    # a field the run could not record (added to the config later) is not held against it
    older = {k: v for k, v in declared.items() if k != key}
    assert rejudge(_result(scale="full", seeds=(0,), config=older), declare)[1] == []


def test_a_quoted_paper_number_counts_at_full_and_is_shown_as_quoted(monkeypatch) -> None:
    """A paper number a maintained reimplementation quotes from the paper counts as a verified
    one does; report.md shows where it is quoted from, and results.json keeps it."""
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.report import render_markdown

    specs = (
        ClaimSpec("split.acc", "accuracy", 1.0, ">= 0.95", quoted="a reimplementation's README"),
        *_SPECS[1:],
    )
    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", specs)
    full = _result(scale="full", values=(0.99, 1.0, 0.98, 1.0), other=(0.8, 0.81, 0.79, 0.8))
    md = render_summary_markdown([full])
    assert "Findings reproduced: 2 of 2" in md and "unverified" not in md
    report = render_markdown(judge(rejudge(full, declare)[0]))
    assert "Findings reproduced: 2 of 2" in report
    assert "paper number quoted (a reimplementation's README)" in report
    claim = rejudge(full, declare)[0].claims[0]
    assert claim.to_dict()["quoted"] == "a reimplementation's README"
    assert Result.from_dict(rejudge(full, declare)[0].to_dict()).claims[0].quoted == claim.quoted
