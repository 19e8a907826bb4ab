"""Are disentangled representations helpful for abstract visual reasoning?
(van Steenkiste, Locatello, Schmidhuber, Bachem, NeurIPS 2019, arXiv:1905.12506)

The study: train many VAEs (beta-VAE, AnnealedVAE, FactorVAE, DIP-VAE-I/II, beta-TCVAE; 6
hyperparameters x 5 seeds on each of two data sets), score every representation with six
disentanglement metrics and its reconstruction error, then train WReN models on the frozen
representations to solve PGM puzzles, and ask which score predicts the puzzle accuracy: Spearman
rank correlations between each score and the accuracy after few and after many training steps
(the paper's Fig. 4). Finding: BetaVAE, FactorVAE and DCI scores correlate positively with the
accuracy and more strongly than reconstruction early in training; the gap fades later.

The reproduction runs the same pipeline:

1. the model grid: ``ground-truth`` (the factors as the code), ``random-code`` (Gaussian noise)
   and the VAEs; each item is trained (VAEs), scored (all metrics with the study's defaults) and
   used as a frozen embedding for WReN, whose test accuracy is recorded at several step counts;
2. every finished item writes ``models/<id>/result.json`` (and the VAE's weights) in the output
   directory, so an interrupted run resumes per model and never retrains a finished one;
3. the grid is sliced deterministically for scale-out: ``--shard K/N`` keeps items i with
   i mod N == K (a Slurm array or Kubernetes indexed job), and under ``torchrun`` each rank takes
   every world_size-th item of that slice; ``paperzoo merge DIR... --out OUT`` combines the slices;
4. the sanity claims use the ground-truth and random codes; the study's claims are the Spearman
   correlations over the trained VAEs (findings for BetaVAE, FactorVAE and DCI; see above).

Data. ``full`` reads the study's first data set, abstract dSprites, drawn from the real dSprites
archive under ``--data-root`` (``paper_data``; without it the run refuses before writing anything);
the study's second, 3dshapes, has no loader here, so a full run is the 180 VAEs of one data set
(the paper: 360 over two). ``--dataset dsprites`` / ``color-shapes`` are named substitutes ("not
the paper's setting"). smoke and quick render abstract dSprites procedurally (not the official
pixels).

Deviations at ``quick`` scale (CPU minutes instead of thousands of GPU hours): 12 VAEs, each
method at the weakest and the strongest of its six settings in the study's sweep, trained for
1,000 steps (Adam 1e-4, batch 64, as the study) on 16 x 16 images of the quantized factor grid
(the puzzles' grid, 4,320 factor combinations) instead of 180 per data set for 300k steps at
64 x 64; metrics on fewer samples (BetaVAE / FactorVAE on 1,000 / 500 points, DCI's boosted trees
with 20 stages); a FactorVAE discriminator of width 256; one small WReN (edge MLP 3 x 64, graph
MLP 64) per representation trained for 600 steps on a pool of 2,000 pre-encoded puzzles and
tested on 2,000 (a binomial standard error of about 0.01 on its accuracy).

The study's findings are judged at quick as at full, and they are not expected to hold there:
the quick VAEs are barely disentangled. In the design probes (seed 100, disjoint from the seeds
0-3 a reader runs; ``docs/disentanglement.md``) every VAE scored near chance on every metric
(BetaVAE 0.24-0.38 against a chance of 0.17, DCI 0.04-0.14, MIG <= 0.02) after 800 or 1,000
steps at lr 1e-4 or 1e-3, and no better after 5,000 steps at 1e-3 (BetaVAE 0.36, DCI 0.10-0.14,
reconstruction loss unchanged at 313 nats): those VAEs encode the background colour and no
other factor. A longer CPU-scale study (a ``study`` scale between quick and full) would rank
noise too, so there is none; the finding needs ``full``'s training. The correlations at quick
rank 12 models whose scores sit in a narrow band near chance.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import Tensor

from paperzoo.data.abstract_reasoning import PGMs, range_embed, render_pgms, sample_pgms
from paperzoo.data.base import DataInfo, tensor_sha256
from paperzoo.data.ground_truth import GroundTruthData, Quantized, load_ground_truth
from paperzoo.engine import (
    TrainConfig,
    Trainer,
    budget,
    derive_seed,
    load_weights,
    save_weights,
    seeded,
)
from paperzoo.engine.distributed import DistInfo, wait_for_all_ranks
from paperzoo.experiments.base import (
    EXPERIMENTS,
    ClaimSpec,
    Experiment,
    NotRun,
    Outcome,
    RunContext,
)
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
from paperzoo.utils.io import atomic_write_text

log = logging.getLogger(__name__)

# --max-steps N (a dry run): every evaluation a run sizes itself is cut to N "batches" of these
# sizes, so a full dry run on 64 x 64 images stays within minutes and a few GB. With batches of
# 50 metric points, 500 codes and 512 test puzzles, a full dry run at N = 3 on a full-size archive
# took 14 min and 3.8 GB (one thread, loaded machine), almost all of it evaluating three VAEs;
# with these, 3.3 min and 2.0 GB. Without --max-steps nothing is cut.
DRY_RUN_BATCH = {
    "metric_points": 8,  # BetaVAE / FactorVAE training and evaluation points (each a batch of pairs)
    "variance": 100,  # FactorVAE's variance samples
    "codes": 100,  # codes for MIG, DCI, SAP and modularity (each split)
    "dci_trees": 10,  # DCI's boosting stages
    "recon": 64,  # images of the reconstruction error
    "test_puzzles": 32,  # WReN test puzzles
}
METRICS = ("beta_vae", "factor_vae", "mig", "dci", "sap", "modularity", "reconstruction")
STUDY_FINDING_METRICS = ("beta_vae", "factor_vae", "dci")  # the paper's predictive metrics
GROUND_TRUTH_ID, RANDOM_ID = "ground-truth", "random-code"
# The study quantizes the data sets for the puzzles (disentanglement_lib pgm_data.py).
PGM_SIZES = {
    "abstract-dsprites": (5, 6, 3, 3, 4, 4),
    "color-shapes": (10, 10, 10, 4, 4, 4),
    "dsprites": (3, 3, 4, 4, 4),
}
# The study's hyperparameter sweep (abstract_reasoning_study_v1, stage 1).
STUDY_GRID: dict[str, tuple[dict[str, float], ...]] = {
    "beta_vae": tuple({"beta": b} for b in (1.0, 2.0, 4.0, 6.0, 8.0, 16.0)),
    "annealed_vae": tuple(
        {"c_max": c, "gamma": 1000.0} for c in (5.0, 10.0, 25.0, 50.0, 75.0, 100.0)
    ),
    "factor_vae": tuple({"gamma": g} for g in (10.0, 20.0, 30.0, 40.0, 50.0, 100.0)),
    "dip_vae_i": tuple(
        {"lambda_od": v, "lambda_d_factor": 10.0} for v in (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
    ),
    "dip_vae_ii": tuple(
        {"lambda_od": v, "lambda_d_factor": 1.0} for v in (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
    ),
    "beta_tc_vae": tuple({"beta": b} for b in (1.0, 2.0, 4.0, 6.0, 8.0, 10.0)),
}
# WReN hyperparameters the study sampled from (stage2/example.gin).
WREN_GRID = {
    "lr": (1e-2, 1e-3, 1e-4),
    "dropout": (0.25, 0.5, 0.75, 0.0),
    "graph_mlp": ((256,), (128,), (128, 128), (256, 256)),
    "edge_mlp": ((512,) * 4, (512,) * 3, (512,) * 2, (256,) * 4, (256,) * 3, (256,) * 2),
}


@dataclass(frozen=True)
class ModelSpec:
    method: str  # one of VAE.METHODS
    hparams: tuple[tuple[str, float], ...]  # objective hyperparameters
    seed: int  # training seed

    @property
    def id(self) -> str:
        hp = "-".join(f"{k}{v:g}" for k, v in self.hparams)
        return f"{self.method}-{hp}-s{self.seed}"


def study_grid(
    seeds: int, settings: dict[str, tuple[int, ...]] | None = None
) -> tuple[ModelSpec, ...]:
    """The study's VAEs: every method x (the chosen indices of) its 6 settings x ``seeds`` seeds."""
    specs = []
    for method, options in STUDY_GRID.items():
        idx = range(len(options)) if settings is None else settings.get(method, ())
        for i in idx:
            for s in range(seeds):
                specs.append(ModelSpec(method, tuple(sorted(options[i].items())), s))
    return tuple(specs)


@dataclass(frozen=True)
class DisentanglementConfig:
    models: tuple[ModelSpec, ...]  # the VAE grid
    image_size: int  # side of the images (64 in the study)
    quantize_all: bool  # train VAEs and compute metrics on the puzzles' quantized grid too
    vae_steps: int  # training steps per VAE (300k in the study)
    vae_batch: int = 64  # VAE batch size
    vae_lr: float = 1e-4  # Adam learning rate
    anneal_fraction: float = 1 / 3  # AnnealedVAE reaches c_max after this fraction (100k of 300k)
    disc_width: int = 1000  # FactorVAE discriminator width
    checkpoint_every: int = 0  # VAE/WReN checkpoint interval (0: only at the end)
    # engine option: the VAEs train in channels-last memory format (1.09-1.13x faster steps at
    # quick and 1.06-1.10x at full on one thread, outputs equal within the bench's tolerance:
    # bench conv_layout); the WReNs have no convolutions
    channels_last: bool = True
    # metrics (the study: batch 64, 10,000 / 5,000 points, 10,000 variance samples, 100 trees)
    metric_batch: int = 64  # BetaVAE / FactorVAE batch size
    metric_train: int = 10000  # BetaVAE / FactorVAE training points
    metric_eval: int = 5000  # BetaVAE / FactorVAE evaluation points
    variance_samples: int = 10000  # FactorVAE global-variance samples
    code_train: int = 10000  # codes for MIG, DCI, SAP, modularity (training split)
    code_test: int = 5000  # ... test split (DCI, SAP)
    dci_trees: int = 100  # boosting stages of DCI's classifiers
    recon_samples: int = 10000  # images for the reconstruction error
    # WReN on frozen representations
    wren_steps: tuple[int, ...] = (1000, 10000, 100000)  # accuracy recorded at these steps
    wren_eval_every: int = 1000  # evaluation interval (divides every entry of wren_steps)
    wren_batch: int = 32  # puzzles per step
    wren_train_puzzles: int | None = None  # pool of pre-encoded puzzles; None: fresh every step
    wren_test_puzzles: int = 3200  # held-out puzzles (100 batches of 32, as the study)
    wren_runs: int = 10  # WReNs per representation (hyperparameters sampled from WREN_GRID)
    wren_edge: tuple[int, ...] = (512, 512, 512, 512)  # edge MLP when wren_runs == 1
    wren_graph: tuple[int, ...] = (256, 256)  # graph MLP when wren_runs == 1
    wren_dropout: float = 0.5  # dropout when wren_runs == 1
    wren_lr: float = 1e-3  # learning rate when wren_runs == 1
    traversal_steps: int = 7  # values per latent in the traversal figure
    notes: tuple[str, ...] = field(default_factory=tuple)  # scale-specific deviations


# Quick: every method at the weakest and the strongest regularisation of the study's sweep.
QUICK_MODELS = study_grid(seeds=1, settings={m: (0, 5) for m in STUDY_GRID})

CONFIGS = {
    "smoke": DisentanglementConfig(
        models=(  # one plain VAE objective and one with the FactorVAE discriminator
            ModelSpec("beta_vae", (("beta", 4.0),), 0),
            ModelSpec("factor_vae", (("gamma", 20.0),), 0),
        ),
        image_size=16,
        quantize_all=True,
        vae_steps=3,
        vae_batch=16,
        disc_width=32,
        metric_batch=8,
        metric_train=40,
        metric_eval=20,
        variance_samples=64,
        code_train=100,
        code_test=50,
        dci_trees=1,
        recon_samples=64,
        wren_steps=(2, 4),
        wren_eval_every=2,
        wren_batch=8,
        wren_train_puzzles=64,
        wren_test_puzzles=32,
        wren_runs=1,
        wren_edge=(16,),
        wren_graph=(8,),
        traversal_steps=3,
    ),
    "quick": DisentanglementConfig(
        models=QUICK_MODELS,
        image_size=16,
        quantize_all=True,
        vae_steps=1000,
        disc_width=256,
        metric_batch=64,
        metric_train=1000,
        metric_eval=500,
        variance_samples=2000,
        code_train=1500,
        code_test=750,
        dci_trees=20,
        recon_samples=1000,
        wren_steps=(100, 300, 600),
        wren_eval_every=100,
        wren_train_puzzles=2000,
        wren_test_puzzles=2000,
        wren_runs=1,
        wren_edge=(64, 64, 64),
        wren_graph=(64,),
        wren_dropout=0.5,
        wren_lr=1e-3,
        notes=(
            "quick scale: 12 VAEs (each method at the weakest and the strongest setting of the "
            "study's sweep) x 1,000 steps on 16x16 images of the quantized grid, metrics on reduced "
            "samples (DCI with 20 boosting stages), FactorVAE discriminator width 256, one small "
            "WReN per representation (600 steps on a pool of 2,000 puzzles, 2,000 test puzzles)",
        ),
    ),
    "full": DisentanglementConfig(
        models=study_grid(seeds=5),
        image_size=64,
        quantize_all=False,
        vae_steps=300000,
        checkpoint_every=10000,
    ),
}

_SANITY_GT = (
    ("beta_vae", ">= 0.95", "BetaVAE score"),
    ("factor_vae", ">= 0.95", "FactorVAE score"),
    ("mig", ">= 0.9", "MIG"),
    ("dci", ">= 0.9", "DCI disentanglement"),
    ("modularity", ">= 0.9", "modularity"),
)

# The metric and WReN bounds on the ground-truth and random codes are sanity checks of the
# pipeline (the paper claims nothing about them); the study's findings are the Spearman claims.
# Which metrics correlate with early WReN accuracy is in the paper's Sec. 5 / figures, which no
# reachable copy of its text confirmed (docs/paper-numbers.md).
_UNREAD_STUDY = (
    "only the abstract could be read ('quicker learning using fewer samples'); which metrics "
    "correlate, and how they compare with reconstruction, is in Sec. 5 / the figures"
)
CLAIMS = (
    *(
        ClaimSpec(
            f"metrics.ground_truth_representation.{m}",
            f"With the ground-truth factors as the code, the {name} is near its maximum of 1",
            paper=None,
            target=target,
            kind="check",
        )
        for m, target, name in _SANITY_GT
    ),
    ClaimSpec(
        "metrics.ground_truth_representation.sap_minus_random",
        "The SAP score of the ground-truth code exceeds that of a random Gaussian code",
        paper=None,
        target="> 0",
        kind="check",
    ),
    ClaimSpec(
        "metrics.ground_truth_representation.modularity_minus_noise",
        "The ground-truth code's modularity minus the noise level (the mean modularity of 20 "
        "independent Gaussian codes scored on the same factor samples): modularity has no zero "
        "baseline, because the histogram estimates of mutual information are biased towards the "
        "factors with more values, so noise scores about 0.5-0.65 depending on the factor sizes",
        paper=None,
        target=">= 0.2",
        kind="check",
    ),
    *(
        ClaimSpec(
            f"metrics.random_representation.{m}_off_chance",
            f"A random code's {name} score is within 0.1 of chance (1 / number of factors) from "
            "either side: |score - chance|",
            paper=None,
            target="<= 0.1",
            kind="check",
        )
        for m, name in (("beta_vae", "BetaVAE"), ("factor_vae", "FactorVAE"))
    ),
    ClaimSpec(
        "metrics.random_representation.mig",
        "A random code's MIG is near 0",
        paper=None,
        target="<= 0.05",
        kind="check",
    ),
    ClaimSpec(
        "metrics.random_representation.dci",
        "A random code's DCI disentanglement is near 0",
        paper=None,
        target="<= 0.1",
        kind="check",
    ),
    ClaimSpec(
        "metrics.random_representation.sap",
        "A random code's SAP score is near 0",
        paper=None,
        target="<= 0.05",
        kind="check",
    ),
    ClaimSpec(
        "wren.ground_truth.test_acc",
        "WReN on the ground-truth factor values solves held-out puzzles well above chance (1/6)",
        paper=None,
        target=">= 0.4",
        kind="check",
    ),
    ClaimSpec(
        "wren.random_code.test_acc",
        "WReN on a random code stays near chance (1/6) on held-out puzzles",
        paper=None,
        target="<= 0.25",
        kind="check",
    ),
    ClaimSpec(
        "study.num_models",
        "Number of VAEs in the correlation study (the paper: 360 over two data sets; a full run "
        "covers one data set, 180)",
        paper=360,
        target="reported",
        kind="check",
    ),
    # The study's finding (PAPERS.md): BetaVAE, FactorVAE and DCI scores correlate positively with
    # WReN's accuracy after few training steps, and more strongly than reconstruction does. The
    # paper's ordering is the target at every scale (quick: 6 VAEs, so a noisy rank correlation;
    # full: the study's grid on one data set). The other metrics' correlations are descriptive.
    *(
        ClaimSpec(
            f"study.spearman.{m}.early",
            f"Spearman rank correlation between the {m.replace('_', ' ')} score and WReN accuracy after "
            "the fewest training steps (paper: BetaVAE / FactorVAE / DCI positive and above "
            "reconstruction)"
            + (
                "; the reconstruction score is minus the reconstruction loss (higher is better)"
                if m == "reconstruction"
                else ""
            ),
            paper="> 0 (few steps)" if m in STUDY_FINDING_METRICS else None,
            target="> 0" if m in STUDY_FINDING_METRICS else "reported",
            kind="finding" if m in STUDY_FINDING_METRICS else "check",
            unverified=_UNREAD_STUDY if m in STUDY_FINDING_METRICS else None,
        )
        for m in METRICS
    ),
    *(
        ClaimSpec(
            f"study.spearman.{m}_minus_reconstruction.early",
            f"Spearman correlation of the {m.replace('_', ' ')} score with WReN accuracy after the "
            "fewest training steps minus that of the reconstruction score (the negated "
            "reconstruction loss, so higher is better for both): disentanglement predicts "
            "accuracy better than reconstruction early in training",
            paper="> 0 (few steps)",
            target="> 0",
            unverified=_UNREAD_STUDY,
        )
        for m in STUDY_FINDING_METRICS
    ),
)


# -- the data sets of a run -------------------------------------------------------------------------


@dataclass
class _Env:
    """Data sets and puzzle pools shared by every item of the grid."""

    name: str
    base: GroundTruthData  # the data set at the run's image size
    train: GroundTruthData  # what VAEs train on and metrics intervene on
    pgm: Quantized  # the puzzles' quantized data set
    train_pgms: PGMs | None  # the pool of training puzzles (None: fresh puzzles every step)
    test_pgms: PGMs


def _environment(cfg: DisentanglementConfig, ctx: RunContext, name: str) -> _Env:
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
    return _Env(name, base, train, pgm, train_pgms, test_pgms)


class _FactorsAsObservations(GroundTruthData):
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


class _LocalTrainer(Trainer):
    """A Trainer for a model owned by this process alone: under torchrun every rank trains
    different grid items, so there is no DDP wrapper and every rank logs and checkpoints."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dist = DistInfo()

    def _wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        return torch.compile(model) if self.config.compile else model  # type: ignore[return-value]


def _train_vae(
    spec: ModelSpec, cfg: DisentanglementConfig, ctx: RunContext, env: _Env, out: Path
) -> VAE:
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

    def batch(step: int, g: torch.Generator) -> tuple[Tensor]:
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=g)))
        return (env.train.sample_observations(cfg.vae_batch, rng),)

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
    trainer = _LocalTrainer(
        model,
        None,
        loss_fn,
        config=tcfg,
        out_dir=out / "train",
        extra=extra,
        manual=True,
        device=ctx.device,
    )
    with seeded(seed):  # the reparameterisation noise comes from the (checkpointed) global stream
        trainer.fit(batch, resume=True)
    model.eval()
    save_weights(weights, model)
    return model


def _vae_representation(model: VAE):
    """The encoder mean on the model's device; codes come back on the CPU."""
    device = next(model.parameters()).device

    def rep(x: Tensor) -> Tensor:
        with torch.no_grad():
            return model.represent(x.to(device)).cpu()

    return rep


def _metric_rng(ctx: RunContext, key: str) -> np.random.Generator:
    """The seeded stream of one metric's samples (the same for every representation of a run)."""
    return np.random.default_rng(derive_seed(ctx.seed, "metrics", key))


def _code_factors(
    data: GroundTruthData, cfg: DisentanglementConfig, ctx: RunContext
) -> tuple[np.random.Generator, np.ndarray, np.ndarray]:
    """(stream, training factors, test factors) for the code-based metrics (MIG, DCI, SAP,
    modularity); the stream goes on to render their observations."""
    r = _metric_rng(ctx, "codes")
    # (--max-steps: every sample size cut to a few batches)
    n_tr = budget.items(cfg.code_train, DRY_RUN_BATCH["codes"])
    n_te = budget.items(cfg.code_test, DRY_RUN_BATCH["codes"])
    return r, data.sample_factors(n_tr, r), data.sample_factors(n_te, r)


def _metrics(
    rep, data: GroundTruthData, cfg: DisentanglementConfig, ctx: RunContext
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
    data: GroundTruthData, cfg: DisentanglementConfig, ctx: RunContext, dim: int = 10
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
def _reconstruction(
    model: VAE, data: GroundTruthData, cfg: DisentanglementConfig, ctx: RunContext
) -> float:
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


def _panel_codes(
    item: str, rep, env: _Env, pgms: PGMs, ctx: RunContext, key: str
) -> tuple[Tensor, Tensor]:
    """Embeddings of the context (P, 8, D) and candidate (P, 6, D) panels of ``pgms``."""
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
        c_img, a_img = render_pgms(env.pgm, pgms[i : i + 256], rng)
        n = len(c_img)
        codes = torch.as_tensor(
            rep(torch.cat([c_img.flatten(0, 1), a_img.flatten(0, 1)])), dtype=torch.float32
        )
        cs.append(codes[: n * 8].view(n, 8, -1))
        ans.append(codes[n * 8 :].view(n, 6, -1))
    return torch.cat(cs), torch.cat(ans)


def _wren_hparams(
    cfg: DisentanglementConfig, ctx: RunContext, item: str, run: int
) -> dict[str, Any]:
    if cfg.wren_runs == 1:
        return {
            "lr": cfg.wren_lr,
            "dropout": cfg.wren_dropout,
            "graph_mlp": cfg.wren_graph,
            "edge_mlp": cfg.wren_edge,
        }
    rng = np.random.default_rng(derive_seed(ctx.seed, "wren-hparams", item, run))
    return {k: v[int(rng.integers(len(v)))] for k, v in WREN_GRID.items()}


def _train_wren(
    item: str, rep, cfg: DisentanglementConfig, ctx: RunContext, env: _Env, out: Path
) -> dict[str, Any]:
    """Train ``wren_runs`` WReNs on the frozen representation; test accuracy at ``wren_steps``.

    During training the WReN's weights are saved at each step of ``wren_steps`` (under
    ``wren-<run>/snapshots/``, so an interrupted run resumes); the test puzzles are read only
    afterwards, in the final evaluation of those snapshots.
    """
    test_ctx, test_ans = _panel_codes(item, rep, env, env.test_pgms, ctx, "test")
    test_y = torch.as_tensor(env.test_pgms.target)
    # The encoded test puzzles (frozen representation): read in the final evaluation only.
    test_ctx, test_ans, test_y = (
        ctx.holdout(t, f"test puzzles ({k})")
        for t, k in ((test_ctx, "context"), (test_ans, "answers"), (test_y, "targets"))
    )
    if env.train_pgms is not None:
        tr_ctx, tr_ans = _panel_codes(item, rep, env, env.train_pgms, ctx, "train")
        data: Any = (tr_ctx, tr_ans, torch.as_tensor(env.train_pgms.target))
    else:

        def data(step: int, g: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
            rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=g)))
            p = sample_pgms(env.pgm.factor_sizes, cfg.wren_batch, rng)
            c, a = _panel_codes(item, rep, env, p, ctx, f"train-{step}")
            return c, a, torch.as_tensor(p.target)

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
        correct = 0
        for i in range(0, len(test_y), 512):
            logits = m(test_ctx[i : i + 512].to(dev), test_ans[i : i + 512].to(dev))
            correct += int((logits.argmax(1).cpu() == test_y[i : i + 512]).sum())
        m.train(was)
        return correct / len(test_y)

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
        trainer = _LocalTrainer(
            model,
            opt,
            loss_fn,
            config=tcfg,
            out_dir=out / f"wren-{r}",
            eval_fn=snapshot_fn(holder, snaps),
            device=ctx.device,
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


def _read_record(path: Path) -> dict[str, Any]:
    """A finished item's cached record; a corrupt one is a clear error naming the file."""
    try:
        record = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path} is not a valid cached record ({exc}); delete it to redo that model"
        ) from None
    if not isinstance(record, dict):
        raise ValueError(f"{path} is not a valid cached record (not a JSON object)")
    return record


def _evaluate_item(
    item: str, cfg: DisentanglementConfig, ctx: RunContext, env: _Env, specs: dict[str, ModelSpec]
) -> dict[str, Any]:
    """Train (VAEs), score and reason with one item; its record is cached in models/<item>/."""
    out = ctx.out_dir / "models" / item
    cached = out / "result.json"
    if cached.exists():
        log.info("%s: finished earlier, loading %s", item, cached)
        return _read_record(cached)
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "id": item,
        "dataset": env.name,
        "chance": 1.0 / env.train.num_factors,
    }
    if item == GROUND_TRUTH_ID:
        record["kind"] = "ground_truth"
        record["metrics"] = _metrics(lambda x: x, _FactorsAsObservations(env.train), cfg, ctx)
        rep = None
    elif item == RANDOM_ID:
        record["kind"] = "random"
        record["metrics"] = _metrics(
            _random_code(10, derive_seed(ctx.seed, "random-metrics")),
            _FactorsAsObservations(env.train),
            cfg,
            ctx,
        )
        record["modularity_noise"] = _modularity_noise(_FactorsAsObservations(env.train), cfg, ctx)
        rep = _random_code(10, derive_seed(ctx.seed, "random-panels"))
    else:
        spec = specs[item]
        record.update(kind="vae", method=spec.method, hparams=dict(spec.hparams), seed=spec.seed)
        model = _train_vae(spec, cfg, ctx, env, out)
        rep = _vae_representation(model)
        record["metrics"] = _metrics(rep, env.train, cfg, ctx)
        record["metrics"]["reconstruction"] = -_reconstruction(model, env.train, cfg, ctx)
        record["weights"] = str((out / "vae.safetensors").resolve())
    record["wren"] = _train_wren(item, rep, cfg, ctx, env, out)
    atomic_write_text(cached, json.dumps(record, indent=1) + "\n")
    return record


# -- grid slicing -----------------------------------------------------------------------------------


def grid_items(cfg: DisentanglementConfig) -> list[str]:
    """Every item of the grid, in a fixed order."""
    return [GROUND_TRUTH_ID, RANDOM_ID, *(s.id for s in cfg.models)]


def shard_items(
    items: list[str], shard: tuple[int, int] | None, dist: DistInfo
) -> tuple[list[str], list[str]]:
    """(items of this shard, items of this process): item i of the grid goes to shard i mod N, and
    item j of a shard to rank j mod world_size."""
    k, n = shard or (0, 1)
    mine = [it for i, it in enumerate(items) if i % n == k]
    return mine, [it for j, it in enumerate(mine) if j % dist.world_size == dist.rank]


# -- summary ----------------------------------------------------------------------------------------


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 with ties sharing their average rank."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for v in np.unique(x):
        tie = x == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson correlation of tie-averaged ranks); None if undefined."""
    if len(x) < 3:
        return None
    rx, ry = _ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return None if denom == 0.0 else float((rx * ry).sum() / denom)


def _acc_at(record: dict[str, Any], step: int) -> float | None:
    wren = record["wren"]
    return wren["test_acc"][wren["steps"].index(step)] if step in wren["steps"] else None


def summarize(
    records: list[dict[str, Any]], cfg: DisentanglementConfig
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(measured claims, details) from the per-item records (any subset of the grid)."""
    by_id = {r["id"]: r for r in records}
    gt, rnd = by_id.get(GROUND_TRUTH_ID), by_id.get(RANDOM_ID)
    vaes = [r for r in records if r.get("kind") == "vae"]
    last = max(cfg.wren_steps)
    measured: dict[str, Any] = {c.id: None for c in CLAIMS}
    if gt is not None:
        for m, _, _ in _SANITY_GT:
            measured[f"metrics.ground_truth_representation.{m}"] = gt["metrics"][m]
        measured["wren.ground_truth.test_acc"] = _acc_at(gt, last)
    if rnd is not None:
        chance = rnd["chance"]  # 1 / number of factors
        mm = rnd["metrics"]
        for m in ("beta_vae", "factor_vae"):  # two-sided: |score - chance|
            measured[f"metrics.random_representation.{m}_off_chance"] = abs(mm[m] - chance)
        for m in ("mig", "dci", "sap"):
            measured[f"metrics.random_representation.{m}"] = mm[m]
        measured["wren.random_code.test_acc"] = _acc_at(rnd, last)
    if gt is not None and rnd is not None:
        measured["metrics.ground_truth_representation.sap_minus_random"] = (
            gt["metrics"]["sap"] - rnd["metrics"]["sap"]
        )
        measured["metrics.ground_truth_representation.modularity_minus_noise"] = (
            gt["metrics"]["modularity"] - rnd["modularity_noise"]["mean"]
        )
    measured["study.num_models"] = len(vaes)
    table: dict[str, dict[str, float | None]] = {m: {} for m in METRICS}
    for step in cfg.wren_steps:
        pairs = [(r, _acc_at(r, step)) for r in vaes]
        pairs = [(r, a) for r, a in pairs if a is not None]
        for m in METRICS:
            table[m][str(step)] = spearman(
                [r["metrics"][m] for r, _ in pairs], [a for _, a in pairs]
            )
    early = str(min(cfg.wren_steps))
    for m in METRICS:
        measured[f"study.spearman.{m}.early"] = table[m][early]
    recon = table["reconstruction"][early]
    for m in STUDY_FINDING_METRICS:
        rho = table[m][early]
        measured[f"study.spearman.{m}_minus_reconstruction.early"] = (
            None if rho is None or recon is None else rho - recon
        )
    details = {
        "spearman": table,
        "wren_steps": list(cfg.wren_steps),
        "records": records,
    }
    return measured, details


# -- figures ----------------------------------------------------------------------------------------


def _heatmap(
    table: dict[str, dict[str, float | None]], steps: tuple[int, ...], n: int, path: Path
) -> None:
    vals = np.array(
        [[np.nan if table[m][str(s)] is None else table[m][str(s)] for s in steps] for m in METRICS]
    )
    fig = Figure(figsize=(1.2 + 1.1 * len(steps), 4.2))
    ax = fig.subplots()
    im = ax.imshow(vals, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(steps)), [f"{s} steps" for s in steps])
    ax.set_yticks(range(len(METRICS)), [m.replace("_", " ") for m in METRICS])
    for i in range(vals.shape[0]):
        for j in range(vals.shape[1]):
            ax.text(
                j,
                i,
                "n/a" if np.isnan(vals[i, j]) else f"{vals[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=8,
            )
    ax.set_title(f"Spearman: score vs WReN accuracy ({n} VAEs)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


@torch.no_grad()
def _traversal(model: VAE, seed_image: Tensor, steps: int) -> np.ndarray:
    """Decoded images varying one latent at a time in [-2, 2] around the seed's code. -> (L, steps, H, W, C)."""
    z = model.represent(seed_image[None])[0]
    rows = []
    for d in range(len(z)):
        zs = z.repeat(steps, 1)
        zs[:, d] = torch.linspace(-2, 2, steps)
        rows.append(torch.sigmoid(model.decoder(zs)).permute(0, 2, 3, 1).numpy())
    return np.stack(rows)


def _traversal_figure(
    records: list[dict[str, Any]], cfg: DisentanglementConfig, env: _Env, path: Path
) -> str | None:
    vaes = [r for r in records if r.get("kind") == "vae" and Path(r.get("weights", "")).exists()]
    if not vaes:
        return "no VAE weights found for the traversal figure"
    vaes.sort(key=lambda r: r["metrics"]["dci"])
    chosen = [("most", vaes[-1]), ("least", vaes[0])] if len(vaes) > 1 else [("only", vaes[0])]
    seed_image = env.train.sample_observations(1, np.random.default_rng(0))[0]
    fig = Figure(figsize=(2 * 0.55 * cfg.traversal_steps + 0.6, 0.55 * 10 + 0.8))
    axes = fig.subplots(1, len(chosen), squeeze=False)[0]
    for ax, (label, rec) in zip(axes, chosen, strict=True):
        hp = dict(rec["hparams"])
        if rec["method"] == "annealed_vae":
            hp["iteration_threshold"] = 1
        model = VAE(
            config=VAEConfig(in_channels=env.base.observation_shape[0], image_size=cfg.image_size),
            method=rec["method"],
            disc_width=cfg.disc_width,
            **hp,
        )
        load_weights(rec["weights"], model)
        grid = _traversal(model.eval(), seed_image, cfg.traversal_steps)  # (L, S, H, W, C)
        rows = [np.concatenate(list(row), axis=1) for row in grid]
        img = np.concatenate(rows, axis=0)
        ax.imshow(img.squeeze(-1) if img.shape[-1] == 1 else img, cmap="gray", vmin=0, vmax=1)
        ax.set_title(
            f"{label} disentangled (DCI {rec['metrics']['dci']:.2f})\n{rec['id']}", fontsize=7
        )
        ax.set_xticks([])
        ax.set_yticks(
            range(img.shape[0] // 10 // 2, img.shape[0], img.shape[0] // 10),
            [f"z{i}" for i in range(10)],
            fontsize=6,
        )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return None


# -- the experiment ---------------------------------------------------------------------------------


@EXPERIMENTS.register("disentanglement")
class DisentanglementExperiment(Experiment):
    name = "disentanglement"
    cuda_precision = "bf16"  # the reason: docs/disentanglement.md, "Precision on CUDA"
    title = "Are Disentangled Representations Helpful for Abstract Visual Reasoning?"
    datasets = ("abstract-dsprites", "color-shapes", "dsprites")
    # The study's dSprites variant, drawn from the real archive under --data-root at full scale
    # (the renderer stands in at smoke and quick; its pixels are not the official images).
    paper_data = "abstract-dsprites"
    claims = CLAIMS
    not_estimated = (
        "the metrics, reconstructions and WReN test puzzles beyond the first batches of their "
        "sample sizes (DRY_RUN_BATCH), and DCI's boosting stages beyond the first few",
    )
    configs = CONFIGS

    order = 8  # position in the summary's tables
    resume_state = ("models/*/result.json",)  # finished models' records: a rerun loads them
    full_not_run = (
        NotRun(
            ("data", "gpu"),
            "dSprites is not reachable from this project's machines; the study trains 180 VAEs "
            "per data set for 300k steps each, then the WReN models: a GPU job.",
            data="dSprites",
        ),
    )

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def plan(self, cfg: DisentanglementConfig, ctx: RunContext) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for item in shard_items(grid_items(cfg), ctx.shard, ctx.dist)[1]:
            if item not in (GROUND_TRUTH_ID, RANDOM_ID):  # the codes: only WReNs train on them
                out.append((f"vae {item}", cfg.vae_steps))
            out += [(f"wren {item} #{r}", max(cfg.wren_steps)) for r in range(cfg.wren_runs)]
        return out

    def run(self, cfg: DisentanglementConfig, ctx: RunContext) -> Outcome:
        name = self.dataset_name(ctx)
        assert name is not None
        env = _environment(cfg, ctx, name)
        specs = {s.id: s for s in cfg.models}
        shard_list, own = shard_items(grid_items(cfg), ctx.shard, ctx.dist)
        fixed = [i for i in own if i in (GROUND_TRUTH_ID, RANDOM_ID)]  # first in the grid
        models = [i for i in own if i not in fixed]
        for item in fixed:
            _evaluate_item(item, cfg, ctx, env, specs)
        # (--max-steps: the first few models; the estimate scales to all of them)
        for i in budget.loop(len(models), "VAE models", kind="repeat"):
            _evaluate_item(models[i], cfg, ctx, env, specs)
        # Under torchrun: wait for every rank's models (ranks hold 23 or 22 items of hours each:
        # no collective, whose timeout would kill the early ones; issue 37), then read them
        wait_for_all_ranks("the disentanglement grid items")
        records = [self._load(ctx.out_dir, item) for item in shard_list]
        records = [r for r in records if r is not None]
        return self._outcome(
            records, cfg, ctx, env, shard=ctx.shard, run_dirs=[str(ctx.out_dir.resolve())]
        )

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        cfg = self.config(ctx.scale)
        by_id: dict[str, dict[str, Any]] = {}
        names, dirs = set(), []
        for res in results:
            det = res.get("details", {})
            names.add(det.get("dataset"))
            dirs += det.get("run_dirs", [])
            for rec in det.get("records", []):
                by_id.setdefault(rec["id"], rec)
        if len(names) != 1 or None in names:
            raise ValueError(f"shards must come from one data set, got {sorted(map(str, names))}")
        name = names.pop()
        env = _environment(cfg, replace(ctx, dataset=name), name)
        order = grid_items(cfg)
        records = sorted(
            by_id.values(), key=lambda r: order.index(r["id"]) if r["id"] in order else len(order)
        )
        missing = [i for i in order if i not in by_id]
        out = self._outcome(records, cfg, ctx, env, shard=None, run_dirs=dirs)
        if missing:
            out.notes.append(
                f"{len(missing)} grid items missing from the merged shards: {', '.join(missing[:10])}"
            )
        return out

    # -- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _load(out_dir: Path, item: str) -> dict[str, Any] | None:
        path = out_dir / "models" / item / "result.json"
        return _read_record(path) if path.exists() else None

    def _outcome(
        self,
        records: list[dict[str, Any]],
        cfg: DisentanglementConfig,
        ctx: RunContext,
        env: _Env,
        *,
        shard: tuple[int, int] | None,
        run_dirs: list[str],
    ) -> Outcome:
        measured, details = summarize(records, cfg)
        details.update(dataset=env.name, run_dirs=run_dirs, config=_config_dict(cfg))
        figures, notes = [], list(cfg.notes)
        if ctx.dist.is_main:
            path, rel = ctx.figure_path("spearman_heatmap.png")
            _heatmap(details["spearman"], cfg.wren_steps, int(measured["study.num_models"]), path)
            figures.append(rel)
            path, rel = ctx.figure_path("latent_traversals.png")
            problem = _traversal_figure(records, cfg, env, path)
            if problem is None:
                figures.append(rel)
            else:
                notes.append(problem)
        if shard is not None:
            notes.append(
                f"shard {shard[0]}/{shard[1]}: claims cover only this slice; combine slices with `paperzoo merge`"
            )
        n_vae = int(measured["study.num_models"])
        if n_vae < 30:
            notes.append(
                f"Spearman correlations over only {n_vae} VAEs are noisy, and at quick scale the "
                "VAEs are barely disentangled (their scores lie near chance; docs/"
                "disentanglement.md): the BetaVAE, FactorVAE and DCI correlations are judged "
                "against the paper's ordering all the same, and say little either way"
            )
        notes.append(
            "sign convention: the reconstruction score is minus the mean Bernoulli reconstruction "
            "loss of the encoder mean (nats per image), so higher is better, as for every "
            "disentanglement score; a positive Spearman means better reconstruction goes with "
            "higher WReN accuracy"
        )
        noise = next((r["modularity_noise"] for r in records if "modularity_noise" in r), None)
        if noise is not None:
            notes.append(
                f"modularity's noise level: {noise['mean']:.3f} ± {noise['std']:.3f} over "
                f"{noise['draws']} Gaussian codes (the ground-truth check is measured against it)"
            )
        notes.append(
            f"data: {env.name} ({env.base.source}), {cfg.image_size}x{cfg.image_size} images; VAEs and metrics on "
            f"{'the quantized puzzle grid ' + str(env.pgm.factor_sizes) if cfg.quantize_all else 'the full factor grid'}; "
            f"puzzles on the quantized grid {env.pgm.factor_sizes}"
        )
        data = [
            DataInfo(
                env.name,
                env.base.source,
                cfg.vae_steps * cfg.vae_batch,
                cfg.code_test,
                sha256=_data_sha256(env.base),
            ),
            DataInfo(
                f"pgm-{env.name}",
                "generated",
                cfg.wren_train_puzzles or max(cfg.wren_steps) * cfg.wren_batch,
                cfg.wren_test_puzzles,
                sha256=tensor_sha256(  # the test puzzles, in factor space
                    *(
                        torch.from_numpy(np.ascontiguousarray(a))
                        for a in (env.test_pgms.matrix, env.test_pgms.answers, env.test_pgms.target)
                    )
                ),
            ),
        ]
        return Outcome(measured=measured, data=data, figures=figures, notes=notes, details=details)


PROBE_IMAGES = 256  # images whose digest identifies a generated data set


def _data_sha256(data: GroundTruthData) -> str:
    """The identity of a run's images: the digest of the archive's images where they were read
    (``DSpritesNPZ.sha256``), else of ``PROBE_IMAGES`` observations at seeded factors (a renderer
    gives the same images for the same code)."""
    digest = getattr(data, "sha256", None)
    if digest is not None:
        return digest
    rng = np.random.default_rng(0)
    return tensor_sha256(data.sample_observations(PROBE_IMAGES, rng))


def _config_dict(cfg: DisentanglementConfig) -> dict[str, Any]:
    d = asdict(cfg)
    d["models"] = [s.id for s in cfg.models]
    return d


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.cost import Piece, step
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
