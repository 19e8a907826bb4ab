import json
import math

import pytest

from paperzoo.experiments.base import ClaimSpec
from paperzoo.experiments.judging import judge
from paperzoo.report import render_markdown, write_report
from paperzoo.verdict import (
    DECISION_KEYS,
    ClaimResult,
    Result,
    aggregate,
    check_measurement,
    evaluate_target,
    format_seeds,
    is_measured,
    load_result,
    seeds_needed,
    validate_target,
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
def test_the_vote_rule_of_checks_at_its_edges(values, verdict, holds_on):
    """A check (true by construction) holds when the mean and ceil(3n/4) of n seeds meet it."""
    c = _claim(values, kind="check")
    assert c.verdict == verdict and c.holds_on == holds_on
    assert c.holds is (verdict == "holds")


def test_verdict_for_booleans_and_reported():
    """Boolean findings: the exact binomial rule (docs/verdicts.md); 4 of 4 is not enough at
    the first look, 8 of 8 is."""
    assert _claim([True] * 4, "is true").verdict == "inconclusive"
    assert _claim([True] * 8, "is true").verdict == "holds"
    assert _claim([False] * 8, "is true").verdict == "fails"
    assert _claim([False] * 7 + [True], "is false").verdict == "inconclusive"  # p = 9/256
    rep = _claim([0.1, 0.2], "reported", kind="check")
    assert rep.verdict == "reported" and rep.holds is None and rep.mean == pytest.approx(0.15)


def test_seeds_needed_is_ceil_three_quarters():
    assert [seeds_needed(n) for n in (1, 2, 3, 4, 5, 8)] == [1, 2, 3, 3, 4, 6]


def test_mean_and_std_over_seeds():
    c = _claim([1.0, 2.0, 3.0, 4.0])
    assert c.mean == 2.5 and c.std == pytest.approx(math.sqrt(5 / 3))
    assert _claim([1.0, None]).mean is None and _claim([1.0, None]).std is None


COMMIT, SOURCE = "0123456789ab", "f" * 64  # a clean commit: the provenance a counted run has


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
        commit=COMMIT, source_sha256=SOURCE,
    )  # fmt: skip


def test_results_json_has_design_fields_and_computed_verdicts(tmp_path):
    res = _result(0, [-1.0, 7, 0.5])
    res.figures = ["figures/f.png"]
    jpath, mpath = write_report(res, tmp_path, judge(res, tmp_path))
    d = json.loads(jpath.read_text())
    for key in ("paper", "title", "scale", "seeds", "seed", "device", "wall_seconds",
                "paperzoo_version", "torch_version", "data", "claims", "findings_reproduced",
                "figures"):  # fmt: skip
        assert key in d
    f, k, r = d["claims"]
    # one seed: no interval, so the finding is inconclusive whatever its value
    assert f["kind"] == "finding" and f["verdict"] == "inconclusive" and f["holds"] is False
    assert f["per_seed"] == [-1.0] and f["holds_on"] == "0/1"
    assert (f["n"], f["interval"], f["method"], f["look"]) == (1, [None, None], "student-t", None)
    assert k["verdict"] == "holds" and r["verdict"] == "reported" and r["holds"] is None
    assert d["findings_reproduced"] is None  # one seed never counts at quick scale
    assert d["findings_holding"] == "0/1" and d["checks_holding"] == "1/1"
    md = mpath.read_text()
    assert md.index("## Findings") < md.index("## Checks")
    assert "Findings holding: 0 of 1 (quick, seed 0, commit " in md and "❔ inconclusive" in md
    assert "![f](figures/f.png)" in md and render_markdown(judge(res)) == md
    assert load_result(tmp_path).to_dict({k: d[k] for k in DECISION_KEYS}) == d
    assert d["counting"]["headline"] == judge(res).headline()  # the words report.md opens with


def test_nan_is_written_as_null_and_read_back_as_not_measured(tmp_path):
    write_report(
        _result(0, [float("nan"), 7, 0.5]),
        tmp_path,
        judge(_result(0, [float("nan"), 7, 0.5]), tmp_path),
    )
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["claims"][0]["per_seed"] == [None] and d["claims"][0]["verdict"] == "not measured"
    assert load_result(tmp_path).claims[0].verdict == "not measured"


# the claims _result measures, declared for a real paper (judge() re-judges against them)
_SPECS = (
    ClaimSpec("f", "a finding", 1.0, "> 0"),
    ClaimSpec("k", "a check", 7, "== 7", kind="check"),
    ClaimSpec("r", "a number", None, "reported", kind="check"),
)


def test_aggregate_four_seeds(tmp_path, monkeypatch):
    from paperzoo.experiments import EXPERIMENTS

    monkeypatch.setattr(type(EXPERIMENTS.create("coordconv")), "claims", _SPECS)
    runs = [
        _result(s, [v, 7, 0.1 * s], paper="coordconv")
        for s, v in zip([3, 0, 2, 1], [1.0, 2.0, 1.5, 3.0], strict=True)
    ]
    agg = aggregate(runs, [f"seed-{s}" for s in (3, 0, 2, 1)])
    assert agg.seeds == [0, 1, 2, 3] and agg.seed_dirs == ["seed-0", "seed-1", "seed-2", "seed-3"]
    f = agg.claims[0]
    assert f.per_seed == [2.0, 3.0, 1.5, 1.0] and f.verdict == "holds" and f.holds_on == 4
    assert f.decision is not None and f.decision.interval[0] > 0  # the interval clears 0
    assert agg.wall_seconds == 4.0
    assert agg.notes[0] == "same everywhere" and agg.notes[1] == "seed 0: only seed 0"
    # its own fields count it; the decision (report.md's headline, results.json's
    # findings_reproduced) is judge()'s, from this one run
    assert agg.not_counted_reason() is None
    label = f"quick, seeds 0-3, commit {COMMIT}, 98.3% intervals"
    assert judge(agg).headline() == f"Findings reproduced: 1 of 1 ({label})"
    write_report(agg, tmp_path, judge(agg, tmp_path))
    d = json.loads((tmp_path / "results.json").read_text())
    # (no seed runs beside it in tmp_path: it does not count, and results.json says why)
    assert d["findings_reproduced"] is None and "seed" not in d
    assert d["not_counted"] == judge(agg, tmp_path).reason and "seed run seed-0" in d["not_counted"]
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
    assert "smoke runs only prove the pipeline" in judge(smoke).headline()


def test_load_result_rejects_other_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_result(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_result(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"paper": "x", "paperzoo_version": "0.1.0"}))
    with pytest.raises(ValueError, match=r"paperzoo 0\.1\.0"):
        load_result(tmp_path)


def test_format_seeds():
    assert format_seeds([3, 0, 1, 2, 7, 9, 10]) == "0-3,7,9-10"


# -- judging edge cases, what ran, why a run does not count ------------------------------------


@pytest.mark.parametrize(
    "target", [">= 1.2.3", "<= 1e", ">= inf", "== nan", "within 5% of 1..2", "> 0.5.", ">= --1"]
)
def test_malformed_targets_are_refused(target):
    with pytest.raises(ValueError, match="cannot parse"):
        validate_target(target)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_diverged_run_is_not_measured_never_a_pass_and_the_writer_survives(tmp_path, value):
    assert evaluate_target("> 0", value) is False and not is_measured(value)
    runs = [_result(s, [value if s == 2 else 1.0, 7, 0.0]) for s in range(4)]
    agg = aggregate(runs)
    f = agg.claims[0]
    assert f.verdict == "not measured" and f.mean is None and f.std is None
    write_report(agg, tmp_path, judge(agg, tmp_path))  # no statistics.stdev over an infinity
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["claims"][0]["per_seed"][2] is None and d["claims"][0]["verdict"] == "not measured"


def test_booleans_and_numbers_against_the_wrong_kind_of_target_are_errors_naming_the_claim():
    with pytest.raises(TypeError, match="claim x.y: target '>= 0.5' needs a number"):
        check_measurement(">= 0.5", True, "claim x.y")
    with pytest.raises(TypeError, match="claim x.y: target 'is true' needs a boolean"):
        check_measurement("is true", 1.0, "claim x.y")
    check_measurement("reported", True, "claim x.y")  # a reported number may be anything
    with pytest.raises(ValueError, match="needs a number"):
        evaluate_target(">= 0.5", True)
    with pytest.raises(ValueError, match="claim f: target '> 0' needs a number"):
        _result(0, [True, 7, 0.0])
    d = _result(0, [1.0, 7, 0.0]).to_dict()
    d["claims"][0]["per_seed"] = [True]
    with pytest.raises(ValueError, match="claim f"):
        Result.from_dict(d)


def _with(result, **fields):
    for k, v in fields.items():
        setattr(result, k, v)
    return result


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"overrides": {"steps": "5"}}, "modified config: --set steps=5"),
        ({"setting_note": "--dataset mnist5k instead of the paper's mnist"}, "not the paper's"),
        ({"shard": (1, 4)}, "one slice of a grid"),
        ({"shards": {"n": 4, "merged": [0, 2]}}, "shards 1,3 of 4 not merged"),
        ({"partial": {"max_steps": 3, "estimate_seconds": 1.0}}, "PARTIAL"),
    ],
)
def test_runs_that_never_count_say_why(fields, why):
    runs = [_result(s, [1.0, 7, 0.0], scale="full") for s in range(4)]
    agg = _with(aggregate(runs), **fields)
    assert not agg.counts_as_reproduction and why in (agg.not_counted_reason() or "")
    d = agg.to_dict(judge(agg).record())
    assert d["findings_reproduced"] is None and why in d["not_counted"]
    assert "Findings holding" in judge(agg).headline() and why in judge(agg).headline()
    assert _with(aggregate(runs), shards={"n": 2, "merged": [0, 1]}).counts_as_reproduction


def test_not_the_papers_setting_is_at_the_top_of_the_report(tmp_path):
    r = _with(_result(0, [1.0, 7, 0.0], scale="full"), setting_note="--dataset mnist5k")
    write_report(r, tmp_path, judge(r, tmp_path))
    md = (tmp_path / "report.md").read_text().splitlines()
    assert md[2].startswith("**NOT THE PAPER'S SETTING: --dataset mnist5k.")
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["paper_setting"] is False and d["setting_note"] == "--dataset mnist5k"
    assert load_result(tmp_path).setting_note == "--dataset mnist5k"


def test_a_result_names_its_code_data_and_part(tmp_path):
    r = _with(
        _result(0, [1.0, 7, 0.0], scale="full"),
        commit="abc123", source_sha256="f" * 64, part="spheres",
        data=[{"name": "d", "source": "/x", "n_train": 1, "n_test": 1, "sha256": "e" * 64,
               "fold": 3}],
    )  # fmt: skip
    write_report(r, tmp_path, judge(r, tmp_path))
    d = json.loads((tmp_path / "results.json").read_text())
    assert (d["commit"], d["source_sha256"], d["part"]) == ("abc123", "f" * 64, "spheres")
    assert d["data"][0]["sha256"] == "e" * 64 and d["data"][0]["fold"] == 3
    md = (tmp_path / "report.md").read_text()
    assert "commit abc123" in md and "fold 3, SHA-256 eeeeeeeeeeee" in md
    # the headline names what ran (paper "x" is not declared: judge() does not count it)
    assert "(full, part spheres, seed 0, commit abc123, 98.3% intervals;" in md
    assert "--part spheres" in md
    back = load_result(tmp_path)
    assert (back.commit, back.part) == ("abc123", "spheres")


@pytest.mark.parametrize(
    ("key", "a", "b", "message"),
    [
        ("commit", "abc", "def", "one commit"),
        ("source_sha256", "1" * 64, "2" * 64, "one source_sha256"),
        ("setting_note", None, "--dataset x", "one setting_note"),
        ("part", None, "spheres", "one part"),
    ],
)
def test_seed_runs_of_other_code_or_settings_do_not_merge(key, a, b, message):
    with pytest.raises(ValueError, match=message):
        aggregate(
            [_with(_result(0, [1, 7, 0]), **{key: a}), _with(_result(1, [1, 7, 0]), **{key: b})]
        )


def test_seed_runs_on_other_data_do_not_merge_but_other_directories_of_the_same_data_do():
    def on(source, sha, name="mnist"):
        return [{"name": name, "source": source, "n_train": 9, "n_test": 1, "sha256": sha}]

    same = [_with(_result(s, [1, 7, 0]), data=on(f"/m{s}", "a" * 64)) for s in range(2)]
    assert aggregate(same).seeds == [0, 1]
    other = [_with(_result(0, [1, 7, 0]), data=on("/m", "a" * 64))]
    other.append(_with(_result(1, [1, 7, 0]), data=on("/f", "b" * 64, "fashion-mnist")))
    with pytest.raises(ValueError, match="the same data"):
        aggregate(other)


# -- what cannot be laundered ----------------------------------------------------------------------


@pytest.mark.parametrize("target", ["<= 1e999", ">= -1e400", "within 5% of 1e999"])
def test_a_target_must_be_finite(target):
    with pytest.raises(ValueError, match="not finite"):
        validate_target(target)


def test_equality_compares_counts_and_needs_a_tolerance_on_floats():
    with pytest.raises(ValueError, match="needs a tolerance"):
        validate_target("== 0.1")
    assert evaluate_target("== 7553", 7553) is True
    # the mean of counts that all equal the target, off by float round-off, still meets it
    c = ClaimResult("k", "a count", 3, [3, 3, 3], "== 3", "check")
    assert c.verdict == "holds"
    assert evaluate_target("== 3", 3 + 1e-6) is False


def test_validation_seeds_never_count_and_do_not_merge_with_test_seeds():
    runs = [_result(s, [1.0, 7, 0]) for s in (0, 1, 3, 100)]
    with pytest.raises(ValueError, match="validation seeds 100"):
        aggregate(runs)
    val = aggregate([_result(s, [1.0, 7, 0]) for s in (100, 101, 102, 103)])
    assert "validation seeds 100-103" in (val.not_counted_reason() or "")
    other = aggregate([_result(s, [1.0, 7, 0]) for s in (0, 1, 2, 4)])
    assert "seeds 0-2,4" in (other.not_counted_reason() or "")
    assert aggregate([_result(s, [1.0, 7, 0]) for s in range(4)]).not_counted_reason() is None


def test_marks_and_shards_survive_any_number_of_re_merges(tmp_path):
    runs = [_result(s, [1.0, 7, 0]) for s in range(4)]
    for r in runs:
        r.shards = {"n": 2, "merged": [0]}  # each a merge that lacks shard 1
    agg = aggregate(runs)
    assert agg.shards == {"n": 2, "merged": [0]}
    assert "incomplete grid" in (agg.not_counted_reason() or "")
    write_report(agg, tmp_path / "a", judge(agg, tmp_path / "a"))
    again = aggregate([load_result(tmp_path / "a")])
    assert "incomplete grid" in (again.not_counted_reason() or "")
    # a reason stored in a file from before results.json recorded counts()'s decision, and no
    # longer derivable from its fields, is kept as a mark (and written as one from then on)
    d = json.loads((tmp_path / "a" / "results.json").read_text())
    d["not_counted"], d["shards"] = "an older rule's reason", None
    newer = {**d, "not_counted": "not confirmed at a second thread count (...)"}
    assert Result.from_dict(newer).marks == []  # a recorded decision is not a mark
    del d["counting"]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.json").write_text(json.dumps(d))
    kept = load_result(tmp_path / "b")
    assert kept.marks == ["an older rule's reason"]
    write_report(aggregate([kept]), tmp_path / "c", judge(aggregate([kept]), tmp_path / "c"))
    assert load_result(tmp_path / "c").not_counted_reason() == "an older rule's reason"
    mixed = [_result(s, [1.0, 7, 0]) for s in range(2)]
    mixed[0].shards = {"n": 2, "merged": [0, 1]}
    with pytest.raises(ValueError, match="same shards"):
        aggregate(mixed)


def test_why_a_seed_is_not_measured_is_kept_through_the_aggregate(tmp_path):
    runs = [_result(s, [1.0, 7, 0]) for s in range(4)]
    runs[2].claims[0] = ClaimResult(
        "f", "a finding", 1.0, [None], "> 0", why_not_measured=["diverged at step 12 (net)"]
    )
    agg = aggregate(runs)
    assert agg.claims[0].verdict == "not measured"
    assert agg.claims[0].verdict_text == "not measured (diverged at step 12 (net))"
    write_report(agg, tmp_path, judge(agg, tmp_path))
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["claims"][0]["why_not_measured"] == [None, None, "diverged at step 12 (net)", None]
    assert "not measured (diverged at step 12 (net))" in (tmp_path / "report.md").read_text()
