"""The ggnn reproduction: smoke run in the suite, quick run on demand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from paperzoo.cli import main
from paperzoo.data import babi
from paperzoo.experiments import RunContext
from paperzoo.experiments.ggnn import (
    BASELINE,
    DEVIATIONS,
    OFFICIAL,
    GGNNExperiment,
    _baseline_updates,
    best_of_restarts,
)
from paperzoo.experiments.runner import run_experiment

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "babi"


def _check(out: Path) -> dict:
    res = json.loads((out / "results.json").read_text())
    assert res["paper"] == "ggnn"
    ids = {c["id"] for c in res["claims"]}
    assert "babi.task19.ggsnn.test_acc" in ids and "seq.eulerian.ggsnn.test_acc" in ids
    for c in res["claims"]:
        assert isinstance(c["measured"], float), c["id"]
        if c["id"].endswith(".test_acc") and "minus" not in c["id"]:
            assert 0.0 <= c["measured"] <= 1.0
    assert (out / res["figures"][0]).is_file()
    return res


def test_smoke_run_measures_every_claim(smoke_ctx: RunContext) -> None:
    run_experiment("ggnn", smoke_ctx)
    res = _check(smoke_ctx.out_dir)
    assert res["data"][0]["source"] == "generated"


def test_smoke_run_on_the_official_file_layout(tmp_path: Path) -> None:
    ctx = RunContext(
        scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=FIXTURES, fold=1
    )
    run_experiment("ggnn", ctx)
    res = _check(ctx.out_dir)
    assert all(d["source"].startswith(str(FIXTURES)) for d in res["data"])


def _write_fold(root: Path, k: int, *, seed: int, n_test: int) -> dict[str, int]:
    """Fold K of every task in the official layout, from the generator; {task: test questions}."""
    questions = {}
    for name, spec in babi.TASKS.items():
        task = babi.generate_task(name, n_train=30, n_test=n_test, seed=seed)
        base = (
            root / "extra_seq_tasks" / f"fold_{k}" / "noisy_parsed"
            if spec.sequence_file
            else root / f"processed_{k}"
        )
        for split, graphs in (("train", task.train), ("test", task.test)):
            (base / split).mkdir(parents=True, exist_ok=True)
            text = babi.format_graphs(graphs, kind=spec.kind)
            (base / split / f"{spec.file_id}_graphs.txt").write_text(text)
        questions[name] = sum(len(g.questions) for g in task.test)
    return questions


def test_folds_reads_each_official_fold(tmp_path: Path) -> None:
    root = tmp_path / "babi"
    # Two folds that differ: other graphs, and other numbers of test graphs.
    q1 = _write_fold(root, 1, seed=11, n_test=5)
    q2 = _write_fold(root, 2, seed=22, n_test=9)
    out = tmp_path / "out"
    argv = ["reproduce", "ggnn", "--scale", "smoke", "--data-root", str(root), "--folds", "1-2"]
    assert main([*argv, "--out", str(out), "--quiet", "--threads", "1"]) == 0
    res = json.loads((out / "results.json").read_text())
    for name, summary in res["details"]["ggnn"].items():
        assert summary["folds"] == [1, 2]
        runs = summary["runs"]
        # Each fold's numbers are computed on that fold's own files.
        for k, run in zip((1, 2), runs, strict=True):
            assert {f"processed_{k}", f"fold_{k}"} & set(Path(run["source"]).parts)
        assert [r["n_test_questions"] for r in runs] == [q1[name], q2[name]]
        assert q1[name] != q2[name]
        accs = [r["test_acc"] for r in runs]
        assert summary["test_acc_per_fold"] == accs
        assert summary["test_acc_mean"] == pytest.approx(sum(accs) / 2)
    notes = " ".join(res["notes"])
    assert "over 2 official folds (1, 2)" in notes
    assert "over 2 official folds (1, 2)" in (out / "report.md").read_text()


def test_one_fold_is_one_fold(tmp_path: Path) -> None:
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    q3 = _write_fold(root, 3, seed=33, n_test=7)
    ctx = RunContext(scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=root, fold=3)
    result = run_experiment("ggnn", ctx)
    for name, summary in result.details["ggnn"].items():
        assert summary["folds"] == [3]
        assert [r["n_test_questions"] for r in summary["runs"]] == [q3[name]]


def test_a_missing_fold_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    argv = ["reproduce", "ggnn", "--scale", "smoke", "--data-root", str(root), "--folds", "1-2"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "fold 2" in err and str(root / "processed_2") in err
    assert not (tmp_path / "out" / "runs").exists()  # nothing was trained


def test_folds_flag_parsing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:  # --fold and --folds exclude each other
        main(["reproduce", "ggnn", "--fold", "2", "--folds", "1-2"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        main(["reproduce", "ggnn", "--folds", "0-2"])  # folds are 1-based
    capsys.readouterr()
    assert main(["reproduce", "ggnn", "--scale", "smoke", "--folds", "1-2"]) == 2
    assert "--data-root" in capsys.readouterr().err


def _fake_runs(scores: list[tuple[float, float]]):
    calls: list[int] = []

    def train_once(attempt: int) -> tuple[str, tuple[float, float]]:
        calls.append(attempt)
        return f"model{attempt}", scores[attempt]

    return train_once, calls


def test_restarts_stop_at_full_validation_accuracy() -> None:
    train_once, calls = _fake_runs([(0.58, -1.0), (0.72, -0.9), (1.0, -0.2), (1.0, -0.01)])
    best, runs = best_of_restarts(train_once, 16)
    assert calls == [0, 1, 2] and best == "model2"
    assert [m for m, _ in runs] == ["model0", "model1", "model2"]


def test_restarts_keep_the_best_on_validation_when_none_reaches_it() -> None:
    scores = [(0.58, -1.0), (0.9, -0.5), (0.9, -0.3), (0.72, -0.1)]
    train_once, calls = _fake_runs(scores)
    best, runs = best_of_restarts(train_once, 4)
    assert calls == [0, 1, 2, 3] and len(runs) == 4
    assert best == "model2"  # highest accuracy, then the lower validation loss
    train_once, calls = _fake_runs([(0.9, -0.5), (0.9, -0.5)])
    assert best_of_restarts(train_once, 2)[0] == "model0"  # ties: the earlier run
    with pytest.raises(ValueError):
        best_of_restarts(train_once, 0)


def test_quick_and_full_settings_depart_from_the_authors_only_where_documented() -> None:
    exp = GGNNExperiment()
    for scale in ("quick", "full"):
        cfg = exp.config(scale)
        assert cfg.restarts == 16
        assert cfg.overrides == DEVIATIONS
        for name in OFFICIAL:
            s = exp._setting(name, cfg)
            if name == "eulerian":  # the step size, nothing else
                assert s.lr == 0.01 and OFFICIAL[name].lr == 0.001
                assert dataclasses.replace(s, lr=OFFICIAL[name].lr) == OFFICIAL[name]
            else:
                assert s == OFFICIAL[name]
    full, quick = exp.config("full"), exp.config("quick")
    # The baselines: the authors' budgets at full scale, 1,000 updates at quick.
    assert _baseline_updates(full, "babi15", "lstm") == 5000 == BASELINE["babi15"].lstm_updates
    assert _baseline_updates(full, "babi15", "rnn") == 20000
    assert _baseline_updates(full, "babi18", "lstm") == 500
    assert _baseline_updates(quick, "babi19", "lstm") == 1000


@pytest.mark.slow
def test_quick_run_all_claims_hold(tmp_path: Path) -> None:
    ctx = RunContext(scale="quick", out_dir=tmp_path / "out", quiet=True)
    result = run_experiment("ggnn", ctx)
    assert all(c.holds is not False for c in result.claims), [
        (c.id, c.measured) for c in result.claims if c.holds is False
    ]
