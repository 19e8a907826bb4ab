import numpy as np
import pytest
import torch

from paperzoo.data.not_so_clevr import (
    all_centres,
    make_split,
    onehot_images,
    scale_coords,
    square_images,
    unscale_coords,
)


def test_grid_has_3136_centres_keeping_the_square_inside():
    c = all_centres()
    assert len(c) == 3136 and len(torch.unique(c, dim=0)) == 3136
    assert c.min() == 4 and c.max() == 59


def test_quadrant_split_holds_out_729_points_of_one_quadrant():
    s = make_split("quadrant")
    assert (len(s.train), len(s.test)) == (2407, 729)
    assert (s.test > 32).all() and not ((s.train[:, 0] > 32) & (s.train[:, 1] > 32)).any()


def test_uniform_split_is_80_20_disjoint_and_seeded():
    s = make_split("uniform", generator=torch.Generator().manual_seed(0))
    t = make_split("uniform", generator=torch.Generator().manual_seed(0))
    assert len(s.train) == 2509 and len(s.test) == 627 and torch.equal(s.test, t.test)
    both = torch.cat([s.train, s.test])
    assert len(torch.unique(both, dim=0)) == 3136


def test_renderings():
    c = torch.tensor([[4, 59], [30, 10]])
    sq = square_images(c)
    assert sq.shape == (2, 1, 64, 64) and sq.sum().item() == 2 * 81
    assert sq[0, 0, 0:9, 55:64].all() and sq[0, 0, 9, 55] == 0
    oh = onehot_images(c)
    assert oh.sum().item() == 2 and oh[1, 0, 30, 10] == 1
    assert torch.allclose(unscale_coords(scale_coords(c)), c.float())
    assert scale_coords(torch.tensor([[0, 63]])).tolist() == [[-1.0, 1.0]]


def test_authors_uniform_split_replays_their_generator():
    # uber-research/CoordConv data/not_so_clevr_generator.py: np.random.seed(20202), then per
    # centre in the sweep order (x = column outer, y = row inner, over range(4, 60))
    # random_split draws np.random.random() < 0.25 -> the test ("val") file; train.py's comments
    # give the resulting shapes (2368, 2) / (768, 2)
    rs = np.random.RandomState(20202)
    theirs = {(y, x) for x in range(4, 60) for y in range(4, 60) if rs.random_sample() < 0.25}
    s = make_split("uniform", protocol="authors")
    assert (len(s.train), len(s.test)) == (2368, 768)
    assert {tuple(c) for c in s.test.tolist()} == theirs
    assert len(torch.unique(torch.cat([s.train, s.test]), dim=0)) == 3136
    # fixed: no generator draws it, and the quadrant split is the same under both protocols
    g = torch.Generator().manual_seed(5)
    assert torch.equal(make_split("uniform", generator=g, protocol="authors").test, s.test)
    q = make_split("quadrant", protocol="authors")
    assert torch.equal(q.test, make_split("quadrant").test)


def test_unknown_split_or_protocol_raises_one_clear_error():
    with pytest.raises(ValueError, match="unknown split protocol 'paper'"):
        make_split("uniform", protocol="paper")
    with pytest.raises(ValueError, match="unknown Not-so-Clevr split 'diagonal'"):
        make_split("diagonal")
