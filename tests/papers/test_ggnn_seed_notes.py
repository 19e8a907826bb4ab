"""GG-NN's notes on seed runs taken together: the solve rate over every seed and fold."""

from __future__ import annotations

from paperzoo.experiments import EXPERIMENTS
from paperzoo.verdict import aggregate
from paperzoo.verdict.result import Result


def _seed_run(seed: int, accs: list[float]) -> Result:
    task = {
        "model": "GG-NN",
        "solved_threshold": 0.99,
        "solved": sum(a >= 0.99 for a in accs),
        "test_acc_per_fold": accs,
    }
    return Result(
        paper="ggnn", title="T", scale="full", seeds=[seed], device="cpu", wall_seconds=1.0,
        paperzoo_version="0.2.0", torch_version="2.13.0",
        data=[{"name": "d", "source": "generated", "n_train": 1, "n_test": 1}],
        claims=[], notes=[f"only seed {seed}"], commit="0123456789ab", source_sha256="f" * 64,
        details={"ggnn": {"babi16": task}},
    )  # fmt: skip


def test_the_aggregate_gives_each_tasks_solved_runs_over_all_seeds_and_folds() -> None:
    runs = [_seed_run(1, [1.0, 0.5, 1.0]), _seed_run(0, [1.0, 1.0, 0.7])]
    agg = aggregate(runs, ["seed-1", "seed-0"], seed_notes=EXPERIMENTS.create("ggnn").seed_notes)
    assert agg.notes[:2] == ["seed 0: only seed 0", "seed 1: only seed 1"]
    # seeds in order (seed 0 solves 2 folds, seed 1 two); the mean over all six runs
    assert agg.notes[2] == (
        "Over seeds 0-1: GG-NN on babi16 solves 4 of 6 fold runs (test accuracy >= 0.99; 67%; "
        "per seed 2, 2), mean 0.867 over all of them"
    )


def test_a_single_seed_or_a_task_one_seed_lacks_adds_no_note() -> None:
    from paperzoo.experiments import EXPERIMENTS

    exp = EXPERIMENTS.create("ggnn")
    one = _seed_run(0, [1.0]).details
    assert exp.seed_notes([one], [0]) == []
    assert exp.seed_notes([one, {"ggnn": {}}], [0, 1]) == []
    old = {"ggnn": {"babi16": {"model": "GG-NN", "test_acc_per_fold": [1.0]}}}  # no solve counts
    assert exp.seed_notes([one, old], [0, 1]) == []
