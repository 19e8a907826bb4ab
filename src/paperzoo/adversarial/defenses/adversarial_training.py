"""PGD adversarial training (Madry et al., ICLR 2018): the defence Athalye et al. found to hold.

    # Eq. (2.1): min_theta E_{(x, y)} [ max_{||delta||_inf <= eps} L(theta, x + delta, y) ]
The inner maximisation is approximated by PGD with a random start on every training batch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from paperzoo.adversarial.attacks import PGD
from paperzoo.adversarial.training import train_classifier
from paperzoo.engine import History
from paperzoo.engine.trainer import Extra


def pgd_adversarial_training(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    *,
    eps: float,
    alpha: float,
    attack_steps: int,
    steps: int,
    batch_size: int,
    lr: float,
    norm: str = "linf",
    eps_warmup: int = 0,
    clean_weight: float = 0.0,
    optimizer: str | torch.optim.Optimizer = "adam",
    out_dir: str | Path | None = None,
    device: str | torch.device = "cpu",
    seed: int = 0,
    progress: bool = False,
    desc: str = "pgd-at",
    lr_schedule: Callable[[int], float] | None = None,
    resume: bool = False,
    augment: Callable[[Tensor], Tensor] | None = None,
    generator: torch.Generator | None = None,
    extra: dict[str, Extra] | None = None,
) -> History:
    """Train ``model`` in place with PGD adversarial training.

    Args:
        eps, alpha, attack_steps, norm: the training attack (PGD with random start).
        eps_warmup: steps over which eps (and alpha) grow linearly from 0 (0: no warm-up). A
            common stabiliser for MNIST at eps = 0.3; not in Madry et al.
        augment: applied to each training batch before the attack (see
            ``paperzoo.adversarial.training.adversarial_loss_fn``).
        generator: the training attack's random starts (None: torch's global RNG); it is
            checkpointed with the run.
        extra: further state for the checkpoints (e.g. the generator ``augment`` draws from).
        other args: see ``paperzoo.adversarial.training.train_classifier``.
    """
    calls = _Counter()

    def attack(m: nn.Module) -> PGD:
        # The factory is called once per training step, so its call count is the step number.
        frac = min(1.0, (calls.n + 1) / eps_warmup) if eps_warmup > 0 else 1.0
        calls.n += 1
        return PGD(
            m,
            eps=eps * frac,
            alpha=alpha * frac,
            steps=attack_steps,
            norm=norm,
            generator=generator,
        )

    state: dict[str, Extra] = {"attack_calls": calls}  # checkpointed: the warm-up resumes
    if generator is not None:
        state["attack_generator"] = generator
    state.update(extra or {})

    return train_classifier(
        model,
        x,
        y,
        attack=attack,
        clean_weight=clean_weight,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        optimizer=optimizer,
        out_dir=out_dir,
        device=device,
        seed=seed,
        progress=progress,
        desc=desc,
        lr_schedule=lr_schedule,
        extra=state,
        resume=resume,
        augment=augment,
    )


class _Counter:
    """A call count that checkpoints (``state_dict`` / ``load_state_dict``)."""

    def __init__(self) -> None:
        self.n = 0

    def state_dict(self) -> dict[str, int]:
        return {"n": self.n}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.n = int(state["n"])
