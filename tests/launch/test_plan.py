"""The cells of a launch and their resources: the cell's command is the seed process's command of
``reproduce --seeds``; GPUs, CPUs, memory and time come from the paper's config and price."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperzoo.cost import cached_costs
from paperzoo.experiments.request import RunRequest
from paperzoo.launch import LaunchError
from paperzoo.launch.launching import plan_papers
from paperzoo.launch.plan import (
    MARGIN,
    MAX_TIME_S,
    MIN_TIME_S,
    SLACK_S,
    resources,
    time_limit,
)


def _request(*names: str, **values) -> RunRequest:
    return RunRequest(list(names), **({"seeds": [0, 1], "out": Path("/tmp/x")} | values))


def test_a_cell_runs_the_command_of_a_seed_process_of_reproduce_seeds(tmp_path):
    request = _request("gat", scale="smoke", overrides=("steps=3",), quiet=True, out=tmp_path)
    plan = plan_papers(request, executor="slurm", nodes=1, gpus_per_node=None, shards=None)["gat"]
    cells = plan.cells([0, 1], tmp_path)
    assert [c.id for c in cells] == ["gat/seed-0", "gat/seed-1"]
    for seed, cell in zip((0, 1), cells, strict=True):
        assert list(cell.argv) == request.child_argv("gat", seed, tmp_path / f"seed-{seed}", 1)
        assert cell.out == f"seed-{seed}"


def test_several_papers_each_get_their_own_folder_and_shards_split_a_grid(tmp_path):
    request = _request("gat", "resnet", scale="smoke", out=tmp_path)
    plans = plan_papers(request, executor="slurm", nodes=1, gpus_per_node=None, shards=None)
    assert {p: plans[p].out for p in plans} == {"gat": "gat", "resnet": "resnet"}
    grid = plan_papers(
        _request("resnet", scale="smoke", out=tmp_path),
        executor="slurm",
        nodes=1,
        gpus_per_node=None,
        shards=3,
    )["resnet"]
    cells = grid.cells([5], tmp_path)
    assert [c.id for c in cells] == [f"resnet/seed-5/shard-{k}" for k in range(3)]
    assert cells[2].argv[-2:] == ("--shard", "2/3")
    assert cells[2].out == "seed-5/shard-2"
    with pytest.raises(LaunchError, match="gat trains no grid"):
        plan_papers(
            _request("gat", scale="smoke"), executor="slurm", nodes=1, gpus_per_node=None, shards=2
        )


def test_smoke_and_quick_cells_are_one_cpu_jobs_with_the_scales_budget():
    smoke = resources("gat", _request("gat", scale="smoke"), nodes=1, gpus_per_node=None, shards=1)
    assert (smoke.gpus_per_node, smoke.cpus_per_task, smoke.threads) == (0, 1, 1)
    assert smoke.time_s == MIN_TIME_S  # 3 x 60 s + 10 minutes is under the floor
    quick = resources("gat", _request("gat"), nodes=1, gpus_per_node=None, shards=1)
    assert quick.estimate_s == 300.0 and quick.time_s == MARGIN * 300 + SLACK_S


def test_a_full_cell_asks_for_a_gpu_and_the_priced_hours_with_the_margin():
    full = resources("draw", _request("draw", scale="full"), nodes=1, gpus_per_node=None, shards=1)
    hours = cached_costs()["draw"]["gpu_hours"]
    assert full.gpus_per_node == 1 and full.estimate_s == pytest.approx(hours * 3600)
    assert full.time_s == time_limit(hours * 3600) == int(MARGIN * hours * 3600 + SLACK_S) + 1
    on_cpu = resources(
        "draw", _request("draw", scale="full", device="cpu"), nodes=1, gpus_per_node=None, shards=1
    )
    assert on_cpu.gpus_per_node == 0 and on_cpu.estimate_s is None
    assert on_cpu.time_s == MAX_TIME_S  # no estimate: the cap; the cell is requeued past it


def test_the_perceivers_loader_workers_get_cpus_and_the_long_runs_are_capped():
    r = resources(
        "perceiver", _request("perceiver", scale="full"), nodes=2, gpus_per_node=4, shards=1
    )
    assert r.torchrun and r.gpus == 8
    assert r.cpus_per_task == (2 + 16) * 4  # 2 per rank + its 16 DataLoader workers, 4 ranks
    assert r.time_s == MAX_TIME_S  # 215 GPU-hours / 8 GPUs x 3 is over a day


def test_several_gpus_only_for_the_papers_under_torchrun():
    with pytest.raises(LaunchError, match="gat trains each model on one GPU"):
        resources("gat", _request("gat", scale="full"), nodes=2, gpus_per_node=1, shards=1)
    with pytest.raises(LaunchError, match="--device cpu"):
        resources("resnet", _request("resnet", device="cpu"), nodes=1, gpus_per_node=2, shards=1)
