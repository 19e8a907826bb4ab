"""PGM puzzles over ground-truth factors."""

from __future__ import annotations

import numpy as np
import pytest

from paperzoo.data.abstract_reasoning import consistent, range_embed, render_pgms, sample_pgms
from paperzoo.data.dsprites import AbstractDSprites, DSprites
from paperzoo.data.ground_truth import Quantized

SIZES = (5, 6, 3, 3, 4, 4)


@pytest.fixture(scope="module")
def pgms():
    return sample_pgms(SIZES, 3000, np.random.default_rng(0))


def test_every_puzzle_has_exactly_one_consistent_answer(pgms) -> None:
    ok = consistent(pgms.matrix, pgms.active, pgms.answers)
    assert (ok.sum(axis=1) == 1).all()
    assert (np.argmax(ok, axis=1) == pgms.target).all()
    assert (pgms.answers[np.arange(len(pgms)), pgms.target] == pgms.matrix[:, -1, -1]).all()


def test_active_factors_are_constant_along_rows_and_others_show_no_rule(pgms) -> None:
    m = pgms.matrix  # (P, 3, 3, F)
    row_constant = (m == m[:, :, :1, :]).all(axis=2)  # (P, 3, F)
    assert row_constant.all(axis=1)[pgms.active].all()
    inactive = ~pgms.active
    first_two_constant = row_constant[:, :2].all(axis=1)
    a, b, c = m[:, :2, 0], m[:, :2, 1], m[:, :2, 2]
    first_two_distinct = ((a != b) & (b != c) & (a != c)).all(axis=1)
    assert not (first_two_constant & inactive).any()
    assert not (first_two_distinct & inactive).any()
    assert (m < np.array(SIZES)).all() and (m >= 0).all()


def test_candidates_are_distinct_and_targets_uniform(pgms) -> None:
    a = pgms.answers
    same = (a[:, :, None, :] == a[:, None, :, :]).all(axis=-1)  # (P, 6, 6)
    assert (same.sum(axis=(1, 2)) == 6).all()
    counts = np.bincount(pgms.target, minlength=6)
    assert counts.min() > 400  # ~500 each
    assert set(np.bincount(pgms.active.sum(axis=1))[1:].nonzero()[0] + 1) == {1, 2, 3}


def test_relations_control_the_number_of_active_factors() -> None:
    p = sample_pgms(SIZES, 200, np.random.default_rng(1), relations=(0.0, 1.0, 0.0))
    assert (p.active.sum(axis=1) == 2).all()
    with pytest.raises(ValueError, match="at least 3"):
        sample_pgms((5, 2), 10, np.random.default_rng(0))


def test_sampling_is_deterministic_given_the_generator() -> None:
    a = sample_pgms(SIZES, 50, np.random.default_rng(7))
    b = sample_pgms(SIZES, 50, np.random.default_rng(7))
    assert np.array_equal(a.answers, b.answers) and np.array_equal(a.matrix, b.matrix)


def test_render_and_embed(pgms) -> None:
    data = Quantized(AbstractDSprites(DSprites(image_size=16)), SIZES)
    ctx, ans = render_pgms(data, pgms[:4], np.random.default_rng(0))
    assert ctx.shape == (4, 8, 3, 16, 16) and ans.shape == (4, 6, 3, 16, 16)
    e = range_embed(pgms.context, SIZES)
    assert e.shape == (3000, 8, 6) and e.min() >= -0.5 and e.max() <= 0.5
