"""The common base of every attack: ``attack(x, y) -> x_adv``.

Conventions (shared with torchattacks): inputs live in ``clip`` (``[0, 1]`` for images) and any
normalisation is part of the model; the model is put in eval mode for the attack and the caller's
train/eval mode is restored in ``finally`` even if the attack raises; the result is detached and
clamped to ``clip``. This holds for every public entry point, not only ``attack(x, y)``: a direct
call of ``perturb``, ``loss_and_grad`` or ``evaluate`` (on any subclass, which override them) runs
the same way, so no entry point runs the model with dropout on or batch-norm statistics updating.
Calls an attack makes while it is already running (the algorithm's own oracle calls, a wrapper
running the attack it wraps) skip the mode switch.

Every gradient an attack uses comes from ``Attack.loss_and_grad``. Wrappers that change how
gradients are obtained (``EOT`` averages them over the defence's randomness, ``BPDA`` takes them
through a differentiable approximation of a preprocessing step) override that single method, and
run the wrapped attack's algorithm with their own gradient oracle (see ``AttackWrapper``).
``Reparameterized`` changes the space the algorithm runs in; wrappers around it are carried into
that space (``Attack.run_with``), so every order of the three composes.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paperzoo.engine.transfer import to_device

LossFn = Callable[[Tensor, Tensor], Tensor]
NORMS = ("linf", "l2")


def cross_entropy_loss(logits: Tensor, y: Tensor) -> Tensor:
    """Per-example cross-entropy (the loss an untargeted attack ascends).

    Shapes:
        logits: (B, K); y: (B,) -> (B,)
    """
    return F.cross_entropy(logits, y, reduction="none")


def cw_margin_loss(logits: Tensor, y: Tensor) -> Tensor:
    """Carlini-Wagner margin ``max_{j != y} z_j - z_y`` per example; positive iff misclassified.

    Shapes:
        logits: (B, K); y: (B,) -> (B,)
    """
    true = logits.gather(1, y[:, None]).squeeze(1)  # (B,)
    other = logits.masked_fill(F.one_hot(y, logits.shape[1]).bool(), -math.inf)
    return other.amax(1) - true


LOSSES: dict[str, LossFn] = {"ce": cross_entropy_loss, "cw": cw_margin_loss}


def resolve_loss(loss: str | LossFn) -> LossFn:
    """A per-example loss function by name ("ce", "cw") or the callable itself."""
    if callable(loss):
        return loss
    try:
        return LOSSES[loss]
    except KeyError:
        raise ValueError(f"unknown attack loss {loss!r}; choose from {sorted(LOSSES)}") from None


def check_norm(norm: str) -> str:
    if norm not in NORMS:
        raise ValueError(f"unknown norm {norm!r}; choose from {', '.join(NORMS)}")
    return norm


def _flat_norm(t: Tensor) -> Tensor:
    """Per-example l2 norm broadcastable against ``t`` (shape (B, 1, ..., 1))."""
    return t.flatten(1).norm(dim=1).view(-1, *([1] * (t.dim() - 1)))


def normalize_grad(g: Tensor, norm: str) -> Tensor:
    """Steepest-ascent direction of unit ``norm``: sign(g) for l_inf, g / ||g||_2 for l_2."""
    if norm == "linf":
        return g.sign()
    return g / _flat_norm(g).clamp_min(1e-12)


def project(delta: Tensor, eps: float, norm: str) -> Tensor:
    """Euclidean projection of the perturbation onto the ``norm`` ball of radius ``eps``."""
    if norm == "linf":
        return delta.clamp(-eps, eps)
    scale = (eps / _flat_norm(delta).clamp_min(1e-12)).clamp(max=1.0)
    return delta * scale


def random_in_ball(
    like: Tensor, eps: float, norm: str, generator: torch.Generator | None = None
) -> Tensor:
    """A uniform sample from the ``norm`` ball of radius ``eps`` for each example of ``like``,
    on ``like``'s device (drawn on the generator's; a CPU draw goes to a GPU without blocking
    the host)."""
    shape, dev = like.shape, like.device
    gdev = generator.device if generator is not None else dev
    if norm == "linf":
        u = torch.rand(shape, generator=generator, device=gdev, dtype=like.dtype)
        return to_device((2 * u - 1) * eps, dev)
    # l_2: direction uniform on the sphere, radius eps * U^(1/d) (uniform in volume).
    d = like[0].numel()
    z = torch.randn(shape, generator=generator, device=gdev, dtype=like.dtype)
    r = torch.rand(shape[0], generator=generator, device=gdev, dtype=like.dtype) ** (1.0 / d)
    z = z / _flat_norm(z).clamp_min(1e-12)
    return to_device(z * (eps * r).view(-1, *([1] * (len(shape) - 1))), dev)


@contextlib.contextmanager
def eval_mode(*modules: nn.Module | Callable[..., Any]) -> Iterator[None]:
    """Every module in eval mode inside the block; afterwards each submodule gets back its own mode.

    Restoring per submodule (not ``model.train(was_training)``) keeps a caller's mixed modes, e.g.
    a frozen BatchNorm inside a model in training mode. Plain callables (not ``nn.Module``) are
    skipped: they run as they are.
    """
    tops = [m for m in modules if isinstance(m, nn.Module)]
    saved = [(m, m.training) for top in tops for m in top.modules()]
    for top in tops:
        top.eval()
    try:
        yield
    finally:
        for m, mode in saved:
            m.training = mode


# True while an attack's public entry point is running (in this thread / task): nested calls of
# perturb, loss_and_grad and evaluate then run as they are, inside the outer call's eval mode.
_RUNNING: contextvars.ContextVar[bool] = contextvars.ContextVar("attack_running", default=False)
_GUARDED = ("perturb", "loss_and_grad", "evaluate")
_F = TypeVar("_F", bound=Callable[..., Any])


@contextlib.contextmanager
def running(attack: Attack) -> Iterator[None]:
    """Inside the block ``attack``'s models are in eval mode and its oracle calls run as they are.

    For public entry points of an attack beyond those ``Attack`` guards (e.g. ``WRM.maximize``).
    """
    if _RUNNING.get():
        yield
        return
    token = _RUNNING.set(True)
    try:
        with eval_mode(*attack.models()):
            yield
    finally:
        _RUNNING.reset(token)


def _guard(method: _F, name: str) -> _F:
    """``method`` run with every model of the attack in eval mode when called from outside an attack.

    The caller's modes are restored in ``finally``; ``perturb``'s result is also detached and
    clamped to the attack's ``clip``.
    """
    if getattr(method, "_attack_guarded", False):
        return method

    @functools.wraps(method)
    def run(self: Attack, x: Tensor, y: Tensor, *args: Any, **kwargs: Any) -> Any:
        if _RUNNING.get():
            return method(self, x, y, *args, **kwargs)
        with running(self):
            out = method(self, x.detach(), y.detach(), *args, **kwargs)
        if name == "perturb":
            return self.clamp(out.detach())
        return out

    run._attack_guarded = True  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]


def unwrap_model(model: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel / torch.compile wrapper (attacks need no sync)."""
    if isinstance(model, nn.parallel.DistributedDataParallel):
        model = model.module
    return getattr(model, "_orig_mod", model)


class Attack(ABC):
    """Base class: holds the model, the loss to ascend and the valid input box.

    Args:
        model: the (possibly defended) classifier; logits (B, K) from inputs (B, ...). An
            ``nn.Module`` (put in eval mode while the attack runs) or a plain callable.
        loss: "ce" (cross-entropy), "cw" (Carlini-Wagner margin) or ``(logits, y) -> (B,)``.
        clip: the valid input range, or ``None`` for unbounded inputs (e.g. WRM's 2-D data).
        generator: source of the attack's randomness (random starts, samples).
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        loss: str | LossFn = "ce",
        clip: tuple[float, float] | None = (0.0, 1.0),
        generator: torch.Generator | None = None,
    ) -> None:
        if clip is not None and not clip[0] < clip[1]:
            raise ValueError(f"clip must be (low, high) with low < high, got {clip}")
        self.model = model
        self.loss = loss
        self.loss_fn = resolve_loss(loss)
        self.clip = clip
        self.generator = generator

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _GUARDED:  # a subclass's own perturb / loss_and_grad / evaluate
            if name in cls.__dict__:
                setattr(cls, name, _guard(cls.__dict__[name], name))

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        """Adversarial examples for ``(x, y)``: detached, clamped to ``clip``.

        Shapes:
            x: (B, ...); y: (B,) -> (B, ...)
        """
        if len(x) != len(y):
            raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
        return self.perturb(x.detach(), y.detach())

    @abstractmethod
    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        """The attack algorithm; subclasses implement it.

        Called from outside an attack it runs like ``attack(x, y)``: every model in eval mode
        (restored afterwards) and the result detached and clamped to ``clip``.
        """

    def models(self) -> list[nn.Module]:
        """Every module this attack runs; ``__call__`` puts them in eval mode and restores them."""
        return [self.model]

    def run_with(self, oracle: Attack, x: Tensor, y: Tensor) -> Tensor:
        """Run this attack's algorithm with ``oracle``'s ``loss_and_grad`` and ``evaluate``.

        This is how a wrapper (the ``oracle``) runs the attack it wraps: a shallow copy of the
        algorithm whose gradient oracle is the wrapper's. Wrappers pass the call down to the
        attack they wrap; ``Reparameterized`` carries the oracle's wrappers into z-space.
        """
        runner = copy.copy(self)
        runner.loss_and_grad = oracle.loss_and_grad  # type: ignore[method-assign]
        runner.evaluate = oracle.evaluate  # type: ignore[method-assign]
        return runner.perturb(x, y)

    def clamp(self, x: Tensor) -> Tensor:
        """``x`` clamped to the valid input range (unchanged when ``clip`` is None)."""
        return x if self.clip is None else x.clamp(*self.clip)

    def loss_and_grad(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-example loss and the gradient of its sum with respect to ``x``.

        Only the input receives a gradient (``autograd.grad``), so parameters' ``.grad`` are left
        untouched and the attack can run inside a training step.

        Shapes:
            x: (B, ...); y: (B,) -> loss (B,), grad (B, ...)
        """
        x = x.detach().requires_grad_(True)
        with torch.enable_grad():
            loss = self.loss_fn(self.model(x), y)
            grad = None
            if loss.requires_grad:
                # A shattered defence (e.g. thresholding) may cut x out of the graph entirely:
                # its gradient is then exactly zero, which is what a naive attacker observes.
                (grad,) = torch.autograd.grad(loss.sum(), x, allow_unused=True)
        if grad is None:
            grad = torch.zeros_like(x)
        return loss.detach(), grad.detach()

    @torch.no_grad()
    def evaluate(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-example loss and whether ``x`` is misclassified (one forward pass, no gradient).

        Shapes:
            x: (B, ...); y: (B,) -> loss (B,), wrong (B,) bool
        """
        logits = self.model(x)
        return self.loss_fn(logits, y), logits.argmax(1) != y

    def with_model(self, model: nn.Module) -> Attack:
        """This attack aimed at ``model``, with every setting it was given (a shallow copy here).

        Wrappers re-aim what they wrap and rebuild what they derived from the old model (BPDA's
        surrogate, Reparameterized's latent model), keeping the arguments passed explicitly.
        """
        other = copy.copy(self)
        other.model = model
        return other

    def __repr__(self) -> str:
        return f"{type(self).__name__}(loss={self.loss!r}, clip={self.clip})"


for _name in ("loss_and_grad", "evaluate"):  # (perturb is abstract here; subclasses' is guarded)
    setattr(Attack, _name, _guard(getattr(Attack, _name), _name))


class AttackWrapper(Attack):
    """An attack that runs another attack's algorithm with a different gradient oracle.

    Subclasses override ``loss_and_grad`` (and ``evaluate``) in terms of the wrapped attack's.
    ``perturb`` hands this wrapper to the wrapped attack's ``run_with``, which passes it down the
    chain to the innermost (algorithmic) attack; that runs with this wrapper's oracle. So
    wrappers compose in any order: ``EOT(BPDA(PGD(...)))`` averages BPDA gradients, and so does
    ``BPDA(EOT(PGD(...)))``; around a ``Reparameterized`` they act in its z-space.
    """

    def __init__(self, attack: Attack) -> None:
        super().__init__(
            attack.model, loss=attack.loss, clip=attack.clip, generator=attack.generator
        )
        self.attack = attack

    def perturb(self, x: Tensor, y: Tensor) -> Tensor:
        return self.attack.run_with(self, x, y)

    def run_with(self, oracle: Attack, x: Tensor, y: Tensor) -> Tensor:
        return self.attack.run_with(oracle, x, y)

    def loss_and_grad(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        return self.attack.loss_and_grad(x, y)

    def evaluate(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        return self.attack.evaluate(x, y)

    def models(self) -> list[nn.Module]:
        return [self.model, *self.attack.models()]

    def with_model(self, model: nn.Module) -> Attack:
        other = copy.copy(self)
        other.model = model
        other.attack = self.attack.with_model(model)
        return other

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.attack!r})"


def innermost(attack: Attack) -> Attack:
    """The attack at the bottom of a chain of wrappers (``attack`` itself if it is no wrapper)."""
    while isinstance(attack, AttackWrapper):
        attack = attack.attack
    return attack


def rebase(
    attack: Attack, model: nn.Module, *, stop: Attack | None = None, tail: Attack | None = None
) -> Attack:
    """A copy of the wrapper chain ``attack`` aimed at ``model``, with no input box (``clip=None``).

    Each wrapper is copied with its settings and the innermost attack is re-aimed with
    ``with_model``; when the walk down the chain reaches ``stop`` it is replaced by ``tail``
    instead. ``Reparameterized`` builds its z-space attack this way.
    """
    if attack is stop and tail is not None:
        return tail
    other: Attack
    if isinstance(attack, AttackWrapper):
        wrapper = copy.copy(attack)
        wrapper.attack = rebase(attack.attack, model, stop=stop, tail=tail)
        other = wrapper
    else:
        other = attack.with_model(model)
    other.model = model
    other.clip = None
    return other
