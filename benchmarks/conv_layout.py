"""Every convolutional training path, contiguous vs channels-last, and its fraction of the peak.

The question: should each experiment's convolutional training use the faster memory format?
This benchmark times one training step of every convolutional training path as the experiment's
config runs it, with the engine's ``TrainConfig.channels_last`` off and on. A training step is
forward + backward + the path's optimizer step, together with the attack or the second network
when the path has one. The model, input shape, batch size, loss, attack and optimizer come from
the quick config, and also from the full config where its shapes differ.

* **The step is the engine's.** Each contender is a real ``Trainer`` built for the path, and
  ``Trainer._one_step`` runs on one batch that went through the engine's own layout conversion
  (``paperzoo.engine.transfer.batch_to_device``). Channels-last therefore means exactly what the switch
  does: the model's parameters, and every 4-D batch tensor, in channels-last memory format.
  Modules the engine does not convert stay as they are, for example GAT's perturbation
  generator. The CoordConv painter and the CoordConv regressor (and its twin) convert their
  activations to channels-last inside ``forward`` whatever the switch says, so for them the
  switch changes only the weights' format and the input's.
* **Timing.** Both layouts run interleaved in one process, after two warm-up steps each. One
  round calls each layout ``reps`` times, where ``reps`` makes a round last about
  ``--round-seconds``, and records the mean seconds per step. There are ``--rounds`` rounds.
  The row's values are the medians over rounds. Each round also gives a ratio, contiguous /
  channels-last, and the difference counts as beyond noise when every round puts the ratio on
  the same side of 1: a sign test, two-sided p = 2 / 2^rounds, which is 0.016 at the default
  7 rounds.
* **Fraction of peak.** The FLOPs of a step are 2 x the multiply-adds that
  ``paperzoo.utils.count_macs`` counts for one forward pass of the batch, times the passes the
  step makes. A pass that also computes weight gradients counts 3 forwards (forward, input
  gradient, weight gradient), as ``benchmarks/resnet.py`` counts. An attack step, which only
  needs the gradient with respect to the input, counts 2. The peak is a dense fp32 1024 x 1024
  matmul timed as a third contender in the same rounds, so it sees the same load as the steps.
  ``_common.matmul_peak`` once at the start is printed too, for reference.
* **Agreement.** From the same initial weights, batch and RNG state, each layout computes three
  things on the clean batch: the path's training loss, the gradient with respect to all
  parameters (as one vector), and the gradient with respect to the input, which is the gradient
  the attacks follow. The check records the largest difference over the three. Each difference
  is relative to the largest magnitude in the contiguous run, and the tolerance is 1e-3, fixed
  in advance. fp32 rounding with a different summation order gives about 1e-6, and a layout bug
  gives differences of order 1. The gradients form one vector because some are zero in exact
  arithmetic: a conv bias followed by batch norm has only rounding noise as its gradient, and
  noise measured against noise means nothing. (The first version normalised each tensor on its
  own. The plumbing run at batch 2 showed this problem; the tolerance was not changed.) Attacks
  and sampled noise are left out of the check on purpose. A sign-of-gradient attack turns a
  rounding-level difference in a near-zero gradient entry into a whole step, and noise sampled
  with ``rand_like`` follows the memory order. Both would then differ by construction, not
  because of an error.
* **Distance from exact arithmetic.** To read a failed check, the same three tensors are also
  computed in float64, contiguous, and each layout's largest relative difference from them is
  reported as ``float64_error``. Paths whose objective draws dtype-dependent random numbers
  have none (dropout masks, the VAE's normal samples). A check that fails while the contiguous
  run is close to float64 means channels-last computed less accurately. When both layouts are
  far from float64, the function is ill-conditioned in fp32, or an input sits at a kink (ReLU,
  max-pool) within rounding distance.

Paths without convolutions are not here: DRAW, GG-NN, Path-SGD's MLPs, the Perceiver itself and
WReN on codes. Full-scale ResNet training is covered by ``benchmarks/resnet.py``: ResNet-20/56 at
batch 128 on 3 x 32 x 32, which is also obfuscated-gradients' full-scale CIFAR ResNet-20.
CoordConv's full config trains the same models at the same batch sizes as its quick one. The
VAE rows stand for all six objectives: beta-VAE's step is also that of AnnealedVAE, DIP-VAE-I/II
and beta-TCVAE (the same convolutions; the regularisers act on the 10 latents), and FactorVAE
adds its discriminator. Inputs are random images of the configs' shapes (the step's cost does
not depend on the pixel values).

    python benchmarks/conv_layout.py [--rounds N] [--threads T] [--scales quick,full]
                                     [--paths SUBSTR,...] [--quick]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from _common import (
    add_common_args,
    agreement,
    apply_quick,
    apply_threads,
    matmul_peak,
    result,
    row,
    time_interleaved,
)
from paperzoo.adversarial.attacks import FGSM, PGD
from paperzoo.adversarial.defenses import InputTransformDefense, RandomResizePad
from paperzoo.adversarial.defenses.thermometer import ThermometerEncoding
from paperzoo.adversarial.gat import GenerativeAdversarialTrainer, PerturbationGenerator
from paperzoo.adversarial.training import adversarial_loss_fn, make_optimizer
from paperzoo.data.not_so_clevr import CANVAS, onehot_images, scale_coords, square_images
from paperzoo.data.transforms import translate
from paperzoo.engine import TrainConfig, Trainer, seeded
from paperzoo.engine.transfer import batch_to_device
from paperzoo.experiments import EXPERIMENTS
from paperzoo.models.coordconv import (
    ConvRegressor,
    CoordConvPainter,
    CoordConvRegressor,
    DeconvPainter,
)
from paperzoo.models.resnet import CifarResNet
from paperzoo.models.small import SmallCNN
from paperzoo.models.vae import VAE, VAEConfig, make_optimizers, train_step
from paperzoo.models.wrm import WRMNet
from paperzoo.papers.coordconv.training import _accumulating_step
from paperzoo.papers.wrm.config import MNIST_CLIP
from paperzoo.papers.wrm.training import make_trainer_attack
from paperzoo.utils import count_macs

TOL = 1e-3  # agreement tolerance (relative to each tensor's largest magnitude), fixed in advance
SEED = 100  # weights, batches and the RNG state of the check
PEAK_N = 1024  # side of the fp32 matmul that measures the peak (as _common.matmul_peak)
LAYOUTS = ("contiguous", "channels_last")

Batch = tuple[Tensor, ...]
LossFn = Callable[[nn.Module, Batch], Any]


@dataclass
class Workload:
    """One path, built fresh for one layout (the same seed gives both layouts the same state)."""

    model: nn.Module  # the model the Trainer trains (and converts to channels-last)
    batch: Batch  # one batch as the engine's sampler yields it, contiguous
    loss_fn: LossFn  # the Trainer's loss function (manual when ``optimizer`` is None)
    optimizer: torch.optim.Optimizer | None
    objective: Callable[[nn.Module, Batch], Tensor]  # the check: training loss on the clean batch
    macs: int  # multiply-adds of one training step (forward MACs x passes; module doc)
    # the check's objective draws the same random numbers in float64 (False: dropout masks and
    # normal samples depend on the dtype, so a float64 run is no reference)
    float64_reference: bool = True


@dataclass(frozen=True)
class Path:
    experiment: str  # the experiment (``paperzoo reproduce NAME``)
    name: str  # the run inside it, as its runs/ directory or claim names it
    scale: str  # the config it is built from
    build: Callable[[int | None], Workload]  # batch override (--quick) -> a fresh workload

    @property
    def label(self) -> str:
        return f"{self.experiment} {self.name} ({self.scale})"


def _cfg(experiment: str, scale: str) -> Any:
    return EXPERIMENTS.get(experiment).configs[scale]  # type: ignore[attr-defined]


def _images(n: int, shape: Sequence[int], classes: int = 10) -> Batch:
    """n images in [0, 1] and n labels, from the benchmark's seed."""
    g = torch.Generator().manual_seed(SEED)
    return torch.rand(n, *shape, generator=g), torch.randint(0, classes, (n,), generator=g)


def _ce(model: nn.Module, batch: Batch) -> Tensor:
    return F.cross_entropy(model(batch[0]), batch[1])


def _classifier(
    model: nn.Module,
    batch: Batch,
    opt: torch.optim.Optimizer,
    loss_fn: LossFn,
    passes: int,
    objective: Callable[[nn.Module, Batch], Tensor] = _ce,
) -> Workload:
    """A classifier path whose step makes ``passes`` forward-equivalents on the batch."""
    macs = passes * count_macs(model, batch[0])
    return Workload(model, batch, loss_fn, opt, objective, macs)


# -- resnet (quick): Fig. 6 in miniature on 7x7 digits ------------------------------------------


def _resnet(net: str, scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("resnet", scale)
        depth = int(net.removeprefix("plain").removeprefix("resnet"))
        side = 28 // cfg.downsample  # mnist5k average-pooled (resnet.training.load_data)
        with seeded(SEED):
            model = CifarResNet(depth=depth, residual=net.startswith("resnet"), in_chans=1)
        opt = torch.optim.SGD(
            model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
        return _classifier(model, _images(batch or cfg.batch_size, (1, side, side)), opt, _ce, 3)

    return build


# -- coordconv: the Not-so-Clevr painters and regressors (quick and full share the shapes) -----


def _centres(n: int) -> Tensor:
    g = torch.Generator().manual_seed(SEED)
    return torch.randint(0, CANVAS, (n, 2), generator=g)


def _painter_cls(model: nn.Module, batch: Batch) -> Tensor:  # papers/coordconv.py, cls_loss
    return F.cross_entropy(model(batch[0]).flatten(1), batch[1])  # softmax over all pixels


def _render(model: nn.Module, batch: Batch) -> Tensor:  # papers/coordconv.py, render_loss
    return F.binary_cross_entropy_with_logits(model(batch[0]), batch[1])


def _regress(model: nn.Module, batch: Batch) -> Tensor:  # papers/coordconv.py, reg_loss
    return F.mse_loss(model(batch[0]), batch[1])


def _coordconv(task: str, arch: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("coordconv", "quick")
        painter = task != "regression"
        with seeded(SEED):
            if painter:
                model: nn.Module = CoordConvPainter() if arch == "coordconv" else DeconvPainter()
            else:
                model = {
                    "coordconv": CoordConvRegressor,
                    "conv": ConvRegressor,
                    "conv_twin": lambda: CoordConvRegressor(add_coords=False),
                }[arch]()
        coordconv = arch == "coordconv"
        if painter:
            n = batch or (cfg.batch_size if coordconv else cfg.deconv_batch_size)
            c = _centres(n)
            if task == "classification":
                data: Batch = (scale_coords(c), c[:, 0] * CANVAS + c[:, 1])
                objective = _painter_cls
            else:
                data, objective = (scale_coords(c), square_images(c)), _render
            lr = cfg.lr if coordconv else cfg.deconv_lr
        else:
            n = batch or cfg.reg_batch_size
            c = _centres(n)
            data, objective = (onehot_images(c), c.float() / CANVAS), _regress
            lr = cfg.conv_reg_lr if arch == "conv" else cfg.reg_lr
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        loss_fn: LossFn = objective
        optimizer: torch.optim.Optimizer | None = opt
        if painter and coordconv and cfg.micro_batch < n:  # the painters' accumulated chunks
            loss_fn, optimizer = _accumulating_step(objective, opt, cfg.micro_batch), None
        return Workload(model, data, loss_fn, optimizer, objective, 3 * count_macs(model, data[0]))

    return build


# -- obfuscated-gradients: SmallCNN classifiers behind the defences, and PGD training ------------


def _obfuscated(name: str, scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("obfuscated-gradients", scale)
        side = 28  # mnist5k / MNIST

        def cnn(in_chans: int = 1, image_size: int = side) -> SmallCNN:
            return SmallCNN(
                in_chans=in_chans,
                image_size=image_size,
                channels=cfg.channels,
                hidden=cfg.hidden,
            )

        with seeded(SEED):
            if name == "thermometer":
                levels = cfg.thermometer_levels
                model: nn.Module = InputTransformDefense(
                    transform=ThermometerEncoding(levels=levels), classifier=cnn(in_chans=levels)
                )
            elif name == "resize_pad":
                resize = RandomResizePad(
                    out_size=cfg.resize_out,
                    min_size=cfg.resize_min * side // 28,
                    generator=torch.Generator().manual_seed(SEED),
                )
                model = InputTransformDefense(
                    transform=resize, classifier=cnn(image_size=cfg.resize_out)
                )
            else:
                model = cnn()
        opt = make_optimizer(model, "adam", cfg.lr)
        data = _images(batch or cfg.batch_size, (1, side, side))
        if name != "pgd_at":
            return _classifier(model, data, opt, adversarial_loss_fn(None), 3)
        # pgd_adversarial_training after its eps warm-up: PGD with a random start every batch
        attack = adversarial_loss_fn(
            lambda m: PGD(m, eps=cfg.eps, alpha=cfg.at_alpha, steps=cfg.at_attack_steps)
        )
        return _classifier(model, data, opt, attack, 3 + 2 * cfg.at_attack_steps)

    return build


# -- wrm: the paper's ELU CNN trained by ERM, FGM, IFGM, PGM and WRM -----------------------------


def _wrm(method: str, scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("wrm", scale)
        data = _images(batch or cfg.mnist_batch, (1, 28, 28))
        c2 = data[0].flatten(1).norm(dim=1).mean().item()
        # gamma as the run sets it; eps (the run's sqrt(rho_hat) of WRM) at the budgets' scale,
        # 0.1 C2: the step's cost does not depend on either
        factory = make_trainer_attack(
            method, eps=0.1 * c2, gamma=cfg.mnist_gamma_c2 * c2, steps=cfg.adv_steps,
            clip=MNIST_CLIP,
        )  # fmt: skip
        with seeded(SEED):
            model = WRMNet(width=cfg.mnist_width)
        opt = make_optimizer(model, "adam", cfg.mnist_lr)
        attack_steps = {"erm": 0, "fgm": 1}.get(method, cfg.adv_steps)
        return _classifier(model, data, opt, adversarial_loss_fn(factory), 3 + 2 * attack_steps)

    return build


# -- gat: the five classifiers of the comparison (and GAT's generator) --------------------------


def _gat(name: str, scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("gat", scale)
        shape = (1, 28, 28) if scale == "quick" else (3, 32, 32)  # mnist5k / CIFAR-10
        data = _images(batch or cfg.batch_size, shape)
        with seeded(SEED):
            model = SmallCNN(
                in_chans=shape[0], image_size=shape[-1], channels=cfg.channels,
                hidden=cfg.hidden, dropout=cfg.dropout if name == "dropout" else 0.0,
            )  # fmt: skip
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        if name == "gat":
            with seeded(SEED + 1):
                gen = PerturbationGenerator(
                    in_chans=shape[0], hidden=cfg.gen_hidden, scale=cfg.train_eps
                )
            gat = GenerativeAdversarialTrainer(
                generator=gen,
                generator_optimizer=torch.optim.Adam(gen.parameters(), lr=cfg.lr),
                classifier_optimizer=opt,
                config=cfg.gat,
            )
            # generator step: input gradient (2), G with weight gradients (3), classifier
            # forward + input gradient (2); classifier step: input gradient (2), G forward (1),
            # clean + perturbed batch with weight gradients (2 x 3)
            macs = 10 * count_macs(model, data[0]) + 4 * count_macs(gen, data[0])
            return Workload(model, data, gat.step, None, _ce, macs)
        if name == "fgsm_at":  # FGSM (2), then the clean and adversarial halves (2 x 3)
            loss = adversarial_loss_fn(lambda m: FGSM(m, eps=cfg.train_eps), clean_weight=0.5)
            return _classifier(model, data, opt, loss, 8)
        if name == "noise":  # clean and noisy halves in one forward (2 x 3)
            return _classifier(model, data, opt, _noise(cfg.train_eps), 6)
        w = _classifier(model, data, opt, adversarial_loss_fn(None), 3)
        w.float64_reference = name != "dropout"
        return w

    return build


def _noise(eps: float) -> LossFn:
    """experiments/gat/training.py's random-noise training (``_noise_loss``, inputs in [0, 1])."""

    def loss_fn(model: nn.Module, batch: Batch) -> Tensor:
        x, y = batch
        noisy = (x + (torch.rand_like(x) * 2 - 1) * eps).clamp(0.0, 1.0)
        logits_clean, logits_noisy = model(torch.cat([x, noisy])).split(len(x))
        return 0.5 * F.cross_entropy(logits_clean, y) + 0.5 * F.cross_entropy(logits_noisy, y)

    return loss_fn


# -- disentanglement: the study's VAE (and FactorVAE's discriminator) ---------------------------


def _vae(method: str, scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("disentanglement", scale)
        size = cfg.image_size
        vcfg = VAEConfig(in_channels=3, image_size=size)  # abstract-dsprites: 3 channels
        with seeded(SEED):
            model = VAE(config=vcfg, method=method, disc_width=cfg.disc_width)
        vae_opt, disc_opt = make_optimizers(model, lr=cfg.vae_lr)
        x = _images(batch or cfg.vae_batch, (3, size, size))[0]

        def loss_fn(m: nn.Module, b: Batch) -> dict[str, Tensor]:
            return train_step(m, b[0], vae_opt, disc_opt)  # type: ignore[arg-type]

        def objective(m: nn.Module, b: Batch) -> Tensor:
            return m.losses(b[0])["loss"]  # type: ignore[operator]

        macs = 3 * count_macs(model, x)  # encoder + decoder
        if model.discriminator is not None:  # D(z) in the VAE loss; D(z), D(shuffled) in its own
            macs += 9 * count_macs(model.discriminator, (len(x), vcfg.num_latent))
        return Workload(model, (x,), loss_fn, None, objective, macs, float64_reference=False)

    return build


# -- perceiver: the ConvNet baseline (a CIFAR ResNet-8 at quick scale) --------------------------


def _perceiver_convnet(scale: str) -> Callable[[int | None], Workload]:
    def build(batch: int | None) -> Workload:
        cfg = _cfg("perceiver", scale)
        with seeded(SEED):
            model = CifarResNet(depth=cfg.resnet_depth, base_width=cfg.resnet_width, in_chans=1)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

        def loss_fn(m: nn.Module, b: Batch) -> Tensor:  # papers/perceiver/training.py, fit
            xb = translate(b[0], cfg.translate, 0.0)
            return F.cross_entropy(m(xb), b[1], label_smoothing=cfg.label_smoothing)

        data = _images(batch or cfg.batch_size, (1, 28, 28))
        return _classifier(model, data, opt, loss_fn, 3, objective=loss_fn)

    return build


def paths() -> list[Path]:
    """Every convolutional training path (quick; full where its shapes differ)."""
    out = [Path("resnet", n, "quick", _resnet(n, "quick")) for n in _resnet_nets()]
    out += [
        Path("coordconv", f"{split}-{task}-{arch}", "quick", _coordconv(task, arch))
        for split, task, arch in (
            ("quadrant", "classification", "coordconv"),
            ("quadrant", "classification", "deconv"),
            ("quadrant", "regression", "coordconv"),
            ("quadrant", "regression", "conv"),
            ("quadrant", "regression", "conv_twin"),
            ("quadrant", "rendering", "coordconv"),
        )
    ]
    for scale in ("quick", "full"):
        out += [
            Path("obfuscated-gradients", n, scale, _obfuscated(n, scale))
            for n in ("undefended", "thermometer", "resize_pad", "pgd_at")
        ]
        out += [
            Path("wrm", f"mnist-{m}", scale, _wrm(m, scale))
            for m in ("erm", "fgm", "ifgm", "pgm", "wrm")
        ]
        out += [
            Path("gat", n, scale, _gat(n, scale))
            for n in ("plain", "dropout", "noise", "fgsm_at", "gat")
        ]
        out += [
            Path("disentanglement", f"vae {m}", scale, _vae(m, scale))
            for m in ("beta_vae", "factor_vae")
        ]
        out.append(Path("perceiver", "convnet", scale, _perceiver_convnet(scale)))
    return out


def _resnet_nets() -> tuple[str, ...]:
    cfg = _cfg("resnet", "quick")
    return (cfg.plain_shallow, cfg.plain_deep, cfg.res_shallow, cfg.res_deep)


# -- measuring -----------------------------------------------------------------------------------


def _engine(w: Workload, channels_last: bool) -> tuple[Trainer, Batch]:
    """The path's Trainer with the layout switch, and the batch as the engine converts it."""
    config = TrainConfig(
        steps=1, batch_size=len(w.batch[0]), channels_last=channels_last, progress=False
    )
    trainer = Trainer(w.model, w.optimizer, w.loss_fn, config=config, manual=w.optimizer is None)
    return trainer, batch_to_device(w.batch, trainer.device, channels_last)


def _loss_and_grads(w: Workload, model: nn.Module, batch: Batch) -> list[Tensor]:
    """The check's three tensors: the clean training loss, all parameter gradients (one vector)
    and the input gradient, from the RNG state every layout starts the check with."""
    x = batch[0].detach().requires_grad_(True)  # keeps the engine's memory format
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    torch.manual_seed(SEED)
    loss = w.objective(model, (x, *batch[1:]))
    grads = torch.autograd.grad(loss, [*params, x], allow_unused=True)
    *pgrads, xgrad = grads
    flat = [
        p.new_zeros(p.numel()) if g is None else g.flatten()
        for g, p in zip(pgrads, params, strict=True)
    ]
    # (None: the input does not reach the loss differentiably, e.g. the thermometer code)
    return [loss.detach(), torch.cat(flat), torch.zeros(()) if xgrad is None else xgrad]


def _max_rel_diff(a: Sequence[Tensor], b: Sequence[Tensor]) -> float:
    """max over the tensors of max |a - b| / max |a| (0 where both are exactly zero)."""
    worst = 0.0
    for ta, tb in zip(a, b, strict=True):
        scale = ta.abs().max().item()
        diff = (ta - tb).abs().max().item()
        worst = max(worst, diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf))
    return worst


def _float64(w: Workload) -> Workload:
    """``w`` in float64 (model and floating batch tensors), for the reference of the check."""
    batch = tuple(t.double() if t.is_floating_point() else t for t in w.batch)
    return Workload(w.model.double(), batch, w.loss_fn, w.optimizer, w.objective, w.macs)


def measure(path: Path, *, rounds: int, round_seconds: float, batch: int | None) -> dict[str, Any]:
    """Time ``path``'s training step in both layouts (interleaved) and check that they agree."""
    loads = {layout: path.build(batch) for layout in LAYOUTS}  # same seed: same state
    engines = {lay: _engine(w, lay == "channels_last") for lay, w in loads.items()}
    checked = {
        lay: _loss_and_grads(loads[lay], trainer.model, b) for lay, (trainer, b) in engines.items()
    }
    diff = _max_rel_diff(checked["contiguous"], checked["channels_last"])
    f64_err: dict[str, float] | None = None
    if loads["contiguous"].float64_reference:  # each layout's distance from exact arithmetic
        ref = _float64(path.build(batch))
        trainer, b = _engine(ref, False)
        exact = _loss_and_grads(ref, trainer.model, b)
        f64_err = {lay: _max_rel_diff(exact, checked[lay]) for lay in LAYOUTS}
    steppers: dict[str, Callable[[], object]] = {
        lay: (lambda t=t, b=b: t._one_step(b)) for lay, (t, b) in engines.items()
    }
    g = torch.Generator().manual_seed(SEED)
    a, b = (torch.randn(PEAK_N, PEAK_N, generator=g) for _ in range(2))
    steppers["matmul"] = lambda: a @ b  # the peak, timed in the same rounds (the same load)
    warm = {}
    for name, step in steppers.items():  # warm-up: allocator, kernels' first-call paths
        t0 = time.perf_counter()
        for _ in range(2):
            step()
        warm[name] = (time.perf_counter() - t0) / 2
    step_s = max(warm[lay] for lay in LAYOUTS)
    reps = {lay: max(1, round(round_seconds / max(step_s, 1e-6))) for lay in LAYOUTS}
    reps["matmul"] = max(1, round(min(round_seconds, step_s) / max(warm["matmul"], 1e-6)))
    times = time_interleaved(steppers, rounds, reps)
    per_round = [c / cl for c, cl in zip(times["contiguous"], times["channels_last"], strict=True)]
    w = loads["contiguous"]
    return {
        "path": path,
        "batch": len(w.batch[0]),
        "input": tuple(w.batch[0].shape[1:]),
        "macs": w.macs,
        "median": {lay: statistics.median(times[lay]) for lay in LAYOUTS},
        "peak_gflops": 2 * PEAK_N**3 / statistics.median(times["matmul"]) / 1e9,
        "per_round": per_round,
        "reps": reps["contiguous"],
        "diff": diff,
        "float64_error": f64_err,
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per path")
    p.add_argument(
        "--round-seconds", type=float, default=0.25, help="approximate seconds per layout a round"
    )
    p.add_argument("--scales", default="quick,full", help="configs to take the paths from")
    p.add_argument("--paths", default="", help="only paths whose label contains one of these")
    p.add_argument("--batch", type=int, help="override every path's batch size (default: its own)")
    add_common_args(p)
    args = p.parse_args(argv)
    apply_quick(args, rounds=1, round_seconds=0.0, scales="quick", batch=2)
    apply_threads(args)
    if args.rounds < 1:
        raise ValueError(f"--rounds must be >= 1, got {args.rounds}")
    scales = set(args.scales.split(","))
    wanted = [s for s in args.paths.split(",") if s]
    todo = [
        pt
        for pt in paths()
        if pt.scale in scales and (not wanted or any(s in pt.label for s in wanted))
    ]
    if not todo:
        raise ValueError(f"no path matches --scales {args.scales} --paths {args.paths!r}")
    peak = matmul_peak(PEAK_N)
    print(
        f"threads={torch.get_num_threads()}  fp32 matmul peak: {peak:.1f} GFLOP/s at the start "
        "(each path's fraction of peak uses the matmul timed in its own rounds)"
    )
    print(
        f"{'path':<52} {'batch':>5} {'GMAC':>6} {'contig ms':>9} {'cl ms':>8} {'c/cl':>5} "
        f"{'rounds':>11} {'noise?':>6} {'%pk c':>6} {'%pk cl':>6} {'check':>8} "
        f"{'f64 err c / cl':>17}"
    )
    rows = []
    for pt in todo:
        m = measure(pt, rounds=args.rounds, round_seconds=args.round_seconds, batch=args.batch)
        med, rr, f64 = m["median"], m["per_round"], m["float64_error"]
        ratio = med["contiguous"] / med["channels_last"]
        beyond = len(rr) > 1 and (min(rr) > 1 or max(rr) < 1)
        frac = {lay: 2 * m["macs"] / med[lay] / 1e9 / m["peak_gflops"] for lay in LAYOUTS}
        print(
            f"{pt.label:<52} {m['batch']:>5} {m['macs'] / 1e9:>6.2f} "
            f"{1e3 * med['contiguous']:>9.2f} {1e3 * med['channels_last']:>8.2f} {ratio:>5.2f} "
            f"{min(rr):>5.2f}-{max(rr):<5.2f} {'beyond' if beyond else 'within':>6} "
            f"{100 * frac['contiguous']:>5.1f}% {100 * frac['channels_last']:>5.1f}% "
            f"{m['diff']:>8.1e} "
            + (f"{f64['contiguous']:>8.1e} {f64['channels_last']:>8.1e}" if f64 else f"{'-':>17}")
        )
        faster = "channels_last" if ratio > 1 else "contiguous"
        rows.append(
            row(
                f"{pt.label}: training step, batch {m['batch']}, input {list(m['input'])}",
                {"channels_last": med["channels_last"], "contiguous": med["contiguous"]},
                ours="channels_last",
                anchor="contiguous",
                unit="median s per training step (engine's TrainConfig.channels_last on / off)",
                agreed=agreement(
                    "training loss, all parameter gradients and input gradient on the clean "
                    "batch, largest difference relative to the contiguous maximum",
                    m["diff"],
                    TOL,
                ),
                experiment=pt.experiment,
                path=pt.name,
                scale=pt.scale,
                batch=m["batch"],
                macs_per_step=m["macs"],
                peak_fraction=frac,
                peak_gflops=m["peak_gflops"],
                round_ratios=rr,
                reps_per_round=m["reps"],
                faster=faster,
                beyond_noise=beyond,
                float64_error=f64,
            )
        )
    return result("conv_layout", args, rows, extra={"matmul_peak_gflops": peak})


if __name__ == "__main__":
    main()
