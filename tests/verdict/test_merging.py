"""``paperzoo.experiments.merging.merge_dirs``: seed runs and shards merge through one function with one set
of checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paperzoo.experiments.base import ClaimSpec, Outcome
from paperzoo.experiments.judging import judge
from paperzoo.experiments.merging import merge_dirs
from paperzoo.report import write_report
from paperzoo.verdict import ClaimResult, Result, aggregate, load_result

_SPECS = (ClaimSpec("f", "a finding", 1.0, "> 0"),)


@pytest.fixture(autouse=True)
def _declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """coordconv declares the one claim the runs measure, and merges shards by taking each
    shard's value of it (the mean)."""
    from paperzoo.experiments import EXPERIMENTS

    def merge(self, results, ctx):  # noqa: ANN001, ANN202
        values = [r["claims"][0]["per_seed"][0] for r in results]
        return Outcome(measured={"f": sum(values) / len(values)}, notes=["merged"])

    cls = type(EXPERIMENTS.create("coordconv"))
    monkeypatch.setattr(cls, "claims", _SPECS)
    monkeypatch.setattr(cls, "merge", merge)


def _run(seed: int, value: float = 1.0, **kw) -> Result:
    return Result(
        paper="coordconv", title="T", scale=kw.pop("scale", "quick"), seeds=[seed],
        device="cpu", wall_seconds=1.0, paperzoo_version="0.2.0", torch_version="2.13.0",
        data=[{"name": "d", "source": "generated", "n_train": 1, "n_test": 1}],
        claims=[ClaimResult("f", "a finding", 1.0, [value], "> 0")],
        **({"commit": "0123456789ab", "source_sha256": "f" * 64, "threads": 1} | kw),
    )  # fmt: skip


def _write(tmp_path: Path, name: str, run: Result) -> Path:
    write_report(run, tmp_path / name, judge(run, tmp_path / name))
    return tmp_path / name


def test_seed_runs_merge_into_the_aggregate_and_an_aggregate_contributes_its_seed_runs(
    tmp_path: Path,
) -> None:
    dirs = [_write(tmp_path, f"seed-{s}", _run(s, 1.0 + s)) for s in (2, 0, 3, 1)]
    merged = merge_dirs(dirs, tmp_path / "agg", command="paperzoo merge ...")
    runs = [load_result(d) for d in dirs]
    assert merged.to_dict() | {"command": None, "seed_dirs": None, "figures": None} == (
        aggregate(runs).to_dict() | {"command": None, "seed_dirs": None, "figures": None}
    )  # fmt: skip
    assert merged.seeds == [0, 1, 2, 3] and merged.command == "paperzoo merge ..."
    assert merged.seed_dirs == ["../seed-0", "../seed-1", "../seed-2", "../seed-3"]
    assert load_result(tmp_path / "agg").to_dict() == merged.to_dict()
    again = merge_dirs([tmp_path / "agg"], tmp_path / "again")
    assert again.claims[0].per_seed == merged.claims[0].per_seed
    # the aggregate is checked against its seed runs: they agree, and it counts on its own
    assert judge(merged, run_dir=tmp_path / "agg").reason is None


def test_shards_merge_through_the_experiment_and_keep_what_they_ran(tmp_path: Path) -> None:
    shard = {"config": {"cls_steps": 3}, "commit": "abcdef123456", "setting_note": "subset"}
    dirs = [
        _write(tmp_path, f"s{k}", _run(0, 1.0 + k, shard=(k, 2), marks=["an old reason"], **shard))
        for k in (0, 1)
    ]
    merged = merge_dirs(dirs, tmp_path / "m", command="paperzoo merge s0 s1")
    assert merged.shards == {"n": 2, "merged": [0, 1]} and merged.shard is None
    assert merged.claims[0].per_seed == [1.5] and merged.notes == ["merged"]
    assert (merged.commit, merged.source_sha256) == ("abcdef123456", "f" * 64)
    assert merged.config == {"cls_steps": 3} and merged.setting_note == "subset"
    assert merged.marks == ["an old reason"] and merged.command == "paperzoo merge s0 s1"
    assert merged.wall_seconds == 2.0
    d = json.loads((tmp_path / "m" / "results.json").read_text())
    assert d["not_counted"] == "not the paper's setting: subset"
    one = merge_dirs(dirs[:1], tmp_path / "one")
    assert one.shards == {"n": 2, "merged": [0]} and one.shards_missing == [1]


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([_run(0, shard=(0, 2)), _run(1, shard=(1, 2))], "must come from one seed"),
        ([_run(0, shard=(0, 2)), _run(0, shard=(0, 2))], "one grid"),
        ([_run(0, shard=(0, 2)), _run(0, shard=(1, 3))], "one grid"),
        ([_run(0, shard=(0, 2)), _run(0)], "cannot merge shards of a grid with whole runs"),
        ([_run(0), _run(1, scale="full")], "one paper and scale"),
        ([_run(0), _run(0)], "repeat a seed"),
        ([_run(0, shard=(0, 2)), _run(0, shard=(1, 2), commit="fedcba654321")], "one commit"),
        ([_run(0), _run(1, commit="fedcba654321")], "one commit"),
        (
            [_run(0, shard=(0, 2)), _run(0, shard=(1, 2), overrides={"cls_steps": "2"})],
            "shards to merge must share one overrides",
        ),
        (
            [_run(0), _run(1, partial={"max_steps": 2, "estimate_seconds": 1.0})],
            "seed runs must share one --max-steps, got 2, none",
        ),
        (
            [
                _run(0, shard=(0, 2)),
                _run(0, shard=(1, 2), partial={"max_steps": 2, "estimate_seconds": 1.0}),
            ],
            "shards to merge must share one --max-steps, got 2, none",
        ),
    ],
)
def test_runs_that_do_not_belong_together_do_not_merge(tmp_path, runs, message) -> None:
    dirs = [_write(tmp_path, f"r{i}", r) for i, r in enumerate(runs)]
    with pytest.raises(ValueError, match=message):
        merge_dirs(dirs, tmp_path / "out")
    assert not (tmp_path / "out").exists()
