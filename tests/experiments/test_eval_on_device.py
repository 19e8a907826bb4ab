"""WRM, GAT and CoordConv evaluate on the device their models trained on, and read their numbers
once, not once per batch.

No accelerator here: the meta device stands in for one. A tensor on the meta device has no
data, so a copy of one to the host raises ("Cannot copy out of meta tensor"); reading a number
from one (``item``, ``tolist``, ``float``, ``int``, ``bool``) is recorded by ``fake_device`` as a
host read and answered with zeros (on the CPU every such read and every ``.cpu()`` is recorded). A model moved to the meta device and evaluated on test data
given on the CPU (as the experiments hold them) must therefore: move the batches to the model,
keep every intermediate there, and read only at the end. On the CPU, the same code gives the
numbers the former CPU evaluation gave (``torch.equal`` / ``==``, not approximately).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.adversarial.attacks import FGSM, PGD
from paperzoo.experiments import RunContext
from paperzoo.metrics.classification import accuracy, predict

META = torch.device("meta")
_READS = ("item", "tolist", "__float__", "__int__", "__bool__", "cpu", "numpy")


@contextmanager
def _recording_reads() -> Iterator[list[tuple[str, str]]]:
    """Record every host read of a tensor as (device type, method); reading a number from a meta
    tensor returns zeros shaped as the real read would be, copying one to the host raises."""
    reads: list[tuple[str, str]] = []
    saved = {name: getattr(torch.Tensor, name) for name in _READS}

    def make(name: str) -> Any:
        original = saved[name]

        def read(self: Tensor) -> Any:
            reads.append((self.device.type, name))
            if self.device.type != "meta" or name in ("cpu", "numpy"):
                return original(self)  # a meta tensor's copy to the host raises
            if name == "tolist":
                return saved["tolist"](torch.zeros(self.shape))
            return {"__bool__": False, "__int__": 0}.get(name, 0.0)

        return read

    for name in _READS:
        setattr(torch.Tensor, name, make(name))
    try:
        yield reads
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)


@pytest.fixture
def fake_device() -> Iterator[list[tuple[str, str]]]:
    with _recording_reads() as reads:
        yield reads


def _classifier(in_features: int = 16, classes: int = 3, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, 8), nn.ELU(), nn.Linear(8, classes))


def _data(n: int, shape: tuple[int, ...] = (1, 4, 4), classes: int = 3) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.rand(n, *shape, generator=g), torch.randint(0, classes, (n,), generator=g)


# -- WRM -----------------------------------------------------------------------------------------


def test_wrm_pgm_errors_run_on_the_models_device_and_read_once(fake_device) -> None:
    from paperzoo.papers.wrm.training import pgm_errors

    x, y = _data(12)
    # 2 budgets, 3 attack batches each: one read for all of them
    errs = pgm_errors(_classifier().to(META), x, y, budgets=[0.5, 1.0], steps=2, batch=5)
    assert fake_device == [("meta", "tolist")]
    assert errs == [1.0, 1.0]  # 1 - the zeros the fake read answered


def test_wrm_pgm_errors_on_the_cpu_are_the_former_numbers() -> None:
    from paperzoo.papers.wrm.training import make_trainer_attack, pgm_errors

    model, (x, y) = _classifier(), _data(23)
    budgets = [0.0, 0.05, 2.0]
    former = []
    for eps in budgets:  # the former evaluation: attacked in batches, accuracy() on the CPU
        attack = make_trainer_attack("pgm", eps=eps, gamma=0.0, steps=3, clip=None)(model)
        adv = torch.cat([attack(x[i : i + 5], y[i : i + 5]) for i in range(0, 23, 5)])
        former.append(1.0 - accuracy(model, adv, y))
    assert pgm_errors(model, x, y, budgets=budgets, steps=3, batch=5) == former
    assert len(set(former)) > 1  # the budgets differ: the numbers are not all trivial


def test_wrm_spheres_geometry_reads_do_not_grow_with_the_grid() -> None:
    from paperzoo.papers.wrm.geometry import boundary_geometry
    from paperzoo.papers.wrm.training import spheres_net

    torch.manual_seed(0)
    models = {"erm": spheres_net(), "wrm": spheres_net()}
    x = torch.randn(300, 2)
    y = (x.norm(dim=1) > 1.2).long()
    reads = {}
    for grid in (101, 301):  # the lattice's logits in 1 and 2 batches of 65,536 points
        with _recording_reads() as r:
            boundary_geometry(models, x, y, lim=3.0, grid=grid)
        reads[grid] = len(r)
    assert reads[101] == reads[301] > 0


def test_wrm_accuracies_run_on_the_models_device_and_read_once(fake_device) -> None:
    from paperzoo.metrics import on_device

    models = {k: _classifier(seed=s).to(META) for s, k in enumerate(("erm", "fgm", "wrm"))}
    x, y = _data(1200)  # 3 batches of 500 per model
    assert on_device.accuracies(models, x, y) == dict.fromkeys(models, 0.0)
    assert fake_device == [("meta", "tolist")]


# -- GAT -----------------------------------------------------------------------------------------


def _gat_cfg() -> Any:
    from paperzoo.papers.gat.config import CONFIGS

    return replace(CONFIGS["smoke"], eps=(0.1, 0.3), pgd_steps=2, eval_batch=4)


def test_gat_evaluation_runs_on_the_models_device_and_reads_once(fake_device) -> None:
    from paperzoo.papers.gat.training import correct_counts, evaluate

    models = {"plain": _classifier().to(META), "dropout": _classifier(seed=1).to(META)}
    x, y = _data(10)
    cfg, ctx = _gat_cfg(), RunContext(seed=3)
    counts = correct_counts(models, x, y, cfg, ctx)
    assert {t.device for t in counts.values()} == {META} and not fake_device
    acc = evaluate(models, x, y, cfg, ctx)
    assert fake_device == [("meta", "tolist")]  # every model, attack and eps: one read
    assert list(acc["plain"]) == ["clean", "fgsm0.1", "fgsm0.3", "pgd0.1", "pgd0.3"]
    assert list(acc["dropout"]) == ["clean", "fgsm0.1", "fgsm0.3"]  # PGD: three models only


@pytest.mark.parametrize("eval_batch", [None, 4])
def test_gat_evaluation_on_the_cpu_gives_the_former_numbers(eval_batch) -> None:
    from paperzoo.papers.gat.training import evaluate

    models = {"plain": _classifier(), "gat": _classifier(seed=1)}
    x, y = _data(10)
    cfg, ctx = replace(_gat_cfg(), eval_batch=eval_batch), RunContext(seed=3)
    got = evaluate(models, x, y, cfg, ctx)
    for name, model in models.items():  # the former evaluation, attacked on the whole set
        row = {"clean": accuracy(model, x, y)}
        for e in cfg.eps:
            row[f"fgsm{e}"] = accuracy(model, FGSM(model, eps=e)(x, y), y)
        for e in cfg.eps:
            g = ctx.generator("pgd", name, str(e))
            pgd = PGD(model, eps=e, alpha=e / 4, steps=cfg.pgd_steps, generator=g)
            row[f"pgd{e}"] = accuracy(model, pgd(x, y), y)
        assert got[name] == row


# -- CoordConv -----------------------------------------------------------------------------------


class _TinyRegressor(nn.Module):
    """A stand-in for ``CoordConvRegressor`` (its ``maps`` checks the image frame with a read of
    its own): output maps (N, 2, 64, 64) and their global max."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(1, 2, 3, padding=1)

    def maps(self, x: Tensor) -> Tensor:
        return self.conv(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.maps(x).amax(dim=(2, 3))


def _centres(n: int) -> Tensor:
    return torch.randint(4, 60, (n, 2), generator=torch.Generator().manual_seed(2))


def test_coordconv_metrics_run_on_the_models_device_and_read_once(fake_device) -> None:
    from paperzoo.models.coordconv import CoordConvPainter
    from paperzoo.papers.coordconv.training import (
        classification_acc,
        max_on_hot_pixel,
        mean_iou,
        regression_pred,
        rmse_px,
    )

    centres = _centres(40)  # painters: 3 batches of 16
    painter = CoordConvPainter().to(META)
    regressor = _TinyRegressor().to(META)
    assert regression_pred(regressor, centres).device == META
    assert not fake_device
    for metric, model in (
        (classification_acc, painter),
        (mean_iou, painter),
        (rmse_px, regressor),
        (max_on_hot_pixel, regressor),
    ):
        fake_device.clear()
        metric(model, centres)
        assert len(fake_device) == 1 and fake_device[0][0] == "meta", metric.__name__


def test_coordconv_metrics_on_the_cpu_are_the_former_numbers() -> None:
    from paperzoo.data.not_so_clevr import CANVAS, onehot_images, scale_coords, square_images
    from paperzoo.models.coordconv import CoordConvPainter
    from paperzoo.papers.coordconv.training import classification_acc, mean_iou, rmse_px

    centres = _centres(40)
    torch.manual_seed(0)
    painter = CoordConvPainter()
    regressor = _TinyRegressor()
    logits = predict(painter, scale_coords(centres), batch_size=16)
    index = centres[:, 0] * CANVAS + centres[:, 1]
    assert classification_acc(painter, centres) == (
        (logits.flatten(1).argmax(1) == index).float().mean().item()
    )
    pred, true = logits > 0, square_images(centres) > 0.5
    iou = (pred & true).sum((1, 2, 3)).float() / (pred | true).sum((1, 2, 3)).float()
    assert mean_iou(painter, centres) == iou.mean().item()
    err = predict(regressor, onehot_images(centres), batch_size=128) * CANVAS - centres.float()
    assert rmse_px(regressor, centres) == err.pow(2).sum(1).mean().sqrt().item()


def test_coordconv_micro_batch_loss_stays_on_the_device() -> None:
    from paperzoo.papers.coordconv.training import _accumulating_step

    model = _TinyRegressor().to(META)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = _accumulating_step(lambda m, b: F.mse_loss(m(b[0]), b[1]), opt, chunk=2)
    batch = (torch.zeros(5, 1, 64, 64, device=META), torch.zeros(5, 2, device=META))
    assert step(model, batch)["loss"].device == META  # summed where the chunks' losses are
