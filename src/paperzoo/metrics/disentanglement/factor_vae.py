"""FactorVAE score (Kim & Mnih 2018, "Disentangling by Factorising", Sec. 4).

Codes are divided by their global standard deviation (estimated on ``num_variance_estimate``
observations); latents whose deviation is below ``prune_threshold`` (collapsed to the prior) are
dropped. A training point fixes one factor k over a batch of ``batch_size`` observations and
votes for the latent with the smallest normalised variance; a majority-vote classifier maps
latents to factors and the score is its accuracy on fresh points. Defaults are the study's:
batch 64, 10,000 / 5,000 points, 10,000 variance samples, threshold 0.05.
"""

from __future__ import annotations

import numpy as np

from paperzoo.data.ground_truth import GroundTruthData, RepresentationFn
from paperzoo.metrics.disentanglement.utils import encode_factors

_CHUNK = 256  # training points per vectorised step: the temporaries stay in cache


def sample_factor_vae_batches(
    data: GroundTruthData, num_points: int, batch_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Factor batches with one factor fixed per batch.

    Returns:
        index (P,) the fixed factor; factors (P, B, F) constant in column ``index``.
    """
    index = rng.integers(0, data.num_factors, size=num_points)
    f = data.sample_factors(num_points * batch_size, rng).reshape(num_points, batch_size, -1)
    rows = np.arange(num_points)
    f[rows, :, index] = f[rows, :1, index]  # fix factor k to its value in the first sample
    return index, f


def factor_vae_votes(
    index: np.ndarray,
    codes: np.ndarray,
    global_variances: np.ndarray,
    active: np.ndarray,
    num_factors: int,
) -> np.ndarray:
    """Vote matrix (F, D_active): how often factor k picked each active latent as least variable."""
    local = np.empty((codes.shape[0], int(active.sum())))  # (P, D_active)
    for s in range(0, len(local), _CHUNK):  # a chunk of points at a time: no (P, B, D) temporaries
        local[s : s + _CHUNK] = np.var(codes[s : s + _CHUNK][:, :, active], axis=1, ddof=1)
    argmin = np.argmin(local / global_variances[active], axis=1)
    votes = np.zeros((num_factors, int(active.sum())), dtype=np.int64)
    np.add.at(votes, (index, argmin), 1)
    return votes


def factor_vae_score_from_votes(
    train_votes: np.ndarray, eval_votes: np.ndarray
) -> tuple[float, float]:
    """(train accuracy, eval accuracy) of the majority-vote classifier."""
    classifier = np.argmax(train_votes, axis=0)  # factor predicted for each latent
    cols = np.arange(train_votes.shape[1])
    train = train_votes[classifier, cols].sum() / max(train_votes.sum(), 1)
    evals = eval_votes[classifier, cols].sum() / max(eval_votes.sum(), 1)
    return float(train), float(evals)


def factor_vae_score(
    data: GroundTruthData,
    representation: RepresentationFn,
    rng: np.random.Generator,
    *,
    batch_size: int = 64,
    num_train: int = 10000,
    num_eval: int = 5000,
    num_variance_estimate: int = 10000,
    prune_threshold: float = 0.05,
) -> float:
    """The FactorVAE score (evaluation accuracy) of ``representation`` on ``data``; 0 if all collapsed."""
    factors = data.sample_factors(num_variance_estimate, rng)
    global_var = np.var(encode_factors(data, representation, factors, rng), axis=0, ddof=1)
    active = np.sqrt(global_var) >= prune_threshold
    if not active.any():
        return 0.0
    votes = []
    for n in (num_train, num_eval):
        index, f = sample_factor_vae_batches(data, n, batch_size, rng)
        codes = encode_factors(data, representation, f, rng)  # (n, B, D)
        votes.append(factor_vae_votes(index, codes, global_var, active, data.num_factors))
    return factor_vae_score_from_votes(*votes)[1]
