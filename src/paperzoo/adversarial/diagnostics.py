"""The warning signs of obfuscated gradients: Athalye, Carlini & Wagner, "Obfuscated Gradients Give
a False Sense of Security", ICML 2018, Sec. 3.1.

A defence whose robustness comes from broken gradients rather than from the model shows at least
one of these symptoms when probed with *standard* attacks (no BPDA, no EOT):

1. ``one_step_beats_iterative``: a single FGSM step succeeds more often than iterative PGD.
2. ``black_box_beats_white_box``: a gradient-free attack (SPSA) beats white-box PGD.
3. ``unbounded_attack_fails``: PGD with an unbounded budget does not reach ~100 % success.
4. ``random_sampling_finds_adversarial``: random points in the eps-ball fool the model on examples
   where PGD did not. The paper's sign is that such examples exist; here it fires when they are
   more than ``margin`` of *all* the examples probed (``random_only_fraction``), not of the
   examples PGD failed on.
5. ``eps_does_not_increase_success``: success falls as eps grows, or plateaus short of 100 %.

``diagnose(model, x, y, config=...)`` runs the probes and returns one ``SignVerdict`` per sign with
the evidence (success rates) behind it. Success is the fraction of examples misclassified after
the attack (randomised defences are evaluated with one fresh draw, as they would be deployed, so
on them the per-example comparison of sign 4 also counts disagreements between draws). A sign
fires only when its comparison is off by *more* than ``margin``: a difference equal to it (5 of 100
examples at the default 0.05) is a tie, also where float32 rounding puts it a hair above.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks.base import Attack, eval_mode

if TYPE_CHECKING:
    from paperzoo.adversarial.attacks.pgd import PGD

log = logging.getLogger(__name__)

SIGNS = (
    "one_step_beats_iterative",
    "black_box_beats_white_box",
    "unbounded_attack_fails",
    "random_sampling_finds_adversarial",
    "eps_does_not_increase_success",
)


@dataclass(frozen=True)
class DiagnosticsConfig:
    eps: float  # the threat model's budget (l_inf)
    pgd_steps: int = 40  # iterations of the white-box PGD probes
    pgd_restarts: int = 1  # random restarts of the PGD probes
    eps_multipliers: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)  # the success-vs-eps sweep (x eps)
    unbounded_eps: float = 1.0  # "unbounded" l_inf budget (1.0 covers the whole [0, 1] box)
    unbounded_steps: int = 100  # PGD steps of the unbounded probe
    unbounded_success: float = 0.99  # the unbounded attack must reach at least this success
    spsa_steps: int = 50  # SPSA iterations (black-box probe)
    spsa_samples: int = 32  # Rademacher directions per SPSA step
    spsa_lr: float = 0.02  # SPSA Adam learning rate
    random_samples: int = 100  # random points per example (random-sampling probe)
    margin: float = 0.05  # a sign fires only when its comparison is off by more than this


@dataclass(frozen=True)
class SignVerdict:
    name: str  # one of SIGNS
    flagged: bool  # True: the symptom is present (the defence may obfuscate gradients)
    evidence: dict[str, float]  # the measured success rates behind the verdict
    explanation: str  # one sentence for humans


@dataclass(frozen=True)
class DiagnosticsReport:
    signs: tuple[SignVerdict, ...]
    details: dict[str, Any] = field(default_factory=dict)  # e.g. the success-vs-eps curve

    @property
    def flagged(self) -> list[str]:
        """Names of the signs that fired."""
        return [s.name for s in self.signs if s.flagged]

    @property
    def any_flagged(self) -> bool:
        return any(s.flagged for s in self.signs)

    def __getitem__(self, name: str) -> SignVerdict:
        for s in self.signs:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"signs": [asdict(s) for s in self.signs], "details": self.details}


def success_rate(model: nn.Module, x_adv: Tensor, y: Tensor, *, batch_size: int = 500) -> float:
    """Fraction of ``x_adv`` that ``model`` misclassifies (eval mode; one forward pass)."""
    with eval_mode(model), torch.no_grad():
        wrong = [
            (model(x_adv[i : i + batch_size]).argmax(1) != y[i : i + batch_size]).float()
            for i in range(0, len(x_adv), batch_size)
        ]
    return torch.cat(wrong).mean().item()


def _pgd(model: nn.Module, eps: float, steps: int, restarts: int, g: torch.Generator) -> PGD:
    from paperzoo.adversarial.attacks.pgd import PGD

    # Step size 2.5 * eps / steps (Madry et al.'s rule of thumb).
    return PGD(model, eps=eps, alpha=2.5 * eps / steps, steps=steps, restarts=restarts, generator=g)


def diagnose(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    config: DiagnosticsConfig,
    generator: torch.Generator | None = None,
    attack_factory: Callable[[nn.Module, float], Attack] | None = None,
) -> DiagnosticsReport:
    """Probe ``model`` with standard attacks and report every warning sign.

    Args:
        model: the (possibly defended) classifier, inputs in [0, 1].
        x, y: a batch of test examples.
        config: budgets and tolerances of the probes.
        generator: randomness of the probes.
        attack_factory: ``(model, eps) -> Attack`` for every iterative white-box probe (default
            PGD with ``config.pgd_steps`` steps, ``config.unbounded_steps`` when unbounded); pass
            e.g. a BPDA/EOT attack to check that an adaptive attack removes the symptoms.

    Returns:
        One verdict per sign in ``SIGNS``.
    """
    # the attacks load here, not with this module (a paper's config imports DiagnosticsConfig)
    from paperzoo.adversarial.attacks.fgsm import FGSM
    from paperzoo.adversarial.attacks.spsa import SPSA, RandomNoise

    c = config
    g = generator if generator is not None else torch.Generator().manual_seed(0)

    def white_box(eps: float, steps: int | None = None) -> Attack:
        if attack_factory is not None:
            return attack_factory(model, eps)
        return _pgd(model, eps, steps or c.pgd_steps, c.pgd_restarts, g)

    def succ(attack: Attack) -> float:
        return success_rate(model, attack(x, y), y)

    clean = success_rate(model, x, y)
    x_pgd = white_box(c.eps)(x, y)
    pgd_wrong = _wrong(model, x_pgd, y)
    pgd = pgd_wrong.float().mean().item()
    fgsm = succ(FGSM(model, eps=c.eps))
    spsa = succ(
        SPSA(
            model, eps=c.eps, steps=c.spsa_steps, samples=c.spsa_samples, lr=c.spsa_lr, generator=g
        )
    )
    unbounded = succ(white_box(c.unbounded_eps, c.unbounded_steps))
    x_rand = RandomNoise(model, eps=c.eps, samples=c.random_samples, generator=g)(x, y)
    rand_wrong = _wrong(model, x_rand, y)
    rand = rand_wrong.float().mean().item()
    # Examples random sampling fooled and PGD did not, as a fraction of all examples.
    rand_only = (rand_wrong & ~pgd_wrong).float().mean().item()
    eps_grid = [min(m * c.eps, c.unbounded_eps) for m in c.eps_multipliers]
    curve = [pgd if e == c.eps else succ(white_box(e)) for e in eps_grid]
    log.info("diagnostics: pgd %.3f fgsm %.3f spsa %.3f unbounded %.3f", pgd, fgsm, spsa, unbounded)

    m = c.margin
    drops = [a - b for a, b in zip(curve, curve[1:], strict=False)]
    top = max(range(len(eps_grid)), key=lambda i: eps_grid[i])
    plateau = _below(curve[top], 1 - m) and _below(curve[top] - curve[0], m)
    signs = (
        SignVerdict(
            "one_step_beats_iterative",
            _above(fgsm, pgd + m),
            {"fgsm_success": fgsm, "pgd_success": pgd},
            "a single gradient step should never beat many; if it does, the iterative attack "
            "is being misled by the local gradient",
        ),
        SignVerdict(
            "black_box_beats_white_box",
            _above(spsa, pgd + m),
            {"spsa_success": spsa, "pgd_success": pgd},
            "a gradient-free attack beating the white-box attack means the gradients are useless",
        ),
        SignVerdict(
            "unbounded_attack_fails",
            _below(unbounded, c.unbounded_success),
            {"unbounded_success": unbounded, "unbounded_eps": c.unbounded_eps},
            "with an unbounded budget any input can be reached, so success must be ~100 %",
        ),
        SignVerdict(
            "random_sampling_finds_adversarial",
            _above(rand_only, m),
            {"random_success": rand, "random_only_fraction": rand_only, "pgd_success": pgd},
            "random points in the ball fooling the model where PGD failed means PGD is not "
            "finding the worst case",
        ),
        SignVerdict(
            "eps_does_not_increase_success",
            bool(drops and _above(max(drops), m)) or plateau,
            {f"success_at_{e:g}": s for e, s in zip(eps_grid, curve, strict=True)},
            "larger budgets must not lower success, and success must keep rising until ~100 %",
        ),
    )
    details = {
        "clean_error": clean,
        "eps_grid": eps_grid,
        "pgd_success_vs_eps": curve,
    }
    return DiagnosticsReport(signs, details)


# Success rates are fractions k / n computed in float32 (5 / 100 is 0.0500000007): a comparison
# that is off by exactly the margin must not fire, so rounding-level differences count as ties.
_TIE = 1e-6


def _above(a: float, b: float) -> bool:
    """``a > b`` by more than rounding (ties at the margin do not fire)."""
    return a > b + _TIE


def _below(a: float, b: float) -> bool:
    """``a < b`` by more than rounding."""
    return a < b - _TIE


def _wrong(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Per example: ``model`` misclassifies ``x`` (eval mode, one forward pass: one fresh draw)."""
    with eval_mode(model), torch.no_grad():
        return model(x).argmax(1) != y
