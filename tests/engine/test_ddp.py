"""DDP through the engine's Trainer equals single-process training on the same global batch.

Two CPU processes launched by ``torchrun`` (gloo backend) train a small CIFAR ResNet with the Trainer;
the engine wraps the model in DistributedDataParallel and gives each rank a strided half of every
global batch. Their parameters after N steps must equal those of one process training on the
whole global batch.

* With a batch-independent normalisation (GroupNorm) the two runs are the same computation.
* With BatchNorm, each rank normalises its own half batch (as on multi-GPU machines without
  SyncBatchNorm, and as in the paper's two-GPU runs); single-process training reproduces DDP
  exactly when it averages the losses of the per-rank halves ("ghost" batches).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.engine import TrainConfig, Trainer, init_distributed, seeded
from paperzoo.models.resnet import CifarResNet

WORLD, STEPS, GLOBAL_BATCH = 2, 6, 16


def _data() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(123)
    return torch.randn(48, 3, 8, 8, generator=g), torch.randint(0, 10, (48,), generator=g)


def _model(norm: str) -> nn.Module:
    norm_layer = (lambda c: nn.GroupNorm(4, c)) if norm == "group" else None
    with seeded(0):
        return CifarResNet(depth=8, base_width=8, shortcut="B", norm_layer=norm_layer)


def _loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    x, y = batch
    return F.cross_entropy(model(x), y)


def _ghost_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    """Mean of the losses of the halves each DDP rank would see (BN statistics per half)."""
    x, y = batch
    return sum(_loss(model, (x[r::WORLD], y[r::WORLD])) for r in range(WORLD)) / WORLD


def _train(norm: str, loss_fn=_loss) -> dict[str, Tensor]:
    model = _model(norm)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    cfg = TrainConfig(steps=STEPS, batch_size=GLOBAL_BATCH, seed=7, progress=False)
    Trainer(model, opt, loss_fn, config=cfg).fit(_data())
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _worker(out: str) -> None:
    """Entry point of each torchrun process (this file run as a script)."""
    torch.set_num_threads(1)
    info = init_distributed("cpu")  # the engine's own torchrun path (gloo on CPU)
    assert info.world_size == WORLD
    try:
        result = {norm: _train(norm) for norm in ("group", "batch")}
        if info.is_main:
            torch.save(result, out)
    finally:
        # Leave together: a rank tearing gloo down while another still talks to it aborts
        # ("terminate called without an active exception"), seen once in ~10 CI runs.
        dist.barrier()
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ddp_params(
    tmp_path_factory: pytest.TempPathFactory, torchrun: Callable
) -> dict[str, dict[str, Tensor]]:
    out = Path(tmp_path_factory.mktemp("ddp")) / "params.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = torchrun([__file__, str(out)], nproc=WORLD, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return torch.load(out, weights_only=True)  # the main rank's tensors, nothing else


def _assert_same(a: dict[str, Tensor], b: dict[str, Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5, msg=k)


def test_ddp_equals_single_process_on_the_global_batch(ddp_params) -> None:
    single = _train("group")
    _assert_same(ddp_params["group"], single)
    start = {k: v.detach() for k, v in _model("group").named_parameters()}
    assert any(not torch.allclose(start[k], single[k]) for k in start)  # training moved them


def test_ddp_with_batchnorm_equals_per_rank_ghost_batches(ddp_params) -> None:
    _assert_same(ddp_params["batch"], _train("batch", _ghost_loss))
    whole = _train("batch")  # one BN over the whole global batch is a different computation
    assert any(not torch.allclose(whole[k], ddp_params["batch"][k]) for k in whole)


if __name__ == "__main__":
    _worker(sys.argv[1])
