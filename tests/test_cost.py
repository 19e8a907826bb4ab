"""paperzoo.cost: the price of every full run, and its stored counts."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from paperzoo.cli import main
from paperzoo.cost import (
    KERNEL_SECONDS,
    PEAK_BF16_FLOPS,
    UTILISATION,
    Piece,
    Work,
    cached_costs,
    config_digest,
    full_cost,
    gpu_hours,
    step,
)
from paperzoo.experiments import EXPERIMENTS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _uncounted() -> list[str]:
    """Registered papers without a stored count: none of the project's own papers (those with
    their docs/NAME.md) may be among them; another one (a module just added) is reported."""
    missing = [n for n in EXPERIMENTS.names() if n not in cached_costs()]
    documented = [n for n in missing if (DOCS / f"{n}.md").exists()]
    assert not documented, f"no stored full-run cost for {documented}: run tools/count_costs.py"
    if missing:
        warnings.warn(f"no stored full-run cost for {missing} yet", stacklevel=2)
    return missing


def test_every_paper_has_a_stored_cost_counted_at_its_current_config():
    """tools/count_costs.py must be rerun when a full config or plan changes."""
    costs = cached_costs()
    assert set(costs) <= set(EXPERIMENTS.names()), "an entry for a paper that is not registered"
    _uncounted()
    for name, c in costs.items():
        assert c["flop"] > 0 and c["gpu_hours"] > 0, name
        assert c["config_sha256"] == config_digest(name), (
            f"{name}: full_costs.json is out of date; run tools/count_costs.py {name}"
        )
        _check_consistent(name, c)


def _check_consistent(name: str, c: dict) -> None:
    """The price's fields agree: the FLOP time (the earlier price) and the launch time of every
    kernel are each no more than the priced hours, which are the sum of the parts'."""
    assert c["flop_gpu_hours"] == pytest.approx(gpu_hours(c["flop"])), name
    assert c["kernels_per_step"] > 0 and c["steps"] > 0, name
    launch_hours = c["steps"] * c["kernels_per_step"] * KERNEL_SECONDS / 3600
    assert c["gpu_hours"] >= c["flop_gpu_hours"] * (1 - 1e-12), name
    assert c["gpu_hours"] >= launch_hours * (1 - 1e-12), name
    assert c["gpu_hours"] <= c["flop_gpu_hours"] + launch_hours * (1 + 1e-12), name
    assert 0 <= c["launch_bound"] <= 1, name
    assert sum(p["flop"] for p in c["parts"]) == pytest.approx(c["flop"]), name
    assert sum(p["gpu_hours"] for p in c["parts"]) == pytest.approx(c["gpu_hours"]), name
    assert sum(p["kernels"] for p in c["parts"]) == pytest.approx(
        c["kernels_per_step"] * c["steps"]
    ), name
    assert "lower bound" in c["basis"] and f"{KERNEL_SECONDS * 1e6:.0f} us" in c["basis"], name


@pytest.mark.parametrize("name", ["wrm", "gat", "path-sgd"])
def test_a_recount_gives_the_stored_numbers(name):
    stored = cached_costs()[name]
    now = full_cost(name)
    assert now["flop"] == pytest.approx(stored["flop"], rel=1e-9)
    assert now["kernels_per_step"] == pytest.approx(stored["kernels_per_step"], rel=1e-9)
    assert now["gpu_hours"] == pytest.approx(stored["gpu_hours"], rel=1e-9)
    assert now["assumptions"] == stored["assumptions"]
    assert now["basis"] == stored["basis"]


def test_gpu_hours_at_the_stated_peak_utilisation_and_launch_time():
    assert (PEAK_BF16_FLOPS, UTILISATION, KERNEL_SECONDS) == (989e12, 0.4, 5e-6)
    assert gpu_hours(989e12 * 0.4 * 3600) == pytest.approx(1.0)
    assert Work(0.0, 3600 / 5e-6).seconds == pytest.approx(3600.0)


def test_a_training_step_counts_its_kernels_exactly():
    """Linear(4, 3) + ReLU, batch 5, loss = the output's sum: forward addmm and relu, the loss's
    sum; backward the seed gradient (ones_like), ReLU's threshold_backward, the weight gradient
    (mm) and the bias gradient (a sum over the batch): 7 kernels (the transposes are views, the
    input needs no gradient). The batch does not change the count; the FLOP scale with it."""
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    assert step(net, (5, 4)) == Work(2 * 5 * 4 * 3 * 2, 7)
    assert step(net, (50, 4)) == Work(2 * 50 * 4 * 3 * 2, 7)


def test_work_scales_with_repetitions_and_shares_a_batch():
    w = Work(1000.0, 12.0)
    assert w * 3 == 3 * w == Work(3000.0, 36.0)  # e.g. 3 micro-batches or attack iterations
    assert w / 4 == Work(250.0, 3.0)  # one example of a batch of 4
    assert Piece("flop only", 1e12, 10).work == Work(1e12, 0.0)


def test_a_launch_bound_step_is_priced_by_its_kernels_a_flop_bound_one_by_its_flop():
    """A small MLP step holds a few MFLOP (microseconds of nothing at 396 TFLOP/s) and launches
    11 kernels: priced at 11 x 5 us. A 16384-wide layer at batch 16384 holds 1.6e13 FLOP (41 ms)
    and launches 5 kernels (25 us): priced by its FLOP."""
    small = step(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (128, 32))
    assert small.kernels == 11
    piece = Piece("small", small, 1000)
    assert piece.launch_bound
    assert piece.hours == pytest.approx(1000 * 11 * 5e-6 / 3600)
    assert piece.hours > gpu_hours(piece.total) * 100

    with torch.device("meta"):
        wide = nn.Linear(16384, 16384)
    big = step(wide, (16384, 16384))
    assert big.flop == 2 * 2 * 16384**3  # forward and weight gradient; no input gradient
    piece = Piece("big", big, 1000)
    assert not piece.launch_bound
    assert piece.hours == pytest.approx(gpu_hours(piece.total))


def test_path_sgd_training_is_the_hand_count_of_its_mlp():
    """Path-SGD's MLP 784-4000-4000-10 at batch 100: forward 2 * 100 * (784*4000 + 4000*4000
    + 4000*10) FLOP; backward twice that less the first layer's input gradient."""
    c = full_cost("path-sgd")
    macs = 784 * 4000 + 4000 * 4000 + 4000 * 10
    per_step = 2 * 100 * macs * 3 - 2 * 100 * 784 * 4000
    training = [p for p in c["parts"] if not p["what"].endswith("curves")]
    steps = 30 * 50_000 + 4 * 1_000  # the plan: 30 runs of 100 epochs, 4 invariance runs
    assert sum(p["flop"] for p in training) == pytest.approx(per_step * steps)


def test_list_json_prices_every_full_run(capsys):
    assert main(["list", "--json"]) == 0
    papers = json.loads(capsys.readouterr().out)["papers"]
    assert [p["name"] for p in papers] == EXPERIMENTS.names()
    uncounted = _uncounted()
    assert [p["name"] for p in papers if p["full_cost"] is None] == uncounted  # reported: null
    papers = [p for p in papers if p["name"] not in uncounted]
    for p in papers:
        cost = p["full_cost"]
        assert cost["flop"] > 0 and cost["gpu_hours"] > 0, p["name"]
        assert "989 TFLOP/s" in cost["basis"] and "40%" in cost["basis"]
        assert cost["current"] is True, p["name"]
        assert p["cuda_precision"] in ("fp32", "tf32", "bf16")
        _check_consistent(p["name"], {**cost, "parts": cached_costs()[p["name"]]["parts"]})
    # the Perceiver's ImageNet run is the dearest, in FLOP and in hours; GG-NN's graphs hold the
    # fewest FLOP, but their launches price them far above their FLOP time
    by_flop = sorted(papers, key=lambda p: p["full_cost"]["flop"])
    assert by_flop[-1]["name"] == "perceiver" and by_flop[0]["name"] == "ggnn"
    assert max(papers, key=lambda p: p["full_cost"]["gpu_hours"])["name"] == "perceiver"
    cost = {p["name"]: p["full_cost"] for p in papers}
    for name in ("ggnn", "draw", "resnet", "path-sgd", "wrm", "disentanglement"):
        assert cost[name]["launch_bound"] > 0.9, name
        assert cost[name]["gpu_hours"] > 2 * cost[name]["flop_gpu_hours"], name
    assert cost["perceiver"]["launch_bound"] < 0.1


def test_a_full_max_steps_run_prints_its_measure_beside_the_price():
    from paperzoo.cli import _priced_line
    from paperzoo.verdict import Result

    priced = cached_costs()["perceiver"]["gpu_hours"]
    r = Result("perceiver", "t", "full", [0], "cuda:0", 1.0, "0", "2", [], [], precision="bf16")
    r.partial = {"estimate_seconds": 7200.0, "max_steps": 2}
    line = _priced_line(r)
    assert line is not None
    assert line.startswith(f"measured: 2 h on cuda:0 (bf16) against the priced {priced:.3g} GPU")
    assert "a lower bound" in line and "kernels per step" in line
    r.device = "cpu"
    assert "on the CPU, not comparable" in (_priced_line(r) or "")
    r.overrides = {"batch_size": "8"}  # another config than the one priced
    assert _priced_line(r) is None
    r.overrides, r.scale = {}, "quick"
    assert _priced_line(r) is None
