"""WRM's certificate of distributional robustness: Sinha, Namkoong & Duchi, ICLR 2018.

For any gamma >= 0 and radius rho, weak duality (Proposition 1 / Theorem 3) gives

    sup_{P : W_c(P, P0) <= rho} E_P[l(theta; Z)]  <=  gamma * rho + E_{P0}[phi_gamma(theta; Z)]

with phi_gamma(theta; z0) = sup_z l(theta; z) - gamma ||z - z0||^2 and c = ||.||_2^2. Theorem 3
replaces P0 by the empirical distribution of the training data at the price of an error term
eps_n(t) that the paper omits in its figures; ``certificate`` computes the same quantity:

    certificate(rho) = gamma * rho + E_{P_hat_n}[phi_gamma(theta; Z)]                 (Eq. 12)

and the robustness level reached on the training data is rho_hat_n = E_{P_hat_n}[||T(Z) - Z||^2],
T the WRM maximiser.

Finite samples: at the gamma WRM was trained with, the certificate line touches the worst-case
curve (both equal E[phi_gamma] + gamma * rho there), so comparing the certificate from training
data with the worst case on test data at that point compares two independent sample means of the
same function phi_gamma: their difference has expectation zero (up to the generalisation gap) and
its sign is a coin flip, however well the model and the maximiser converged. Away from the
training gamma the margin adds the duality gap E[phi_gamma] - E[phi_gamma'] - (gamma' - gamma)
rho(gamma') >= 0, which grows with |gamma' - gamma|. ``check_certificate`` therefore adds, by
default, the concentration part of eps_n(t) for a comparison of two samples: the one-sided normal
quantile at ``confidence`` times the standard error of the difference of the two means,
sqrt(s_train^2 / n_train + s_test^2 / n_test) (``difference_error``), since the test worst case
is itself a sample estimate of the population worst case that Theorem 3 bounds. At the tangent
point the comparison then fails with probability 1 - ``confidence`` when the certificate is exact.
This is a smaller term than the paper's eps_n(t), which adds a uniform-convergence
(covering-number) term; ``confidence=None`` reproduces the paper's plot, without any error term.

The worst case that the certificate must bound is measured on test data by sweeping gamma: the
maximiser T_gamma moves each test point by rho_test(gamma) = E_test ||T_gamma(Z) - Z||^2 on average,
and the distribution of T_gamma(Z) is the exact worst case over the ball of that radius (strong
duality, Proposition 1), so the points (rho_test(gamma), E_test[l(theta; T_gamma(Z))]) trace the
test worst-case curve of the paper's Figure 2. With an inexact inner maximiser each point is still
a distribution at that transport cost, i.e. a valid lower bound on the worst case.

The guarantee needs a smooth loss (gamma above the smoothness constant makes the inner problem
strongly concave); a ReLU network is not smooth, so certifying one emits a warning.
"""

from __future__ import annotations

import logging
import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import LossFn
from paperzoo.adversarial.attacks.wrm import WRM, StepSize, WRMReport

log = logging.getLogger(__name__)

_NONSMOOTH = (
    nn.ReLU,
    nn.ReLU6,
    nn.LeakyReLU,
    nn.PReLU,
    nn.RReLU,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.Hardshrink,
    nn.Softshrink,
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
)


def nonsmooth_modules(model: nn.Module) -> list[str]:
    """Names of the submodules of ``model`` that are not continuously differentiable.

    Only modules are inspected: a ``torch.relu`` called inside ``forward`` is not detected.
    """
    return [
        f"{name or type(model).__name__}: {type(m).__name__}"
        for name, m in model.named_modules()
        if isinstance(m, _NONSMOOTH)
    ]


def warn_if_nonsmooth(model: nn.Module) -> bool:
    """Warn (``UserWarning`` and the log) if ``model`` has non-smooth layers; True if it has."""
    bad = nonsmooth_modules(model)
    if bad:
        shown = ", ".join(bad[:3]) + (", ..." if len(bad) > 3 else "")
        msg = (
            f"certifying a non-smooth model ({shown}): WRM's certificate assumes a smooth loss "
            "(e.g. ELU activations); the inner maximisation may not be concave and the bound "
            "may not hold"
        )
        warnings.warn(msg, UserWarning, stacklevel=3)
        log.warning(msg)
    return bool(bad)


@dataclass(frozen=True)
class Surrogate:
    """Data-set averages of the WRM inner problem at one gamma."""

    gamma: float
    n: int  # number of points
    phi: float  # E[phi_gamma(theta; Z)]
    phi_std: float  # standard deviation of phi_gamma over the points
    rho: float  # E[||T(Z) - Z||^2]: transport cost (rho_hat on training data)
    worst_loss: float  # E[l(theta; T(Z))] = phi + gamma * rho
    clean_loss: float  # E[l(theta; Z)]
    grad_norm_mean: float  # mean final ||grad_z (l - gamma ||z - z0||^2)|| (convergence)
    grad_norm_max: float  # its maximum over the points
    rel_grad_norm: float  # sum grad_norm / sum (||grad l(z*)|| + 2 gamma ||z* - z0||)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def robust_surrogate(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    gamma: float,
    steps: int = 16,
    step_size: StepSize = None,
    loss: str | LossFn = "ce",
    clip: tuple[float, float] | None = None,
    batch_size: int = 1000,
    device: str | torch.device = "cpu",
) -> tuple[Surrogate, WRMReport]:
    """Run the WRM maximiser over a whole data set and average.

    Args:
        model: the classifier.
        x, y: the data (training data for the certificate, test data for the worst case).
        gamma, steps, step_size, loss, clip: the WRM inner problem (see ``WRM``).
        batch_size: points per ascent batch.
        device: where the ascent runs.

    Returns:
        ``(summary, per-point report)``; the report's tensors are on the CPU.
    """
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"need equally long, non-empty x and y, got {len(x)} and {len(y)}")
    attack = WRM(model, gamma=gamma, steps=steps, step_size=step_size, loss=loss, clip=clip)
    reports = []
    for i in range(0, len(x), batch_size):
        xb, yb = x[i : i + batch_size].to(device), y[i : i + batch_size].to(device)
        _, rep = attack.maximize(xb, yb)
        reports.append(_to_cpu(rep))
    rep = WRMReport.cat(reports)
    clean = rep.objective[0]  # the objective at z_0 = x is the clean loss
    summary = Surrogate(
        gamma=float(gamma),
        n=len(x),
        phi=rep.phi.mean().item(),
        phi_std=rep.phi.std().item() if len(x) > 1 else 0.0,
        rho=rep.rho.mean().item(),
        worst_loss=rep.loss.mean().item(),
        clean_loss=clean.mean().item() if steps > 0 else rep.loss.mean().item(),
        grad_norm_mean=rep.grad_norm.mean().item(),
        grad_norm_max=rep.grad_norm.max().item(),
        rel_grad_norm=rep.relative_grad_norm(),
    )
    return summary, rep


def _to_cpu(rep: WRMReport) -> WRMReport:
    return WRMReport(
        rep.gamma,
        rep.phi.cpu(),
        rep.loss.cpu(),
        rep.rho.cpu(),
        rep.grad_norm.cpu(),
        rep.loss_grad_norm.cpu(),
        rep.objective.cpu(),
    )


def certificate(
    rho: float | Tensor, *, gamma: float, expected_phi: float, error: float = 0.0
) -> float | Tensor:
    """Eq. (12): gamma * rho + E[phi_gamma] (+ ``error``, Theorem 3's eps_n) bounds the worst-case
    loss over the Wasserstein ball of radius rho."""
    if not gamma >= 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    return gamma * rho + expected_phi + error


def concentration_error(phi_std: float, n: int, *, confidence: float = 0.95) -> float:
    """One-sided normal bound on E_P0[phi] - E_P_hat_n[phi]: z_confidence * std / sqrt(n)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    z = statistics.NormalDist().inv_cdf(confidence)
    return z * phi_std / math.sqrt(n)


def difference_error(
    std_a: float, n_a: int, std_b: float, n_b: int, *, confidence: float = 0.95
) -> float:
    """One-sided normal bound on the difference of two independent sample means:
    z_confidence * sqrt(std_a^2 / n_a + std_b^2 / n_b)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_a < 1 or n_b < 1:
        raise ValueError(f"sample sizes must be >= 1, got {n_a} and {n_b}")
    z = statistics.NormalDist().inv_cdf(confidence)
    return z * math.sqrt(std_a**2 / n_a + std_b**2 / n_b)


@dataclass(frozen=True)
class WorstCaseCurve:
    """The worst-case loss against the Wasserstein radius, one point per gamma of the sweep."""

    gammas: list[float]
    rho: list[float]  # rho(gamma) = E ||T_gamma(Z) - Z||^2
    worst_loss: list[float]  # E[l(theta; T_gamma(Z))]
    points: list[Surrogate] = field(repr=False)


def worst_case_curve(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    gammas: Sequence[float],
    steps: int = 16,
    step_size: StepSize = None,
    loss: str | LossFn = "ce",
    clip: tuple[float, float] | None = None,
    batch_size: int = 1000,
    device: str | torch.device = "cpu",
) -> WorstCaseCurve:
    """sup_{P: W_c(P, P_hat) <= rho} E_P[l] traced by sweeping gamma (paper Figure 2, red curve)."""
    points = [
        robust_surrogate(
            model,
            x,
            y,
            gamma=g,
            steps=steps,
            step_size=step_size,
            loss=loss,
            clip=clip,
            batch_size=batch_size,
            device=device,
        )[0]
        for g in sorted(gammas, reverse=True)
    ]
    return WorstCaseCurve(
        gammas=[p.gamma for p in points],
        rho=[p.rho for p in points],
        worst_loss=[p.worst_loss for p in points],
        points=points,
    )


@dataclass(frozen=True)
class CertificateCheck:
    """The certificate from training data against the worst case measured on test data."""

    gamma: float  # the gamma of the certificate (WRM's training gamma)
    train: Surrogate  # E_train[phi_gamma], rho_hat_n, convergence of the maximiser
    curve: WorstCaseCurve  # the test worst-case curve
    test_at_gamma: Surrogate  # the test data's inner problem at the certificate's gamma
    error: float  # the finite-sample term added to the bound (0 without a confidence level)
    bound: list[float]  # certificate (with ``error``) at each rho of the curve
    margin: list[float]  # bound - test worst case (>= 0 where the certificate holds)

    @property
    def rho_hat(self) -> float:
        """The robustness level achieved on the training data."""
        return self.train.rho

    @property
    def min_margin(self) -> float:
        return min(self.margin)

    @property
    def raw_margin(self) -> list[float]:
        """The margins without the finite-sample term (the paper's Figure 2)."""
        return [m - self.error for m in self.margin]

    def margin_off_tangency(self, *, rel: float = 1e-6) -> float:
        """Smallest margin without the finite-sample term over the sweep's gammas other than the
        certificate's own (where the line touches the curve); NaN if there are none."""
        off = [
            m
            for g, m in zip(self.curve.gammas, self.raw_margin, strict=True)
            if not math.isclose(g, self.gamma, rel_tol=rel)
        ]
        return min(off) if off else float("nan")

    @property
    def holds(self) -> bool:
        """The certificate is >= the test worst case at every gamma of the sweep."""
        return all(m >= 0 for m in self.margin)


def check_certificate(
    model: nn.Module,
    x_train: Tensor,
    y_train: Tensor,
    x_test: Tensor,
    y_test: Tensor,
    *,
    gamma: float,
    gammas: Sequence[float],
    steps: int = 16,
    step_size: StepSize = None,
    loss: str | LossFn = "ce",
    clip: tuple[float, float] | None = None,
    batch_size: int = 1000,
    device: str | torch.device = "cpu",
    confidence: float | None = 0.95,
) -> CertificateCheck:
    """Compare Eq. (12) on training data with the test worst case over a sweep of ``gammas``.

    Args:
        model: the classifier (WRM-trained with ``gamma``).
        x_train, y_train: the data the certificate is computed on.
        x_test, y_test: the data the worst case is measured on.
        gamma: the certificate's gamma (the training gamma: its line touches the curve there).
        gammas: the sweep tracing the test worst-case curve.
        steps, step_size, loss, clip, batch_size, device: the WRM inner problem (see ``WRM``);
            the certificate needs the maximiser solved to convergence (an under-solved
            E_train[phi_gamma] lowers the certificate); check ``train.rel_grad_norm``.
        confidence: level of the finite-sample term (``difference_error`` of the training and
            test means of phi_gamma); ``None``: none.

    Warns when ``model`` has non-smooth (e.g. ReLU) layers.
    """
    warn_if_nonsmooth(model)
    kw = dict(
        steps=steps, step_size=step_size, loss=loss, clip=clip, batch_size=batch_size, device=device
    )
    train, _ = robust_surrogate(model, x_train, y_train, gamma=gamma, **kw)  # type: ignore[arg-type]
    curve = worst_case_curve(model, x_test, y_test, gammas=gammas, **kw)  # type: ignore[arg-type]
    at = [p for p in curve.points if math.isclose(p.gamma, gamma, rel_tol=1e-6)]
    test_at_gamma = (
        at[0] if at else robust_surrogate(model, x_test, y_test, gamma=gamma, **kw)[0]  # type: ignore[arg-type]
    )
    err = 0.0
    if confidence is not None:
        # The test worst case estimates the population one with its own sampling error: the
        # term bounds the difference of the two sample means of phi_gamma (see the module doc).
        err = difference_error(
            train.phi_std, train.n, test_at_gamma.phi_std, test_at_gamma.n, confidence=confidence
        )
    bound = [
        float(certificate(r, gamma=gamma, expected_phi=train.phi, error=err)) for r in curve.rho
    ]
    margin = [b - w for b, w in zip(bound, curve.worst_loss, strict=True)]
    return CertificateCheck(
        gamma=float(gamma),
        train=train,
        curve=curve,
        test_at_gamma=test_at_gamma,
        error=err,
        bound=bound,
        margin=margin,
    )
