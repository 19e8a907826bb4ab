"""DRAW's training: the model config of each variant (``model_config``), one model's training
loop (``train``: Adam, the KL warm-up, gradient clipping and the validation monitor) and the full
run's cost (``full_cost``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from paperzoo.engine import TrainConfig, Trainer, budget, derive_seed
from paperzoo.experiments.base import RunContext
from paperzoo.models.draw import DRAW, DRAWConfig, bernoulli_nll, evaluate_nll
from paperzoo.papers.draw.config import VARIANTS, Config


def model_config(cfg: Config, variant: str, channels: int, h: int, w: int) -> DRAWConfig:
    """The model config of ``variant`` for images of ``channels`` x ``h`` x ``w``: the config's
    model, with the full-image read and write for the baseline."""
    m = replace(cfg.model, channels=channels, height=h, width=w)
    return m if variant == "attention" else replace(m, read_n=None, write_n=None)


def train(
    model: DRAW,
    x_train: Tensor,
    x_val: Tensor,
    cfg: Config,
    ctx: RunContext,
    variant: str,
) -> Any:
    """Train ``model`` (one variant) on ``x_train`` with Adam, the KL warm-up and gradient
    clipping of ``cfg``, monitoring the bound on ``x_val``; the trainer's history."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    dev = torch.device(ctx.device)
    # held out from the training digits (never test digits); --max-steps N: N batches only
    x_monitor = x_val[: budget.items(len(x_val), cfg.eval_batch)].to(dev)

    step_of: list[Trainer] = []  # the trainer, once built (its step drives the KL weight)

    def loss_fn(m: DRAW, batch: tuple[Tensor, ...]) -> tuple[Tensor, dict[str, Any]]:
        (xb,) = batch
        out = m(xb)  # through forward, so DistributedDataParallel syncs the gradients
        rec, kl = bernoulli_nll(out.logits, xb), out.kl.sum(1)  # Eqs. 9-11, nats per image
        step = step_of[0].step if step_of else 0
        beta = min(1.0, step / cfg.kl_warmup) if cfg.kl_warmup > 0 else 1.0
        loss = (rec + beta * kl).mean()  # beta = 1 after warm-up: the exact negative ELBO
        bound = (rec + kl).mean().detach()
        return loss, {"nll_bound": bound, "recon": rec.mean(), "kl": kl.mean(), "beta": beta}

    def eval_fn(m: DRAW) -> dict[str, float]:
        gen = torch.Generator(device=dev).manual_seed(derive_seed(ctx.seed, "monitor"))
        res = evaluate_nll(m, x_monitor, batch_size=cfg.eval_batch, generator=gen)
        return {"val_nll_bound": res["nll_bound"], "val_kl": res["kl"]}

    steps = cfg.train_steps

    def schedule(step: int) -> float:  # linear decay to lr_decay x lr
        return 1.0 - (1.0 - cfg.lr_decay) * step / max(1, steps)

    trainer = Trainer(
        model,
        opt,
        loss_fn,
        config=TrainConfig(
            steps=steps,
            batch_size=min(cfg.batch_size, len(x_train)),
            seed=derive_seed(ctx.seed, "batches"),
            log_every=max(1, min(cfg.log_every, steps)),
            eval_every=cfg.eval_every,
            grad_clip=cfg.grad_clip,
            progress=ctx.progress,
            desc=f"draw {variant}",
        ),
        lr_schedule=schedule if cfg.lr_decay != 1.0 else None,
        eval_fn=eval_fn if len(x_val) else None,
        device=ctx.device,
        out_dir=ctx.out_dir / "runs" / variant,
    )
    step_of.append(trainer)
    return trainer.fit((x_train,), resume=True)


def full_cost(cfg: Config, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    """The full run's pieces (``paperzoo.cost``): each model's training steps and evaluations."""
    from paperzoo.utils.work import Piece, forward, step

    pieces = []
    steps = dict(plan)
    for variant in VARIANTS:
        net = DRAW(config=model_config(cfg, variant, 1, 28, 28))
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
