import torch

from paperzoo.engine.distributed import DistInfo
from paperzoo.engine.sampler import BatchSampler


def test_batch_sampler_ranks_partition_the_global_batch():
    full = BatchSampler(20, 8, seed=0, drop_last=True, dist=DistInfo())
    parts = [
        BatchSampler(20, 8, seed=0, drop_last=True, dist=DistInfo(rank=r, world_size=2))
        for r in (0, 1)
    ]
    for step in range(5):
        union = torch.cat([p.indices(step) for p in parts]).sort().values
        assert torch.equal(union, full.indices(step).sort().values)
