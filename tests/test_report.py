import json
import math

import pytest

from paperzoo.report import (
    ClaimResult,
    Result,
    aggregate,
    evaluate_target,
    format_seeds,
    headline,
    load_result,
    render_markdown,
    render_summary_html,
    render_summary_markdown,
    seeds_needed,
    write_report,
)


@pytest.mark.parametrize(
    ("target", "measured", "holds"),
    [
        (">= 0.95", 0.95, True),
        (">= 0.95", 0.9499, False),
        ("<= 0.1", 0.2, False),
        ("> 0", 0.01, True),
        ("< 2", 2.0, False),
        ("== 7553", 7553, True),
        ("within 2% of 0.27e6", 0.272e6, True),
        ("within 2% of 0.27e6", 0.28e6, False),
        ("is true", True, True),
        ("is false", True, False),
        ("reported", 0.3, None),
        (">= 0.5", None, False),  # nothing unmeasured passes
        (">= 0.5", float("nan"), False),
        ("is true", None, False),
    ],
)
def test_evaluate_target(target, measured, holds):
    assert evaluate_target(target, measured) is holds


def test_bad_target_raises():
    with pytest.raises(ValueError, match="cannot parse"):
        evaluate_target("about 3", 3.0)
    with pytest.raises(ValueError, match="boolean"):
        evaluate_target("is true", 1.0)


def _claim(values, target="> 0", kind="finding"):
    return ClaimResult("c", "s", None, list(values), target, kind)


@pytest.mark.parametrize(
    ("values", "verdict", "holds_on"),
    [
        ([1.0, 1.0, 1.0, -0.5], "holds", 3),  # mean > 0 and 3 of 4 seeds: ceil(3n/4) = 3
        ([1.0, 1.0, -0.1, -0.2], "fragile", 2),  # mean > 0, only 2 of 4 seeds
        ([1.0, -1.0, -1.0, 0.5], "fails", 2),  # mean <= 0
        ([1.0, 1.0, 1.0, None], "not measured", 3),  # one seed missing: no verdict, fails
        ([1.0, 1.0, 1.0, float("nan")], "not measured", 3),
        ([0.5], "holds", 1),
        ([-0.5], "fails", 0),
        ([], "not measured", 0),
    ],
)
def test_verdict_rule_at_its_edges(values, verdict, holds_on):
    c = _claim(values)
    assert c.verdict == verdict and c.holds_on == holds_on
    assert c.holds is (verdict == "holds")


def test_verdict_for_booleans_and_reported():
    assert _claim([True, True, True, False], "is true").verdict == "holds"
    assert _claim([True, True, False, False], "is true").verdict == "fails"
    assert _claim([False, False, False, True], "is false").verdict == "holds"
    rep = _claim([0.1, 0.2], "reported", kind="check")
    assert rep.verdict == "reported" and rep.holds is None and rep.mean == pytest.approx(0.15)


def test_seeds_needed_is_ceil_three_quarters():
    assert [seeds_needed(n) for n in (1, 2, 3, 4, 5, 8)] == [1, 2, 3, 3, 4, 6]


def test_mean_and_std_over_seeds():
    c = _claim([1.0, 2.0, 3.0, 4.0])
    assert c.mean == 2.5 and c.std == pytest.approx(math.sqrt(5 / 3))
    assert _claim([1.0, None]).mean is None and _claim([1.0, None]).std is None


def _result(seed, values, scale="quick", target="> 0", paper="x"):
    return Result(
        paper=paper, title="T", scale=scale, seeds=[seed], device="cpu", wall_seconds=1.0,
        paperzoo_version="0.2.0", torch_version="2.13.0",
        data=[{"name": "d", "source": "generated", "n_train": 1, "n_test": 1}],
        claims=[
            ClaimResult("f", "a finding", 1.0, [values[0]], target, "finding"),
            ClaimResult("k", "a check", 7, [values[1]], "== 7", "check"),
            ClaimResult("r", "a number", None, [values[2]], "reported", "check"),
        ],
        notes=["same everywhere", f"only seed {seed}"],
    )  # fmt: skip


def test_results_json_has_design_fields_and_computed_verdicts(tmp_path):
    res = _result(0, [-1.0, 7, 0.5])
    res.figures = ["figures/f.png"]
    jpath, mpath = write_report(res, tmp_path)
    d = json.loads(jpath.read_text())
    for key in ("paper", "title", "scale", "seeds", "seed", "device", "wall_seconds",
                "paperzoo_version", "torch_version", "data", "claims", "findings_reproduced",
                "figures"):  # fmt: skip
        assert key in d
    f, k, r = d["claims"]
    assert f["kind"] == "finding" and f["verdict"] == "fails" and f["holds"] is False
    assert f["per_seed"] == [-1.0] and f["holds_on"] == "0/1"
    assert k["verdict"] == "holds" and r["verdict"] == "reported" and r["holds"] is None
    assert d["findings_reproduced"] is None  # one seed never counts at quick scale
    assert d["findings_holding"] == "0/1" and d["checks_holding"] == "1/1"
    md = mpath.read_text()
    assert md.index("## Findings") < md.index("## Checks")
    assert "Findings holding: 0 of 1 (quick, 1 seed" in md and "❌ fails" in md
    assert "![f](figures/f.png)" in md and render_markdown(res) == md
    assert load_result(tmp_path).to_dict() == d


def test_nan_is_written_as_null_and_read_back_as_not_measured(tmp_path):
    write_report(_result(0, [float("nan"), 7, 0.5]), tmp_path)
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["claims"][0]["per_seed"] == [None] and d["claims"][0]["verdict"] == "not measured"
    assert load_result(tmp_path).claims[0].verdict == "not measured"


def test_aggregate_four_seeds(tmp_path):
    runs = [
        _result(s, [v, 7, 0.1 * s])
        for s, v in zip([3, 0, 2, 1], [1.0, 2.0, -0.5, 3.0], strict=True)
    ]
    agg = aggregate(runs, [f"seed-{s}" for s in (3, 0, 2, 1)])
    assert agg.seeds == [0, 1, 2, 3] and agg.seed_dirs == ["seed-0", "seed-1", "seed-2", "seed-3"]
    f = agg.claims[0]
    assert f.per_seed == [2.0, 3.0, -0.5, 1.0] and f.verdict == "holds" and f.holds_on == 3
    assert agg.wall_seconds == 4.0
    assert agg.notes[0] == "same everywhere" and agg.notes[1] == "seed 0: only seed 0"
    assert headline(agg) == "Findings reproduced: 1 of 1 (quick, 4 seeds)"
    write_report(agg, tmp_path)
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["findings_reproduced"] == "1/1" and "seed" not in d
    assert d["figures"] == ["figures/findings_by_seed.png"]
    assert (tmp_path / "figures" / "findings_by_seed.png").stat().st_size > 0
    md = (tmp_path / "report.md").read_text()
    assert "| seed 0 | seed 1 | seed 2 | seed 3 |" in md and "--seeds 0-3" in md


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([_result(0, [1, 7, 0]), _result(0, [1, 7, 0])], "repeat a seed"),
        ([_result(0, [1, 7, 0]), _result(1, [1, 7, 0], paper="y")], "one paper"),
        ([_result(0, [1, 7, 0]), _result(1, [1, 7, 0], scale="full")], "one scale"),
        ([_result(0, [1, 7, 0]), _result(1, [1, 7, 0], target="> 1")], "other claims or targets"),
    ],
)
def test_aggregate_rejects_runs_that_do_not_belong_together(runs, message):
    with pytest.raises(ValueError, match=message):
        aggregate(runs)


def test_full_scale_counts_with_one_seed_smoke_never():
    assert _result(0, [1, 7, 0], scale="full").counts_as_reproduction
    smoke = aggregate([_result(s, [1, 7, 0], scale="smoke") for s in range(4)])
    assert not smoke.counts_as_reproduction
    assert "smoke runs only prove the pipeline" in headline(smoke)


def test_load_result_rejects_other_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_result(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_result(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"paper": "x", "paperzoo_version": "0.1.0"}))
    with pytest.raises(ValueError, match=r"paperzoo 0\.1\.0"):
        load_result(tmp_path)


def test_summary_tables():
    agg = aggregate([_result(s, [1.0, 7, 0.0]) for s in range(4)])
    md = render_summary_markdown([agg, _result(0, [-1.0, 7, 0.0], paper="y")])
    assert "| x | quick | 0-3 | 1/1 | 1/1 | 1/1 |" in md
    assert "| y | quick | 0 | — | 0/1 | 1/1 |" in md
    assert "| x | `f` | 1 | 1 ± 0 | > 0 | ✅ holds (4/4) |" in md
    html = render_summary_html([agg])
    assert html.startswith("<!doctype html>") and "<td>✅ holds (4/4)</td>" in html


def test_format_seeds():
    assert format_seeds([3, 0, 1, 2, 7, 9, 10]) == "0-3,7,9-10"
