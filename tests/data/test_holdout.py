"""The selection-hygiene guard: test data raise when read before the final evaluation."""

from __future__ import annotations

import copy
from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from paperzoo.data.base import DataInfo, Split
from paperzoo.data.holdout import (
    HoldoutAccessError,
    HoldoutSequence,
    HoldoutTensor,
    final_evaluation,
    guard,
    is_unlocked,
    stats,
)
from paperzoo.engine import TrainConfig, Trainer, seeded
from paperzoo.experiments import RunContext

MESSAGE = "test data touched before the final evaluation"


def _data(n: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 1, 4, 4, generator=g)
    y = (x.flatten(1).sum(1) > 0).long()
    return x, y


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.sum(),
        lambda x: x + 1,
        lambda x: x * x,
        lambda x: x > 0,
        lambda x: x.mean(0),
        lambda x: nn.Linear(16, 2)(x.flatten(1)),  # a model's forward pass
        lambda x: F.relu(x),
        lambda x: x[0, 0, 0, 0].item(),
        lambda x: x.tolist(),
        lambda x: x.numpy(),
        lambda x: bool(x[0, 0, 0, 0]),
        lambda x: float(x[0, 0, 0, 0]),
        lambda x: torch.cat([x, x]).max(),  # a structural op first: still guarded
    ],
)
def test_computation_on_locked_test_data_raises(op):
    x = guard(_data()[0], "x_test")
    with pytest.raises(HoldoutAccessError, match=MESSAGE) as err:
        op(x)
    assert "x_test" in str(err.value)


def test_structural_operations_are_allowed_and_stay_guarded():
    raw = _data()[0]
    x = guard(raw, "x_test")
    assert isinstance(x, torch.Tensor) and isinstance(x, HoldoutTensor)
    assert x.shape == (40, 1, 4, 4) and len(x) == 40 and x.dim() == 4 and x.numel() == 640
    assert x.dtype == torch.float32 and x.device.type == "cpu" and x.ndim == 4
    for out in (
        x[:8],
        x[torch.arange(3)],
        x.to("cpu"),
        x.float(),
        x.double(),
        x.contiguous(),
        x.cpu(),
        x.flatten(1),
        x.reshape(40, 16),
        x.permute(0, 2, 3, 1),
        x.unsqueeze(0).squeeze(0),
        torch.cat([x[:2], raw[:2]]),
        torch.stack([x[0], x[1]]),
        *x[:4].chunk(2),
        copy.deepcopy(x),
    ):
        assert isinstance(out, HoldoutTensor)
        with pytest.raises(HoldoutAccessError):
            out.sum()
    assert "HoldoutTensor(x_test" in repr(x[:2])  # repr never reads the values


def test_final_evaluation_unlocks_and_returns_plain_tensors():
    raw = _data()[0]
    x = guard(raw, "x_test")
    assert not is_unlocked()
    with final_evaluation():
        assert is_unlocked()
        total = x.sum()
        logits = nn.Linear(16, 2)(x.flatten(1))
        with final_evaluation():  # blocks nest
            assert float(x.max()) == float(raw.max())
        assert is_unlocked()
    assert type(total) is torch.Tensor and type(logits) is torch.Tensor
    assert torch.equal(total, raw.sum())
    assert not is_unlocked()
    with pytest.raises(HoldoutAccessError):  # locked again after the block
        x.sum()


def test_split_guard_locks_the_test_half_only():
    x, y = _data()
    split = Split(x[:30], y[:30], x[30:], y[30:], DataInfo("toy", "generated", 30, 10), 2)
    before = stats()
    guarded = guard(split, "toy")
    assert stats().guarded > before.guarded
    assert guarded.x_train is split.x_train and not isinstance(guarded.x_train, HoldoutTensor)
    assert isinstance(guarded.x_test, HoldoutTensor) and isinstance(guarded.y_test, HoldoutTensor)
    small = guarded.subset(10, 5)  # data plumbing keeps working (test labels are not read)
    assert isinstance(small.x_test, HoldoutTensor) and small.info.n_test == 5
    assert isinstance(small.y_test, HoldoutTensor) and len(small.y_test) == 5
    with pytest.raises(HoldoutAccessError):
        (guarded.y_test == 1).float().mean()
    with final_evaluation():
        assert torch.equal(guarded.y_test == 1, y[30:] == 1)


def test_sequence_guard_allows_len_and_slicing_only():
    graphs = guard(tuple(range(10)), "test graphs")
    assert isinstance(graphs, HoldoutSequence)
    assert len(graphs) == 10 and len(graphs[:3]) == 3 and isinstance(graphs[:3], HoldoutSequence)
    for op in (lambda s: list(s), lambda s: s[0], lambda s: 3 in s, lambda s: sum(s)):
        with pytest.raises(HoldoutAccessError, match=MESSAGE):
            op(graphs)
    with final_evaluation():
        assert list(graphs) == list(range(10)) and graphs[2] == 2 and graphs[:3] == (0, 1, 2)
    with pytest.raises(TypeError, match="cannot guard"):
        guard(object())


def test_run_context_guards_only_when_asked(tmp_path):
    x = _data()[0]
    off = RunContext(out_dir=tmp_path)
    assert off.holdout(x) is x and not isinstance(off.holdout(x), HoldoutTensor)
    assert isinstance(off.final_evaluation(), nullcontext)
    on = RunContext(out_dir=tmp_path, guard_test=True)
    xt = on.holdout(x, "x_test")
    assert isinstance(xt, HoldoutTensor)
    with pytest.raises(HoldoutAccessError):
        xt.mean()
    with on.final_evaluation():
        assert float(xt.mean()) == pytest.approx(float(x.mean()))


def _experiment_like(ctx: RunContext, *, monitor_on_test: bool) -> float:
    """A toy experiment: early stopping (best checkpoint) on a monitored split, then a test
    number. ``monitor_on_test`` is the selection-hygiene bug the guard must catch."""
    x, y = _data(120)
    x_tr, y_tr, x_val, y_val = x[:60], y[:60], x[60:80], y[60:80]
    x_te, y_te = ctx.holdout(x[80:], "x_test"), ctx.holdout(y[80:], "y_test")
    with seeded(0):
        model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
    mon_x, mon_y = (x_te, y_te) if monitor_on_test else (x_val, y_val)
    best: dict[str, object] = {"err": 2.0, "state": None}

    def eval_fn(m: nn.Module) -> dict[str, float]:
        err = float((m(mon_x).argmax(1) != mon_y).float().mean())
        if err < best["err"]:  # type: ignore[operator]
            best.update(err=err, state=copy.deepcopy(m.state_dict()))
        return {"monitor_err": err}

    trainer = Trainer(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        lambda m, b: F.cross_entropy(m(b[0]), b[1]),
        config=TrainConfig(steps=6, batch_size=20, eval_every=2, progress=False),
        eval_fn=eval_fn,
    )
    trainer.fit((x_tr, y_tr))
    model.load_state_dict(best["state"])  # type: ignore[arg-type]
    with ctx.final_evaluation():
        return float((model(x_te).argmax(1) != y_te).float().mean())


def test_guard_catches_a_deliberately_bad_experiment(tmp_path):
    ctx = RunContext(out_dir=tmp_path, quiet=True, guard_test=True)
    good = _experiment_like(ctx, monitor_on_test=False)  # validation monitor: passes
    assert 0.0 <= good <= 1.0
    with pytest.raises(HoldoutAccessError, match=MESSAGE):
        _experiment_like(ctx, monitor_on_test=True)
    # Without the guard the bad version runs silently (what the guard exists to prevent).
    plain = RunContext(out_dir=tmp_path, quiet=True)
    assert 0.0 <= _experiment_like(plain, monitor_on_test=True) <= 1.0
    assert _experiment_like(plain, monitor_on_test=False) == good
