"""``--max-steps N``: every loop stops after N steps, the run estimates the whole run's time, and
its verdicts are partial.

The engine part (``paperzoo.engine.budget`` and the ``Trainer``'s cap) is tested directly; the
command line on a smoke run; and every paper's ``--scale full`` config runs for a step or two on
small files in the real formats (tests/data fixture writers), so the full-scale code paths run on
every commit (about 1.5 minutes at one thread).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

from paperzoo.cli import main
from paperzoo.engine import TrainConfig, Trainer, budget
from paperzoo.summary import render_summary_markdown
from paperzoo.verdict import aggregate, load_result

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _keep_threads():
    """``main(... --threads 1)`` sets torch's thread count for the process: restore it."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _trainer(steps: int, out: Path | None = None, loss_fn=None, **kw) -> Trainer:
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def default_loss(m: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return m(batch[0]).pow(2).mean()

    cfg = TrainConfig(steps=steps, batch_size=4, progress=False, log_every=1, **kw)
    return Trainer(model, opt, loss_fn or default_loss, config=cfg, out_dir=out)


DATA = (torch.randn(32, 2),)


class VirtualClock:
    """The budget's clock, moved only by ``sleep``: the timings a test asserts are exact, not
    the host's (a loaded CI machine's milliseconds of real work count as zero)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    fake = VirtualClock()
    monkeypatch.setattr(budget, "time", fake)
    return fake


# -- the engine -------------------------------------------------------------------------------


def test_without_a_budget_loops_run_as_planned():
    assert list(budget.loop(5, "x")) == list(range(5))
    assert budget.items(1000, 10) == 1000
    hist = _trainer(7).fit(DATA)
    assert hist.records[-1]["step"] == 7


def test_the_trainer_stops_at_the_cap_and_records_planned_steps(tmp_path):
    seen: list[float] = []
    t = _trainer(100, tmp_path, eval_every=10)
    t.eval_fn = lambda m: {"acc": 1.0}
    t.lr_schedule = lambda step: seen.append(step) or 1.0
    with budget.capped(budget.StepBudget(3)) as b:
        t.fit(DATA)
    assert t.step == 3 and t.finished and seen == [0, 1, 2]
    (loop,) = b.root.children
    assert (loop.desc, loop.kind, loop.planned, loop.run, loop.calls) == (
        "train",
        "steps",
        100,
        3,
        1,
    )
    per = loop.per_iteration()
    assert per is not None and per > 0
    assert loop.steady_iterations == 2  # the first step (warm-up) is timed apart
    assert (loop.warm_calls, loop.points, loop.planned_points) == (1, 2, 100)  # log_every 1
    assert loop.extra_seconds >= 0  # nine evaluations on the way (every 10 of 100 steps)
    sync = loop.point_cost() * 100
    expected = loop.warmup_seconds + per * 99 + sync + loop.extra_seconds
    assert loop.estimate() == pytest.approx(expected)
    # A rerun under the same cap finds the capped run finished; without a cap it would train on.
    t2 = _trainer(100, tmp_path)
    with budget.capped(budget.StepBudget(3)):
        t2.fit(DATA, resume=True)
    assert t2.finished and t2.step == 3


def test_loops_inside_a_step_are_part_of_the_step_and_not_capped():
    inner: list[int] = []

    def loss(m: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        inner.append(len(list(budget.loop(5, "attack"))))  # e.g. PGD inside adversarial training
        return m(batch[0]).pow(2).mean()

    with budget.capped(budget.StepBudget(2)) as b:
        _trainer(10, loss_fn=loss).fit(DATA)
        capped_outside = len(list(budget.loop(5, "attack")))
        assert budget.items(1000, 10) == 20
    assert inner == [5, 5] and capped_outside == 2
    assert [c.desc for c in b.root.children] == ["train", "attack"]


def test_repeats_scale_their_capped_children():
    with budget.capped(budget.StepBudget(2)) as b:
        for _ in budget.loop(10, "models", kind="repeat"):
            for _ in budget.loop(100, "steps"):  # the same loop per model: one record
                pass
    (models,) = b.root.children
    (steps,) = models.children
    assert (models.planned, models.run) == (10, 2)
    assert (steps.planned, steps.run, steps.calls) == (200, 4, 2)
    assert steps.per_iteration() is not None
    # each model's own time plus what its steps add to their estimate; the first model as it
    # ran, the other nine at the second's cost
    first, second = models.costs
    assert first is not None and second is not None
    assert sum(models.costs) == pytest.approx(
        models.seconds - steps.seconds + steps.estimate(), abs=1e-3
    )
    assert models.estimate() == pytest.approx(first + 9 * second)
    summary = b.summary(wall_seconds=models.seconds + 1.0)
    assert summary["max_steps"] == 2 and summary["loops"][0]["planned"] == 10
    assert summary["estimate_seconds"] == pytest.approx(1.0 + models.estimate(), abs=0.1)


def test_an_empty_loop_does_not_make_the_estimate_unknown():
    with budget.capped(budget.StepBudget(2)) as b:
        assert list(budget.loop(0, "zero attack steps")) == []
        list(budget.loop(5, "steps"))
    assert b.summary(wall_seconds=1.0)["estimate_seconds"] is not None


def test_a_loop_left_with_break_counts_the_iteration_that_broke():
    with budget.capped(budget.StepBudget(3)) as b:
        for _ in budget.loop(16, "restarts", kind="repeat"):
            break  # e.g. a restart reached 100% validation accuracy
    (restarts,) = b.root.children
    assert restarts.run == 1 and restarts.estimate() is not None


def test_a_run_that_diverges_at_once_still_has_an_estimate():
    from paperzoo.engine import NonFiniteLossError

    def loss(m: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return m(batch[0]).sum() * float("nan")

    with budget.capped(budget.StepBudget(2)) as b:
        with pytest.raises(NonFiniteLossError):
            _trainer(10, loss_fn=loss).fit(DATA)
    assert b.root.children[0].run == 1
    assert b.summary(wall_seconds=1.0)["estimate_seconds"] is not None


def test_a_first_use_cost_of_the_first_repetition_counts_once(clock):
    # e.g. a lazy import the first model pays (torch's optimizers import torch._dynamo when the
    # first one is built): the full run pays it once, not once per model
    with budget.capped(budget.StepBudget(2)) as b:
        for i in budget.loop(10, "models", kind="repeat"):
            if i == 0:
                clock.sleep(0.2)
            for _ in budget.loop(100, "steps"):
                clock.sleep(0.001)
    (models,) = b.root.children
    # the first model's 0.2 s once, then 10 models x 100 steps of 1 ms (scaled by 10 / 2 the
    # first use would count 1 s)
    assert models.estimate() == pytest.approx(0.2 + 10 * 100 * 0.001)
    assert models.to_dict()["first_seconds"] == pytest.approx(0.2 + 100 * 0.001)


def test_sync_points_and_the_first_record_are_timed_apart(tmp_path, monkeypatch, clock):
    # The first record pays first-use costs (files and writers opened, e.g. TensorBoard's
    # import): the warm-up counts it once; every later sync point counts at its own cost.
    written: list[int] = []
    log_record = Trainer._log

    def slow_log(self: Trainer, record: dict[str, float]) -> None:
        clock.sleep(0.3 if not written else 0.002)
        written.append(int(record["step"]))
        log_record(self, record)

    monkeypatch.setattr(Trainer, "_log", slow_log)
    t = _trainer(1000, tmp_path)
    t.config = dataclasses.replace(t.config, log_every=50)
    with budget.capped(budget.StepBudget(2)) as b:
        t.fit(DATA)
    (loop,) = b.root.children
    # the warm-up (its first record's 0.3 s) + 999 steps of no (virtual) time + 20 records of
    # 2 ms, not 1000 x the first record
    assert loop.estimate() == pytest.approx(0.3 + 20 * 0.002)
    assert written == [1, 2]  # a capped run also logs its first (warm-up) step
    assert (loop.points, loop.planned_points) == (1, 20)
    assert loop.warmup_seconds == pytest.approx(0.3) and loop.point_cost() == pytest.approx(0.002)


def test_the_perceivers_plan_on_synthetic_imagenet_has_the_papers_steps(tmp_path):
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.runner import resolve_config

    spec = importlib.util.spec_from_file_location("synth_data", HERE.parent / "tools/synth_data.py")
    assert spec is not None and spec.loader is not None
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    assert synth.main([str(tmp_path), "--only", "imagenet", "--small"]) == 0  # 6 images
    cfg = resolve_config("perceiver", "full")
    plan = dict(get_experiment("perceiver").plan(cfg, RunContext(scale="full", data_root=tmp_path)))
    per_epoch = 1_281_167 // cfg.batch_size  # ILSVRC2012's training images, as declared
    assert plan["perceiver_raster"] == cfg.epochs * per_epoch == 150_120
    assert plan["resnet50_raster"] == cfg.resnet_epochs * per_epoch


def test_a_size_declaration_that_cannot_be_read_fails_in_one_line(tmp_path):
    from paperzoo.data.base import DataError
    from paperzoo.data.declared import DECLARED_SIZES, declare_sizes, declared_size

    assert declared_size(tmp_path, "train") is None  # no declaration: the files' own size
    declare_sizes(tmp_path, "ILSVRC2012", {"train": 1_281_167})
    assert declared_size(tmp_path, "train") == 1_281_167
    with pytest.raises(DataError, match="no positive integer size for split 'val'"):
        declared_size(tmp_path, "val")
    (tmp_path / DECLARED_SIZES).write_text("{not json")
    with pytest.raises(DataError, match="not a readable size declaration"):
        declared_size(tmp_path, "train")
    with pytest.raises(ValueError, match="declared sizes must be positive integers"):
        declare_sizes(tmp_path, "x", {"train": 0})


def test_a_budget_needs_a_positive_cap():
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        budget.StepBudget(0)


# -- the command line -------------------------------------------------------------------------

SMOKE = ["reproduce", "gat", "--scale", "smoke", "--quiet", "--threads", "1"]


def test_a_max_steps_run_is_partial_and_never_resumed_as_a_real_one(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*SMOKE, "--max-steps", "2", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["partial"] is True and res["max_steps"] == 2
    assert res["findings_reproduced"] is None
    assert res["estimate_seconds"] > 0 and res["estimate"]["loops"]
    assert all(lp["run"] <= 2 * lp["calls"] for lp in res["estimate"]["loops"])
    assert json.loads((out / "run.json").read_text())["max_steps"] == 2
    report = (out / "report.md").read_text()
    assert "PARTIAL RUN (--max-steps 2)" in report and "--max-steps 2 --out" in report
    assert res["command"].startswith("paperzoo reproduce gat --scale smoke")
    assert "partial" in report.split("## Findings")[1]
    loaded = load_result(out)
    assert loaded.partial is not None and not loaded.counts_as_reproduction
    assert "PARTIAL" in render_summary_markdown([loaded])
    # Rerun into the same --out: the same command reuses the capped models; a complete run or
    # another cap is refused (exit 2) and nothing is touched.
    before = (out / "results.json").read_bytes()
    capsys.readouterr()
    assert main([*SMOKE, "--out", str(out)]) == 2
    assert "a partial run (--max-steps 2)" in capsys.readouterr().err
    assert main([*SMOKE, "--max-steps", "3", "--out", str(out)]) == 2
    assert (out / "results.json").read_bytes() == before
    assert main([*SMOKE, "--max-steps", "2", "--out", str(out)]) == 0


def test_max_steps_composes_with_set_seeds_and_resume_command():
    from paperzoo.cli import build_parser, run_request

    args = build_parser().parse_args(
        ["reproduce", "gat", "--seeds", "0-1", "--set", "steps=4", "--max-steps", "2"]
    )
    request = run_request(args)
    child = request.child_argv("gat", 0, Path("o"), 1)
    assert child[-4:] == ["--set", "steps=4", "--max-steps", "2"]
    assert "--set steps=4 --max-steps 2" in request.resume_command()
    with pytest.raises(SystemExit) as stop:
        main(["reproduce", "gat", "--max-steps", "0"])
    assert stop.value.code == 2


def test_seed_runs_with_and_without_a_cap_do_not_aggregate(tmp_path):
    out = tmp_path / "a"
    assert main([*SMOKE, "--max-steps", "1", "--out", str(out)]) == 0
    capped = load_result(out)
    other = load_result(out)
    other.seeds = [1]
    both = aggregate([capped, other])
    assert both.partial is not None and both.partial["max_steps"] == 1
    assert both.to_dict()["partial"] is True and not both.counts_as_reproduction
    other.partial = None
    with pytest.raises(ValueError, match="one --max-steps"):
        aggregate([capped, other])


# -- every paper's full config, a step or two, on small files in the real formats -------------


def _helpers(name: str) -> ModuleType:
    """The fixture writers of the loader tests (tests/data/NAME.py)."""
    spec = importlib.util.spec_from_file_location(
        f"_max_steps_{name}", HERE / "data" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """MNIST (IDX, gzipped), CIFAR-10 (python batches) and the official symbolic bAbI files
    (tests/fixtures/babi): just big enough for the full configs' batch sizes."""
    root = tmp_path_factory.mktemp("data")
    _helpers("test_idx")._write_mnist_dir(root / "mnist", n_train=600, n_test=100, gz=True)
    _helpers("test_cifar")._write_cifar10(root, n=200)
    shutil.copytree(HERE / "fixtures" / "babi", root, dirs_exist_ok=True)
    return root


# Per paper: the flags besides --scale full (ROOT: the fixture data root). --set only (a) where
# the fixture files are smaller than a split the full config carves out of the real data (the
# validation sets of 5,000 images), (b) to cut a batch, an evaluation sample size, EOT's samples
# or the DCI forest where the full config takes seconds on one CPU thread (the same code runs;
# the test checks the code paths, not the estimate), (c) for ResNet, to leave out the extra
# depths of Fig. 6 (the same code as the two depths kept). dSprites: the .npz loader insists on
# the real 737,280-image grid, so the study runs on its procedural dSprites (the npz reader has
# its own tests in tests/data/test_dsprites.py); CoordConv's data are generated.
def _full_args(name: str) -> list[str]:
    """The paper's arguments for a capped full run on the CPU (``Experiment.cpu_capped_args``)."""
    from paperzoo.experiments import EXPERIMENTS

    return list(EXPERIMENTS.create(name).cpu_capped_args)


def _papers() -> list[str]:
    from paperzoo.experiments import EXPERIMENTS

    return EXPERIMENTS.names()


# Path-SGD: one step size per grid (each grid point builds a 19M-parameter MLP).
MAX_STEPS = {"path-sgd": 1}


@pytest.mark.parametrize("name", _papers())
def test_full_config_runs_capped_on_real_formats(name, data_root, tmp_path):
    n = MAX_STEPS.get(name, 2)
    out = tmp_path / "out"
    argv = ["reproduce", name, "--scale", "full", "--max-steps", str(n), "--device", "cpu"]
    argv += ["--quiet", "--threads", "1", "--out", str(out)]
    argv += [str(data_root) if a == "ROOT" else a for a in _full_args(name)]
    assert main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["scale"] == "full" and res["partial"] is True and res["max_steps"] == n
    assert res["findings_reproduced"] is None
    assert res["estimate_seconds"] is not None and res["estimate_seconds"] > res["wall_seconds"]

    def walk(loops):
        for lp in loops:
            yield lp
            yield from walk(lp.get("children", []))

    loops = list(walk(res["estimate"]["loops"]))
    assert loops and all(lp["run"] <= n * lp["calls"] for lp in loops)
    assert any(lp["planned"] > lp["run"] for lp in loops)  # something was cut short


def test_partial_shards_merge_into_a_partial_result(tmp_path):
    args = ["reproduce", "disentanglement", "--scale", "smoke", "--quiet", "--threads", "1"]
    args += ["--max-steps", "1"]
    for k in (0, 1):
        assert main([*args, "--shard", f"{k}/2", "--out", str(tmp_path / f"s{k}")]) == 0
    out = tmp_path / "merged"
    assert main(["merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(out)]) == 0
    merged = json.loads((out / "results.json").read_text())
    assert merged["partial"] is True and merged["max_steps"] == 1
    assert merged["findings_reproduced"] is None and len(merged["estimate"]["runs"]) == 2
    assert "PARTIAL RUN" in (out / "report.md").read_text()
