"""ArrayGroundTruthData: the interventional metrics on a user's own arrays."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from paperzoo.data.ground_truth import ArrayGroundTruthData
from paperzoo.metrics.disentanglement.beta_vae import beta_vae_score
from paperzoo.metrics.disentanglement.factor_vae import factor_vae_score


def _arrays(repeat: int = 1) -> tuple[torch.Tensor, np.ndarray]:
    """Every combination of factor values (0, 2, 5) x (0, 1, 2, 3), ``repeat`` times; each
    observation is a (1, 2, 2) image holding the two factors (and a row-specific nuisance)."""
    combos = np.array(list(itertools.product((0, 2, 5), range(4))) * repeat)  # (12 * repeat, 2)
    obs = torch.zeros(len(combos), 1, 2, 2)
    obs[:, 0, 0, 0] = torch.from_numpy(combos[:, 0]).float() / 5
    obs[:, 0, 0, 1] = torch.from_numpy(combos[:, 1]).float() / 3
    obs[:, 0, 1, 0] = torch.arange(len(combos)).float() / len(combos)
    return obs, combos


def _codes(obs: torch.Tensor) -> torch.Tensor:
    """A perfectly disentangled representation: the two factors, then noise-free zeros."""
    flat = obs.flatten(1)
    return torch.cat([flat[:, :2], torch.zeros(len(flat), 1)], dim=1)


def test_sizes_values_and_lookup() -> None:
    obs, combos = _arrays()
    data = ArrayGroundTruthData(obs, combos, factor_names=("size", "shape"))
    assert data.factor_sizes == (3, 4) and data.factor_values == ((0, 2, 5), (0, 1, 2, 3))
    assert data.observation_shape == (1, 2, 2) and data.factor_names == ("size", "shape")
    rng = np.random.default_rng(0)
    f = np.array([[2, 1], [0, 3]])  # value indices: size 5 / shape 1, size 0 / shape 3
    out = data.sample_observations_from_factors(f, rng)
    assert torch.equal(out[0], obs[(combos[:, 0] == 5) & (combos[:, 1] == 1)][0])
    assert torch.equal(out[1], obs[(combos[:, 0] == 0) & (combos[:, 1] == 3)][0])
    # several observations per combination: one of them, drawn with rng
    obs2, combos2 = _arrays(repeat=3)
    many = ArrayGroundTruthData(obs2, torch.from_numpy(combos2))
    picks = many.sample_observations_from_factors(np.repeat(f[:1], 50, 0), rng)
    assert len({float(p[0, 1, 0]) for p in picks}) == 3
    assert (picks[:, 0, 0] == obs[(combos[:, 0] == 5) & (combos[:, 1] == 1)][0, 0, 0]).all()


def test_a_missing_combination_is_refused_naming_it() -> None:
    obs, combos = _arrays()
    keep = ~((combos[:, 0] == 2) & (combos[:, 1] == 3))
    with pytest.raises(ValueError, match=r"1 of 12 factor combinations .*\(2, 3\)"):
        ArrayGroundTruthData(obs[keep], combos[keep])
    with pytest.raises(ValueError, match="share N"):
        ArrayGroundTruthData(obs[:5], combos)
    with pytest.raises(ValueError, match="integer"):
        ArrayGroundTruthData(obs, combos + 0.5)


def test_beta_vae_and_factor_vae_scores_run_on_arrays() -> None:
    obs, combos = _arrays(repeat=2)
    data = ArrayGroundTruthData(obs, combos)
    rng = np.random.default_rng(0)
    kw = {"batch_size": 8, "num_train": 60, "num_eval": 30}
    assert beta_vae_score(data, _codes, rng, **kw) == 1.0
    score = factor_vae_score(data, _codes, rng, num_variance_estimate=200, **kw)
    assert score == 1.0
    # a representation that ignores the factors scores at chance level
    rng = np.random.default_rng(1)

    def noise(o: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(rng.normal(size=(len(o), 3)))

    assert beta_vae_score(data, noise, np.random.default_rng(2), **kw) < 0.9


def test_registered_ground_truth_sets_load_without_importing_the_loaders_first() -> None:
    """The registry imports the data modules on its first look-up (a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "from paperzoo.data.ground_truth import GROUND_TRUTH, load_ground_truth\n"
        "assert 'dsprites' in GROUND_TRUTH.names()\n"
        "print(load_ground_truth('abstract-dsprites').num_factors)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "6"
