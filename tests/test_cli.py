import json
from pathlib import Path

import pytest

from paperzoo.cli import main
from paperzoo.experiments import EXPERIMENTS, get_experiment


def test_list_names_every_registered_paper(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "coordconv:" in out and "painter.coordconv.params" in out
    assert "[check] painter.coordconv.params" in out
    # a claim declared at full scale only says so
    assert "[finding] cifar10.sap.eot.robust_acc  [full only: <= 0.05]" in out


def test_list_json_schema(capsys):
    assert main(["list", "--json"]) == 0
    cat = json.loads(capsys.readouterr().out)
    assert cat["schema"] == "paperzoo.list/1"
    names = [p["name"] for p in cat["papers"]]
    assert names == EXPERIMENTS.names() and "coordconv" in names
    for p in cat["papers"]:
        assert p["scales"] == ["smoke", "quick", "full"] and p["datasets"]
        kinds = {c["kind"] for c in p["claims"]}
        assert kinds <= {"finding", "check"} and "finding" in kinds, p["name"]
        for c in p["claims"]:
            # a target at every scale the claim is declared at (most: all; some: full only;
            # which findings may be absent at full: tests/experiments/test_claims.py)
            assert set(c["targets"]) == set(c["scales"]), c["id"]
            if c["kind"] == "finding":
                assert all(t != "reported" for t in c["targets"].values()), c["id"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "nosuchpaper", "--scale", "smoke"], "unknown paper 'nosuchpaper'"),
        (["reproduce", "--scale", "smoke"], "either a paper NAME or --all"),
        (["reproduce", "coordconv", "--all"], "either a paper NAME or --all"),
        (["reproduce", "coordconv", "--data-root", "/nonexistent/dir"], "is not a directory"),
        (["reproduce", "coordconv", "--device", "tpu"], "--device must be"),
        (["reproduce", "resnet", "--seed", "0", "--jobs", "2"], "--jobs needs several seeds"),
        (["reproduce", "resnet", "--seeds", "0-1", "--shard", "0/2"], "don't combine"),
        (
            ["reproduce", "resnet", "--seeds", "0-3", "--jobs", "2", "--threads", "512"],
            "exceeds the",
        ),
        (
            ["reproduce", "coordconv", "--scale", "smoke", "--dataset", "mnist"],
            "does not support --dataset",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_argparse_rejects_bad_values(capsys):
    for argv in (
        ["reproduce", "coordconv", "--scale", "huge"],
        ["reproduce", "x", "--shard", "3/2"],
        ["reproduce", "resnet", "--seed", "-1"],
        ["reproduce", "resnet", "--seeds", "3-1"],
        ["reproduce", "resnet", "--seeds", "0-3", "--seed", "1"],
        ["reproduce", "resnet", "--jobs", "0"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2


def test_reproduce_smoke_writes_results(tmp_path, capsys):
    assert (
        main(["reproduce", "coordconv", "--scale", "smoke", "--quiet", "--out", str(tmp_path)]) == 0
    )
    d = json.loads((tmp_path / "results.json").read_text())
    assert d["paper"] == "coordconv"
    assert "painter.coordconv.params" in capsys.readouterr().out


def test_merge_rejects_missing_results(tmp_path, capsys):
    assert main(["merge", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    assert "results.json not found" in capsys.readouterr().err


def _without_paths(d: dict) -> dict:
    """A results.json without what names where and how it was made (dirs, the command line)."""
    return {k: v for k, v in d.items() if k not in ("seed_dirs", "command")}


def test_seeds_run_as_processes_and_merge_reproduces_the_aggregate(tmp_path, capsys):
    out = tmp_path / "agg"
    argv = ["reproduce", "resnet", "--scale", "smoke", "--seeds", "0-1", "--jobs", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Findings holding:" in printed and "report:" in printed
    agg = json.loads((out / "results.json").read_text())
    assert agg["seeds"] == [0, 1] and agg["seed_dirs"] == ["seed-0", "seed-1"]
    for s in (0, 1):
        seed = json.loads((out / f"seed-{s}" / "results.json").read_text())
        assert seed["seeds"] == [s] and (out / f"seed-{s}" / "log.txt").exists()
        for c_agg, c_seed in zip(agg["claims"], seed["claims"], strict=True):
            assert c_agg["per_seed"][s] == c_seed["measured"]
    assert {c["verdict"] for c in agg["claims"]} <= {
        "holds",
        "inconclusive",
        "fragile",
        "fails",
        "reported",
    }
    assert (out / "report.md").read_text().startswith("# Deep Residual")
    merged = tmp_path / "merged"
    assert main(["merge", str(out / "seed-1"), str(out / "seed-0"), "--out", str(merged)]) == 0
    again = json.loads((merged / "results.json").read_text())
    assert _without_paths(again) == _without_paths(agg)
    # an aggregate directory contributes its seed runs
    assert main(["merge", str(out), "--out", str(tmp_path / "m2")]) == 0
    assert _without_paths(json.loads((tmp_path / "m2" / "results.json").read_text())) == (
        _without_paths(agg)
    )
    assert main(["summary", str(out), "--html", str(tmp_path / "s.html")]) == 0
    printed = capsys.readouterr().out
    assert "`resnet`" in printed and "smoke runs only prove the pipeline" in printed
    assert "<table" in (tmp_path / "s.html").read_text()


def test_merge_rejects_seed_runs_of_other_papers_or_repeated_seeds(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        assert main(["reproduce", "resnet", "--scale", "smoke", "--quiet", "--out", str(d)]) == 0
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 2
    assert "repeat a seed" in capsys.readouterr().err
    d = json.loads((b / "results.json").read_text())
    d["paper"], d["seeds"] = "coordconv", [1]
    (b / "results.json").write_text(json.dumps(d))
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 2
    assert "one paper and scale" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    # seed runs of another commit, or of other data, are refused with one line (exit 2)
    d = json.loads((a / "results.json").read_text())
    assert d["commit"] is None or len(d["commit"]) >= 12
    for key, value, message in (
        ("commit", "0123456789ab", "must share one commit"),
        ("data", [dict(d["data"][0], sha256="0" * 64)], "must read the same data"),
    ):
        other = dict(d, seeds=[1], seed=1, **{key: value})
        (b / "results.json").write_text(json.dumps(other))
        assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "m").exists()
    (b / "results.json").write_text(json.dumps(dict(d, seeds=[1], seed=1)))
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m")]) == 0
    # generated data are drawn from each seed (GG-NN's quick folds): digests and test sizes
    # differ by design, while another training size is still other data
    gen = dict(d["data"][0], source="generated", sha256="1" * 64)
    (a / "results.json").write_text(json.dumps(dict(d, data=[gen])))
    drawn = dict(gen, sha256="2" * 64, n_test=gen["n_test"] + 1)
    for other, code in ((drawn, 0), (dict(gen, n_train=1), 2)):
        (b / "results.json").write_text(json.dumps(dict(d, seeds=[1], seed=1, data=[other])))
        assert main(["merge", str(a), str(b), "--out", str(tmp_path / f"g{code}")]) == code


def _reads_files_at_full(name: str) -> bool:
    from paperzoo.experiments.base import Experiment
    from paperzoo.experiments.lookup import get_experiment

    exp = get_experiment(name)
    return exp.paper_data is not None or type(exp).require_data is not Experiment.require_data


def test_every_experiment_with_real_data_declares_the_papers_data():
    """Full scale is the paper's setting: an experiment that reads data sets reads the paper's
    at full (never the first embedded one by default)."""
    from paperzoo.experiments.lookup import get_experiment

    for name in EXPERIMENTS.names():
        exp = get_experiment(name)
        if exp.datasets:
            assert _reads_files_at_full(name), name
            if exp.paper_data is not None:
                assert exp.default_dataset("full") == exp.paper_data


@pytest.mark.parametrize(
    "name", [n for n in EXPERIMENTS.names() if get_experiment(n).paper_data is not None]
)
def test_a_full_run_without_the_papers_data_exits_2_and_writes_nothing(name, tmp_path, capsys):
    if not _reads_files_at_full(name):
        pytest.fail(f"{name} declares no paper data at full scale")
    out = tmp_path / "x"
    for extra in ([], ["--seeds", "0-1"]):
        assert main(["reproduce", name, "--scale", "full", "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--data-root" in err, err
        assert not out.exists()


def test_an_unknown_part_exits_2(tmp_path, capsys):
    out = tmp_path / "x"
    argv = ["reproduce", "coordconv", "--scale", "smoke", "--part", "nosuch", "--out", str(out)]
    assert main(argv) == 2
    assert "coordconv has no part 'nosuch'" in capsys.readouterr().err and not out.exists()


def test_set_overrides_reach_the_run_and_results(tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["reproduce", "resnet", "--scale", "smoke", "--quiet", "--out", str(out)]
    assert main([*argv, "--set", "steps=3"]) == 0
    d = json.loads((out / "results.json").read_text())
    assert d["overrides"] == {"steps": "3"} and d["config"]["steps"] == 3
    assert d["not_counted"] == "modified config: --set steps=3"
    report = (out / "report.md").read_text()
    assert "--set steps=3" in report and "not counted: modified config: --set steps=3" in report
    capsys.readouterr()
    assert main(["config", "resnet", "--scale", "smoke", "--set", "steps=3"]) == 0
    assert json.loads(capsys.readouterr().out) == d["config"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "resnet", "--set", "stpes=3"], "did you mean steps"),
        (["reproduce", "resnet", "--set", "steps=many"], "expected int"),
        (["reproduce", "--all", "--set", "steps=3"], "not --all"),
        (["config", "resnet", "--set", "nokey"], "KEY=VALUE"),
        (["config", "nosuchpaper"], "unknown paper"),
    ],
)
def test_bad_overrides_exit_2(argv, message, capsys, tmp_path):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


# -- merges that keep their marks -----------------------------------------------------------------


def _shard_result(seed: int, k: int, n: int = 2):
    from paperzoo.verdict import ClaimResult, Result

    return Result(
        paper="resnet", title="T", scale="quick", seeds=[seed], device="cpu", wall_seconds=1.0,
        paperzoo_version="0.2.0", torch_version="2.13.0",
        data=[{"name": "d", "source": "generated", "n_train": 1, "n_test": 1}],
        claims=[ClaimResult("f", "a finding", 1.0, [1.0], "> 0")], shard=(k, n),
        commit="0123456789ab", source_sha256="f" * 64,
    )  # fmt: skip


def test_shards_of_different_seeds_do_not_merge_into_one_grid(tmp_path, capsys):
    from paperzoo.experiments.judging import judge
    from paperzoo.report import write_report

    write_report(_shard_result(0, 0), tmp_path / "s0", judge(_shard_result(0, 0), tmp_path / "s0"))
    write_report(_shard_result(1, 1), tmp_path / "s1", judge(_shard_result(1, 1), tmp_path / "s1"))
    rc = main(["merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m")])
    assert rc == 2 and "must come from one seed" in capsys.readouterr().err


def test_merge_out_may_not_be_one_of_its_inputs(tmp_path, capsys):
    from paperzoo.experiments.judging import judge
    from paperzoo.report import write_report

    write_report(_shard_result(0, 0), tmp_path / "s0", judge(_shard_result(0, 0), tmp_path / "s0"))
    before = (tmp_path / "s0" / "results.json").read_text()
    rc = main(["merge", str(tmp_path / "s0"), "--out", str(tmp_path / "s0")])
    assert rc == 2 and "is one of the runs merged" in capsys.readouterr().err
    assert (tmp_path / "s0" / "results.json").read_text() == before


def test_merge_reads_seed_runs_inside_its_out_as_reproduce_seeds_lays_them_out(tmp_path):
    """``merge --out X X/seed-0 X/seed-1``: the aggregate names its seed runs ``seed-0``,
    ``seed-1`` (relative to X), so a committed X carries its seed runs and counts."""
    import dataclasses

    from paperzoo.experiments.judging import judge
    from paperzoo.report import write_report
    from paperzoo.verdict import load_result

    for seed in (0, 1):
        run = dataclasses.replace(_shard_result(seed, 0, 1), shard=None)
        write_report(
            run, tmp_path / "x" / f"seed-{seed}", judge(run, tmp_path / "x" / f"seed-{seed}")
        )
    dirs = [str(tmp_path / "x" / f"seed-{s}") for s in (0, 1)]
    assert main(["merge", *dirs, "--out", str(tmp_path / "x")]) == 0
    merged = load_result(tmp_path / "x")
    assert merged.seeds == [0, 1] and merged.seed_dirs == ["seed-0", "seed-1"]
    assert "cannot be read" not in str(judge(merged, run_dir=tmp_path / "x").reason)


def test_a_paper_without_a_grid_refuses_shard(tmp_path, capsys):
    rc = main(["reproduce", "coordconv", "--scale", "smoke", "--shard", "0/1",
               "--out", str(tmp_path / "o")])  # fmt: skip
    assert rc == 2 and "no grid" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _a_run(tmp_path: Path) -> Path:
    """A run directory (one seed of a made-up paper) to give the commands."""
    import dataclasses

    from paperzoo.experiments.judging import judge
    from paperzoo.report import write_report

    run = dataclasses.replace(_shard_result(0, 0, 1), shard=None)
    write_report(run, tmp_path / "run", judge(run, tmp_path / "run"))
    return tmp_path / "run"


_UNWRITABLE = "/proc/paperzoo-test"  # exists as a parent, and nothing can be created under it


@pytest.mark.parametrize(
    ("command", "given", "message"),
    [
        ("summary", "file", "is a file, not a run directory"),
        ("summary", "missing", "no such directory"),
        ("summary", "unwritable", "cannot be written"),
        ("merge", "file", "is a file, not a run directory"),
        ("merge", "missing", "not found"),
        ("merge", "unwritable", "cannot be written"),
        ("reproduce", "file", "is not a directory"),
        ("reproduce", "unwritable", "cannot be written"),
    ],
)
def test_a_file_a_missing_path_or_an_unwritable_one_is_one_line_and_exit_2(
    command, given, message, tmp_path, capsys
):
    if not Path("/proc").is_dir():
        pytest.skip("needs Linux's /proc for a path nothing can be written under")
    run = _a_run(tmp_path)
    where = {
        "file": str(tmp_path / "bench.json"),
        "missing": str(tmp_path / "nowhere"),
        "unwritable": _UNWRITABLE,
    }[given]
    (tmp_path / "bench.json").write_text("{}")
    argv = {
        "summary": ["summary", where if given != "unwritable" else str(run)],
        "merge": ["merge", where if given != "unwritable" else str(run), "--out"],
        "reproduce": ["reproduce", "gat", "--scale", "smoke", "--out", where],
    }[command]
    if command == "summary" and given == "unwritable":
        argv += ["--html", f"{_UNWRITABLE}.html"]
    if command == "merge":
        argv.append(where if given == "unwritable" else str(tmp_path / "merged"))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert message in err, err


def test_summary_of_a_folder_of_runs_reads_its_runs_and_its_validation_runs(tmp_path, capsys):
    from paperzoo.experiments.judging import run_dirs

    run = _a_run(tmp_path / "results")
    (tmp_path / "results" / "bench.json").write_text("{}")  # a file beside the runs: not a run
    (tmp_path / "results" / "validation").mkdir()
    assert run_dirs([tmp_path / "results"]) == [run]
    assert main(["summary", str(tmp_path / "results")]) == 0
    assert f"({run.name}): **Findings holding: " in capsys.readouterr().out
    with pytest.raises(ValueError, match="holds no results.json and no run directories"):
        run_dirs([tmp_path / "results" / "validation"])


def _typo_paper():
    """A paper of one's own as a first try writes it: its ``run`` misspells a claim id, it reads
    scikit-learn's digits and it has no full run yet."""
    from paperzoo.paper import ClaimSpec, Experiment, NotRun, Outcome

    class Typo(Experiment):
        name = "typo-paper"
        title = "label smoothing against calibration error"
        claims = (
            ClaimSpec("cal.ece_ratio", "label smoothing lowers calibration error", None, "< 1"),
            ClaimSpec("acc", "accuracy is above chance", None, ">= 0.1", kind="check"),
        )
        configs = {"smoke": None, "quick": None, "full": None}
        datasets = ("sklearn-digits",)
        full_not_run = (NotRun(("cpu",), "not implemented yet"),)

        def run(self, cfg, ctx):
            return Outcome(measured={"cal.ece_ration": 0.5, "acc": 0.9})

    return Typo


def test_a_misspelt_metric_is_listed_as_not_measured_with_why(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(EXPERIMENTS._factories, "typo-paper", _typo_paper())
    out = tmp_path / "run"
    argv = ["reproduce", "typo-paper", "--scale", "smoke", "--seed", "0", "--quiet"]
    assert main([*argv, "--threads", "1", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    why = "the run reported no metric cal.ece_ratio; it reported: acc, cal.ece_ration"
    assert f"findings that did not hold:\n  typo-paper: cal.ece_ratio (not measured ({why}))" in (
        stdout
    )
    assert (out / "results.json").is_file() and why in (out / "report.md").read_text()


def test_list_shows_a_papers_declared_data_why_it_has_no_full_run_and_its_price(
    capsys, monkeypatch
):
    monkeypatch.setitem(EXPERIMENTS._factories, "typo-paper", _typo_paper())
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    mine = out.split("typo-paper: ", 1)[1].split("\n  - ", 1)[0]
    assert "data: sklearn-digits;" in mine and "generated" not in mine
    assert "full: not run: not implemented yet" in mine and "fits a CPU" not in mine
    assert "full run: not priced (the paper declares no cost counter" in mine
    assert main(["list", "--json"]) == 0
    (entry,) = [
        p for p in json.loads(capsys.readouterr().out)["papers"] if p["name"] == "typo-paper"
    ]
    assert entry["datasets"] == ["sklearn-digits"] and entry["full_cost"] is None
    assert entry["full_not_run"] == [
        {
            "part": None,
            "why": "not implemented yet",
            "needs": ["cpu"],
            "label": "fits a CPU (see its docs)",
        }
    ]


def test_threads_help_says_what_the_default_is(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: torch's)" not in text
    assert "the cores divided among the seed processes running at once" in text
    assert "OMP_NUM_THREADS" in text
