"""Codes passed transposed, disentanglement_lib's (D, N) layout, are refused by every metric."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from paperzoo.metrics.disentanglement.dci import dci
from paperzoo.metrics.disentanglement.irs import irs_scores
from paperzoo.metrics.disentanglement.mig import mig
from paperzoo.metrics.disentanglement.modularity import modularity
from paperzoo.metrics.disentanglement.sap import sap
from paperzoo.metrics.disentanglement.unsupervised import unsupervised

RNG = np.random.default_rng(0)
CODES = RNG.normal(size=(10, 5000))  # (D, N): 5,000 samples of 10 latents, transposed
FACTORS = RNG.integers(0, 3, size=(10, 2))  # as many rows as the transposed codes

METRICS: dict[str, Callable[[], object]] = {
    "mig": lambda: mig(CODES, FACTORS),
    "modularity": lambda: modularity(CODES, FACTORS),
    "irs": lambda: irs_scores(CODES, FACTORS),
    "sap": lambda: sap(CODES, FACTORS, CODES, FACTORS),
    "dci": lambda: dci(CODES, FACTORS, CODES, FACTORS, n_estimators=1),
    "unsupervised": lambda: unsupervised(CODES),
}


@pytest.mark.parametrize("name", sorted(METRICS))
def test_transposed_codes_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"\(10, 5000\): 10 samples of 5000 latents.*codes\.T"):
        METRICS[name]()


def test_samples_first_codes_still_score() -> None:
    codes = CODES.T[:200]
    factors = RNG.integers(0, 3, size=(200, 2))
    assert np.isfinite(mig(codes, factors))
    assert np.isfinite(unsupervised(codes).gaussian_total_correlation)
