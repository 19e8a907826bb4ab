"""The batch order of a training run: a function of the seed and the step alone."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.seeding import derive_seed

__all__ = ["BatchSampler"]


class BatchSampler:
    """Deterministic batches: epoch ``e`` is a permutation seeded by ``(seed, e)``.

    The batch of step ``s`` depends only on ``(seed, s)``, so resume needs no sampler state. Under
    DDP each rank takes a strided slice of the global batch (the same split DistributedSampler
    makes), so the union over ranks equals the single-process batch.
    """

    def __init__(self, n: int, batch_size: int, *, seed: int, drop_last: bool, dist: DistInfo):
        if n < 1:
            raise ValueError("cannot train on an empty data set")
        if drop_last and batch_size > n:
            raise ValueError(f"batch_size {batch_size} exceeds the data set size {n}")
        self.n, self.batch_size, self.seed, self.dist = n, batch_size, seed, dist
        self.per_epoch = n // batch_size if drop_last else math.ceil(n / batch_size)
        self._epoch, self._perm = -1, torch.empty(0, dtype=torch.long)

    def indices(self, step: int) -> Tensor:
        epoch, pos = divmod(step, self.per_epoch)
        if epoch != self._epoch:
            g = torch.Generator().manual_seed(derive_seed(self.seed, "epoch", epoch))
            self._epoch, self._perm = epoch, torch.randperm(self.n, generator=g)
        idx = self._perm[pos * self.batch_size : (pos + 1) * self.batch_size]
        return idx[self.dist.rank :: self.dist.world_size]
