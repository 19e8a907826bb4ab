"""The price of a full run: training FLOP counted from the models, and GPU hours at a stated
utilisation of one H100 / H200-class GPU in bf16 (``paperzoo list --json``: ``full_cost``).

For each paper, ``full_cost(name)`` takes the full config and ``Experiment.plan`` (the models
and their planned optimisation steps), builds each planned model at the full config, and counts
one training step's forward and backward pass at the full batch with PyTorch's FLOP counter on
the meta device (``paperzoo.utils.flops.step_flop``; models whose forward needs real tensors
are counted on a batch of two on the CPU and scaled to the batch). Steps that run an attack
inside them (adversarial training) count one forward and backward pass per attack iteration
more. Evaluation is added the same way: forward passes (or forward and backward passes, for
attack iterations) per evaluated example, times the examples and evaluations the config asks
for. What each paper's count leaves out or approximates is in its ``assumptions``.

GPU hours are ``flop / (PEAK_BF16_FLOPS * UTILISATION) / 3600``:

* ``PEAK_BF16_FLOPS`` = 989e12: the dense BF16 tensor-core peak of an H100 SXM (NVIDIA's H100
  datasheet gives 1,979 TFLOPS "with sparsity", twice the dense rate; the H200 has the same
  compute). A run at ``--precision fp32`` on such a GPU is slower (TF32 tensor cores: half the
  bf16 rate; plain fp32: about 67 TFLOPS).
* ``UTILISATION`` = 0.4: the fraction of that peak a training loop sustains, an assumption (large
  transformers and ResNet-50 reach 40-50 % in tuned code; small nets, GG-NN's graphs of tens of
  nodes or batches of 16, reach far less, so their hours are a lower bound).

Counting takes minutes (PyTorch's FLOP counter dispatches every operation through Python: DRAW's
64 glimpses alone take about a minute), so ``paperzoo list --json`` reads the counts from
``full_costs.json`` next to this module, written by ``tools/count_costs.py``; each entry holds a
digest of the config and plan it was counted from (``config_digest``), and the test suite
checks that every digest is current and that a recount of small papers gives the stored numbers.
Nothing here has been checked against a timed GPU run yet: ``reproduce --max-steps N``
on CUDA prints the measured estimate beside this one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.utils.flops import forward_flop, step_flop

__all__ = [
    "COSTS_FILE",
    "PEAK_BF16_FLOPS",
    "UTILISATION",
    "Piece",
    "cached_costs",
    "config_digest",
    "full_cost",
    "gpu_hours",
]

log = logging.getLogger(__name__)

PEAK_BF16_FLOPS = 989e12  # H100 SXM, dense BF16 (datasheet: 1,979 TFLOPS with sparsity)
UTILISATION = 0.4  # sustained fraction of the peak (an assumption, see the module doc)
GPU = "one H100 / H200-class GPU"


@dataclass(frozen=True)
class Piece:
    """One part of a full run: ``count`` repetitions of something costing ``flop`` each."""

    what: str
    flop: float  # per repetition (a training step, an evaluated example, ...)
    count: float  # repetitions (planned steps, examples x evaluations, ...)

    @property
    def total(self) -> float:
        return self.flop * self.count


def gpu_hours(flop: float) -> float:
    """Hours of one H100 / H200-class GPU for ``flop`` at ``UTILISATION`` of the bf16 peak."""
    return flop / (PEAK_BF16_FLOPS * UTILISATION) / 3600.0


Inputs = Sequence[int] | tuple[Tensor, ...]


def _real(inputs: Inputs, batch: int) -> tuple[Tensor, ...]:
    """``inputs`` as real CPU tensors with their batch dimension cut to ``batch``."""
    if all(isinstance(v, int) for v in inputs):
        shape = tuple(int(v) for v in inputs)  # type: ignore[arg-type]
        return (torch.rand((batch, *shape[1:])),)
    return tuple(t[:batch].to("cpu") if t.is_floating_point() else t[:batch] for t in inputs)  # type: ignore[union-attr]


def _batch_of(inputs: Inputs) -> int:
    first = inputs[0]
    return int(first.shape[0]) if isinstance(first, Tensor) else int(first)  # type: ignore[arg-type]


def _count(model: nn.Module, inputs: Inputs, *, backward: bool) -> float:
    """FLOP of a training step (``backward``) or a forward pass of ``model`` on ``inputs``: on
    the meta device at the full batch, else (a forward that needs real tensors) on a batch of
    two on the CPU, scaled linearly to the full batch."""
    fn = step_flop if backward else forward_flop
    spec = inputs[0] if len(inputs) == 1 and isinstance(inputs[0], Tensor) else inputs
    try:
        return float(fn(model, spec))  # type: ignore[arg-type]
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as err:
        log.debug("meta count of %s failed (%s); counting a batch of two", type(model), err)
    small = 2
    real = _real(inputs, small)
    return float(fn(model, real, meta=False)) * _batch_of(inputs) / small


def step(model: nn.Module, inputs: Inputs) -> float:
    """FLOP of one training step (forward and backward) of ``model`` on the batch ``inputs``."""
    return _count(model, inputs, backward=True)


def forward(model: nn.Module, inputs: Inputs) -> float:
    """FLOP of one forward pass of ``model`` on the batch ``inputs``."""
    return _count(model, inputs, backward=False)


# ----------------------------------------------------------------------------------- papers
Counter = Callable[[Any, list[tuple[str, int]]], tuple[list[Piece], str]]
_PAPERS: dict[str, Counter] = {}


def _paper(name: str) -> Callable[[Counter], Counter]:
    def register(fn: Counter) -> Counter:
        _PAPERS[name] = fn
        return fn

    return register


@_paper("resnet")
def _resnet(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.models.resnet import CifarResNet

    pieces = []
    for name, steps in plan:
        depth = int("".join(c for c in name if c.isdigit()))
        net = CifarResNet(depth=depth, residual=name.startswith("resnet"), num_classes=10)
        pieces.append(Piece(f"{name} training", step(net, (cfg.batch_size, 3, 32, 32)), steps))
        per_image = forward(net, (100, 3, 32, 32)) / 100
        evals = steps // cfg.eval_every if cfg.eval_every else 0
        pieces.append(Piece(f"{name} evaluation", per_image, evals * cfg.n_val + 10_000))
    return pieces, (
        f"CIFAR-10 nets at batch {cfg.batch_size}; evaluation: {cfg.n_val:,} validation images "
        f"every {cfg.eval_every:,} steps and the 10,000 test images once per net"
    )


@_paper("obfuscated-gradients")
def _obfuscated(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.adversarial.cifar_model import MadryResNet

    c = cfg.cifar
    net = MadryResNet(in_chans=3, num_classes=10, filters=c.filters, units=c.units)
    thermo = MadryResNet(
        in_chans=3 * c.thermometer_levels, num_classes=10, filters=c.filters, units=c.units
    )
    shape = (c.batch_size, 3, 32, 32)
    f_nat = step(net, shape)
    f_th = step(thermo, (c.batch_size, 3 * c.thermometer_levels, 32, 32))
    per_nat, per_th = f_nat / c.batch_size, f_th / c.batch_size
    steps = dict(plan)
    n = c.n_eval
    plain, eot = 4 * c.pgd_steps, 2 * c.eot_samples * c.pgd_steps  # passes per example
    pieces = [
        Piece("natural net training", f_nat, steps["cifar10 natural"]),
        Piece("thermometer net training", f_th, steps["cifar10 thermometer"]),
        # each step: at_attack_steps forward+backward passes of the attack, then the update
        Piece("PGD adversarial training", f_nat * (1 + c.at_attack_steps), steps["cifar10 pgd_at"]),
        Piece("attacks on the natural net (PGD, SAP, resize-pad)", per_nat, n * plain),
        Piece("EOT attacks (SAP, resize-pad)", per_nat, n * eot),
        Piece("attacks on the thermometer net (PGD, BPDA)", per_th, n * 2 * c.pgd_steps),
        Piece(
            "PGD on the adversarially trained net", per_nat, c.n_eval_pgd_at * c.pgd_at_eval_steps
        ),
    ]
    return pieces, (
        f"CIFAR-10 part (Madry et al.'s wide ResNet, filters {list(c.filters)}); a training "
        f"attack iteration and an evaluation attack iteration each count as a forward and "
        f"backward pass of the whole net (an upper bound: attacks need no weight gradients); "
        f"the resize-pad defence's {c.resize_out}-pixel canvas and SAP's pruning are counted "
        "as the natural net on 32-pixel images; clean accuracies are not counted (negligible)"
    )


@_paper("wrm")
def _wrm(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.experiments.wrm import mnist_net, spheres_net

    sph, mn = spheres_net(), mnist_net(cfg.mnist_width)
    f_sph = step(sph, (cfg.spheres_batch, 2))
    f_mn = step(mn, (cfg.mnist_batch, 1, 28, 28))
    inner = {"wrm": cfg.wrm_steps, "fgm": 1, "erm": 0}
    adv = {"wrm": cfg.adv_steps, "fgm": 1, "ifgm": cfg.adv_steps, "pgm": cfg.adv_steps, "erm": 0}
    pieces = []
    for name, steps in plan:
        part, method = name.split("-", 1)
        if part == "spheres":
            pieces.append(Piece(name, f_sph * (1 + inner[method]), steps))
        else:
            pieces.append(Piece(name, f_mn * (1 + adv[method]), steps))
    per = f_mn / cfg.mnist_batch
    attacks = len(cfg.attack_budgets) * cfg.attack_steps * cfg.attack_n
    pieces.append(Piece("PGM attacks on the 5 MNIST nets", per, 5 * attacks))
    return pieces, (
        "spheres MLP and MNIST CNN at their batches; an adversarial step counts one forward and "
        "backward pass per inner iteration; evaluation: the PGM attacks "
        f"({len(cfg.attack_budgets)} budgets x {cfg.attack_steps} steps x {cfg.attack_n:,} "
        "digits per net); the spheres' certificate grid is not counted (a 2-4-2-2 MLP)"
    )


@_paper("coordconv")
def _coordconv(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.experiments.coordconv import _REGRESSORS
    from paperzoo.models.coordconv import CoordConvPainter, DeconvPainter

    side = 64
    pieces = []
    for name, steps in plan:
        kind, task, arch = name.split("-", 2)
        if task in ("classification", "rendering"):
            net = CoordConvPainter() if arch == "coordconv" else DeconvPainter()
            batch = cfg.deconv_batch_size if arch == "deconv" else cfg.batch_size
            shape: Inputs = (batch, 2)
        else:
            net = _REGRESSORS[arch]()
            batch = cfg.reg_batch_size if arch != "conv" else cfg.conv_reg_batch_size
            shape = (batch, 1, side, side)
        pieces.append(Piece(name, step(net, shape), steps))
        per = forward(net, (16, *shape[1:])) / 16
        evals = steps // cfg.eval_every + 1 if cfg.eval_every else 1
        pieces.append(Piece(f"{name} evaluation", per, evals * side * side))
    return pieces, (
        "Not-so-Clevr nets at the authors' batches; evaluation: a forward pass over all "
        f"{side * side:,} positions every {cfg.eval_every:,} steps and at the end (an upper bound: "
        "each split evaluates its own subset)"
    )


@_paper("path-sgd")
def _path_sgd(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.models.small import MLP

    net = MLP(in_features=784, hidden=(cfg.hidden, cfg.hidden), num_classes=10)
    f = step(net, (cfg.batch_size, 784))
    per = forward(net, (100, 784)) / 100
    n_train = 60_000 - cfg.n_val
    steps_per_epoch = n_train // cfg.batch_size
    pieces = []
    for name, steps in plan:
        pieces.append(Piece(name, f, steps))
        epochs = max(1, steps // steps_per_epoch)
        pieces.append(Piece(f"{name} curves", per, epochs * (n_train + cfg.n_val)))
    return pieces, (
        f"MNIST MLPs 784-{cfg.hidden}-{cfg.hidden}-10 at batch {cfg.batch_size}; Path-SGD's "
        "path-norm scaling (two passes of one vector through the squared weights per step) is "
        "not counted; evaluation: the curves (training and validation error every epoch)"
    )


@_paper("draw")
def _draw(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.experiments.draw import VARIANTS, _model_config
    from paperzoo.models.draw import DRAW

    pieces = []
    steps = dict(plan)
    for variant in VARIANTS:
        net = DRAW(config=_model_config(cfg, variant, 1, 28, 28))
        f = step(net, (cfg.batch_size, 1, 28, 28))
        pieces.append(Piece(f"draw {variant} training", f, steps[f"draw {variant}"]))
        per = forward(net, (cfg.eval_batch, 1, 28, 28)) / cfg.eval_batch
        monitor = (steps[f"draw {variant}"] // cfg.eval_every if cfg.eval_every else 0) * (
            cfg.n_monitor
        )
        bound = cfg.n_train_eval + 10_000 + cfg.n_iw * cfg.importance_samples
        pieces.append(Piece(f"draw {variant} evaluation", per, monitor + bound))
    return pieces, (
        f"DRAW with {cfg.model.steps} glimpses at batch {cfg.batch_size}; evaluation: the "
        f"validation monitor ({cfg.n_monitor:,} digits every {cfg.eval_every:,} steps), the "
        f"bound on {cfg.n_train_eval:,} training and 10,000 test digits, and "
        f"{cfg.importance_samples} importance samples on {cfg.n_iw:,} digits"
    )


@_paper("perceiver")
def _perceiver(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.experiments.perceiver import (
        ConvNetWithPositions,
        PerceiverOnImages,
        imagenet_perceiver_config,
    )
    from paperzoo.models.perceiver import Perceiver
    from paperzoo.models.registry import MODELS

    s = cfg.image_size
    pieces = []
    nets: dict[str, nn.Module] = {}
    for name, steps in plan:
        if name.startswith("perceiver"):
            net: nn.Module = PerceiverOnImages(
                Perceiver(config=imagenet_perceiver_config(cfg, 1000))
            )
        else:
            pos = nets.get("pos")
            if pos is None:
                pos = PerceiverOnImages(Perceiver(config=imagenet_perceiver_config(cfg, 1000))).pos
                nets["pos"] = pos  # type: ignore[assignment]
            p = int(pos.shape[1])  # type: ignore[union-attr]
            convnet = MODELS.create(cfg.resnet, in_chans=3 + p, num_classes=1000)
            net = ConvNetWithPositions(convnet, torch.zeros(p, s, s), None)
        f = step(net, (cfg.micro_batch, 3, s, s)) * cfg.batch_size / cfg.micro_batch
        pieces.append(Piece(f"{name} training", f, steps))
        per = forward(net, (cfg.micro_batch, 3, s, s)) / cfg.micro_batch
        pieces.append(Piece(f"{name} evaluation", per, 50_000))
    return pieces, (
        f"ImageNet at {s} px, batch {cfg.batch_size} (counted on micro-batches of "
        f"{cfg.micro_batch}, scaled); evaluation: the 50,000 validation images once per model "
        "(the permuted check reuses the raster Perceiver); JPEG decoding and augmentation run "
        "on the CPU and are not counted"
    )


@_paper("disentanglement")
def _disentanglement(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.models.vae import VAE, VAEConfig
    from paperzoo.models.wren import WReN

    vae = VAE(config=VAEConfig(in_channels=1, image_size=cfg.image_size), method="beta_vae")
    f_vae = step(vae, (cfg.vae_batch, 1, cfg.image_size, cfg.image_size))
    latent = VAEConfig().num_latent
    wren = WReN(embed_dim=latent, edge_mlp=cfg.wren_edge, graph_mlp=cfg.wren_graph)
    b = cfg.wren_batch
    f_wren = step(wren, (torch.zeros(b, 8, latent), torch.zeros(b, 6, latent)))
    vaes = [s for name, s in plan if name.startswith("vae")]
    wrens = [s for name, s in plan if name.startswith("wren")]
    pieces = [
        Piece(f"{len(vaes)} VAEs", f_vae, sum(vaes)),
        Piece(f"{len(wrens)} WReNs", f_wren, sum(wrens)),
    ]
    return pieces, (
        f"{len(vaes)} VAEs ({cfg.image_size} px, batch {cfg.vae_batch}) counted as beta-VAEs "
        "(FactorVAE's discriminator, an MLP on the 10 latents, adds little), and "
        f"{len(wrens)} WReNs on {latent}-dimensional codes with the default edge and graph MLPs "
        "(the sampled WReN hyperparameters vary their widths); the disentanglement metrics "
        "(gradient-boosted trees, regressions on the CPU) and evaluation are not counted"
    )


@_paper("gat")
def _gat(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.models.small import SmallCNN

    net = SmallCNN(
        in_chans=3, num_classes=10, image_size=32, channels=cfg.channels, hidden=cfg.hidden
    )
    f = step(net, (cfg.batch_size, 3, 32, 32))
    per = f / cfg.batch_size
    # forward+backward passes of the classifier per step: FGSM-AT one attack pass and the
    # update on the clean and adversarial halves; GAT the generator's input gradient, its
    # update through the classifier, and the classifier's update on both halves (upper bound)
    passes = {"fgsm_at": 3, "gat": 4}
    pieces = [Piece(name, f * passes.get(name, 1), steps) for name, steps in plan]
    attacks = len(cfg.eps) * (1 + cfg.pgd_steps)  # FGSM and PGD at each eps
    pieces.append(Piece("FGSM and PGD evaluation", per, len(plan) * 10_000 * attacks))
    return pieces, (
        f"CIFAR-10 CNN (channels {list(cfg.channels)}, hidden {cfg.hidden}) at batch "
        f"{cfg.batch_size}; FGSM-AT counts 3 and GAT 4 forward and backward passes of the "
        "classifier per step (the generator, two small layers, is not counted); evaluation: "
        f"FGSM and {cfg.pgd_steps}-step PGD at {len(cfg.eps)} budgets on the 10,000 test images"
    )


@_paper("ggnn")
def _ggnn(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Piece], str]:
    from paperzoo.experiments.ggnn import OFFICIAL
    from paperzoo.models.ggnn import GatedGraphNet

    nodes, batch = 20, cfg.batch_size  # per graph (an assumption), graphs per minibatch
    pieces = []
    per_task: dict[str, float] = {}
    for name, steps in plan:
        task = name.split(" ")[0]
        if task not in OFFICIAL:  # an RNN / LSTM baseline (not counted, see below)
            continue
        if task not in per_task:
            s = OFFICIAL[task]
            net = GatedGraphNet(
                state_dim=s.state_dim, annotation_dim=s.annotation_dim, num_edge_types=2,
                num_steps=cfg.num_prop_steps,
            )  # fmt: skip
            n = nodes * batch
            src = torch.arange(n)
            edges = torch.stack([src, (src + 1) % n]), torch.zeros(n, dtype=torch.long)
            x = torch.zeros(n, s.annotation_dim)
            per_task[task] = _ggnn_step(net, x, edges)
        pieces.append(Piece(name, per_task[task], steps))
    return pieces, (
        f"GG-NNs at the authors' state sizes on minibatches of {batch} graphs of {nodes} nodes "
        "and one edge per node (an assumption: bAbI graphs have tens of nodes); the RNN / LSTM "
        "baselines (hidden 50) and evaluation are not counted; either way a full GG-NN run "
        "is minutes of GPU work, bound by per-operation overhead rather than FLOP"
    )


def _ggnn_step(net: nn.Module, x: Tensor, edges: tuple[Tensor, Tensor]) -> float:
    """FLOP of a GG-NN training step on real (small) tensors: its sparse sums over edges need
    real indices, so this one is not counted on the meta device."""
    from paperzoo.utils.flops import count_flop

    def run() -> None:
        out = net(x, edges[0], edges[1])
        out.float().sum().backward()

    return float(count_flop(run))


COSTS_FILE = Path(__file__).with_name("full_costs.json")


def _full_plan(name: str) -> tuple[Any, list[tuple[str, int]]]:
    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import get_experiment, resolve_config

    cfg = resolve_config(name, "full")
    return cfg, get_experiment(name).plan(cfg, RunContext(scale="full"))


def config_digest(name: str) -> str:
    """SHA-256 of paper ``name``'s full config and plan: what a stored count was made from."""
    from paperzoo.experiments.overrides import config_to_dict

    cfg, plan = _full_plan(name)
    text = json.dumps({"config": config_to_dict(cfg), "plan": plan}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def cached_costs(path: Path = COSTS_FILE) -> dict[str, dict[str, Any]]:
    """The stored ``full_cost`` of every paper (``tools/count_costs.py``), ``{}`` without the
    file; each entry has ``config_sha256``, the ``config_digest`` it was counted at."""
    try:
        return dict(json.loads(path.read_text())["papers"])
    except FileNotFoundError:
        return {}


def full_cost(name: str) -> dict[str, Any]:
    """``{"flop", "gpu_hours", "assumptions", "parts"}`` of paper ``name``'s full run, counted
    now (slow: see the module doc; ``cached_costs`` reads the stored counts).

    Raises:
        KeyError: no counter for ``name``.
    """
    cfg, plan = _full_plan(name)
    pieces, what = _PAPERS[name](cfg, plan)
    flop = float(sum(p.total for p in pieces))
    assert flop > 0 and math.isfinite(flop), name
    return {
        "flop": flop,
        "gpu_hours": gpu_hours(flop),
        "assumptions": (
            f"Training FLOP of the full config: each planned model's forward and backward pass "
            f"at its batch counted with torch.utils.flop_counter (2 FLOP per multiply-add of "
            f"matrix products and convolutions; element-wise work not counted) times its "
            f"planned steps, plus evaluation. {what}. GPU hours: {GPU} at "
            f"{UTILISATION:.0%} of {PEAK_BF16_FLOPS / 1e12:.0f} TFLOP/s (dense bf16, H100 SXM)."
        ),
        "parts": [{"what": p.what, "flop": p.total} for p in pieces],
    }
