"""The metric window: sums kept where the values are, read by the host in one transfer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from paperzoo.engine import MetricWindow


@pytest.fixture
def tolist_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many elements each ``Tensor.tolist`` call read (the window's only host read)."""
    calls: list[int] = []
    original = torch.Tensor.tolist

    def tolist(self: torch.Tensor):  # noqa: ANN202
        calls.append(self.numel())
        return original(self)

    monkeypatch.setattr(torch.Tensor, "tolist", tolist)
    for name in ("item", "__float__", "__bool__"):
        monkeypatch.setattr(torch.Tensor, name, lambda self, _n=name: pytest.fail(f"read by {_n}"))
    return calls


def test_sums_add_in_step_order_and_are_read_once(tolist_calls: list[int]) -> None:
    losses = [0.1, 0.7, 1e-9, 3.0, 0.3]
    w = MetricWindow()
    for step, v in enumerate(losses[:3]):
        w.add(step, {"loss": torch.tensor(v), "acc": torch.tensor([1.0, 0.0]), "n": step})
    assert tolist_calls == []  # adding reads nothing
    first = w.read()
    assert tolist_calls == [4]  # the two sums and the (step, value) marker, in one transfer
    assert w.read() is first and len(tolist_calls) == 1  # nothing added: nothing transferred
    for step, v in enumerate(losses[3:], start=3):
        w.add(step, {"loss": torch.tensor(v), "acc": torch.tensor([1.0, 0.0]), "n": step})
    seen = w.read()
    # float32 values summed in float64 from 0.0, in step order (a read does not regroup them)
    expected = 0.0
    for v in losses:
        expected += float(np.float32(v))
    assert seen.sums["loss"] == expected and seen.counts["loss"] == 5
    assert seen.means() == {"loss": expected / 5, "acc": 0.5, "n": 2.0}
    assert seen.bad_step is None and math.isnan(seen.bad_value)
    w.reset()
    assert w.read().sums == {} and len(tolist_calls) == 2


def test_the_first_non_finite_loss_is_named_with_its_value(tolist_calls: list[int]) -> None:
    w = MetricWindow()
    for step, v in enumerate([1.0, 2.0, math.inf, math.nan, 1.0]):
        w.add(step, {"loss": torch.tensor(v)})
    seen = w.read()
    assert (seen.bad_step, seen.bad_value) == (2, math.inf)
    w.reset()  # logged: the marker stays
    w.add(5, {"loss": torch.tensor(1.0)})
    assert w.read().bad_step == 2
    # Python-float losses (a manual step that reads its own values) are checked on the host
    w = MetricWindow()
    w.add(0, {"loss": 1.0})
    w.add(1, {"loss": -math.inf})
    w.add(2, {"loss": torch.tensor(math.nan)})
    assert (w.read().bad_step, w.read().bad_value) == (1, -math.inf)


def test_state_round_trip_and_the_older_form_of_per_step_values() -> None:
    w = MetricWindow()
    for step in range(3):
        w.add(step, {"loss": torch.tensor(0.25 * step), "lr": 0.1})
    state = w.state_dict()
    again = MetricWindow()
    again.load_state_dict(state)
    assert again.read().sums == w.read().sums and again.read().counts == {"loss": 3, "lr": 3}
    old = MetricWindow.from_values({"loss": [0.0, 0.25, 0.5], "lr": [0.1, 0.1, 0.1]})
    assert old.read().sums == w.read().sums and old.read().counts == w.read().counts
    old.add(3, {"loss": torch.tensor(0.75), "lr": 0.1})
    assert old.read().means()["loss"] == pytest.approx(0.375, rel=1e-15)
    w.replace_sums({"loss": 1.5, "lr": 0.3})  # e.g. the means over the ranks
    assert w.read().means() == {"loss": 0.5, "lr": pytest.approx(0.1)}
    with pytest.raises(ValueError, match="sums of"):
        w.replace_sums({"loss": 1.0})
