"""Validation splits carved from labelled training data (docs/verdicts.md, "Selection hygiene").

A validation split is a seeded random subset of the training data, stratified by class so that
every class is held out in proportion to its frequency -- never the tail (or head) of the
training arrays, whose order is whatever the source file has: a training file sorted by class
would otherwise hold out only its last classes.
"""

from __future__ import annotations

import torch
from torch import Tensor


def validation_split(
    labels: Tensor,
    n_val: int | None = None,
    *,
    fraction: float | None = None,
    generator: torch.Generator,
) -> tuple[Tensor, Tensor]:
    """Indices of a stratified random validation split and of the rest of the training data.

    Class ``c`` with ``n_c`` of the ``N`` examples gets ``n_val * n_c / N`` validation examples,
    rounded by largest remainder (ties broken at random) so that the counts sum to ``n_val``;
    which of its examples are held out is a uniform random draw from ``generator``.

    Args:
        labels: (N,) integer class labels of the training data.
        n_val: validation examples to hold out, ``0 <= n_val < N``; or give ``fraction``.
        fraction: share of the training data to hold out, in [0, 1).
        generator: the random stream (e.g. ``RunContext.generator("val-split")``).

    Returns:
        (train_idx, val_idx): int64 index tensors, each sorted ascending (the training part keeps
        the source's order), disjoint, together covering ``range(N)``.

    Shapes:
        labels: (N,) -> train_idx: (N - n_val,), val_idx: (n_val,)
    """
    if (n_val is None) == (fraction is None):
        raise ValueError("give exactly one of n_val and fraction")
    labels = torch.as_tensor(labels).reshape(-1)
    n = len(labels)
    if fraction is not None:
        if not 0.0 <= fraction < 1.0:
            raise ValueError(f"fraction must be in [0, 1), got {fraction}")
        n_val = round(fraction * n)
    assert n_val is not None
    if not 0 <= n_val < n:
        raise ValueError(f"n_val must be in [0, {n}) for {n} training examples, got {n_val}")
    classes, inverse, counts = torch.unique(labels, return_inverse=True, return_counts=True)
    # Largest-remainder allocation of n_val over the classes, proportional to their counts.
    exact = counts.double() * n_val / n
    quota = exact.floor().long()
    left = n_val - int(quota.sum())
    if left > 0:
        jitter = torch.rand(len(classes), generator=generator, dtype=torch.float64) * 1e-9
        order = torch.argsort(exact - quota.double() + jitter, descending=True)
        quota[order[:left]] += 1
    val_mask = torch.zeros(n, dtype=torch.bool)
    for c in range(len(classes)):
        members = torch.nonzero(inverse == c).flatten()
        pick = torch.randperm(len(members), generator=generator)[: int(quota[c])]
        val_mask[members[pick]] = True
    idx = torch.arange(n)
    return idx[~val_mask], idx[val_mask]


__all__ = ["validation_split"]
