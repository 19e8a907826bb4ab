"""``paperzoo.verdict.counts``: the one answer to "does this run count?" that ``reproduce``,
``merge``, report.md and ``paperzoo summary`` all give."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from paperzoo.experiments.base import ClaimSpec
from paperzoo.experiments.judging import judge, judge_runs, run_dirs
from paperzoo.summary import render_summary_markdown
from paperzoo.verdict import (
    ClaimResult,
    Count,
    Result,
    is_validation_run,
    load_result,
)

ROOT = Path(__file__).resolve().parents[2]


def _committed() -> tuple[list[Result], list[Path]]:
    """The committed runs the summary is made from (``paperzoo summary results/``)."""
    if not (ROOT / "results").is_dir():
        pytest.skip("not a source checkout with results/")
    dirs = run_dirs([ROOT / "results"])
    return [load_result(d) for d in dirs], dirs


def _recorded(d: Path, count: Count) -> None:
    """results.json and report.md in ``d`` record ``count``: the same count, the same headline,
    the same reasons (the run's and each holding finding's that does not count)."""
    raw = json.loads((d / "results.json").read_text(encoding="utf-8"))
    k = f"{len(count.reproduced)}/{count.findings}" if count.reason is None else None
    assert (raw["findings_reproduced"], raw["not_counted"]) == (k, count.reason), d
    assert raw["counting"]["headline"] == count.headline(), d
    why = {c.id: count.why_not_counted(c.id) for c in count.result.findings}
    assert raw["counting"]["findings_not_counted"] == {i: w for i, w in why.items() if w}, d
    assert raw["counting"]["diagnoses"] == count.diagnoses, d
    report = (d / "report.md").read_text(encoding="utf-8").splitlines()
    assert report[2] == f"**{count.headline()}**", d  # the line under the title
    for cid, w in count.diagnoses.items():
        assert f"- `{cid}`: {w}" in report, (d, cid)
    for cid, w in why.items():
        row = next(line for line in report if line.startswith(f"| `{cid}`"))
        assert (f"not counted: {w}" in row) == (w is not None), (d, cid)


def test_every_committed_run_gives_one_answer_in_the_readme_its_report_and_results_json() -> None:
    results, dirs = _committed()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = render_summary_markdown(results, dirs=dirs)
    for r, d, count in zip(results, dirs, judge_runs(results, dirs), strict=True):
        _recorded(d, count)
        for sd in r.seed_dirs:  # each seed run, judged alone
            _recorded(d / sd, judge(load_result(d / sd), d / sd))
        if is_validation_run(r):  # selection runs: not shown
            assert f"({d.name}): **" not in page
            continue
        assert f"({d.name}): **{count.headline()}**" in page
        assert f"{count.headline()}](results/{d.name}/report.md)" in readme, d.name
    assert any(c.counted for c in judge_runs(results, dirs))  # some committed runs count


def test_a_declared_diagnosis_is_shown_where_the_finding_is_not_reproduced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from paperzoo.experiments import EXPERIMENTS
    from paperzoo.report import render_markdown

    why = "the small scale: B needs 10x the steps (docs/x.md)"
    specs = (
        _SPECS[0],
        dataclasses.replace(_SPECS[1], diagnosis={"quick": why}),
        _SPECS[2],
    )
    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", specs)
    fails = judge(_run(gap=(0.6, 0.61, 0.6, 0.62)))
    assert fails.counted and fails.diagnoses == {"split.gap": why}
    assert fails.record()["counting"]["diagnoses"] == {"split.gap": why}
    report = render_markdown(fails)
    assert "## Why these findings do not reproduce here" in report
    assert f"- `split.gap`: {why}" in report
    page = render_summary_markdown([fails.result])
    assert f"- `split.gap` (quick): {why}" in page
    # reproduced: nothing to explain, and the decision records none
    holds = judge(_run())
    assert holds.diagnoses == {} and holds.diagnosis("split.gap") is None
    assert "do not reproduce here" not in render_markdown(holds)
    # declared at quick only: a full run shows none
    assert judge(_run(gap=(0.6, 0.61, 0.6, 0.62), scale="full")).diagnoses == {}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"diagnosis": {"quick": "too few steps"}}, "CAUSE: why"),
        ({"diagnosis": {"quick": "the weather: rain"}}, "CAUSE: why"),
        ({"diagnosis": {"quick": "the paper: "}}, "CAUSE: why"),
        ({"diagnosis": {"full": "our code: x"}, "scales": ("smoke", "quick")}, "at scales"),
        ({"diagnosis": {"quick": "our code: x"}, "kind": "check"}, "belongs to a finding"),
    ],
)
def test_a_diagnosis_names_one_of_the_three_causes(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ClaimSpec("a.b", "a statement", 1.0, ">= 0.5", **kw)


def test_a_committed_run_counts_on_its_own_without_a_twin_or_validation_run() -> None:
    """One command counts: a committed run's decision is the same judged alone (as reproduce
    makes it) as among the runs beside it (as make summary makes it)."""
    results, dirs = _committed()
    for r, d, among in zip(results, dirs, judge_runs(results, dirs), strict=True):
        assert judge(r, run_dir=d) == among, d


# -- judge() on made-up runs of a declared paper -------------------------------------------------

_SPECS = (
    ClaimSpec("split.acc", "accuracy on the split", 1.0, ">= 0.95"),
    ClaimSpec("split.gap", "A beats B", 0.1, ">= 0.7"),
    ClaimSpec("params", "parameter count", 7553, "== 7553", kind="check"),
)


@pytest.fixture(autouse=True)
def _declared(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    from paperzoo.experiments import EXPERIMENTS

    if "committed" in request.node.name:  # judged against the claims the code declares
        return
    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", _SPECS)


def _run(
    *, threads: int | None = 1, gap=(0.8, 0.81, 0.79, 0.8), acc=(0.99, 1.0, 0.98, 1.0), **kw
) -> Result:
    return Result(
        paper="coordconv", title="CoordConv", scale=kw.pop("scale", "quick"),
        seeds=list(kw.pop("seeds", (0, 1, 2, 3))), device="cpu", wall_seconds=1.0,
        paperzoo_version="0.2.0", torch_version="2.13.0",
        data=[{"name": "gen", "source": "generated", "n_train": 10, "n_test": 5}],
        claims=[
            ClaimResult("split.acc", "accuracy on the split", 1.0, list(acc), ">= 0.95"),
            ClaimResult("split.gap", "A beats B", 0.1, list(gap), ">= 0.7"),
            ClaimResult("params", "parameter count", 7553, [7553] * 4, "== 7553", kind="check"),
        ],
        commit="0123456789ab", source_sha256="f" * 64, threads=threads, **kw,
    )  # fmt: skip


def test_a_quick_run_counts_from_its_one_command() -> None:
    alone = judge(_run())
    assert alone.counted and [c.id for c in alone.reproduced] == ["split.acc", "split.gap"]
    assert alone.headline().startswith("Findings reproduced: 2 of 2 (quick, seeds 0-3, commit")
    assert "98.3% intervals" in alone.headline()
    assert judge(_run(threads=2)) == judge(_run(threads=2))  # a thread count decides nothing


def test_a_sample_with_no_spread_is_decided_by_the_binomial_rule_and_asks_for_more_seeds() -> None:
    """split.acc at 1.0 on every seed has no spread: the exact binomial rule decides it, and at
    the first look 4 of 4 is not enough (a coin gives 4 of 4 with probability 1/16 > 5%/3), so
    the seed rule asks for seeds 4-7."""
    from paperzoo.verdict import next_seeds

    c = judge(_run(acc=(1.0,) * 4))
    acc = c.result.claims[0]
    assert acc.verdict == "inconclusive" and acc.decision.method == "exact binomial, no spread"
    assert c.counted and [x.id for x in c.reproduced] == ["split.gap"]
    assert next_seeds(c.result) == [4, 5, 6, 7]
    assert next_seeds(judge(_run()).result) == []  # every finding decided: no more seeds


def test_a_target_changed_after_the_run_does_not_count_and_says_why() -> None:
    from paperzoo.experiments import EXPERIMENTS

    for declared in (">= 0.5", ">= 0.9"):  # looser, then stricter: rerun to count either way
        specs = (_SPECS[0], ClaimSpec("split.gap", "A beats B", 0.1, declared), _SPECS[2])
        with pytest.MonkeyPatch.context() as m:
            m.setattr(type(EXPERIMENTS.create("coordconv")), "claims", specs)
            c = judge(_run())
        why = f"target changed after the run: stored '>= 0.7', declared '{declared}'"
        assert c.counted and [x.id for x in c.reproduced] == ["split.acc"]
        assert c.why_not_counted("split.gap").startswith(why)
        assert c.result.claims[1].target == ">= 0.7"  # judged against the stored target
        assert "under a target or rule changed after the run" in c.headline()


def test_a_seed_rule_changed_after_the_run_does_not_count() -> None:
    old = dataclasses.replace(_run(), seed_rule={"alpha": 0.1, "looks": [4], "level": 0.9})
    c = judge(old)
    assert c.counted and c.reproduced == ()
    assert c.why_not_counted("split.gap").startswith("seed rule changed after the run")


def test_the_runs_own_reasons_come_first_then_the_rejudging() -> None:
    modified = _run(overrides={"steps": "5"})
    assert judge(modified).reason == "modified config: --set steps=5"
    full = _run(scale="full", seeds=(0,), threads=None)
    full.claims = [ClaimResult(c.id, c.statement, c.paper, c.per_seed[:1], c.target, c.kind)
                   for c in full.claims]  # fmt: skip
    assert judge(full).counted  # one seed: counted, its findings inconclusive (no interval)
    assert {c.verdict for c in judge(full).result.findings} == {"inconclusive"}
    drift = _run(scale="full", seeds=(0,), config={"cls_steps": -1})
    drift.claims = full.claims
    why = judge(drift).reason
    assert why is not None and why.startswith("it ran a full config the code no longer declares")
    loose = _run(threads=1)
    loose.claims[1] = ClaimResult("split.gap", "A beats B", 0.1, [0.5, 0.52, 0.5, 0.51], ">= 0")
    c = judge(loose)
    assert c.result.claims[1].verdict == "holds" and c.reproduced == (c.result.claims[0],)
    assert c.why_not_counted("split.gap").startswith("target changed after the run")


def test_a_finding_declared_a_check_leaves_the_findings_and_the_run_still_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs stored with a claim as a finding are judged with the kind the code now declares: a
    finding demoted to a check only leaves the findings (k of n both drop by one), and the run
    counts as before, with the kind change flagged."""
    from paperzoo.experiments import EXPERIMENTS

    one, two = _run(threads=1), _run(threads=2)
    before = judge(one)
    assert before.counted and (len(before.reproduced), before.findings) == (2, 2)
    demoted = (_SPECS[0], ClaimSpec("split.gap", "A beats B", 0.1, ">= 0.7", kind="check"),
               _SPECS[2])  # fmt: skip
    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", demoted)
    after = judge(one)
    assert after.counted and [c.id for c in after.reproduced] == ["split.acc"]
    assert after.findings == 1 and [c.id for c in after.result.checks] == ["split.gap", "params"]
    assert "split.gap: stored as a finding, declared a check (judged as a check)" in after.flags
    assert "Findings reproduced: 1 of 1" in render_summary_markdown([one, two])


def test_a_field_added_inside_a_nested_config_is_not_drift() -> None:
    from paperzoo.verdict.counting import _changed_fields

    stored = {"steps": 3, "model": {"dim": 8}}
    assert _changed_fields(stored, {"steps": 3, "model": {"dim": 8, "mask": None}, "new": 1}) == []
    assert _changed_fields(stored, {"steps": 3, "model": {"dim": 16}}) == [("model.dim", 8, 16)]
    assert _changed_fields(stored, {"steps": 4, "model": 5}) == [
        ("steps", 3, 4),
        ("model", {"dim": 8}, 5),
    ]


def test_a_field_added_later_is_compared_with_the_value_earlier_runs_ran_with() -> None:
    from dataclasses import dataclass

    from paperzoo.experiments.base import added_later
    from paperzoo.experiments.judging import _ran_before
    from paperzoo.verdict.counting import _changed_fields

    @dataclass
    class Inner:
        dim: int = 8
        mask: str = added_later("on", ran_before="off")

    @dataclass
    class Cfg:
        steps: int = 3
        split: str = added_later("torch7", ran_before="seeded")
        same: int = added_later(1, ran_before=1)
        inner: Inner = None  # type: ignore[assignment]

    cfg = Cfg(inner=Inner())
    before = _ran_before(cfg)
    assert before == {"split": "seeded", "same": 1, "inner": {"mask": "off"}}
    current = {"steps": 3, "split": "torch7", "same": 1, "inner": {"dim": 8, "mask": "on"}}
    stored = {"steps": 3, "inner": {"dim": 8}}  # a run made before split, same and mask
    assert _changed_fields(stored, current, before) == [
        ("split (not recorded)", "seeded", "torch7"),
        ("inner.mask (not recorded)", "off", "on"),
    ]
    assert _changed_fields({**stored, "split": "torch7"}, current) == []


def test_summary_of_the_committed_results_folder_gives_the_readmes_table(
    monkeypatch, capsys
) -> None:
    from paperzoo.cli import main

    _committed()  # (skips outside a source checkout)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- summary:start -->\n", 1)[1].split("<!-- summary:end -->", 1)[0]
    monkeypatch.chdir(ROOT)
    assert main(["summary", "results/"]) == 0
    assert capsys.readouterr().out.startswith(table)
