"""Shared pieces of the disentanglement metrics: discretisation, discrete mutual information, sampling.

Conventions (as in disentanglement_lib, but samples first): ``codes`` is a float array (N, D) of
representations, ``factors`` an integer array (N, F) of ground-truth factor values. Everything is
vectorised over samples; the only Python loops run over latents or factors.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from paperzoo.data.ground_truth import GroundTruthData, RepresentationFn, as_numpy_codes

_EPS = np.finfo(np.float64).eps


def check_codes(codes: np.ndarray | Tensor) -> np.ndarray:
    """Codes as float64 (N, D), refusing fewer samples than latents (N < D).

    Codes are samples first; disentanglement_lib's are (D, N), and a transposed array would
    otherwise be scored as a few samples of thousands of latents.
    """
    c = as_numpy_codes(codes)
    n, d = c.shape
    if n < d:
        raise ValueError(
            f"codes have shape {c.shape}: {n} samples of {d} latents; the metrics take codes as "
            "(N, D) with samples first and need more samples than latents (transposed, as "
            "disentanglement_lib's (D, N)? pass codes.T)"
        )
    return c


def check_codes_factors(
    codes: np.ndarray | Tensor, factors: np.ndarray | Tensor
) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert: codes -> float64 (N, D), factors -> int64 (N, F); N >= D."""
    c = check_codes(codes)
    f = factors.detach().cpu().numpy() if isinstance(factors, Tensor) else np.asarray(factors)
    if f.ndim == 1:
        f = f[:, None]
    if f.ndim != 2 or len(f) != len(c):
        raise ValueError(
            f"codes {c.shape} and factors {f.shape} must be (N, D) and (N, F) with the same N"
        )
    if not np.issubdtype(f.dtype, np.integer):
        if not np.array_equal(f, np.round(f)):
            raise ValueError("factors must be integer-valued (discrete ground-truth factors)")
        f = f.astype(np.int64)
    return c, f.astype(np.int64, copy=False)


def check_finite(values: np.ndarray, name: str = "codes") -> None:
    """Raise a one-line ValueError if ``values`` holds NaN or infinite entries."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contain NaN or infinite values")


def histogram_discretize(codes: np.ndarray, num_bins: int = 20) -> np.ndarray:
    """Per-latent equal-width histogram bins, as ``np.digitize(x, np.histogram(x, num_bins)[1][:-1])``.

    Shapes:
        (N, D) -> (N, D) int64 with values in 1..num_bins
    """
    c = np.asarray(codes, dtype=np.float64)
    lo, hi = c.min(axis=0), c.max(axis=0)
    same = lo == hi
    lo, hi = np.where(same, lo - 0.5, lo), np.where(same, hi + 0.5, hi)  # np.histogram's rule
    out = np.empty(c.shape, dtype=np.int64)
    for d in range(c.shape[1]):  # loop over latents only; each is one vectorised searchsorted
        edges = np.linspace(lo[d], hi[d], num_bins + 1)
        out[:, d] = np.searchsorted(edges[:-1], c[:, d], side="right")
    return out


def _compact(labels: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels -> 0..K-1 per column (np.unique inverse). (N, C) -> ((N, C), max K)."""
    out = np.empty(labels.shape, dtype=np.int64)
    k = 1
    for j in range(labels.shape[1]):
        col = labels[:, j]
        lo = col.min() if len(col) else 0
        if np.issubdtype(col.dtype, np.integer) and len(col) and col.max() - lo <= 4 * len(col):
            # Small integer range: a counting pass instead of np.unique's sort (same result).
            present = np.bincount(col - lo) > 0
            out[:, j] = (np.cumsum(present) - 1)[col - lo]
            k = max(k, int(present.sum()))
        else:
            uniq, inv = np.unique(col, return_inverse=True)
            out[:, j] = inv.reshape(-1)
            k = max(k, len(uniq))
    return out, k


def _mi_from_counts(counts: np.ndarray) -> np.ndarray:
    """Mutual information (nats) of contingency tables, with scikit-learn's arithmetic.

    Shapes:
        counts (..., A, B) -> (...)
    """
    counts = counts.astype(np.float64)
    n = counts.sum(axis=(-2, -1))  # (...)
    pi = counts.sum(axis=-1)  # (..., A)
    pj = counts.sum(axis=-2)  # (..., B)
    nz = counts > 0
    safe = np.where(nz, counts, 1.0)
    outer = pi[..., :, None] * pj[..., None, :]
    log_n = np.log(n)[..., None, None]
    contingency_nm = safe / n[..., None, None]
    log_outer = -np.log(np.where(nz, outer, 1.0)) + log_n + log_n
    terms = contingency_nm * (np.log(safe) - log_n) + contingency_nm * log_outer
    terms = np.where(nz & (np.abs(terms) >= _EPS), terms, 0.0)
    mi = np.clip(terms.sum(axis=(-2, -1)), 0.0, None)
    # scikit-learn returns 0 when either labelling has a single value.
    single = ((pi > 0).sum(axis=-1) <= 1) | ((pj > 0).sum(axis=-1) <= 1)
    return np.where(single, 0.0, mi)


def discrete_mutual_info(codes: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Mutual information (nats) between every discrete code and every factor.

    Equals ``sklearn.metrics.mutual_info_score(factors[:, j], codes[:, i])`` for every (i, j).

    Shapes:
        codes (N, D) int, factors (N, F) int -> (D, F)
    """
    c, kc = _compact(np.asarray(codes))
    f, _ = _compact(np.asarray(factors))
    n, d = c.shape
    out = np.empty((d, f.shape[1]))
    for j in range(f.shape[1]):  # loop over factors only
        kf = int(f[:, j].max()) + 1
        idx = (np.arange(d)[None, :] * kc + c) * kf + f[
            :, j : j + 1
        ]  # (N, D) joint cell per latent
        counts = np.bincount(idx.ravel(), minlength=d * kc * kf).reshape(d, kc, kf)
        out[:, j] = _mi_from_counts(counts)
    return out


def discrete_entropy(factors: np.ndarray) -> np.ndarray:
    """Entropy (nats) of every factor, as ``mutual_info_score(y, y)``. (N, F) -> (F,)."""
    f, k = _compact(np.asarray(factors))
    out = np.empty(f.shape[1])
    for j in range(f.shape[1]):
        counts = np.bincount(f[:, j], minlength=k).astype(np.float64)
        out[j] = _mi_from_counts(np.diag(counts))
    return out


# -- sampling for the interventional metrics --------------------------------------------------------


def encode_factors(
    data: GroundTruthData,
    representation: RepresentationFn,
    factors: np.ndarray,
    rng: np.random.Generator,
    *,
    batch_size: int = 1024,
) -> np.ndarray:
    """Codes of observations rendered from ``factors``, in batches. (..., F) -> (..., D)."""
    lead = factors.shape[:-1]
    flat = factors.reshape(-1, factors.shape[-1])
    out = None
    for i in range(0, len(flat), batch_size):  # written into one preallocated array, no concat
        c = as_numpy_codes(
            representation(data.sample_observations_from_factors(flat[i : i + batch_size], rng))
        )
        if out is None:
            out = np.empty((len(flat), c.shape[1]))  # (N, D)
        out[i : i + len(c)] = c
    if out is None:
        raise ValueError("encode_factors needs at least one factor vector")
    return out.reshape(*lead, out.shape[-1])


def seed_from(rng: np.random.Generator) -> int:
    """A 31-bit integer seed for scikit-learn estimators, drawn from ``rng``."""
    return int(rng.integers(0, 2**31 - 1))
