"""``metrics.on_device``: the numbers of ``metrics.classification`` without a copy per batch."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from paperzoo.engine import precision
from paperzoo.metrics import on_device
from paperzoo.metrics.classification import accuracy, predict


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.5), nn.ReLU(), nn.Linear(16, 4))


@pytest.mark.parametrize(("n", "batch_size"), [(1, 500), (37, 5), (1000, 500), (1003, 64)])
def test_the_numbers_are_those_of_accuracy_and_predict(n: int, batch_size: int) -> None:
    model = _model()
    x, y = torch.randn(n, 6), torch.randint(0, 4, (n,))
    assert on_device.accuracy_on_device(model, x, y, batch_size=batch_size) == accuracy(
        model, x, y, batch_size=batch_size
    )  # float32 count / n is the float32 mean of the 0/1 correctness, bit for bit
    logits = on_device.logits_on_device(model, x, batch_size=batch_size)
    assert torch.equal(logits, predict(model, x, batch_size=batch_size))
    models = {"a": model, "b": _model().train(False)}
    assert on_device.accuracies(models, x, y) == {k: accuracy(m, x, y) for k, m in models.items()}


def test_the_counts_stay_on_the_models_device() -> None:
    model = _model().to("meta")
    x, y = torch.randn(20, 6), torch.randint(0, 4, (20,))  # given on the CPU
    assert on_device.model_device(model).type == "meta"
    assert on_device.count_correct(model, x, y, batch_size=8).device.type == "meta"
    assert on_device.logits_on_device(model, x, batch_size=8).device.type == "meta"
    assert on_device.model_device(lambda t: t) == torch.device("cpu")


def test_eval_mode_inside_the_callers_mode_after() -> None:
    model = _model().train()
    x = torch.randn(8, 6)
    assert torch.equal(on_device.logits_on_device(model, x), on_device.logits_on_device(model, x))
    assert model.training  # restored


def test_the_forward_runs_under_the_runs_precision() -> None:
    dtypes: list[torch.dtype] = []
    model = _model()
    model.register_forward_hook(lambda m, args, out: dtypes.append(out.dtype))
    x = torch.randn(8, 6)
    with precision.using("bf16", "cpu"):
        out = on_device.logits_on_device(model, x)
    assert dtypes == [torch.bfloat16] and out.dtype == torch.float32


def test_an_empty_set_has_no_accuracy() -> None:
    with pytest.raises(ValueError, match="empty"):
        on_device.accuracy_on_device(_model(), torch.zeros(0, 6), torch.zeros(0).long())
    assert on_device.fractions([], 3) == []
