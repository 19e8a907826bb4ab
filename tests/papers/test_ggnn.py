"""The ggnn reproduction: smoke run in the suite, quick run on demand."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
from torch import nn

from paperzoo.cli import main
from paperzoo.data import babi, layouts
from paperzoo.experiments import RunContext
from paperzoo.experiments.runner import run_experiment
from paperzoo.papers.ggnn import GGNNExperiment
from paperzoo.papers.ggnn.config import (
    _CLAIM_ID,
    BASELINE,
    DEVIATIONS,
    FULL_GAPS,
    GAP_TOLERANCE,
    OFFICIAL,
    SOLVED,
    _baseline_train,
    _baseline_updates,
    _fold_key,
    _gap_claim_id,
    _seed_key,
    task_setting,
)
from paperzoo.papers.ggnn.torch7 import Torch7Adam, torch7_randperm
from paperzoo.papers.ggnn.training import (
    _EarliestKeeper,
    _EpochBatches,
    _GraphBank,
    _split_train,
    best_of_batched_restarts,
    best_of_restart_waves,
    graph_eval,
    run_baselines,
    sequence_eval,
    train_restarts,
)


def _reference() -> ModuleType:
    """tests/papers/ggnn_reference.py: the runs trained alone, the sequential restart rule."""
    path = Path(__file__).with_name("ggnn_reference.py")
    spec = importlib.util.spec_from_file_location("ggnn_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ref = _reference()
BestKeeper, best_of_restarts = _ref.BestKeeper, _ref.best_of_restarts
train_attempt, baseline_alone = _ref.train_attempt, _ref.baseline_alone

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "babi"
SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "babi_symbolic_sample"


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
        scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=FIXTURES, options={"fold": 1}
    )
    run_experiment("ggnn", ctx)
    res = _check(ctx.out_dir)
    assert all(d["source"].startswith(str(FIXTURES)) for d in res["data"])


def _write_fold(root: Path, k: int, *, seed: int, n_test: int) -> dict[str, int]:
    """Fold K of every task in the official layout, from the generator; {task: test questions}."""
    tasks = {n: babi.generate_task(n, n_train=30, n_test=n_test, seed=seed) for n in babi.TASKS}
    babi.write_official_fold(root, k, tasks)
    return {n: sum(len(g.questions) for g in t.test) for n, t in tasks.items()}


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
    ctx = RunContext(
        scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=root, options={"fold": 3}
    )
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
    quick = exp.config("quick")  # our small-scale setting: restarts, Eulerian step 0.01
    assert quick.restarts == 16 and quick.overrides == DEVIATIONS
    assert quick.fold_seeds and quick.ties_by_loss and not quick.baseline_train_by_task
    for name in OFFICIAL:
        s = task_setting(name, quick)
        if name == "eulerian":  # the step size, nothing else
            assert s.lr == 0.01 and OFFICIAL[name].lr == 0.001
            assert dataclasses.replace(s, lr=OFFICIAL[name].lr) == OFFICIAL[name]
        else:
            assert s == OFFICIAL[name]
    # Full is the authors' protocol: one run per fold and question type, every
    # task's settings (Eulerian 0.001), one seed for every fold, the earliest best checkpoint,
    # task 4's baselines on 250 graphs.
    full = exp.config("full")
    assert (full.restarts, full.restart_batch) == (1, 1)
    assert all(task_setting(name, full) == OFFICIAL[name] for name in OFFICIAL)
    assert task_setting("eulerian", full).lr == 0.001
    assert not full.fold_seeds and not full.ties_by_loss
    assert _baseline_train(full, "babi4") == 250 and _baseline_train(full, "babi15") == 950
    # The baselines: the authors' budgets at full scale, 1,000 updates at quick.
    assert _baseline_updates(full, "babi15", "lstm") == 5000 == BASELINE["babi15"].lstm_updates
    assert _baseline_updates(full, "babi15", "rnn") == 20000
    assert _baseline_updates(full, "babi18", "lstm") == 500
    assert _baseline_updates(quick, "babi19", "lstm") == 1000


def test_authors_checkpoint_rule_keeps_the_earliest_of_equally_accurate() -> None:
    """babi_train.lua:269 replaces the best only on a strictly lower validation error; our
    quick rule breaks accuracy ties by the validation loss."""
    scores = iter([(0.5, 0.9), (1.0, 0.4), (1.0, 0.1), (0.9, 0.0)])  # (accuracy, loss) per check
    lin = nn.Linear(1, 1)
    authors = BestKeeper(lambda m: next(scores), ties_by_loss=False)
    seen = []
    for _ in range(4):
        with torch.no_grad():
            lin.bias.fill_(len(seen))  # checkpoint i has bias i
        seen.append(authors(lin))
    assert authors.best == (1.0, -0.4) and float(authors.state["bias"]) == 1.0  # the earliest
    scores = iter([(0.5, 0.9), (1.0, 0.4), (1.0, 0.1), (0.9, 0.0)])
    ours = BestKeeper(lambda m: next(scores))
    for i in range(4):
        with torch.no_grad():
            lin.bias.fill_(i)
        ours(lin)
    assert ours.best == (1.0, -0.1) and float(ours.state["bias"]) == 2.0  # the lower loss
    # The batched keeper with the authors' rule: per model, the same choice.
    stacked = nn.Linear(1, 2)
    keeper = _EarliestKeeper(2)
    for i, (acc, loss) in enumerate([([0.5, 1.0], [0.9, 0.3]), ([1.0, 1.0], [0.4, 0.1])]):
        with torch.no_grad():
            stacked.bias.fill_(i)
        keeper.update(stacked, acc, loss)
    assert keeper.best == [(1.0, -0.4), (1.0, -0.3)]
    assert [float(st["bias"]) for st in keeper.state] == [1.0, 0.0]  # type: ignore[index]


def test_authors_seed_handling_gives_every_fold_the_same_weights_and_split(tmp_path: Path) -> None:
    """fold_seeds=False (full): the authors' fixed -seed 8 and split seed 1023 give every fold
    the same initial weights, batch order and split indices; quick draws them per fold."""
    exp = GGNNExperiment()
    full, quick = exp.config("full"), exp.config("quick")
    assert _fold_key(full, 3) == () and _fold_key(quick, 3) == (3,)
    assert _seed_key(full, ("fold3", "q1", "a0")) == ("q1", "a0")
    assert _seed_key(quick, ("fold3", "q1", "a0")) == ("fold3", "q1", "a0")
    task = babi.generate_task("babi15", n_train=6, n_test=2, seed=3)
    ctx = RunContext(scale="full", out_dir=tmp_path / "out", quiet=True)
    s = OFFICIAL["babi15"]
    tr = babi.examples(task, task.train[:6], annotation_dim=s.annotation_dim, question_type=0)
    cfg = dataclasses.replace(full, step_scale=1 / s.steps)  # one update
    weights = []
    for fold in (1, 2):
        key = (f"fold{fold}", "q1")
        runs = train_restarts("babi15", task, cfg, ctx, tr, [], key, range(1))
        weights.append(runs[0][0].state_dict())
    for name, w in weights[0].items():
        torch.testing.assert_close(w, weights[1][name], rtol=0, atol=0)
    cfg_q = dataclasses.replace(cfg, fold_seeds=True)
    ctx = RunContext(scale="full", out_dir=tmp_path / "per-fold", quiet=True)  # no resume
    per_fold = [
        train_restarts("babi15", task, cfg_q, ctx, tr, [], (f"fold{f}", "q1"), range(1))
        for f in (1, 2)
    ]
    a, b = (r[0][0].state_dict() for r in per_fold)
    assert any(not torch.equal(a[n], b[n]) for n in a)


def test_part_models_measures_the_models_alone_without_baselines() -> None:
    """--part models: the seven accuracy findings, no baseline in the plan."""
    exp = GGNNExperiment()
    ctx = RunContext(scale="full", data_root=FIXTURES, options={"folds": (1,)}, part="models")
    ids = {c.id for c in exp.claims_at(ctx)}
    assert ids == {f"{_CLAIM_ID[t]}.test_acc" for t in OFFICIAL}
    plan = dict(exp.plan(exp.config("full"), ctx))
    assert plan and not any(k.startswith(("rnn ", "lstm ")) for k in plan)
    assert len(exp.claims_at(RunContext(scale="full", data_root=FIXTURES))) > len(ids)
    with pytest.raises(ValueError, match="models"):
        exp.claims_at(RunContext(scale="full", part="baselines"))


def test_a_subset_of_tasks_leaves_the_others_not_measured(tmp_path: Path) -> None:
    """``--set tasks=[...]`` (a modified config) runs; the tasks left out are not measured
    (it stopped with "measured claims do not match the ones declared" before)."""
    out = tmp_path / "out"
    argv = ["reproduce", "ggnn", "--scale", "smoke", "--out", str(out), "--quiet"]
    argv += ["--set", 'tasks=["babi4"]', "--set", "baseline_tasks=[]"]
    assert main(argv) == 0
    claims = {c["id"]: c for c in json.loads((out / "results.json").read_text())["claims"]}
    assert claims["babi.task4.ggnn.test_acc"]["measured"] is not None
    assert claims["babi.task15.ggnn.test_acc"]["measured"] is None


@pytest.mark.slow
def test_quick_run_all_claims_hold(tmp_path: Path) -> None:
    ctx = RunContext(scale="quick", out_dir=tmp_path / "out", quiet=True)
    result = run_experiment("ggnn", ctx)
    assert all(c.holds is not False for c in result.claims), [
        (c.id, c.measured) for c in result.claims if c.holds is False
    ]


# -- full scale: the official folds, all of them -------------------------------------------------


def test_full_without_data_root_exits_2_naming_the_folds_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["reproduce", "ggnn", "--scale", "full", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "Symbolic bAbI" in err and "--data-root" in err
    assert "DIR/processed_K/" in err and "DIR/extra_seq_tasks/fold_K/" in err
    assert not out.exists() or not any(out.iterdir())


def test_full_refuses_a_root_without_a_whole_official_fold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    (root / "extra_seq_tasks" / "fold_1" / "noisy_parsed" / "test" / "5_graphs.txt").unlink()
    if SAMPLE.is_dir():  # the single-fold layout of the sample files has no fold numbers
        argv = ["reproduce", "ggnn", "--scale", "full", "--data-root", str(SAMPLE)]
        assert main([*argv, "--out", str(tmp_path / "o1"), "--quiet"]) == 2
        assert "lacks them" in capsys.readouterr().err
    argv = ["reproduce", "ggnn", "--scale", "full", "--data-root", str(root)]
    assert main([*argv, "--out", str(tmp_path / "o2"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "processed_K" in err
    assert not (tmp_path / "o2").exists() or not any((tmp_path / "o2").iterdir())


def _pin_fixture(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Pin the files under ``root`` as the official folds' release (``layouts.PINNED``)."""
    release = layouts.Release("test fixture", layouts.pin_tree(root))
    monkeypatch.setitem(layouts.PINNED, babi.FOLDS_LAYOUT, release)


def _ten_folds(root: Path) -> None:
    """Folds 1-10 in the official layout: fold 1 written, the others links to its directories."""
    _write_fold(root, 1, seed=11, n_test=5)
    for k in range(2, 11):
        (root / f"processed_{k}").symlink_to(root / "processed_1")
        (root / "extra_seq_tasks" / f"fold_{k}").symlink_to(root / "extra_seq_tasks" / "fold_1")


def test_full_runs_every_fold_present_and_marks_a_subset(tmp_path: Path, monkeypatch) -> None:
    exp = GGNNExperiment()
    cfg = exp.config("full")
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    _write_fold(root, 3, seed=33, n_test=5)
    _write_fold(root, 4, seed=44, n_test=5)
    (root / "processed_4" / "test" / "19_graphs.txt").unlink()  # fold 4 incomplete: not present
    _pin_fixture(monkeypatch, root)  # the fixture stands in for the authors' release
    full = RunContext(scale="full", data_root=root)
    assert exp._folds(cfg, full) == [1, 3]
    exp.require_data(full)
    assert exp.setting_note(full) == (
        "folds 1,3 of 10: not the paper's protocol (its numbers are means over all 10 folds)"
    )
    # The plan covers both folds, the GG-NN and both baselines of every task (the folds'
    # baselines of one task and cell: one batched model).
    # A question type's 16 runs are one batched model of the authors' steps.
    plan = dict(exp.plan(cfg, full))
    for fold in (1, 3):
        assert plan[f"babi15 fold{fold}-q1 (one run)"] == OFFICIAL["babi15"].steps
        assert plan[f"babi19 fold{fold}-q1 (one run)"] == OFFICIAL["babi19"].steps
    # The restart variant (--set restarts=16 restart_batch=16): 16 runs as one batched model.
    variant = dict(exp.plan(dataclasses.replace(cfg, restarts=16, restart_batch=16), full))
    assert variant["babi15 fold1-q1 (16 runs at once)"] == OFFICIAL["babi15"].steps
    # Quick: one run at a time, up to 16 (an upper bound).
    quick = dict(exp.plan(exp.config("quick"), RunContext(scale="quick")))
    assert quick["babi16 fold0-q1 (up to 16 waves of 1 runs)"] == 16 * OFFICIAL["babi16"].steps
    assert "rnn eulerian folds 1,3" in plan and "lstm babi4 folds 1,3" in plan
    # --folds / --fold choose a subset, marked the same way; a missing fold is refused.
    assert exp._folds(cfg, RunContext(scale="full", data_root=root, options={"folds": (3,)})) == [3]
    one = RunContext(scale="full", data_root=root, options={"fold": 1})
    assert exp._folds(cfg, one) == [1] and exp.setting_note(one).startswith("fold 1 of 10")
    with pytest.raises(babi.DataError, match="fold 2"):
        exp.require_data(RunContext(scale="full", data_root=root, options={"folds": (1, 2)}))
    # Other scales keep one fold unless told.
    assert exp._folds(exp.config("quick"), RunContext(scale="quick", data_root=root)) == [1]
    assert exp.setting_note(RunContext(scale="quick", data_root=root)) is None


def test_all_ten_folds_are_the_papers_setting(tmp_path: Path, monkeypatch) -> None:
    exp = GGNNExperiment()
    root = tmp_path / "babi"
    _ten_folds(root)
    ctx = RunContext(scale="full", data_root=root)
    assert "not the canonical Symbolic bAbI" in exp.setting_note(ctx)  # not the authors' files
    _pin_fixture(monkeypatch, root)  # the fixture stands in for the authors' release
    assert exp._folds(exp.config("full"), ctx) == list(range(1, 11))
    assert exp.setting_note(ctx) is None
    every = RunContext(
        scale="full", data_root=root, options={"folds": tuple(range(1, 11))}
    )  # --folds 1-10
    assert exp.setting_note(every) is None
    exp.require_data(every)


def test_generated_data_at_full_is_a_named_substitute() -> None:
    exp = GGNNExperiment()
    ctx = RunContext(scale="full", dataset="generated")
    exp.require_data(ctx)  # nothing to read
    assert exp._folds(exp.config("full"), ctx) == list(range(10))
    assert "instead of the paper's babi-folds" in exp.setting_note(ctx)
    assert exp.setting_note(RunContext(scale="quick")) is None


def test_full_dry_run_reads_every_fold_and_records_them(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "babi"
    q1 = _write_fold(root, 1, seed=11, n_test=5)
    q2 = _write_fold(root, 2, seed=22, n_test=9)
    _pin_fixture(monkeypatch, root)  # the fixture stands in for the authors' release
    out = tmp_path / "out"
    argv = ["reproduce", "ggnn", "--scale", "full", "--data-root", str(root), "--max-steps", "2"]
    assert main([*argv, "--out", str(out), "--quiet", "--threads", "1"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["setting_note"].startswith("folds 1,2 of 10")
    for name, summary in res["details"]["ggnn"].items():
        assert summary["folds"] == [1, 2]
        assert [r["n_test_questions"] for r in summary["runs"]] == [q1[name], q2[name]]
    for cell in ("rnn", "lstm"):
        assert all(len(v["per_fold"]) == 2 for v in res["details"]["baselines"][cell].values())
    # Each task's data record: a digest of both folds' graphs, no single fold.
    assert len(res["data"]) == 7
    assert all(d["fold"] is None and len(d["sha256"]) == 64 for d in res["data"])
    ids = {c["id"] for c in res["claims"]}
    assert {_gap_claim_id(t, c) for t, c in FULL_GAPS} <= ids


def test_one_fold_records_its_fold_and_digest(tmp_path: Path) -> None:
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    ctx = RunContext(scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=root)
    result = run_experiment("ggnn", ctx)
    assert all(d["fold"] == 1 and d["sha256"] for d in result.data)
    digests = {d["name"]: d["sha256"] for d in result.data}
    task = babi.load_official("babi15", root, fold=1)
    assert digests["babi-task15"] == babi.task_sha256(task)


def test_full_gap_targets_are_one_sided_at_the_papers_gap() -> None:
    claims = {c.id: c for c in GGNNExperiment.claims}
    assert len(FULL_GAPS) == 11  # 7 tasks x RNN, and the LSTM on the 4 the quick claims skip
    for task, cell in FULL_GAPS:
        c = claims[_gap_claim_id(task, cell)]
        assert c.kind == "finding" and c.scales == ("full",)
        assert c.target_at("full") == f">= {c.paper - GAP_TOLERANCE:.2f}"
    for c in claims.values():  # every full target of an accuracy or a gap is one-sided
        if "full" in c.scales and c.kind == "finding":
            assert c.target_at("full").startswith(">= "), c.id


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_batched_baselines_follow_their_trajectories_alone(tmp_path: Path, cell: str) -> None:
    """The folds' baselines trained as one batched model: each fold's validation losses, selected
    parameters and test accuracy equal those of its baseline trained alone with ``Trainer``."""
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    _write_fold(root, 2, seed=22, n_test=9)  # other graphs, sizes and sequence lengths
    exp = GGNNExperiment()
    cfg = dataclasses.replace(exp.config("smoke"), baseline_steps=12, baseline_eval_every=3)
    ctx = RunContext(scale="smoke", out_dir=tmp_path / "out", quiet=True, data_root=root)
    folds = [(k, babi.load_official("babi15", root, fold=k, require_fold=True)) for k in (1, 2)]
    accs = run_baselines("babi15", cell, cfg, ctx, folds)
    (run_dir,) = (ctx.out_dir / "runs").iterdir()
    hist = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in hist] == [3, 6, 9, 12]
    for i, (k, task) in enumerate(folds):
        model, records = baseline_alone("babi15", cell, cfg, ctx, k, task)
        evals = [r for r in records if "val_loss" in r]
        assert [h["val_loss"][i] for h in hist] == pytest.approx(
            [r["val_loss"] for r in evals], rel=1e-4
        )
        assert [h["val_acc"][i] for h in hist] == [r["val_acc"] for r in evals]
        acc = sequence_eval(model, *babi.sequences(task, task.test))[0]
        assert accs[i] == acc


def test_fold_shards_merge_into_the_whole_run(tmp_path: Path) -> None:
    """--shard K/N runs every N-th fold; ``paperzoo merge`` of all shards gives the whole run:
    the same folds, per-fold numbers and data records, and the shard set is complete."""
    root = tmp_path / "babi"
    _write_fold(root, 1, seed=11, n_test=5)
    _write_fold(root, 2, seed=22, n_test=9)
    _write_fold(root, 3, seed=33, n_test=7)
    common = ["reproduce", "ggnn", "--scale", "smoke", "--data-root", str(root), "--folds", "1-3"]
    common += ["--set", "baseline_seeds=3", "--quiet", "--threads", "1"]
    for k in (0, 1):
        assert main([*common, "--shard", f"{k}/2", "--out", str(tmp_path / f"s{k}")]) == 0
    s0 = json.loads((tmp_path / "s0" / "results.json").read_text())
    assert s0["details"]["ggnn"]["babi15"]["folds"] == [1, 3]
    assert s0["details"]["baselines"]["lstm"]["babi15"]["folds"] == [1, 3]
    merged = tmp_path / "merged"
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s0"), "--out", str(merged)]) == 0
    assert main([*common, "--out", str(tmp_path / "whole")]) == 0
    res = json.loads((merged / "results.json").read_text())
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert res["shards"] == {"n": 2, "merged": [0, 1]}
    assert res["data"] == whole["data"]  # the shards describe the whole run's folds
    for name, summary in res["details"]["ggnn"].items():
        assert summary["folds"] == [1, 2, 3]
        # The GG-NNs of a fold train alike in a shard and in the whole run.
        assert summary["test_acc_per_fold"] == whole["details"]["ggnn"][name]["test_acc_per_fold"]
    lstm = res["details"]["baselines"]["lstm"]["babi15"]
    s1 = json.loads((tmp_path / "s1" / "results.json").read_text())
    s0_lstm, s1_lstm = (s["details"]["baselines"]["lstm"]["babi15"] for s in (s0, s1))
    assert lstm["folds"] == [1, 2, 3]
    assert lstm["per_fold"] == [
        s0_lstm["per_fold"][0],
        s1_lstm["per_fold"][0],
        s0_lstm["per_fold"][1],
    ]
    claim = {c["id"]: c for c in res["claims"]}["babi.task15.ggnn.test_acc"]
    assert claim["measured"] == pytest.approx(
        sum(res["details"]["ggnn"]["babi15"]["test_acc_per_fold"]) / 3
    )
    assert "over 3 official folds (1, 2, 3)" in " ".join(res["notes"])


@pytest.mark.parametrize(
    ("name", "updates"),
    # node selection, graph classification, a sequence of labels, a sequence of nodes
    [("babi15", 45), ("babi18", 45), ("babi19", 35), ("shortest-path", 35)],
)
def test_batched_restarts_follow_their_trajectories_alone(
    tmp_path: Path, name: str, updates: int
) -> None:
    """A question type's runs trained as one batched model: each run's training losses,
    validation records, selected parameters, validation score and test accuracy equal those of
    the run trained alone (``ggnn_reference.train_attempt``, ``Trainer``), and the restart rule picks the same
    run from both. (A few updates: on a sequence task some runs amplify float round-off, e.g.
    from 1e-8 at update 40 to 0.3 at update 70, batched or not; docs/ggnn.md.)"""
    exp = GGNNExperiment()
    # A few of the authors' updates, validation every 10 (and after the last).
    cfg = dataclasses.replace(exp.config("quick"), step_scale=updates / OFFICIAL[name].steps)
    ctx = RunContext(scale="quick", out_dir=tmp_path / "out", quiet=True)
    task = babi.generate_task(name, n_train=60, n_test=20, seed=3)
    s = task_setting(name, cfg)
    tr_g, va_g = _split_train(task.train, 40, 20, 0)
    tr, va, te = (
        babi.examples(task, g, annotation_dim=s.annotation_dim, question_type=0)
        for g in (tr_g, va_g, task.test)
    )
    k, key = 3, ("fold0", "q1")
    runs = train_restarts(name, task, cfg, ctx, tr, va, key, range(k))
    hist = [
        json.loads(line)
        for line in (ctx.out_dir / "runs" / f"{name}-fold0-q1-a0-2" / "metrics.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [h["step"] for h in hist] == [*range(10, updates, 10), updates]
    assert len({score for _, score in runs}) == k  # three runs that differ
    alone = []
    for i in range(k):
        model, score = train_attempt(name, task, cfg, ctx, tr, va, key, i)
        alone.append((model, score))
        path = ctx.out_dir / "runs" / f"{name}-fold0-q1-a{i}" / "metrics.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        evals = [r for r in records if "val_loss" in r]
        losses = [r["loss"] for r in records if "loss" in r]  # means over 10 updates
        assert [h["mean_loss"][i] for h in hist] == pytest.approx(losses, rel=1e-5)
        assert [h["val_acc"][i] for h in hist] == [r["val_acc"] for r in evals]
        assert [h["val_loss"][i] for h in hist] == pytest.approx(
            [r["val_loss"] for r in evals], rel=1e-5
        )
        batched, b_score = runs[i]
        assert b_score[0] == score[0] and b_score[1] == pytest.approx(score[1], rel=1e-5)
        for a, c in zip(batched.state_dict().values(), model.state_dict().values(), strict=True):
            torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-5)
        assert graph_eval(batched, task.kind, te)[0] == graph_eval(model, task.kind, te)[0]
    chosen = best_of_batched_restarts(runs)
    sequential = best_of_restarts(lambda a: alone[a], k)
    assert [m for m, _ in runs].index(chosen[0]) == [m for m, _ in alone].index(sequential[0])
    assert len(chosen[1]) == len(sequential[1])


def test_batched_selection_equals_best_of_restarts() -> None:
    """Over all 16 runs trained at once, ``best_of_batched_restarts`` keeps the runs the
    sequential rule trains (up to the first at 100 %) and selects the run it selects, on score
    lists with ties, several runs at 100 % and none."""
    rng = np.random.default_rng(0)
    cases = [
        [(0.58, -1.0), (0.72, -0.9), (1.0, -0.2), (1.0, -0.01)],
        [(0.9, -0.5), (0.9, -0.5)],
        [(1.0, -0.3)] * 3,
        [(0.5, -2.0)],
    ]
    for _ in range(200):
        n = int(rng.integers(1, 17))
        accs = rng.choice([0.5, 0.9, 0.98, 1.0], size=n, p=[0.3, 0.3, 0.25, 0.15])
        cases.append([(float(a), -float(rng.choice([0.1, 0.2, 0.3]))) for a in accs])
    for scores in cases:
        runs = [(f"model{i}", sc) for i, sc in enumerate(scores)]
        best, kept = best_of_batched_restarts(runs)  # type: ignore[arg-type]
        train_once, calls = _fake_runs(scores)
        seq_best, seq_runs = best_of_restarts(train_once, len(scores))  # type: ignore[arg-type]
        assert best == seq_best and kept == seq_runs and len(kept) == len(calls)
        # Waves of runs trained at once: the same selection, whole waves trained.
        for wave in (1, 3, 16):
            waves: list[range] = []

            def train_wave(attempts: range, waves=waves, runs=runs) -> list:  # type: ignore[no-untyped-def]
                waves.append(attempts)
                return [runs[a] for a in attempts]

            w_best, w_kept, trained = best_of_restart_waves(train_wave, len(scores), wave)  # type: ignore[arg-type]
            assert w_best == seq_best and w_kept == seq_runs
            assert [a for r in waves for a in r] == list(range(trained))
            assert trained == min(len(scores), -(-len(calls) // wave) * wave)
    with pytest.raises(ValueError):
        best_of_batched_restarts([])
    with pytest.raises(ValueError):
        best_of_restart_waves(lambda a: [], 4, 0)


@pytest.mark.parametrize("name", ["babi4", "babi18", "babi19", "shortest-path"])
def test_graph_bank_batches_are_collated_batches(name: str) -> None:
    """A step's union of the runs' minibatches, gathered by index arithmetic, is exactly
    ``babi.collate`` of those examples (repeats, graphs without edges, ragged targets)."""
    task = babi.generate_task(name, n_train=12, n_test=0, seed=5)
    items = babi.examples(task, task.train, annotation_dim=10 if "-" in name else 3)
    items[1] = dataclasses.replace(
        items[1], edge_index=items[1].edge_index[:, :0], edge_type=items[1].edge_type[:0]
    )
    bank = _GraphBank(items)
    g = torch.Generator().manual_seed(0)
    for idx in (
        torch.randint(len(items), (23,), generator=g),
        torch.tensor([1]),
        torch.tensor([3, 3]),
    ):
        got, want = bank.batch(idx), babi.collate([items[i] for i in idx.tolist()])
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert got[k].dtype == v.dtype and torch.equal(got[k], v), k
    assert _GraphBank.fits(items) and not _GraphBank.fits([])


def test_epoch_batches_walk_through_shuffled_epochs() -> None:
    """Batch ``step`` holds positions step*B ... step*B + B - 1 of the concatenated epochs'
    permutations (also when a batch spans epochs, or more than one)."""
    for n, bs in ((7, 3), (4, 10)):
        batches = _EpochBatches([None] * n, bs, seed=9)  # type: ignore[list-item]
        perms = torch.cat([batches._perm(e) for e in range(30)])
        for step in (0, 1, 2, 5, 6):
            assert batches.indices(step).tolist() == perms[step * bs : (step + 1) * bs].tolist()


def test_a_restart_batch_below_one_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["reproduce", "ggnn", "--scale", "smoke", "--set", "restart_batch=0", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--threads", "1"]) == 2
    assert "restart_batch must be >= 1" in capsys.readouterr().err
    assert (
        GGNNExperiment().plan(  # the plan leaves the error to the run
            dataclasses.replace(GGNNExperiment().config("smoke"), restart_batch=0), RunContext()
        )
        == []
    )


def test_outcome_gives_solved_runs_beside_the_mean(tmp_path: Path) -> None:
    """report.md's notes and details give, per task, the runs (folds) at test accuracy >= 0.99
    over all runs, for the selected runs and for first runs alone: a mean of 0.92 may be
    eight solved folds and two stalled ones."""
    from paperzoo.papers.ggnn.experiment import _outcome

    accs, first = [1.0, 0.995, 0.716, 0.989], [1.0, 0.5, 0.716, 0.99]
    runs = [
        {"test_acc": a, "first_attempt_test_acc": f, "fold": k + 1,
         "per_question_type": {"1": {"attempts": [{"val_acc": 1.0, "test_acc": a}]}}}
        for k, (a, f) in enumerate(zip(accs, first, strict=True))
    ]  # fmt: skip
    ctx = RunContext(scale="full", out_dir=tmp_path, quiet=True)
    cfg = GGNNExperiment().config("full")
    out = _outcome(cfg, ctx, set(), {"babi16": runs}, {}, [], {}, True)
    summary = out.details["ggnn"]["babi16"]
    assert summary["solved_threshold"] == SOLVED == 0.99
    assert (summary["solved"], summary["first_attempt_solved"]) == (2, 2)
    assert summary["solve_rate"] == 0.5
    note = out.notes[0]
    assert "solved (test accuracy >= 0.99): 2 of 4 folds" in note
    assert "2 of 4 solved" in note
    notes = " ".join(out.notes)  # full: the authors' split, one run per fold
    assert "the authors' own on every fold" in notes and "needs every run to solve" in notes
    quick = _outcome(
        GGNNExperiment().config("quick"), ctx, set(), {"babi16": runs}, {}, [], {}, True
    )
    assert "the authors' own" not in " ".join(quick.notes)


def test_measured_takes_the_leads_over_the_baselines_and_marks_missing_tasks() -> None:
    """The measurements alone (``_measured``): a task's mean, the LSTM and the GG-NN's lead over
    it, the full-scale gaps over each baseline, NaN for a declared task that did not run."""
    from paperzoo.papers.ggnn.experiment import _measured

    summary = {"babi15": {"test_acc_mean": 1.0}, "babi4": {"test_acc_mean": 0.75}}
    base = {"lstm": {"babi15": [0.5, 0.7]}, "rnn": {"babi4": [0.25, 0.25]}}
    gap = _gap_claim_id("babi4", "rnn")
    declared = {
        "babi.task15.lstm.test_acc", "babi.task16.lstm.test_acc", f"{_CLAIM_ID['babi16']}.test_acc",
        gap, _gap_claim_id("babi18", "rnn"),
    }  # fmt: skip
    m = _measured(declared, summary, base)
    assert m[f"{_CLAIM_ID['babi15']}.test_acc"] == 1.0
    assert m["babi.task15.lstm.test_acc"] == pytest.approx(0.6)
    assert m["babi.task15.ggnn_minus_lstm.test_acc"] == pytest.approx(0.4)
    assert m[gap] == 0.5  # full scale: the GG-NN's lead over the RNN
    for missing in (  # declared, not run: not measured
        f"{_CLAIM_ID['babi16']}.test_acc", "babi.task16.lstm.test_acc",
        "babi.task16.ggnn_minus_lstm.test_acc", _gap_claim_id("babi18", "rnn"),
    ):  # fmt: skip
        assert np.isnan(m[missing]), missing
    assert "babi.task19.lstm.test_acc" not in m  # not declared (--part models)


def _mt19937(seed: int):
    """The reference MT19937 (Matsumoto and Nishimura's init_genrand / genrand_int32), in
    plain Python: Torch7's generator (THRandom.c)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    while True:
        for i in range(624):
            y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7FFFFFFF)
            mt[i] = mt[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        for y in mt:
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            yield y ^ (y >> 18)


def test_torch7_split_is_the_authors_randperm_under_seed_1023() -> None:
    """split="torch7": Torch7's randperm (swap i with i + random() % (n - i)) under seed 1023,
    the first n_train graphs train and the next n_val validate, whatever the run's seed."""
    gen = _mt19937(5489)
    assert next(gen) == 3499211612  # the reference generator's first output
    n, gen = 1000, _mt19937(1023)
    perm = list(range(n))
    for i in range(n - 1):
        z = i + next(gen) % (n - i)
        perm[i], perm[z] = perm[z], perm[i]
    assert torch7_randperm(n, 1023).tolist() == perm
    graphs = tuple(range(n))
    for seed in (0, 5):
        train, val = _split_train(graphs, 50, 50, seed, "torch7")  # type: ignore[arg-type]
        assert (train, val) == (perm[:50], perm[50:100])
    assert _split_train(graphs, 50, 50, 0)[0] != perm[:50]  # type: ignore[arg-type]


def test_torch7_adam_differs_from_torchs_only_in_epsilon() -> None:
    """Torch7's optim.adam folds the bias corrections into the step and adds epsilon to
    sqrt(v): with epsilon 0 it is torch's Adam; with epsilon, its updates are those of torch's
    Adam with epsilon / sqrt(1 - beta2^t)."""
    torch.manual_seed(0)
    grads = [torch.randn(5, dtype=torch.float64) * 1e-3 for _ in range(6)]

    def trajectory(make) -> list[torch.Tensor]:
        p = torch.zeros(5, dtype=torch.float64, requires_grad=True)
        opt = make([p])
        out = []
        for g in grads:
            p.grad = g.clone()
            opt.step()
            out.append(p.detach().clone())
        return out

    for a, b in zip(
        trajectory(lambda ps: Torch7Adam(ps, lr=0.01, eps=0.0)),
        trajectory(lambda ps: torch.optim.Adam(ps, lr=0.01, eps=0.0)),
        strict=True,
    ):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    # One update from zero state: torch's Adam with epsilon / sqrt(1 - beta2) is Torch7's.
    eps = 1e-3
    t7 = trajectory(lambda ps: Torch7Adam(ps, lr=0.01, eps=eps))[0]
    th = trajectory(lambda ps: torch.optim.Adam(ps, lr=0.01, eps=eps / 0.001**0.5))[0]
    plain = trajectory(lambda ps: torch.optim.Adam(ps, lr=0.01, eps=eps))[0]
    torch.testing.assert_close(t7, th, rtol=1e-12, atol=1e-15)
    assert not torch.allclose(t7, plain, rtol=1e-6, atol=0)


def test_training_variants_default_to_the_committed_behaviour(tmp_path: Path) -> None:
    """The variant fields keep every scale's training as before (torch's Adam, clamp 5,
    float32; the seeded split but at full, which reads the authors' split and says so in its
    notes); dtype="float64" trains and evaluates in float64 from the same initial weights;
    adam="torch7" and grad_clamp change the updates."""
    exp = GGNNExperiment()
    for scale in ("smoke", "quick", "full"):
        cfg = exp.config(scale)
        assert (cfg.adam, cfg.grad_clamp, cfg.dtype) == ("torch", 5.0, "float32")
        assert cfg.split == ("torch7" if scale == "full" else "seeded")
    task = babi.generate_task("babi15", n_train=6, n_test=4, seed=3)
    s = OFFICIAL["babi15"]
    tr = babi.examples(task, task.train[:6], annotation_dim=s.annotation_dim, question_type=0)
    te = babi.examples(task, task.test, annotation_dim=s.annotation_dim, question_type=0)
    base = dataclasses.replace(exp.config("full"), step_scale=3 / s.steps)  # three updates

    def train(i: int, **changes) -> nn.Module:
        ctx = RunContext(scale="full", out_dir=tmp_path / str(i), quiet=True)
        cfg = dataclasses.replace(base, **changes)
        return train_restarts("babi15", task, cfg, ctx, tr, [], ("fold1", "q1"), range(1))[0][0]

    ref = train(0)
    double = train(1, dtype="float64")
    assert all(p.dtype == torch.float64 for p in double.parameters())
    for name, w in ref.state_dict().items():
        torch.testing.assert_close(double.state_dict()[name].float(), w, rtol=1e-4, atol=1e-5)
    assert 0.0 <= graph_eval(double, task.kind, te)[0] <= 1.0
    for i, change in enumerate(({"adam": "torch7"}, {"grad_clamp": 1e-4}), 2):
        other = train(i, **change)
        assert any(not torch.equal(w, other.state_dict()[n]) for n, w in ref.state_dict().items())
