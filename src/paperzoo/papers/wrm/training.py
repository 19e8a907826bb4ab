"""The WRM models' training and evaluation: the spheres network (``spheres_net``), each method's
training adversary (``make_trainer_attack``), the error under l2 PGM attacks (``pgm_errors``),
the spheres models with their restarts (``train_spheres``), the two parts of the paper
(``run_spheres``: Section 4.1; ``run_mnist``: Section 4.2) and the full run's cost."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack
from paperzoo.adversarial.attacks.fgsm import FGSM
from paperzoo.adversarial.attacks.pgd import PGD
from paperzoo.adversarial.attacks.wrm import WRM
from paperzoo.adversarial.certificate import check_certificate, robust_surrogate
from paperzoo.adversarial.training import train_classifier
from paperzoo.data.base import Split
from paperzoo.data.spheres import make_spheres
from paperzoo.engine import budget, derive_seed, seeded
from paperzoo.experiments.base import RunContext
from paperzoo.metrics import on_device
from paperzoo.models.small import MLP
from paperzoo.models.wrm import WRMNet
from paperzoo.papers.wrm.config import CLAIMS, MNIST_CLIP, Config, mnist_steps
from paperzoo.papers.wrm.geometry import boundary_geometry, fig1_findings
from paperzoo.papers.wrm.plots import plot_boundaries, plot_certificate, plot_errors

log = logging.getLogger(__name__)


def spheres_net() -> MLP:
    """The paper's 2-D network: 2-4-2-2 with ELU activations."""
    return MLP(in_features=2, hidden=(4, 2), num_classes=2, act="elu")


AttackFactory = Callable[[nn.Module], Attack]


def make_trainer_attack(
    method: str, *, eps: float, gamma: float, steps: int, clip: tuple[float, float] | None
) -> AttackFactory | None:
    """The training adversary of ``method`` (None for ERM)."""
    if method == "erm":
        return None
    if method == "fgm":
        return lambda m: FGSM(m, eps=eps, norm="l2", clip=clip)
    if method in ("ifgm", "pgm"):  # l2 steps of eps / steps (IFGM) or 2.5 eps / steps (PGM)
        alpha = (1.0 if method == "ifgm" else 2.5) * eps / steps
        return lambda m: PGD(
            m, eps=eps, alpha=alpha, steps=steps, norm="l2", random_start=False, clip=clip
        )
    if method == "wrm":
        return lambda m: WRM(m, gamma=gamma, steps=steps, report=False)
    raise ValueError(f"unknown training method {method!r}")


def pgm_errors(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    budgets: list[float],
    steps: int,
    batch: int = 500,
    clip: tuple[float, float] | None = MNIST_CLIP,
) -> list[float]:
    """Error of ``model`` under l2 PGM (Eq. 16: PGD, step 2.5 eps / steps, no random start) per
    budget; ``clip`` boxes the attack (default: none, like the MNIST training adversaries). The
    attacks and the counts run on the model's device; the errors are read once, at the end."""
    x, y = (t.to(on_device.model_device(model)) for t in (x, y))
    correct = []
    for eps in budgets:
        pgm = make_trainer_attack("pgm", eps=eps, gamma=0.0, steps=steps, clip=clip)
        assert pgm is not None
        attack = pgm(model)
        adv = torch.cat(
            [attack(x[i : i + batch], y[i : i + batch]) for i in range(0, len(x), batch)]
        )
        correct.append(on_device.count_correct(model, adv, y))
    return [1.0 - a for a in on_device.fractions(correct, len(x))]


def train_spheres(
    cfg: Config, ctx: RunContext, xtr: Tensor, ytr: Tensor
) -> tuple[dict[str, nn.Module], float, dict[str, list[float]]]:
    """Train the 2-D spheres models (ERM, WRM, then FGM at WRM's budget).

    A model that does not fit its training points (clean training accuracy below
    ``spheres_fit_acc``) is a failed optimisation, not the method's result (the 2-4-2-2 net
    can get stuck with its boundary open to one side; docs/wrm.md). It is trained again
    from a fresh initialisation, keeping the data order, at most ``spheres_restarts`` times,
    for every method alike; the decision reads training data only. If every attempt fails,
    the most accurate one is kept.

    Returns:
        the trained models by method; FGM's budget eps = sqrt(rho_hat_n(theta_WRM)); and per
        method the clean training accuracy of each attempt.
    """
    gamma = cfg.spheres_gamma
    models: dict[str, nn.Module] = {}
    attempts: dict[str, list[float]] = {}
    eps = float("nan")
    for method in ("erm", "wrm", "fgm"):  # WRM before FGM: it sets FGM's eps
        factory = make_trainer_attack(method, eps=eps, gamma=gamma, steps=cfg.wrm_steps, clip=None)
        best: tuple[float, nn.Module] | None = None
        attempts[method] = []
        # under --max-steps training is cut short by design: no fit to judge, no restarts
        restarts = cfg.spheres_restarts if budget.active() is None else 0
        for attempt in range(restarts + 1):
            init = ctx.seed if attempt == 0 else derive_seed(ctx.seed, "spheres", attempt)
            with seeded(init):
                model = spheres_net()
            tag = f"spheres-{method}" + (f"-restart{attempt}" if attempt else "")
            train_classifier(
                model, xtr, ytr, attack=factory, steps=cfg.spheres_steps,
                batch_size=cfg.spheres_batch, lr=cfg.spheres_lr,
                out_dir=ctx.out_dir / "runs" / tag, device=ctx.device, seed=ctx.seed,
                progress=ctx.progress, desc=tag, resume=True,
            )  # fmt: skip
            acc = on_device.accuracy_on_device(model, xtr, ytr)  # on the run's device
            attempts[method].append(acc)
            if best is None or acc > best[0]:
                best = (acc, model)
            if acc >= cfg.spheres_fit_acc:
                break
            log.warning(
                "spheres %s (attempt %d): training accuracy %.4f < %g, training again from "
                "a fresh initialisation", method, attempt, acc, cfg.spheres_fit_acc,
            )  # fmt: skip
        assert best is not None
        models[method] = best[1]
        model = best[1]
        if method == "wrm":
            surrogate, _ = robust_surrogate(
                model, xtr, ytr, gamma=gamma, steps=cfg.cert_steps,
                step_size=cfg.cert_step_size, batch_size=5000, device=ctx.device,
            )  # fmt: skip
            eps = math.sqrt(surrogate.rho)  # Eq. 17: eps^2 = rho_hat_n(theta_WRM)
    return models, eps, attempts


def run_spheres(cfg: Config, ctx: RunContext) -> dict[str, Any]:
    """Section 4.1 (Figures 1-2): the spheres models trained, their boundaries measured and
    the certificate checked on test data; the measured claims, details, figures and notes."""
    xtr, ytr = make_spheres(cfg.spheres_n_train, generator=ctx.generator("spheres", "train"))
    xte, yte = make_spheres(cfg.spheres_n_test, generator=ctx.generator("spheres", "test"))
    xte, yte = ctx.holdout(xte, "spheres x_test"), ctx.holdout(yte, "spheres y_test")
    gamma = cfg.spheres_gamma
    models, eps, attempts = train_spheres(cfg, ctx, xtr, ytr)

    with ctx.final_evaluation():  # every model is trained: the measurements
        lim = float(max(xtr.abs().max(), xte.abs().max())) + 0.5  # boundary grid window
        geometry = boundary_geometry(models, xtr, ytr, lim=lim, grid=cfg.grid)
        dist, dist_by_class, radius = geometry["min"], geometry["by_class"], geometry["radius"]
        acc = on_device.accuracies(models, xte, yte)
        gammas = [gamma * f for f in cfg.cert_gammas]
        check = check_certificate(
            models["wrm"], xtr, ytr, xte, yte, gamma=gamma, gammas=gammas,
            steps=cfg.cert_steps, step_size=cfg.cert_step_size, batch_size=5000,
            device=ctx.device,
        )  # fmt: skip
    raw_margin = check.raw_margin
    measured = {
        "spheres.certificate.upper_bounds_test_worst_case": check.min_margin,
        "spheres.certificate.bounds_off_tangency": check.margin_off_tangency(),
        **fig1_findings(geometry),
    }
    details = {
        "baseline_eps": eps,
        "train_acc_per_attempt": attempts,
        "min_boundary_distance": dist,
        "min_boundary_distance_by_class": dist_by_class,
        "boundary_radius": radius,
        "test_acc": acc,
        "certificate": {
            "gamma": gamma,
            "rho_hat": check.rho_hat,
            "train": check.train.to_dict(),
            "error_term": check.error,
            "gammas": check.curve.gammas,
            "test_rho": check.curve.rho,
            "test_worst_loss": check.curve.worst_loss,
            "bound": check.bound,
            "margin": check.margin,
            "margin_without_error_term": raw_margin,
            "test_at_gamma": check.test_at_gamma.to_dict(),
            "test_points": [p.to_dict() for p in check.curve.points],
        },
    }
    notes = [
        f"Spheres: baselines trained with eps = sqrt(rho_hat_n(WRM)) = {eps:.3f}; minimum "
        "distance of the training points to the boundary (all / inner class / outer class): "
        + ", ".join(
            f"{k} {v:.3f}/{dist_by_class[k]['inner']:.3f}/{dist_by_class[k]['outer']:.3f}"
            for k, v in dist.items()
        )
        + "; distance of the boundary from the origin (mean +- std): "
        + ", ".join(f"{k} {v['mean']:.3f} +- {v['std']:.3f}" for k, v in radius.items())
        + "; test accuracy: "
        + ", ".join(f"{k} {v:.4f}" for k, v in acc.items())
        + ".",
        f"Certificate (gamma = {gamma}): rho_hat_n = {check.rho_hat:.4f}, "
        f"E_train[phi] = {check.train.phi:.4f} (sd {check.train.phi_std:.4f}, "
        f"n {check.train.n}), E_test[phi] = {check.test_at_gamma.phi:.4f} "
        f"(sd {check.test_at_gamma.phi_std:.4f}, n {check.test_at_gamma.n}), sampling term "
        f"{check.error:.4f}; min margin {check.min_margin:+.4f} (without the term "
        f"{min(raw_margin):+.4f}; away from the training gamma "
        f"{check.margin_off_tangency():+.4f}). Margin per gamma (with / without the term): "
        + ", ".join(
            f"{g:g}: {m:+.4f}/{r:+.4f}"
            for g, m, r in zip(check.curve.gammas, check.margin, raw_margin, strict=True)
        )
        + f". Inner maximiser ({cfg.cert_steps} steps) on the training data: mean gradient "
        f"norm {check.train.grad_norm_mean:.2e} (relative {check.train.rel_grad_norm:.2e}).",
    ]
    for method, accs in attempts.items():
        if len(accs) > 1:
            notes.append(
                f"Spheres {method.upper()}: training accuracy per initialisation "
                + ", ".join(f"{a:.4f}" for a in accs)
                + f" (an attempt below {cfg.spheres_fit_acc:g} is a failed optimisation: "
                "trained again from a fresh initialisation, the same data order; "
                + ("the last one is used)." if accs[-1] >= cfg.spheres_fit_acc else
                   "none fitted, the most accurate is used).")
            )  # fmt: skip
    figures = [
        plot_boundaries(models, xtr, ytr, lim, ctx),
        plot_certificate(check, ctx),
    ]
    return {"measured": measured, "details": details, "figures": figures, "notes": notes}


def run_mnist(cfg: Config, ctx: RunContext, split: Split) -> dict[str, Any]:
    """Section 4.2 (Figure 3): the MNIST CNNs trained by each method and attacked by l2 PGM;
    the measured claims, details, figures and notes."""
    xtr, ytr = split.x_train, split.y_train
    c2 = xtr.flatten(1).norm(dim=1).mean().item()  # C2 = E ||X||_2 (paper: 9.21 on MNIST)
    gamma = cfg.mnist_gamma_c2 * c2
    steps = mnist_steps(cfg, len(xtr))
    models: dict[str, nn.Module] = {}
    eps = float("nan")
    wrm_report: dict[str, float] = {}
    for method in ("wrm", "erm", "fgm", "ifgm", "pgm"):  # WRM first: it sets eps
        with seeded(ctx.seed):
            model = WRMNet(width=cfg.mnist_width)
        factory = make_trainer_attack(
            method, eps=eps, gamma=gamma, steps=cfg.adv_steps, clip=MNIST_CLIP
        )
        train_classifier(
            model, xtr, ytr, attack=factory, steps=steps, batch_size=cfg.mnist_batch,
            lr=cfg.mnist_lr, out_dir=ctx.out_dir / "runs" / f"mnist-{method}",
            device=ctx.device, seed=ctx.seed, progress=ctx.progress, desc=f"mnist-{method}",
            resume=True, channels_last=cfg.channels_last,
        )  # fmt: skip
        models[method] = model  # stays on the run's device: evaluated there
        if method == "wrm":
            n = min(len(xtr), 1000)
            # Eq. 17 with WRM's own training ascent (adv_steps, no box): a longer ascent
            # keeps moving at gamma = 0.04 C2 (seed 100: rho 0.23 / 1.04 after 5 / 50 steps)
            surrogate, _ = robust_surrogate(
                model, xtr[:n], ytr[:n], gamma=gamma, steps=cfg.adv_steps, clip=MNIST_CLIP,
                batch_size=250, device=ctx.device,
            )  # fmt: skip
            eps = math.sqrt(surrogate.rho)  # Eq. 17: the baselines' budget matches WRM's
            wrm_report = surrogate.to_dict()

    with ctx.final_evaluation():  # every model is trained: clean and attacked test error
        acc = on_device.accuracies(models, split.x_test, split.y_test)
        n = budget.items(cfg.attack_n, 500)  # (--max-steps: a batch or two)
        xa, ya = split.x_test[:n], split.y_test[:n]
        budgets = [r * c2 for r in cfg.attack_budgets]
        errors = {
            k: pgm_errors(m, xa, ya, budgets=budgets, steps=cfg.attack_steps)
            for k, m in models.items()
        }
    small = [i for i, r in enumerate(cfg.attack_budgets) if r <= 0.1 + 1e-9]

    def avg(k: str) -> float:
        return sum(errors[k][i] for i in small) / len(small)

    best_adv = min(avg(k) for k in ("fgm", "ifgm", "pgm"))
    measured = {
        "mnist.wrm_vs_erm.pgm_l2_error": avg("wrm") - avg("erm"),
        "mnist.wrm_vs_adv.pgm_l2_error": avg("wrm") - best_adv,
        "mnist.clean_acc.penalty_vs_erm": acc["erm"]
        - min(acc[k] for k in ("fgm", "ifgm", "pgm", "wrm")),
    }
    if any(c.id == "mnist.clean_acc.min" and c.applies(ctx.scale) for c in CLAIMS):
        measured["mnist.clean_acc.min"] = min(acc.values())
    details = {
        "C2": c2,
        "gamma": gamma,
        "baseline_eps": eps,
        "train_steps": steps,
        "clean_acc": acc,
        "clean_acc_min": min(acc.values()),
        "attack_budgets_over_C2": list(cfg.attack_budgets),
        "pgm_error": errors,
        "wrm_inner_maximiser_on_train": wrm_report,
    }
    notes = [
        f"MNIST ({split.info.name}, {len(xtr)} training digits): C2 = {c2:.3f}, "
        f"gamma = {gamma:.3f}, baselines' eps = sqrt(rho_hat_n(WRM)) = {eps:.3f}, "
        f"CNN width {cfg.mnist_width}, {steps} steps of batch {cfg.mnist_batch}, "
        f"{cfg.adv_steps} inner steps; clean accuracy "
        + ", ".join(f"{k} {v:.4f}" for k, v in acc.items())
        + ".",
        "PGM error at eps/C2 = "
        + ", ".join(f"{r:g}" for r in cfg.attack_budgets)
        + ": "
        + "; ".join(f"{k} " + "/".join(f"{e:.3f}" for e in v) for k, v in errors.items())
        + ".",
    ]
    figures = [plot_errors(errors, cfg.attack_budgets, ctx)]
    return {"measured": measured, "details": details, "figures": figures, "notes": notes}


def full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    """The full run's pieces (``paperzoo.cost``): each model's (adversarial) training steps and
    the PGM attacks."""
    from paperzoo.utils.work import Piece, step

    sph, mn = spheres_net(), WRMNet(width=cfg.mnist_width)
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
    per = step(mn, (500, 1, 28, 28)) / 500  # pgm_errors attacks batches of 500
    attacks = len(cfg.attack_budgets) * cfg.attack_steps * cfg.attack_n
    pieces.append(Piece("PGM attacks on the 5 MNIST nets", per, 5 * attacks))
    return pieces, (
        "spheres MLP and MNIST CNN at their batches; an adversarial step counts one forward and "
        "backward pass per inner iteration; evaluation: the PGM attacks "
        f"({len(cfg.attack_budgets)} budgets x {cfg.attack_steps} steps x {cfg.attack_n:,} "
        "digits per net); the spheres' certificate grid is not counted (a 2-4-2-2 MLP)"
    )
