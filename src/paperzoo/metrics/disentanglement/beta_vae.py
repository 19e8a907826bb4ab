"""BetaVAE score (Higgins et al. 2017, "beta-VAE", Sec. 3 and Appendix A.4).

A training point is made by fixing one factor k: draw two batches of ``batch_size`` factor vectors
that agree on factor k only, encode both, and take the mean absolute difference of the codes,
z_diff = 1/L sum_l |z_l^(1) - z_l^(2)|; the label is k. A linear classifier (logistic regression,
as in disentanglement_lib) predicts k from z_diff; the score is its accuracy on fresh points.
Defaults are the study's: batch 64, 10,000 training and 5,000 evaluation points.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from paperzoo.data.ground_truth import GroundTruthData, RepresentationFn, as_numpy_codes
from paperzoo.metrics.disentanglement.logistic import fit_logistic_regression
from paperzoo.metrics.disentanglement.utils import encode_factors

Solver = Literal["lbfgs", "newton"]


def sample_beta_vae_pairs(
    data: GroundTruthData, num_points: int, batch_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Factor batches for ``num_points`` training points.

    Returns:
        index (P,) the fixed factor; factors1, factors2 (P, B, F) equal in column ``index``.
    """
    index = rng.integers(0, data.num_factors, size=num_points)
    f1 = data.sample_factors(num_points * batch_size, rng).reshape(num_points, batch_size, -1)
    f2 = data.sample_factors(num_points * batch_size, rng).reshape(num_points, batch_size, -1)
    rows = np.arange(num_points)
    f2[rows, :, index] = f1[rows, :, index]  # Eq. (A.4 step 2): share factor k within each pair
    return index, f1, f2


_CHUNK = 256  # training points per vectorised step: the temporaries stay in cache


def beta_vae_features(codes1: np.ndarray, codes2: np.ndarray) -> np.ndarray:
    """z_diff: mean over the batch of |z1 - z2|. (P, B, D) x 2 -> (P, D).

    Computed a chunk of points at a time (same per-point arithmetic as one call: each point's
    mean runs over its own batch axis), so no (P, B, D) temporaries are allocated.
    """
    out = np.empty((codes1.shape[0], codes1.shape[-1]))  # (P, D)
    for s in range(0, len(out), _CHUNK):
        e = s + _CHUNK
        out[s:e] = np.mean(np.abs(codes1[s:e] - codes2[s:e]), axis=1)  # (chunk, B, D) -> (chunk, D)
    return out


def beta_vae_points(
    data: GroundTruthData,
    representation: RepresentationFn,
    factors1: np.ndarray,
    factors2: np.ndarray,
    rng: np.random.Generator,
    *,
    encode_batch: int = 1024,
    interleave: bool = False,
) -> np.ndarray:
    """z_diff of every training point, ``encode_batch`` observations per representation call.

    Default: encode ``factors1`` (all batches, in order), then ``factors2`` batch by batch,
    reducing each batch to its points' features at once. The representation sees the same
    batches in the same order as two ``encode_factors`` calls (so ``rng`` is consumed
    identically), and each point's mean is the same arithmetic as ``beta_vae_features``; only the
    (P, B, D) codes of ``factors2`` are never stored. ``interleave``: encode a batch of
    ``factors1``, then the same points' batch of ``factors2`` (disentanglement_lib's order, per
    batch instead of per point), so no codes are stored at all; the same values where rendering
    draws nothing from ``rng``, otherwise other (equally distributed) draws.

    Shapes:
        factors1, factors2 (P, B, F) -> (P, D)
    """
    p, b = factors1.shape[:2]
    if p == 0:
        raise ValueError("beta_vae_points needs at least one training point")
    if encode_batch % b:  # batches would split points: keep the two-array path
        z1 = encode_factors(data, representation, factors1, rng, batch_size=encode_batch)
        z2 = encode_factors(data, representation, factors2, rng, batch_size=encode_batch)
        return beta_vae_features(z1, z2)
    step = encode_batch // b  # whole points per batch
    flat1, flat2 = factors1.reshape(p * b, -1), factors2.reshape(p * b, -1)
    starts = range(0, p, step)

    def codes(flat: np.ndarray, s: int) -> np.ndarray:  # (step * B, D) codes of points s..
        obs = data.sample_observations_from_factors(flat[s * b : (s + step) * b], rng)
        return as_numpy_codes(representation(obs))

    stored = None if interleave else [codes(flat1, s) for s in starts]  # factors1 first
    out = buf = None
    for i, s in enumerate(starts):
        z1 = codes(flat1, s) if stored is None else stored[i]
        z2 = codes(flat2, s)
        if out is None:
            out, buf = np.empty((p, z1.shape[-1])), np.empty(z1.shape)  # (P, D), (step * B, D)
        diff = buf[: len(z2)]
        np.subtract(z1, z2, out=diff)
        np.abs(diff, out=diff)
        # np.mean's arithmetic: the sum over the batch axis in order (einsum adds the same
        # bits as np.add.reduce along axis 1, without an inner loop per D values), then one
        # division.
        np.einsum("pbd->pd", diff.reshape(-1, b, diff.shape[-1]), out=out[s : s + step])
    out /= b
    return out


def beta_vae_score_from_features(
    train_x: np.ndarray,
    train_y: np.ndarray,
    eval_x: np.ndarray,
    eval_y: np.ndarray,
    *,
    solver: Solver = "lbfgs",
) -> tuple[float, float]:
    """(train accuracy, eval accuracy) of the logistic-regression classifier.

    Args:
        solver: "lbfgs" (default): scikit-learn's ``LogisticRegression()``, as disentanglement_lib
            (L-BFGS stopped at a gradient of 1e-4). "newton": the same objective solved to
            convergence by Newton's method (``paperzoo.metrics.disentanglement.logistic``), 6-15x
            faster at the study's sizes; predictions differ only for points within L-BFGS's
            tolerance of a decision boundary (the benchmark and docs/disentanglement.md report
            the difference).
    """
    if solver == "newton":
        model = fit_logistic_regression(train_x, train_y)
        return model.score(train_x, train_y), model.score(eval_x, eval_y)
    if solver != "lbfgs":
        raise ValueError(f"unknown BetaVAE solver {solver!r} (lbfgs, newton)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression().fit(train_x, train_y)
    return float(np.mean(model.predict(train_x) == train_y)), float(model.score(eval_x, eval_y))


def beta_vae_score(
    data: GroundTruthData,
    representation: RepresentationFn,
    rng: np.random.Generator,
    *,
    batch_size: int = 64,
    num_train: int = 10000,
    num_eval: int = 5000,
    fast: bool = False,
    encode_batch: int = 1024,
) -> float:
    """The BetaVAE score (evaluation accuracy) of ``representation`` on ``data``.

    Args:
        data: the ground-truth data set to intervene on.
        representation: observations (N, C, H, W) -> codes (N, D).
        rng: the only source of randomness (deterministic given its state).
        fast: False (default): scikit-learn's L-BFGS logistic regression and the pair batches
            encoded in the order of the previous releases (identical values). True: the same
            classifier solved to convergence by Newton's method (``solver="newton"``) and each
            batch of second observations encoded right after its first ones (``interleave``), so
            no codes are stored: 13-18x the reference loop's speed instead of 2-4x (``paperzoo
            bench metrics``, one thread, a loaded machine). Predictions
            differ only within L-BFGS's stopping tolerance of a decision boundary, and renderers
            that draw from ``rng`` get other (equally distributed) draws; the difference is
            measured in docs/disentanglement.md and by ``paperzoo bench metrics``.
        encode_batch: observations per representation call (a multiple of ``batch_size`` keeps
            the second codes of every pair from being stored).
    """
    points = []
    for n in (num_train, num_eval):
        index, f1, f2 = sample_beta_vae_pairs(data, n, batch_size, rng)
        feats = beta_vae_points(
            data, representation, f1, f2, rng, encode_batch=encode_batch, interleave=fast
        )
        points.append((feats, index))
    (tx, ty), (ex, ey) = points
    return beta_vae_score_from_features(tx, ty, ex, ey, solver="newton" if fast else "lbfgs")[1]
