"""Reproduction of Sinha, Namkoong & Duchi, "Certifying Some Distributional Robustness with
Principled Adversarial Training", ICLR 2018 (https://arxiv.org/abs/1710.10571).

Two parts, as in the paper's Sections 4.1 and 4.2:

* 2-D spheres (Figures 1 and 2): x ~ N(0, I_2), y = 1{||x|| > sqrt 2}, the band
  sqrt2 / 1.3 < ||x|| < 1.3 sqrt2 removed, n = 10^4; an ELU MLP 2-4-2-2 trained by ERM, FGM and
  WRM (gamma = 2), as in the paper. FGM's budget is matched to WRM's, eps^2 = rho_hat_n(theta_WRM)
  (Eq. 17). Measured (Fig. 1): how far WRM's boundary keeps the inner (majority) class compared
  with ERM's, and how axisymmetric each boundary is; (Fig. 2) the certificate
  gamma * rho + E_train[phi_gamma] (Eq. 12) against the worst-case loss on test data traced by
  sweeping gamma (Eq. 18).
* MNIST (Figure 3): the ELU CNN (conv 8x8/2, 6x6/2, 5x5/1, dense 10) trained by ERM, FGM, IFGM,
  PGM and WRM (gamma = 0.04 C2, C2 = E||X||_2; the baselines' eps from Eq. 17 as in the paper),
  attacked by l2 PGM (Eq. 16) of growing budget eps / C2.

Baselines (all from ``paperzoo.adversarial.attacks``, on the Madry-style training loop
``paperzoo.adversarial.training``): FGM = ``FGSM(norm="l2")``; IFGM = Kurakin et al.'s iterated
FGM, ``steps`` l2-normalised steps of eps / steps (never leaves the eps ball, so PGD's projection is
inactive); PGM = l2 PGD with step 2.5 eps / steps, no random start.

Choices and deviations (``full`` keeps the paper's settings where it gives them; docs/wrm.md
has the protocol, the measurements behind each choice and the committed runs):
* Quick MNIST: the 5,000 embedded digits (4,000 / 1,000), a narrower copy of the paper's CNN
  (``WRMNet`` with ``mnist_width`` first-layer channels; the paper's net is ``width=64``), 9 epochs
  (the robust nets are still rising at 5 on validation digits; 9, not 10, for the CPU budget)
  and fewer inner steps for IFGM/PGM/WRM training (``adv_steps``); the attacks use 15 steps.
* MNIST inputs are unconstrained for every method, with no [0, 1] box (``MNIST_CLIP``).
* MNIST rho_hat (Eq. 17) uses WRM's own training ascent (``adv_steps`` steps, 1,000 training
  digits): at gamma = 0.04 C2 the inner problem is not strongly concave and a longer ascent keeps
  moving, so the exact maximiser is not computable (the paper: "for small gamma WRM becomes a
  heuristic"). On the spheres (gamma = 2, strongly concave) rho_hat and the certificate use the
  converged ascent: ``cert_steps`` constant steps of size 1 on the rescaled objective (the
  official decaying 1 / sqrt(k + 1) still moves after 300 steps).
* No label smoothing (the official code smooths the MNIST labels by 0.1). The spheres' optimiser
  and batch size are not given in the paper (ours: Adam, batch 500, 5,000 steps at quick scale).
* A spheres model that does not fit its training points (clean training accuracy < 0.99) is a
  failed optimisation, not the method's result: it is trained again from a fresh initialisation,
  at most 3 times, every method alike (``training.train_spheres``).
* Clean accuracy: the paper's "at least 99 %" is a 60,000-digit number (on 4,000 digits ERM stops
  at about 0.945), so at quick scale the paper's point ("little test-time penalty") is the
  finding ``mnist.clean_acc.penalty_vs_erm``; ``mnist.clean_acc.min`` is judged at full only.
* Figure 1 as numbers: "WRM pushes the classification boundaries further outwards" is the inner
  class's minimum distance to the boundary, WRM minus ERM (``spheres.wrm.margin``, see
  ``fig1_findings``), and "axisymmetric" the spread of the boundary's distance from the origin
  (``spheres.wrm.axisymmetry``).
* The certificate adds the concentration part of the paper's eps_n(t) for comparing two samples:
  a 95 % one-sided normal bound on the difference of the training and the test mean of
  phi_gamma (at the training gamma the certificate touches the test worst case, and the margin
  is a difference of two sample means with expectation ~0); the margins without the term are in
  the notes and details, and ``spheres.certificate.bounds_off_tangency`` checks the other gammas
  without it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from paperzoo.data.base import DataInfo, load_dataset
from paperzoo.data.declared import train_size
from paperzoo.experiments.base import (
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.papers.wrm.config import CLAIMS, CONFIGS, Config, mnist_steps


class WRMExperiment(Experiment):
    name = "wrm"
    cuda_precision = "fp32"  # the reason: docs/wrm.md, "Precision on CUDA"
    cpu_capped_args = ("--dataset", "mnist", "--data-root", "ROOT", "--set", "mnist_batch=32")
    gpu_check = GpuCheck(
        10, 8, "CUDA started, spheres and MNIST, 8 models built, attacks on 2 batches"
    )
    title = "Certifying Some Distributional Robustness with Principled Adversarial Training"
    datasets = ("mnist5k", "mnist")
    paper_data = "mnist"  # Section 4.2's MNIST at full scale; the spheres are generated
    parts = MappingProxyType({"spheres": "spheres.", "mnist": "mnist."})
    claims = CLAIMS
    not_estimated = ("the PGM attacks on the test digits beyond the first batch (attack_n)",)
    configs = CONFIGS

    order = 2  # position in the summary's tables
    full_not_run = (
        NotRun(
            ("cpu",),
            "the 2-D spheres are generated; about 100 s per seed at one thread (committed as "
            "results/wrm-full-spheres; docs/wrm.md).",
            part="spheres",
        ),
        NotRun(
            ("gpu",),
            "adversarial training on the 60,000 MNIST digits: about 28 CPU-hours at one thread "
            "(a --max-steps 3 estimate).",
            part="mnist",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        from paperzoo.papers.wrm.training import full_cost

        return full_cost(cfg, plan)

    def uses_paper_data(self, ctx: RunContext) -> bool:
        """The spheres part reads no files (its data are generated)."""
        return ctx.part != "spheres" and super().uses_paper_data(ctx)

    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        if ctx.part in (None, "spheres"):  # restarts, if any, are not planned
            out += [(f"spheres-{m}", cfg.spheres_steps) for m in ("erm", "wrm", "fgm")]
        if ctx.part in (None, "mnist"):
            name = self.dataset_name(ctx) or "mnist5k"
            mnist = mnist_steps(cfg, train_size(name, cfg.mnist_n_train))
            out += [(f"mnist-{m}", mnist) for m in ("wrm", "erm", "fgm", "ifgm", "pgm")]
        return out

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from paperzoo.papers.wrm.training import run_mnist, run_spheres

        out = Outcome()
        self.part_prefix(ctx)  # an unknown part raises, naming the parts
        parts: list[tuple[str, dict[str, Any]]] = []
        if ctx.part in (None, "spheres"):  # Section 4.1, Figures 1-2
            parts.append(("spheres", run_spheres(cfg, ctx)))
            out.data.append(
                DataInfo("spheres", "generated", cfg.spheres_n_train, cfg.spheres_n_test)
            )
        if ctx.part in (None, "mnist"):  # Section 4.2, Figure 3
            name = self.dataset_name(ctx)
            assert name is not None
            split = load_dataset(
                name, data_root=ctx.data_root, download=ctx.download, seed=ctx.seed
            )
            split = ctx.holdout(split.subset(cfg.mnist_n_train, cfg.mnist_n_test), "MNIST test")
            parts.append(("mnist", run_mnist(cfg, ctx, split)))
            out.data.append(split.info)
        for part, r in parts:
            out.measured.update(r["measured"])
            out.details[part] = r["details"]
            out.figures += r["figures"]
            out.notes += r["notes"]
        return out
