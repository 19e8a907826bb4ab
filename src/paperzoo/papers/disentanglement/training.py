"""One item of the disentanglement study's grid, end to end: its data sets and puzzle pools
(``environment``), the VAE's training (``Trainer(local=True)``: under torchrun every rank trains
its own items), the six disentanglement metrics and the reconstruction error of its
representation, and the WReNs trained on that frozen representation, with their test accuracy
at ``wren_steps``. ``evaluate_item`` writes the item's record to ``models/<id>/result.json`` in
the run's ``--out``; a rerun loads it instead of training again.

Protocol: docs/disentanglement.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from paperzoo.data.abstract_reasoning import PGMs, range_embed, render_pgms, sample_pgms
from paperzoo.data.ground_truth import GroundTruthData, Quantized, load_ground_truth
from paperzoo.engine import (
    NonFiniteLossError,
    TrainConfig,
    Trainer,
    budget,
    derive_seed,
    load_weights,
    save_weights,
    seeded,
)
from paperzoo.engine.transfer import to_device
from paperzoo.experiments.base import RunContext
from paperzoo.experiments.grid import read_record, write_record
from paperzoo.metrics.disentanglement import (
    beta_vae_score,
    dci,
    factor_vae_score,
    mig,
    modularity,
    sap,
)
from paperzoo.metrics.disentanglement.utils import encode_factors
from paperzoo.models.vae import (
    VAE,
    VAEConfig,
    bernoulli_reconstruction,
    make_optimizers,
    train_step,
)
from paperzoo.models.wren import WReN
from paperzoo.papers.disentanglement.config import (
    DRY_RUN_BATCH,
    GROUND_TRUTH_ID,
    PGM_SIZES,
    RANDOM_ID,
    WREN_GRID,
    Config,
    ModelSpec,
)

log = logging.getLogger(__name__)


# -- the data sets of a run -------------------------------------------------------------------------


@dataclass
class Env:
    """Data sets and puzzle pools shared by every item of the grid."""

    name: str
    base: GroundTruthData  # the data set at the run's image size
    train: GroundTruthData  # what VAEs train on and metrics intervene on
    pgm: Quantized  # the puzzles' quantized data set
    train_pgms: PGMs | None  # the pool of training puzzles (None: fresh puzzles every step)
    test_pgms: PGMs


def environment(cfg: Config, ctx: RunContext, name: str) -> Env:
    base = load_ground_truth(
        name, data_root=ctx.data_root, download=ctx.download, image_size=cfg.image_size
    )
    pgm = Quantized(base, PGM_SIZES[name])
    train = pgm if cfg.quantize_all else base
    rng = np.random.default_rng(derive_seed(ctx.seed, "pgm-pools"))
    train_pgms = (
        sample_pgms(pgm.factor_sizes, cfg.wren_train_puzzles, rng)
        if cfg.wren_train_puzzles
        else None
    )
    # (--max-steps: a batch or two of test puzzles)
    n_test = budget.items(cfg.wren_test_puzzles, DRY_RUN_BATCH["test_puzzles"])
    test_pgms = sample_pgms(pgm.factor_sizes, n_test, rng)
    return Env(name, base, train, pgm, train_pgms, test_pgms)


class FactorsAsObservations(GroundTruthData):
    """The same factors, with the factor vector itself as the observation (for the ground-truth code)."""

    def __init__(self, data: GroundTruthData) -> None:
        self.factor_sizes, self.factor_names, self.name = (
            data.factor_sizes,
            data.factor_names,
            data.name,
        )

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        return torch.from_numpy(self.check_factors(factors).astype(np.float32))


def _random_code(dim: int, seed: int):
    """A representation that ignores its input: i.i.d. N(0, 1) codes from its own generator."""
    g = torch.Generator().manual_seed(seed)
    return lambda x: torch.randn(len(x), dim, generator=g)


# -- one item of the grid ---------------------------------------------------------------------------


def _vae_batches(
    env: Env, cfg: Config, device: str
) -> Callable[[int, torch.Generator], tuple[Tensor]]:
    """``step, generator -> (images,)``: the VAE's batch, rendered on the host and copied to
    ``device`` without blocking the host."""

    def batch(step: int, g: torch.Generator) -> tuple[Tensor]:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=g)))
        return (to_device(env.train.sample_observations(cfg.vae_batch, rng), device),)

    return batch


def _train_vae(spec: ModelSpec, cfg: Config, ctx: RunContext, env: Env, out: Path) -> VAE:
    hp = dict(spec.hparams)
    if spec.method == "annealed_vae":
        hp["iteration_threshold"] = max(1, round(cfg.anneal_fraction * cfg.vae_steps))
    vcfg = VAEConfig(in_channels=env.base.observation_shape[0], image_size=cfg.image_size)
    seed = derive_seed(ctx.seed, "vae", spec.id)
    with seeded(seed):
        model = VAE(config=vcfg, method=spec.method, disc_width=cfg.disc_width, **hp)
    weights = out / "vae.safetensors"
    if weights.exists():
        load_weights(weights, model)
        return model.to(ctx.device).eval()
    vae_opt, disc_opt = make_optimizers(model, lr=cfg.vae_lr)
    extra: dict[str, Any] = {"vae_opt": vae_opt}
    if disc_opt is not None:
        extra["disc_opt"] = disc_opt

    def loss_fn(m: VAE, b: tuple[Tensor]) -> dict[str, Tensor]:
        return train_step(m, b[0], vae_opt, disc_opt)

    tcfg = TrainConfig(
        steps=cfg.vae_steps,
        batch_size=cfg.vae_batch,
        seed=seed,
        log_every=max(1, min(100, cfg.vae_steps)),
        checkpoint_every=cfg.checkpoint_every,
        keep_checkpoints=1,
        progress=ctx.progress,
        desc=f"vae {spec.id}",
        channels_last=cfg.channels_last,
    )
    trainer = Trainer(
        model,
        None,
        loss_fn,
        config=tcfg,
        out_dir=out / "train",
        extra=extra,
        manual=True,
        device=ctx.device,
        local=True,  # under torchrun each rank trains its own grid items
    )
    with seeded(seed):  # the reparameterisation noise comes from the (checkpointed) global stream
        trainer.fit(_vae_batches(env, cfg, ctx.device), resume=True)
    model.eval()
    save_weights(weights, model)
    return model


def _vae_representation(model: VAE, *, on_host: bool = True):
    """The encoder mean on the model's device; the images are copied there without blocking
    the host, the codes come back on the CPU (``on_host=False``: they stay on the device, for
    the WReN's training steps)."""
    device = next(model.parameters()).device

    def rep(x: Tensor) -> Tensor:
        with torch.no_grad():
            codes = model.represent(to_device(x, device))
        return codes.cpu() if on_host else codes

    return rep


def _metric_rng(ctx: RunContext, key: str) -> np.random.Generator:
    """The seeded stream of one metric's samples (the same for every representation of a run)."""
    return np.random.default_rng(derive_seed(ctx.seed, "metrics", key))


def _code_factors(
    data: GroundTruthData, cfg: Config, ctx: RunContext
) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    """(stream, training factors, test factors) for the code-based metrics (MIG, DCI, SAP,
    modularity); the stream goes on to render their observations."""
    r = _metric_rng(ctx, "codes")
    # (--max-steps: every sample size cut to a few batches)
    n_tr = budget.items(cfg.code_train, DRY_RUN_BATCH["codes"])
    n_te = budget.items(cfg.code_test, DRY_RUN_BATCH["codes"])
    return r, data.sample_factors(n_tr, r), data.sample_factors(n_te, r)


def representation_metrics(
    rep, data: GroundTruthData, cfg: Config, ctx: RunContext
) -> dict[str, float]:
    """All six metrics with the same (seeded) samples for every representation."""
    # (--max-steps: every sample size cut to a few batches)
    kw = {
        "batch_size": cfg.metric_batch,
        "num_train": budget.items(cfg.metric_train, DRY_RUN_BATCH["metric_points"]),
        "num_eval": budget.items(cfg.metric_eval, DRY_RUN_BATCH["metric_points"]),
    }
    n_var = budget.items(cfg.variance_samples, DRY_RUN_BATCH["variance"])
    out = {
        "beta_vae": beta_vae_score(data, rep, _metric_rng(ctx, "beta_vae"), **kw),
        "factor_vae": factor_vae_score(
            data, rep, _metric_rng(ctx, "factor_vae"), num_variance_estimate=n_var, **kw
        ),
    }
    r, f_tr, f_te = _code_factors(data, cfg, ctx)
    c_tr, c_te = encode_factors(data, rep, f_tr, r), encode_factors(data, rep, f_te, r)
    d = dci(
        c_tr,
        f_tr,
        c_te,
        f_te,
        n_estimators=budget.items(cfg.dci_trees, DRY_RUN_BATCH["dci_trees"]),
        random_state=derive_seed(ctx.seed, "dci") % 2**31,
    )
    out.update(
        mig=mig(c_tr, f_tr),
        dci=d.disentanglement,
        dci_completeness=d.completeness,
        dci_informativeness=d.informativeness_test,
        sap=sap(c_tr, f_tr, c_te, f_te),
        modularity=modularity(c_tr, f_tr),
    )
    return {k: float(v) for k, v in out.items()}


NOISE_DRAWS = 20  # Gaussian codes that measure modularity's noise level


def _modularity_noise(
    data: GroundTruthData, cfg: Config, ctx: RunContext, dim: int = 10
) -> dict[str, float]:
    """Modularity of independent N(0, 1) codes on the factor samples every representation gets.

    Modularity (Ridgeway & Mozer 2018) rewards a code whose every dimension carries information
    about one factor only. Its mutual-information estimates (histograms) are biased upwards, most
    for the factors with more values, so pure noise looks modular: about 0.64 on the quantized
    abstract dSprites grid, 0.62 on color-shapes, 0.48 on dSprites (40 draws, 1,500 codes; the
    same at 10,000). The mean over ``NOISE_DRAWS`` codes is that run's zero.
    """
    f_tr = _code_factors(data, cfg, ctx)[1]
    g = np.random.default_rng(derive_seed(ctx.seed, "modularity-noise"))
    vals = [modularity(g.standard_normal((len(f_tr), dim)), f_tr) for _ in range(NOISE_DRAWS)]
    return {"mean": float(np.mean(vals)), "std": float(np.std(vals)), "draws": NOISE_DRAWS}


@torch.no_grad()
def _reconstruction(model: VAE, data: GroundTruthData, cfg: Config, ctx: RunContext) -> float:
    """Mean Bernoulli reconstruction loss of the encoder mean on held-out images (lower is better)."""
    x = data.sample_observations(
        budget.items(cfg.recon_samples, DRY_RUN_BATCH["recon"]),
        np.random.default_rng(derive_seed(ctx.seed, "recon")),
    )
    total = 0.0
    for i in range(0, len(x), 256):
        xb = x[i : i + 256].to(next(model.parameters()).device)
        total += float(bernoulli_reconstruction(model.decoder(model.represent(xb)), xb)) * len(xb)
    return total / len(x)


def panel_codes(
    item: str, rep, env: Env, pgms: PGMs, ctx: RunContext, key: str
) -> tuple[Tensor, Tensor]:
    """Embeddings of the context (P, 8, D) and candidate (P, 6, D) panels of ``pgms``; a
    VAE's panels are made on ``ctx.device``, where it encodes them (``render_pgms``)."""
    if item == GROUND_TRUTH_ID:  # the study's "values" embedding of the factors
        sizes = env.pgm.factor_sizes
        ctx_e, ans_e = range_embed(pgms.context, sizes), range_embed(pgms.answers, sizes)
        return torch.tensor(ctx_e, dtype=torch.float32), torch.tensor(ans_e, dtype=torch.float32)
    if item == RANDOM_ID:  # the code ignores the image: skip rendering
        codes = torch.as_tensor(rep(torch.empty(len(pgms) * 14, 1)), dtype=torch.float32)
        return codes[: len(pgms) * 8].view(len(pgms), 8, -1), codes[len(pgms) * 8 :].view(
            len(pgms), 6, -1
        )
    rng = np.random.default_rng(derive_seed(ctx.seed, "panels", key))  # same panels for every model
    cs, ans = [], []
    for i in range(0, len(pgms), 256):
        c_img, a_img = render_pgms(env.pgm, pgms[i : i + 256], rng, ctx.device)
        n = len(c_img)
        codes = torch.as_tensor(
            rep(torch.cat([c_img.flatten(0, 1), a_img.flatten(0, 1)])), dtype=torch.float32
        )
        cs.append(codes[: n * 8].view(n, 8, -1))
        ans.append(codes[n * 8 :].view(n, 6, -1))
    return torch.cat(cs), torch.cat(ans)


def _wren_hparams(cfg: Config, ctx: RunContext, item: str, run: int) -> dict[str, Any]:
    if cfg.wren_runs == 1:
        return {
            "lr": cfg.wren_lr,
            "dropout": cfg.wren_dropout,
            "graph_mlp": cfg.wren_graph,
            "edge_mlp": cfg.wren_edge,
        }
    rng = np.random.default_rng(derive_seed(ctx.seed, "wren-hparams", item, run))
    return {k: v[int(rng.integers(len(v)))] for k, v in WREN_GRID.items()}


def _wren_batches(item: str, rep, cfg: Config, ctx: RunContext, env: Env) -> Any:
    """The WReN's training data: the encoded pool of training puzzles (three tensors), or,
    without a pool, ``step, generator -> batch`` of fresh puzzles, encoded and on
    ``ctx.device`` (a VAE's codes are made there; the others are copied without blocking the
    host)."""
    if env.train_pgms is not None:
        tr_ctx, tr_ans = panel_codes(item, rep, env, env.train_pgms, ctx, "train")
        return tr_ctx, tr_ans, torch.as_tensor(env.train_pgms.target)

    def data(step: int, g: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=g)))
        p = sample_pgms(env.pgm.factor_sizes, cfg.wren_batch, rng)
        c, a = panel_codes(item, rep, env, p, ctx, f"train-{step}")
        y = torch.as_tensor(p.target)
        return to_device(c, ctx.device), to_device(a, ctx.device), to_device(y, ctx.device)

    return data


def train_wren(item: str, rep, cfg: Config, ctx: RunContext, env: Env, out: Path) -> dict[str, Any]:
    """Train ``wren_runs`` WReNs on the frozen representation; test accuracy at ``wren_steps``.

    During training the WReN's weights are saved at each step of ``wren_steps`` (under
    ``wren-<run>/snapshots/``, so an interrupted run resumes); the test puzzles are read only
    afterwards, in the final evaluation of those snapshots.
    """
    test_ctx, test_ans = panel_codes(item, rep, env, env.test_pgms, ctx, "test")
    test_y = torch.as_tensor(env.test_pgms.target)
    # The encoded test puzzles (frozen representation): read in the final evaluation only.
    test_ctx, test_ans, test_y = (
        ctx.holdout(t, f"test puzzles ({k})")
        for t, k in ((test_ctx, "context"), (test_ans, "answers"), (test_y, "targets"))
    )
    data = _wren_batches(item, rep, cfg, ctx, env)

    def loss_fn(m: WReN, batch: tuple[Tensor, Tensor, Tensor]):
        logits = m(batch[0], batch[1])
        return F.cross_entropy(logits, batch[2]), {
            "acc": (logits.argmax(1) == batch[2]).float().mean()
        }

    @torch.no_grad()
    def test_acc(m: WReN) -> float:
        was = m.training
        m.eval()
        dev = next(m.parameters()).device
        correct = torch.zeros((), dtype=torch.long, device=dev)  # counted on the device
        for i in range(0, len(test_y), 512):
            logits = m(to_device(test_ctx[i : i + 512], dev), to_device(test_ans[i : i + 512], dev))
            correct += (logits.argmax(1) == to_device(test_y[i : i + 512], dev)).sum()
        m.train(was)
        return int(correct) / len(test_y)  # one read

    def snapshot_fn(trainer: list[Trainer], snaps: Path) -> Any:
        """eval_fn saving the weights at the steps of ``wren_steps`` (evaluated at the end)."""

        def save(m: WReN) -> dict[str, float]:
            step = trainer[0].step
            if step in cfg.wren_steps:
                snaps.mkdir(parents=True, exist_ok=True)
                save_weights(snaps / f"step-{step}.safetensors", m)
            return {}

        return save

    runs = []
    for r in budget.loop(cfg.wren_runs, "WReN runs", kind="repeat"):
        hp = _wren_hparams(cfg, ctx, item, r)
        seed = derive_seed(ctx.seed, "wren", item, r)
        with seeded(seed):
            model = WReN(
                embed_dim=test_ctx.shape[-1],
                edge_mlp=hp["edge_mlp"],
                graph_mlp=hp["graph_mlp"],
                dropout=hp["dropout"],
            )
        opt = torch.optim.Adam(model.parameters(), lr=hp["lr"])
        tcfg = TrainConfig(
            steps=max(cfg.wren_steps),
            batch_size=cfg.wren_batch,
            seed=seed,
            log_every=cfg.wren_eval_every,
            eval_every=cfg.wren_eval_every,
            checkpoint_every=cfg.checkpoint_every,
            keep_checkpoints=1,
            progress=ctx.progress,
            desc=f"wren {item} #{r}",
        )
        holder: list[Trainer] = []  # the trainer, once built (its step names the snapshots)
        snaps = out / f"wren-{r}" / "snapshots"
        trainer = Trainer(
            model,
            opt,
            loss_fn,
            config=tcfg,
            out_dir=out / f"wren-{r}",
            eval_fn=snapshot_fn(holder, snaps),
            device=ctx.device,
            local=True,
        )
        holder.append(trainer)
        with seeded(seed):  # dropout draws from the (checkpointed) global stream
            trainer.fit(data, resume=True)
        # Training is over: the final evaluation of the weights at each step of wren_steps.
        steps = [s for s in sorted(cfg.wren_steps) if (snaps / f"step-{s}.safetensors").exists()]
        accs = []
        with ctx.final_evaluation():
            for s in steps:
                load_weights(snaps / f"step-{s}.safetensors", model)
                accs.append(test_acc(model))
        runs.append(
            {
                "hparams": {k: list(v) if isinstance(v, tuple) else v for k, v in hp.items()},
                "steps": steps,
                "test_acc": accs,
            }
        )
    steps = runs[0]["steps"]
    mean_acc = [float(np.mean([r["test_acc"][i] for r in runs])) for i in range(len(steps))]
    return {"steps": steps, "test_acc": mean_acc, "runs": runs}


def evaluate_item(
    item: str, cfg: Config, ctx: RunContext, env: Env, specs: dict[str, ModelSpec]
) -> dict[str, Any]:
    """Train (VAEs), score and reason with one item; its record is cached in models/<item>/.

    A VAE or WReN whose loss becomes NaN or infinite ends the item with ``diverged`` in its
    record (what diverged, at which step): the study leaves it out of its summary and names it,
    the other items are unaffected."""
    out = ctx.out_dir / "models" / item
    cached = out / "result.json"
    if cached.exists():
        log.info("%s: finished earlier, loading %s", item, cached)
        return read_record(cached)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "id": item,
        "dataset": env.name,
        "chance": 1.0 / env.train.num_factors,
    }
    if item == GROUND_TRUTH_ID:
        record["kind"] = "ground_truth"
        record["metrics"] = representation_metrics(
            lambda x: x, FactorsAsObservations(env.train), cfg, ctx
        )
        rep = None
    elif item == RANDOM_ID:
        record["kind"] = "random"
        record["metrics"] = representation_metrics(
            _random_code(10, derive_seed(ctx.seed, "random-metrics")),
            FactorsAsObservations(env.train),
            cfg,
            ctx,
        )
        record["modularity_noise"] = _modularity_noise(FactorsAsObservations(env.train), cfg, ctx)
        rep = _random_code(10, derive_seed(ctx.seed, "random-panels"))
    else:
        spec = specs[item]
        record.update(kind="vae", method=spec.method, hparams=dict(spec.hparams), seed=spec.seed)
        try:
            model = _train_vae(spec, cfg, ctx, env, out)
        except NonFiniteLossError as err:
            return _diverged(item, record, "its VAE", err, cached)
        record["metrics"] = representation_metrics(_vae_representation(model), env.train, cfg, ctx)
        record["metrics"]["reconstruction"] = -_reconstruction(model, env.train, cfg, ctx)
        record["weights"] = str((out / "vae.safetensors").resolve())
        rep = _vae_representation(model, on_host=False)  # the WReN trains on the device
    try:
        record["wren"] = train_wren(item, rep, cfg, ctx, env, out)
    except NonFiniteLossError as err:
        return _diverged(item, record, "a WReN", err, cached)
    write_record(cached, record, indent=1)
    return record


def _diverged(
    item: str, record: dict[str, Any], what: str, err: NonFiniteLossError, cached: Path
) -> dict[str, Any]:
    """Record that ``what`` of ``item`` diverged (kept on disk, as a finished item's record)."""
    record["diverged"] = f"{what} diverged at step {err.step} (loss {err.value})"
    log.warning("%s: %s; the item is left out of the study", item, record["diverged"])
    write_record(cached, record, indent=1)
    return record
