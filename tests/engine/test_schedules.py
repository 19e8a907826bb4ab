"""Learning-rate schedules (``paperzoo.engine.schedules``)."""

from __future__ import annotations

import math

import pytest

from paperzoo.engine import step_decay, warmup_cosine


def test_step_decay_divides_by_ten_at_the_papers_epochs() -> None:
    mult = step_decay(10, (84, 102, 114), 0.1)  # 10 steps an epoch
    got = [mult(s) for s in (0, 839, 840, 1019, 1020, 1140, 1199)]
    assert got == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01, 0.001, 0.001])
    warm = step_decay(10, (84,), 0.1, warmup_epochs=5)  # the ResNet's linear warm-up
    assert warm(0) == pytest.approx(1 / 50) and warm(49) == pytest.approx(1.0) and warm(60) == 1.0


def test_warmup_cosine_rises_linearly_then_decays_to_zero() -> None:
    mult = warmup_cosine(100, 0.1)  # 10 warm-up steps, then 90 of cosine
    assert [mult(s) for s in range(10)] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert mult(10) == pytest.approx(1.0)
    assert mult(55) == pytest.approx(0.5 * (1 + math.cos(math.pi * 45 / 90)))
    assert mult(100) == pytest.approx(0.0, abs=1e-12) and mult(500) == pytest.approx(0.0, abs=1e-12)
    assert warmup_cosine(10, 0.0)(0) == 1.0  # at least one warm-up step
