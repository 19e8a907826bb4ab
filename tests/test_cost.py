"""paperzoo.cost: the price of every full run, and its stored counts."""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from paperzoo.cli import main
from paperzoo.cost import (
    PRICE_PARTS,
    cached_costs,
    config_digest,
    cost_file,
    full_cost,
    gpu_check_limit,
    hook_seconds,
    paper_cost,
    price_parts,
)
from paperzoo.experiments import EXPERIMENTS, get_experiment
from paperzoo.utils.work import (
    BOUNDS,
    FOREACH_TENSORS,
    KERNEL_SECONDS,
    OPTIMIZER_FOREACH_OPS,
    PEAK_BF16_FLOPS,
    TRAINER_STEP_OPS,
    UTILISATION,
    Piece,
    Work,
    gpu_hours,
    host_seconds,
    step,
    step_fixed_seconds,
    update_kernels,
)

ROOT = Path(__file__).resolve().parents[1]


def test_stored_costs_are_counted_at_the_papers_current_config():
    """A stored count (full_cost.json beside the paper, built in or a plugin's) must be recounted
    (tools/count_costs.py) when the paper's full config or plan changes. paperzoo's own papers
    each have one; a paper without one is priced by counting it when listed (``paper_cost``)."""
    costs = cached_costs()
    own = [
        n for n in EXPERIMENTS.names() if type(get_experiment(n)).__module__.startswith("paperzoo.")
    ]
    missing = [n for n in own if n not in costs]
    assert not missing, f"no stored full-run cost for {missing}: run tools/count_costs.py"
    for name, c in costs.items():
        assert c["flop"] > 0 and c["gpu_hours"] > 0, name
        assert c["config_sha256"] == config_digest(name), (
            f"{name}: {cost_file(name)} is out of date; run tools/count_costs.py {name}"
        )
        _check_consistent(name, c)


def _check_consistent(name: str, c: dict) -> None:
    """The price's fields agree: the FLOP time (the earlier price) and the launch time of every
    kernel are each no more than the priced hours, which are the sum of the parts' and no more
    than FLOP, host and loader time added up; the bound named is the one most hours rest on."""
    assert c["flop_gpu_hours"] == pytest.approx(gpu_hours(c["flop"])), name
    assert c["kernels_per_step"] > 0 and c["steps"] > 0, name
    launch_hours = c["steps"] * c["kernels_per_step"] * KERNEL_SECONDS / 3600
    host_hours = c["steps"] * (c["host_seconds_per_step"] + c["fixed_seconds_per_step"]) / 3600
    loader_hours = sum(p["loader_seconds"] for p in c["parts"]) / 3600
    assert c["gpu_hours"] >= c["before_gpu_hours"] * (1 - 1e-12), name
    assert c["before_gpu_hours"] >= c["flop_gpu_hours"] * (1 - 1e-12), name
    assert c["before_gpu_hours"] >= launch_hours * (1 - 1e-12), name
    assert c["gpu_hours"] >= launch_hours + host_hours * (c["bound"] == "host") - 1e-9, name
    top = c["flop_gpu_hours"] + launch_hours + host_hours + loader_hours
    assert c["gpu_hours"] <= top * (1 + 1e-12), name
    assert set(c["bounds"]) == set(BOUNDS) and sum(c["bounds"].values()) == pytest.approx(1.0)
    assert c["bound"] == max(BOUNDS, key=lambda b: c["bounds"][b]), name
    assert c["launch_bound"] == c["bounds"]["launches"], name
    assert sum(p["flop"] for p in c["parts"]) == pytest.approx(c["flop"]), name
    assert sum(p["gpu_hours"] for p in c["parts"]) == pytest.approx(c["gpu_hours"]), name
    assert sum(p["kernels"] for p in c["parts"]) == pytest.approx(
        c["kernels_per_step"] * c["steps"]
    ), name
    assert sum(p["host_seconds"] for p in c["parts"]) == pytest.approx(
        c["host_seconds_per_step"] * c["steps"]
    ), name
    assert sum(p["fixed_seconds"] for p in c["parts"]) == pytest.approx(
        c["fixed_seconds_per_step"] * c["steps"]
    ), name
    _check_price_parts(name, c)
    assert all(p["bound"] in BOUNDS for p in c["parts"]), name
    assert "lower bound" in c["basis"] and f"{KERNEL_SECONDS * 1e6:.0f} us" in c["basis"], name
    assert c["basis"].startswith("Bound by "), name


def _check_price_parts(name: str, c: dict) -> None:
    """The price names its parts, the fixed per-step part among them, and they add up to it;
    every training step pays the fixed part (the Trainer's work and the optimiser's update)."""
    parts = c["price_parts"]
    assert tuple(parts) == PRICE_PARTS and "fixed_per_step" in parts, name
    assert all(v >= 0 for v in parts.values()), name
    assert sum(parts.values()) == pytest.approx(c["gpu_hours"], rel=1e-12), name
    assert c["fixed_seconds_per_step"] > 0, name
    # at least the Trainer's work on every planned step of the counted models
    assert c["kernel_seconds"] == KERNEL_SECONDS, name
    assert "fixed" in c["basis"], name


def test_every_price_names_its_parts_and_they_add_up_to_it():
    costs = cached_costs()
    for name, c in costs.items():
        _check_price_parts(name, c)
        if c["bound"] in ("launches", "host"):  # a host-bound price pays its fixed part
            assert c["price_parts"]["fixed_per_step"] > 0, name


def test_a_training_step_pays_a_fixed_part_once():
    """A training step's fixed part: the Trainer's work, TRAINER_STEP_OPS operations' worth,
    and the optimiser's foreach update, OPTIMIZER_FOREACH_OPS launches per FOREACH_TENSORS
    parameter tensors, each at KERNEL_SECONDS; once per step however many passes it makes, and
    none in an example's share of a pass (an attacked example)."""
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))  # 4 parameter tensors
    w = step(net, (5, 4))
    assert w.params == 4 and update_kernels(4) == OPTIMIZER_FOREACH_OPS
    assert update_kernels(FOREACH_TENSORS + 1) == 2 * OPTIMIZER_FOREACH_OPS
    assert w.fixed == step_fixed_seconds(4) == (TRAINER_STEP_OPS + 7) * KERNEL_SECONDS
    assert w.host_seconds == pytest.approx(w.kernels * KERNEL_SECONDS + w.fixed)
    assert (w * 3).fixed == w.fixed and (w * 3).kernels == 3 * w.kernels  # 3 passes, 1 update
    assert (w / 5).fixed == 0.0 and (w / 5).params == 0.0
    parts = price_parts([Piece("steps", w, 3600)])
    assert parts["fixed_per_step"] == pytest.approx(w.fixed)  # hours: 3600 steps
    assert parts["launches"] == pytest.approx(w.kernels * KERNEL_SECONDS)
    assert sum(parts.values()) == pytest.approx(Piece("steps", w, 3600).hours)


@pytest.mark.parametrize("name", ["wrm", "gat", "path-sgd"])
def test_a_recount_gives_the_stored_numbers(name):
    stored = cached_costs()[name]
    now = full_cost(name)
    assert now["flop"] == pytest.approx(stored["flop"], rel=1e-9)
    assert now["kernels_per_step"] == pytest.approx(stored["kernels_per_step"], rel=1e-9)
    assert now["gpu_hours"] == pytest.approx(stored["gpu_hours"], rel=1e-9)
    assert now["assumptions"] == stored["assumptions"]
    assert now["basis"] == stored["basis"] and now["bound"] == stored["bound"]
    assert now["host_seconds_per_step"] == stored["host_seconds_per_step"] == 0.0  # no hooks
    assert now["price_parts"] == pytest.approx(stored["price_parts"], rel=1e-9)


def test_gpu_hours_at_the_stated_peak_utilisation_and_launch_time():
    assert (PEAK_BF16_FLOPS, UTILISATION, KERNEL_SECONDS) == (989e12, 0.4, 8e-6)
    assert gpu_hours(989e12 * 0.4 * 3600) == pytest.approx(1.0)
    assert Work(0.0, 3600 / 8e-6).seconds == pytest.approx(3600.0)


def test_a_training_step_counts_its_kernels_exactly():
    """Linear(4, 3) + ReLU, batch 5, loss = the output's sum: forward addmm and relu, the loss's
    sum; backward the seed gradient (ones_like), ReLU's threshold_backward, the weight gradient
    (mm) and the bias gradient (a sum over the batch): 7 kernels (the transposes are views, the
    input needs no gradient). The batch does not change the count; the FLOP scale with it."""
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    fixed = step_fixed_seconds(2)  # the update of 2 parameter tensors
    assert step(net, (5, 4)) == Work(2 * 5 * 4 * 3 * 2, 7, modules=3, params=2, fixed=fixed)
    assert step(net, (50, 4)) == Work(2 * 50 * 4 * 3 * 2, 7, modules=3, params=2, fixed=fixed)


def test_work_scales_with_repetitions_and_shares_a_batch():
    w = Work(1000.0, 12.0, modules=8.0, host=2e-3, loader=4e-3)
    assert w * 3 == 3 * w == Work(3000.0, 36.0, 24.0, 6e-3, 12e-3)  # e.g. 3 micro-batches
    assert w / 4 == Work(250.0, 3.0, 2.0, 5e-4, 1e-3)  # one example of a batch of 4
    assert Piece("flop only", 1e12, 10).work == Work(1e12, 0.0)
    assert w.with_host(host=1e-3, loader=1e-3) == Work(1000.0, 12.0, 8.0, 3e-3, 5e-3)


def test_a_step_is_priced_at_the_longest_of_flop_host_and_loader_time():
    """Host work runs in the training process after its launches (added to them); the loader's
    workers run beside it (the longer counts); the FLOP time beside both."""
    flop_1ms = PEAK_BF16_FLOPS * UTILISATION * 1e-3
    assert Work(flop_1ms, 100).seconds == pytest.approx(1e-3)  # 0.5 ms of launches
    assert Work(flop_1ms, 100).bound == "FLOP"
    assert Work(0.0, 250).bound == "launches" and Work(0.0, 250).seconds == pytest.approx(2e-3)
    hosted = Work(flop_1ms, 100, host=1.5e-3)  # 0.8 ms launches + 1.5 ms host work
    assert hosted.seconds == pytest.approx(2.3e-3) and hosted.bound == "host"
    mostly_launches = Work(0.0, 250, host=1e-3)  # 2 ms of launches, then 1 ms of host work
    assert mostly_launches.seconds == pytest.approx(3e-3)
    fixed = Work(0.0, 50, host=1e-4, fixed=5e-4)  # 0.4 ms launches, 0.6 ms fixed and host work
    assert fixed.seconds == pytest.approx(1e-3) and fixed.bound == "host"
    assert mostly_launches.bound == "launches"
    fed = Work(flop_1ms, 100, host=1e-4, loader=5e-3)
    assert fed.seconds == pytest.approx(5e-3) and fed.bound == "loader"
    assert Piece("fed", fed, 3600).hours == pytest.approx(5e-3)


def test_host_work_is_timed_on_the_cpu():
    assert host_seconds(lambda: sum(range(10_000))) > 0
    with pytest.raises(ValueError, match="repeats must be at least 1, got 0"):
        host_seconds(lambda: None, repeats=0)
    # a hooked module call costs the host microseconds, not nothing and not milliseconds
    assert 1e-8 < hook_seconds() < 1e-3


def test_a_launch_bound_step_is_priced_by_its_kernels_a_flop_bound_one_by_its_flop():
    """A small MLP step holds a few MFLOP (microseconds of nothing at 396 TFLOP/s) and launches
    11 kernels: priced at 11 x 8 us and its fixed part. A 16384-wide layer at batch 16384 holds
    1.6e13 FLOP (41 ms) and launches 5 kernels (40 us): priced by its FLOP."""
    small = step(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (128, 32))
    assert small.kernels == 11
    piece = Piece("small", small, 1000)
    assert piece.bound == "host"  # its fixed part (the Trainer, the update) outweighs 11 launches
    assert piece.hours == pytest.approx(1000 * (11 * 8e-6 + step_fixed_seconds(4)) / 3600)
    assert piece.hours > gpu_hours(piece.total) * 100

    with torch.device("meta"):
        wide = nn.Linear(16384, 16384)
    big = step(wide, (16384, 16384))
    assert big.flop == 2 * 2 * 16384**3  # forward and weight gradient; no input gradient
    piece = Piece("big", big, 1000)
    assert piece.bound == "FLOP"
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
    stored = cached_costs()
    for p in papers:
        cost = p["full_cost"]
        assert cost is not None and cost["stored"] is (p["name"] in stored), p["name"]
        assert cost["flop"] > 0 and cost["gpu_hours"] > 0, p["name"]
        assert "989 TFLOP/s" in cost["basis"] and "40%" in cost["basis"]
        assert p["cuda_precision"] in ("fp32", "tf32", "bf16")
        parts = stored[p["name"]]["parts"] if cost["stored"] else full_cost(p["name"])["parts"]
        _check_consistent(p["name"], {**cost, "parts": parts})
    papers = [p for p in papers if p["name"] in stored]
    # the Perceiver's ImageNet run holds the most FLOP, and with the disentanglement study's
    # 236 M host-bound steps it is one of the two dearest runs; GG-NN's graphs hold the fewest
    # FLOP, but their launches price them far above their FLOP time; Path-SGD's MLP steps and
    # CoordConv's small nets launch so few kernels that the fixed part of a step decides them
    by_flop = sorted(papers, key=lambda p: p["full_cost"]["flop"])
    assert by_flop[-1]["name"] == "perceiver" and by_flop[0]["name"] == "ggnn"
    by_hours = sorted(papers, key=lambda p: p["full_cost"]["gpu_hours"])
    assert {p["name"] for p in by_hours[-2:]} == {"perceiver", "disentanglement"}
    cost = {p["name"]: p["full_cost"] for p in papers}
    for name in ("ggnn", "draw", "resnet", "path-sgd", "wrm", "coordconv"):
        assert cost[name]["bound"] in ("launches", "host"), name
        assert cost[name]["gpu_hours"] > 2 * cost[name]["flop_gpu_hours"], name
    for name in ("ggnn", "draw", "resnet"):
        assert cost[name]["bound"] == "launches" and cost[name]["launch_bound"] > 0.9, name
    for name in ("path-sgd", "coordconv"):
        parts = cost[name]["price_parts"]
        assert parts["fixed_per_step"] > parts["launches"], name
    assert cost["perceiver"]["bound"] == "FLOP"


def test_list_json_prices_include_host_time_with_its_basis(capsys):
    """The WReN steps draw their puzzles on the CPU: the study is bound by host work, priced
    well above FLOP and launches alone; the Perceiver study's ResNet-50 baselines wait for the
    loader's JPEG decoding; the bf16 papers pay the precision hooks per module call."""
    assert main(["list", "--json"]) == 0
    cost = {p["name"]: p["full_cost"] for p in json.loads(capsys.readouterr().out)["papers"]}
    study = cost["disentanglement"]
    assert study["bound"] == "host" and study["basis"].startswith("Bound by its host work")
    assert study["host_seconds_per_step"] > 0
    assert study["gpu_hours"] > 1.5 * study["before_gpu_hours"]
    parts = {p["what"]: p for p in cached_costs()["perceiver"]["parts"]}
    assert parts["resnet50_raster training"]["bound"] == "loader"
    assert parts["perceiver_raster training"]["bound"] == "FLOP"
    assert cost["perceiver"]["bounds"]["loader"] > 0.05
    assert cost["perceiver"]["gpu_hours"] > cost["perceiver"]["before_gpu_hours"]
    for name, c in cost.items():
        bf16 = EXPERIMENTS.create(name).cuda_precision == "bf16"
        assert (c["hook_seconds"] > 0) is bf16, name
        if bf16:
            assert (
                c["host_seconds_per_step"] > 0
                and f"{c['hook_seconds'] * 1e6:.1f} us" in (c["basis"])
            ), name


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_cost_sits_above_the_experiments_it_reads():
    """No experiment and not the registry imports paperzoo.cost (or the catalogue above it):
    their cost counters build on paperzoo.utils.work, which imports no experiment."""
    src = ROOT / "src" / "paperzoo"
    below = [*sorted((src / "experiments").rglob("*.py")), src / "registry.py"]
    below += [src / "utils" / "work.py", src / "utils" / "flops.py"]
    for path in below:
        up = {n for n in _imports(path) if n.startswith(("paperzoo.cost", "paperzoo.catalogue"))}
        assert not up, f"{path.relative_to(src)} imports {sorted(up)}"
    assert not any(
        n.startswith("paperzoo.experiments") for n in _imports(src / "utils" / "work.py")
    )


@pytest.fixture
def gat_copy():  # noqa: ANN201
    """papers/gat/experiment.py loaded again as a module whose class is named ``gat-twin`` and
    registered under that name (removed from the registry and sys.modules afterwards)."""
    import importlib.util

    import paperzoo.papers.gat.experiment as gat

    source = Path(gat.__file__).read_text()
    source = source.replace('\n    name = "gat"\n', '\n    name = "gat-twin"\n')
    name = "paperzoo.experiments._gat_twin"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102
        EXPERIMENTS.register("gat-twin")(module.GATExperiment)
        yield module
    finally:
        EXPERIMENTS._factories.pop("gat-twin", None)
        sys.modules.pop(name, None)


def _gpu_check_plan() -> list[tuple[str, int, bool, str]]:
    """tools/gpu_check_plan.py's rows, made in this process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gpu_check_plan", ROOT / "tools" / "gpu_check_plan.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.plan()


def test_a_copied_paper_is_listed_priced_and_in_the_gpu_check(gat_copy):
    """A paper made by copying GAT's module under a new name: listed, priced by counting it (no
    stored entry; the same work as GAT's), and in gpu-check's list with the limit it states; a
    paper that states none gets the default limit."""
    from paperzoo.catalogue import list_catalogue
    from paperzoo.experiments.base import Experiment

    papers = {p["name"]: p for p in list_catalogue()["papers"]}
    copy, gat = papers["gat-twin"]["full_cost"], papers["gat"]["full_cost"]
    assert copy["stored"] is False and gat["stored"] is True
    for key in ("flop", "kernels_per_step", "gpu_hours", "steps"):
        assert copy[key] == pytest.approx(gat[key], rel=1e-9), key
    assert copy["bound"] == gat["bound"] and copy["basis"] == gat["basis"]
    assert paper_cost("gat-twin") is not None

    plan = {name: (limit, torchrun) for name, limit, torchrun, _ in _gpu_check_plan()}
    assert sorted(plan) == EXPERIMENTS.names()
    assert plan["gat"] == (gpu_check_limit("gat")["seconds"], False)
    # no stored count: its limit is its stated figures alone (its steps are not counted)
    stated = EXPERIMENTS.create("gat").gpu_check
    assert plan["gat-twin"] == (math.ceil(stated.plumbing_s + 1.5 * stated.setup_s), False)
    assert "no stored count" in gpu_check_limit("gat-twin")["basis"]
    cls = type(EXPERIMENTS.create("gat-twin"))
    del cls.gpu_check  # a paper that states nothing: the default figures
    default = Experiment.gpu_check
    plan = {name: limit for name, limit, _, _ in _gpu_check_plan()}
    assert (default.plumbing_s, default.setup_s) == (20, 15)
    assert plan["gat-twin"] == math.ceil(20 + 1.5 * 15)


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


def test_a_stored_count_of_another_paper_or_unreadable_is_not_used(monkeypatch, tmp_path, caplog):
    """A full_cost.json that is not this paper's count (copied with a package renamed, or
    corrupt) is not taken for the paper's price: one warning line, and the paper is counted."""
    import paperzoo.cost as cost

    path = tmp_path / "full_cost.json"
    monkeypatch.setattr(cost, "cost_file", lambda name: path)
    path.write_text(json.dumps({"schema": cost.COST_SCHEMA, "paper": "gat", "cost": {"flop": 1}}))
    assert cost.stored_cost("gat") == {"flop": 1}
    with caplog.at_level("WARNING", logger="paperzoo.cost"):
        assert cost.stored_cost("gat-copy") is None
        path.write_text("{ not json")
        assert cost.stored_cost("gat") is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "not a paperzoo.full_cost/1 count of paper 'gat-copy'" in lines[0]
    assert "unreadable" in lines[1] and all(str(path) in line for line in lines)


def test_store_cost_writes_the_count_beside_the_paper_and_reads_it_back(monkeypatch, tmp_path):
    import paperzoo.cost as cost

    path = tmp_path / "pkg" / "full_cost.json"
    path.parent.mkdir()
    monkeypatch.setattr(cost, "cost_file", lambda name: path)
    monkeypatch.setattr(cost, "full_cost", lambda name: {"flop": 2.0, "gpu_hours": 1.0})
    monkeypatch.setattr(cost, "config_digest", lambda name: "d" * 64)
    stored = cost.store_cost("my-paper")
    assert stored == {"flop": 2.0, "gpu_hours": 1.0, "config_sha256": "d" * 64}
    doc = json.loads(path.read_text())
    assert doc == {"schema": cost.COST_SCHEMA, "paper": "my-paper", "cost": stored}
    assert cost.stored_cost("my-paper") == stored
    assert cost.paper_cost("my-paper") == stored | {"stored": True}
    monkeypatch.setattr(cost, "config_digest", lambda name: "e" * 64)  # the config changed
    assert cost.paper_cost("my-paper") == {"flop": 2.0, "gpu_hours": 1.0, "stored": False}


def test_the_ten_store_their_counts_in_their_own_folders():
    for name in EXPERIMENTS.names():
        path = cost_file(name)
        if type(get_experiment(name)).__module__.startswith("paperzoo.papers."):
            assert path is not None and path.parent.parent.name == "papers", name
            assert path.is_file(), f"{path}: run tools/count_costs.py {name}"
