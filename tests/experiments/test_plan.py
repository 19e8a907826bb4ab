"""The line a run logs at its start: how many models and training steps it has, from
``Experiment.plan`` and the resolved config."""

from __future__ import annotations

import logging

import pytest

from paperzoo.engine import Trainer
from paperzoo.experiments import RunContext
from paperzoo.experiments.base import SCALES
from paperzoo.experiments.lookup import EXPERIMENTS, get_experiment
from paperzoo.experiments.runner import plan_line, run_experiment

get_experiment("gat")  # registers every experiment
NAMES = sorted(EXPERIMENTS.names())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", NAMES)
def test_every_experiment_plans_its_training(name, scale):
    exp = get_experiment(name)
    ctx = RunContext(scale=scale)
    plan = exp.plan(exp.config(scale), ctx)
    assert plan, f"{name} declares no plan"
    assert all(isinstance(what, str) and what for what, _ in plan)
    assert all(isinstance(steps, int) and steps > 0 for _, steps in plan), plan
    line = plan_line(exp, exp.config(scale), ctx)
    assert line is not None and line.startswith(f"{name} ({scale}): {len(plan):,} model")
    assert f"{sum(s for _, s in plan):,} training steps" in line


def test_a_long_plan_is_shortened():
    exp = get_experiment("path-sgd")
    line = plan_line(exp, exp.config("full"), RunContext(scale="full"), shown=2)
    assert line is not None and "up to " in line  # diverging step sizes stop early
    assert line.endswith(f"... ({len(exp.plan(exp.config('full'), RunContext())) - 2} more)")


# At smoke scale nothing stops early (one GG-NN run per question type, no step size diverges), so
# even the upper bounds are exact: the Trainers that run are the plan's, in its order.
@pytest.mark.parametrize("name", EXPERIMENTS.names())
def test_the_plan_is_what_trains(name, smoke_ctx, monkeypatch, caplog):
    trained: list[tuple[str, int]] = []
    fit = Trainer.fit

    def recording_fit(self, *args, **kwargs):
        trained.append((self.config.desc, self.config.steps))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", recording_fit)
    if name == "ggnn":  # its baselines train as one batched model per task and cell
        import paperzoo.papers.ggnn.training as ggnn_module

        fit_batched = ggnn_module.fit_batched

        def recording_fit_batched(*args, **kwargs):
            trained.append((kwargs["desc"], kwargs["steps"]))
            return fit_batched(*args, **kwargs)

        monkeypatch.setattr(ggnn_module, "fit_batched", recording_fit_batched)
    exp = get_experiment(name)
    plan = exp.plan(exp.config("smoke"), smoke_ctx)
    with caplog.at_level(logging.INFO, logger="paperzoo.experiments.runner"):
        run_experiment(name, smoke_ctx)
    assert [s for _, s in trained] == [s for _, s in plan]
    if name != "ggnn":  # (a GG-NN run's name adds its attempt: "babi4 fold0-q1-a0")
        assert [d for d, _ in trained] == [d for d, _ in plan]
    line = plan_line(exp, exp.config("smoke"), smoke_ctx)
    start = next(i for i, m in enumerate(caplog.messages) if m.startswith("reproducing"))
    assert caplog.messages[start + 1] == line  # logged before ``run`` trains anything
