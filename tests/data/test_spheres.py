"""The WRM 2-D spheres generator."""

from __future__ import annotations

import math

import pytest
import torch

from paperzoo.data import load_dataset
from paperzoo.data.spheres import GAP, RADIUS, make_spheres


def test_labels_follow_the_norm_and_the_band_is_empty() -> None:
    x, y = make_spheres(5000, generator=torch.Generator().manual_seed(0))
    assert x.shape == (5000, 2) and y.shape == (5000,)
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    r = x.norm(dim=1)
    assert torch.equal(y, (r > math.sqrt(2)).long())
    # No point inside the removed band, so the classes are separated by a margin.
    assert not ((r > RADIUS / GAP) & (r < RADIUS * GAP)).any()
    assert r[y == 0].max() <= RADIUS / GAP and r[y == 1].min() >= RADIUS * GAP


def test_class_balance_matches_the_gaussian() -> None:
    # P(||x||^2 <= 2 / 1.3^2) for a chi^2_2 variable is 1 - exp(-1 / 1.69); likewise outside.
    p_in = 1 - math.exp(-1 / GAP**2)
    p_out = math.exp(-(GAP**2))
    _, y = make_spheres(20_000, generator=torch.Generator().manual_seed(1))
    expected = p_out / (p_in + p_out)
    assert abs(y.float().mean().item() - expected) < 0.015


def test_deterministic_and_seed_dependent() -> None:
    a = make_spheres(100, generator=torch.Generator().manual_seed(3))
    b = make_spheres(100, generator=torch.Generator().manual_seed(3))
    c = make_spheres(100, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])


def test_registered_source_has_independent_train_and_test() -> None:
    split = load_dataset("spheres", seed=0)
    assert split.info.n_train == 10_000 and split.info.n_test == 10_000
    assert split.info.source == "generated" and split.num_classes == 2
    assert not torch.equal(split.x_train[:100], split.x_test[:100])


def test_other_dimensions_and_bad_arguments() -> None:
    x, y = make_spheres(50, generator=torch.Generator().manual_seed(0), dim=5, gap=1.0)
    assert x.shape == (50, 5) and y.shape == (50,)
    with pytest.raises(ValueError):
        make_spheres(10, generator=torch.Generator(), gap=0.5)
    with pytest.raises(ValueError):
        make_spheres(-1, generator=torch.Generator())
