"""Gradient accumulation in chunks: the batch's gradient, and one DDP all-reduce per step.

The all-reduces are counted on a real DistributedDataParallel (gloo, one process in this test's
process group) through a communication hook, which DDP calls once per gradient bucket each time
it synchronises."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.engine.accumulation import backward_in_chunks, has_batch_norm, sync_gradients_if


def _loss(model: nn.Module, part: tuple[Tensor, ...]) -> tuple[Tensor, int]:
    x, y = part
    return F.cross_entropy(model(x), y), len(y)


def _data() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(10, 4, generator=g), torch.randint(0, 3, (10,), generator=g)


def test_chunks_add_up_to_the_whole_batch_gradient() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x, y = _data()
    loss, sizes = backward_in_chunks(model, (x, y), _loss, chunk=3)  # chunks 3, 3, 3, 1
    chunked = [p.grad.clone() for p in model.parameters()]
    assert sizes == [3, 3, 3, 1]
    model.zero_grad()
    whole, _ = backward_in_chunks(model, (x, y), _loss, chunk=None)
    for a, p in zip(chunked, model.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad)
    torch.testing.assert_close(loss, whole)
    torch.testing.assert_close(whole, F.cross_entropy(model(x), y).detach())
    with pytest.raises(ValueError, match="chunk"):
        backward_in_chunks(model, (x, y), _loss, chunk=0)


def test_sync_context_is_a_no_op_without_ddp() -> None:
    with sync_gradients_if(nn.Linear(2, 2), sync=False):  # a bare module has no no_sync
        pass
    assert has_batch_norm(nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2)))
    assert not has_batch_norm(nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2)))


@pytest.fixture
def one_rank_group(tmp_path: Path):
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    if dist.is_initialized():
        pytest.skip("a process group is already running in this process")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_all_reduces_once_per_accumulated_batch(one_rank_group) -> None:
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3)))
    reductions: list[int] = []

    def count(state, bucket):  # unannotated: DDP checks the annotations' runtime types
        reductions.append(bucket.index())
        fut: torch.futures.Future[Tensor] = torch.futures.Future()
        fut.set_result(bucket.buffer())  # one rank: the sum is the buffer itself
        return fut

    model.register_comm_hook(None, count)
    x, y = _data()
    backward_in_chunks(model, (x, y), _loss, chunk=2)  # 5 chunks, one synchronisation
    assert len(reductions) == len(set(reductions))  # each bucket reduced once
    n_buckets = len(reductions)
    assert n_buckets >= 1
    backward_in_chunks(model, (x, y), _loss, chunk=None)
    assert len(reductions) == 2 * n_buckets
