"""paperzoo.cost: the price of every full run, and its stored counts."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from paperzoo.cli import main
from paperzoo.cost import (
    PEAK_BF16_FLOPS,
    UTILISATION,
    cached_costs,
    config_digest,
    full_cost,
    gpu_hours,
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
        assert c["gpu_hours"] == pytest.approx(gpu_hours(c["flop"])), name
        assert c["config_sha256"] == config_digest(name), (
            f"{name}: full_costs.json is out of date; run tools/count_costs.py {name}"
        )
        assert sum(p["flop"] for p in c["parts"]) == pytest.approx(c["flop"]), name


@pytest.mark.parametrize("name", ["wrm", "gat", "path-sgd"])
def test_a_recount_gives_the_stored_numbers(name):
    stored = cached_costs()[name]
    now = full_cost(name)
    assert now["flop"] == pytest.approx(stored["flop"], rel=1e-9)
    assert now["assumptions"] == stored["assumptions"]


def test_gpu_hours_at_the_stated_peak_and_utilisation():
    assert (PEAK_BF16_FLOPS, UTILISATION) == (989e12, 0.4)
    assert gpu_hours(989e12 * 0.4 * 3600) == pytest.approx(1.0)


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
        assert "989 TFLOP/s" in cost["assumptions"] and "40%" in cost["assumptions"]
        assert cost["current"] is True, p["name"]
        assert p["cuda_precision"] in ("fp32", "tf32", "bf16")
    # the Perceiver's ImageNet run is the dearest, GG-NN's graphs the cheapest
    by_cost = sorted(papers, key=lambda p: p["full_cost"]["flop"])
    assert by_cost[-1]["name"] == "perceiver" and by_cost[0]["name"] == "ggnn"


def test_a_full_max_steps_run_prints_its_measure_beside_the_price():
    from paperzoo.cli import _priced_line
    from paperzoo.verdict import Result

    priced = cached_costs()["perceiver"]["gpu_hours"]
    r = Result("perceiver", "t", "full", [0], "cuda:0", 1.0, "0", "2", [], [], precision="bf16")
    r.partial = {"estimate_seconds": 7200.0, "max_steps": 2}
    line = _priced_line(r)
    assert line is not None
    assert line.startswith(f"measured: 2 h on cuda:0 (bf16) against the priced {priced:.3g} GPU")
    r.device = "cpu"
    assert "on the CPU, not comparable" in (_priced_line(r) or "")
    r.overrides = {"batch_size": "8"}  # another config than the one priced
    assert _priced_line(r) is None
    r.overrides, r.scale = {}, "quick"
    assert _priced_line(r) is None
