"""The Perceiver study's three ImageNet models share one loader start under --max-steps."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn

from paperzoo.engine import budget
from paperzoo.experiments import RunContext
from paperzoo.experiments.lookup import get_experiment
from paperzoo.experiments.runner import resolve_config
from paperzoo.papers.perceiver import training as perceiver_training


class _Trained:
    """What the study reads of a trained model's trainer: its last training accuracy."""

    class history:  # noqa: N801
        @staticmethod
        def last(key: str) -> float:
            return 0.0


class _Stop(Exception):
    """Ends the run after the three models' training (their evaluation is not under test)."""


def test_the_three_models_share_one_loader_start_under_max_steps(
    tmp_path: Path, write_imagenet, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_imagenet(tmp_path, train=2, val=1)  # 6 training images: one batch of 6
    cfg = replace(resolve_config("perceiver", "full"), workers=2)
    keys = ("perceiver_raster", "resnet50_raster", "resnet50_permuted")
    monkeypatch.setattr(
        perceiver_training,
        "build_imagenet_models",
        lambda *a, **k: {k_: nn.Linear(1, 1) for k_ in keys},
    )
    trained: list[tuple[str, list[torch.Tensor]]] = []
    seen = {}

    def fit(model, source, opt, *, steps, desc, **kw):  # noqa: ANN001, ANN003, ANN202
        seen["source"] = source
        batches = [source(s)[0] for s in budget.loop(steps, desc)]  # as the capped Trainer
        trained.append((desc, batches))
        if len(trained) == len(keys):
            raise _Stop
        return _Trained()

    monkeypatch.setattr(perceiver_training, "fit_imagenet", fit)  # imported by the run
    ctx = RunContext(scale="full", seed=0, data_root=root, dataset="imagenet", out_dir=tmp_path)
    with budget.capped(budget.StepBudget(2)), pytest.raises(_Stop):
        get_experiment("perceiver")._run_imagenet(cfg, ctx)
    source = seen["source"]
    assert [d for d, _ in trained] == list(keys) and source.keep == 2
    assert source.starts == 1  # one start of the persistent loader for the three models
    first = trained[0][1]
    assert len(first) == 2
    for _, batches in trained[1:]:
        assert all(torch.equal(a, b) for a, b in zip(first, batches, strict=True))
