"""The Perceiver's ImageNet evaluation: split over the ranks of a torchrun group, counts summed
over them, forwards under the run's precision.

* In one process: the ranks' shares of the validation images cover the evaluated images exactly
  once whatever the world size; the counts of the ranks add up to one process's; the forward runs
  under bf16 autocast at ``--precision bf16``, the invariance check in float32; a capped run on a tiny ImageNet as rank 1 of 2
  evaluates rank 1's share only, in bf16.
* Two CPU ranks (gloo, ``torchrun``): the all-reduced counts equal one process's.

The test file is also the ranks' script: ``torchrun ... test_perceiver_eval.py DIR``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from paperzoo.engine import precision
from paperzoo.papers.perceiver.training import count_top1, evaluation_share

PAIR = ("perceiver_raster", "perceiver_permuted")
N_VAL, EVAL_BATCH, MICRO = 11, 4, 3  # 11 images: not a multiple of 2 or 3 ranks


class _Recording(nn.Module):
    """A linear classifier of the normalised images that records, per forward, whether bf16
    autocast was on and the dtype of its logits."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 5))
        self.seen: list[tuple[bool, torch.dtype]] = []

    def forward(self, x: Tensor) -> Tensor:
        out = self.head(x)
        self.seen.append((torch.is_autocast_enabled("cpu"), out.dtype))
        return out


def _models() -> dict[str, nn.Module]:
    # the permuted Perceiver is the raster one's function: the same weights, a difference of 0
    return {PAIR[0]: _Recording(0), PAIR[1]: _Recording(0), "resnet50_raster": _Recording(1)}


def _val() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(2)
    images = torch.randint(0, 256, (N_VAL, 3, 4, 4), dtype=torch.uint8, generator=g)
    return images, torch.randint(0, 5, (N_VAL,), generator=g)


def _batches(indices: np.ndarray) -> Iterator[tuple[Tensor, Tensor]]:
    """The images of ``indices`` in batches of EVAL_BATCH, as ``iterate_eval`` yields them."""
    x, y = _val()
    idx = torch.as_tensor(indices, dtype=torch.long)
    for i in range(0, len(idx), EVAL_BATCH):
        yield x[idx[i : i + EVAL_BATCH]], y[idx[i : i + EVAL_BATCH]]


def _count(rank: int, world: int, n_eval: int = N_VAL) -> tuple[dict[str, int], int, float]:
    share = evaluation_share(N_VAL, n_eval, rank, world)
    return count_top1(_models(), _batches(share), device="cpu", micro_batch=MICRO, invariance=2)


# -- in one process --------------------------------------------------------------------------------


@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("n_eval", [0, 1, 5, 7, 50_000])
def test_the_shares_cover_the_evaluated_images_once(world: int, n_eval: int) -> None:
    n_images = 50_000 if n_eval == 50_000 else 13
    shares = [evaluation_share(n_images, n_eval, r, world) for r in range(world)]
    merged = np.concatenate(shares)
    first = np.random.default_rng(0).permutation(n_images)[:n_eval]  # one process's images
    assert len(merged) == len(set(merged.tolist())) == len(first)  # no duplicate, no drop
    assert sorted(merged.tolist()) == sorted(first.tolist())
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_a_rank_outside_the_world_is_refused() -> None:
    with pytest.raises(ValueError, match="rank 2 is not one of 2 ranks"):
        evaluation_share(10, 10, 2, 2)


@pytest.mark.parametrize("world", [2, 3])
def test_the_counts_of_the_ranks_add_up_to_one_process(world: int) -> None:
    whole, n_whole, diff = _count(0, 1)
    parts = [_count(r, world) for r in range(world)]
    assert sum(n for _, n, _ in parts) == n_whole == N_VAL
    for key, correct in whole.items():
        assert sum(p[0][key] for p in parts) == correct
    assert 0 < whole["resnet50_raster"] or 0 < whole[PAIR[0]]  # not a vacuous count
    assert diff == 0.0  # the pair computes one function


@pytest.mark.parametrize(("setting", "autocast", "dtype"), [
    ("bf16", True, torch.bfloat16),
    ("fp32", False, torch.float32),
])  # fmt: skip
def test_the_forward_runs_under_the_runs_precision(setting, autocast, dtype) -> None:
    """Top-1 at the run's precision; the invariance pair's forwards on its 2 images once more, in
    float32 whatever the precision (an exact property)."""
    models = _models()
    with precision.using(setting, "cpu"):
        count_top1(models, _batches(np.arange(N_VAL)), device="cpu", micro_batch=MICRO,
                   invariance=2)  # fmt: skip
    top1 = [(autocast, dtype)] * 5  # batches of 4, 4, 3 in chunks of 3 and 1
    assert models["resnet50_raster"].seen == top1
    for key in PAIR:  # the first chunk: top-1, then the invariance images in float32
        assert models[key].seen == [top1[0], (False, torch.float32), *top1[1:]]


SHRINK = [
    "perceiver.num_latents=8", "perceiver.latent_dim=16", "perceiver.num_cross_attends=2",
    "perceiver.self_attends_per_block=1", "perceiver.self_heads=2", "perceiver.num_bands=4",
    "image_size=32", "eval_resize=36", "resnet=resnet18", "micro_batch=4", "workers=0",
    "eval_batch=2",
]  # fmt: skip


def test_a_rank_of_a_capped_imagenet_run_evaluates_its_share_in_bf16(
    tmp_path: Path, write_imagenet, monkeypatch
) -> None:
    """Rank 1 of 2 (no process group: nothing to reduce) of a --max-steps 3 run at
    --precision bf16 on 3 validation images: it evaluates 1 of them (the other rank 2), every
    top-1 forward in bf16, the invariance check's in float32."""
    from paperzoo.engine import budget
    from paperzoo.engine.distributed import DistInfo
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.lookup import get_experiment
    from paperzoo.experiments.runner import resolve_config
    from paperzoo.models.perceiver import ConvNetWithPositions, PerceiverOnImages

    seen: list[torch.dtype] = []
    for cls in (PerceiverOnImages, ConvNetWithPositions):
        original = cls.forward

        def recording(self, x, _original=original):  # noqa: ANN001, ANN202
            out = _original(self, x)
            if not torch.is_grad_enabled():  # the evaluation (training records with grad)
                seen.append(out.dtype)
            return out

        monkeypatch.setattr(cls, "forward", recording)
    root = write_imagenet(tmp_path / "data")
    cfg = resolve_config("perceiver", "full", dict(s.split("=", 1) for s in SHRINK))
    ctx = RunContext(scale="full", data_root=root, out_dir=tmp_path / "out", quiet=True,
                     max_steps=3, precision="bf16", dist=DistInfo(rank=1, world_size=2))  # fmt: skip
    with budget.capped(budget.StepBudget(3)), precision.using("bf16", "cpu"):
        outcome = get_experiment("perceiver").run(cfg, ctx)
    assert outcome.details["validation_images"] == 1  # its share of 3: [1::2]
    # 1 image: 4 evaluated models in bf16 (the permuted Perceiver included), then the
    # invariance pair in float32
    assert seen == [torch.bfloat16] * 4 + [torch.float32] * 2


# -- two ranks -------------------------------------------------------------------------------------


def test_two_ranks_all_reduce_the_counts_of_one_process(tmp_path: Path, torchrun: Callable) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    proc = torchrun([__file__, str(tmp_path)], env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-6000:]
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(2)]
    whole, n, diff = _count(0, 1)
    for r in ranks:  # every rank holds the sums, not its own share's counts
        assert (r["correct"], r["n"], r["max_diff"]) == (whole, n, diff)
    assert sorted(ranks[0]["share"] + ranks[1]["share"]) == list(range(N_VAL))


def _worker(out: Path) -> int:
    from paperzoo.engine.distributed import init_distributed

    info = init_distributed("cpu")
    correct, n, max_diff = _count(info.rank, info.world_size)
    share = evaluation_share(N_VAL, N_VAL, info.rank, info.world_size).tolist()
    record = {"correct": correct, "n": n, "max_diff": max_diff, "share": share}
    (out / f"rank-{info.rank}.json").write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(_worker(Path(sys.argv[1])))
