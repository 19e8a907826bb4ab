"""``DisentanglementExperiment``: the disentanglement study's run (every item of this shard and
rank, then the summary over the shard's records), ``merge`` of shards, figures, the data
identity and the full-run cost.

Protocol: docs/disentanglement.md.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor

from paperzoo.data.base import DataInfo, tensor_sha256
from paperzoo.data.ground_truth import GroundTruthData
from paperzoo.engine import budget, load_weights
from paperzoo.engine.distributed import RanksExited, wait_for_all_ranks
from paperzoo.experiments.base import (
    Experiment,
    GpuCheck,
    NotRun,
    Outcome,
    RunContext,
)
from paperzoo.experiments.grid import read_record
from paperzoo.papers.disentanglement.config import (
    CLAIMS,
    CONFIGS,
    GROUND_TRUTH_ID,
    METRICS,
    RANDOM_ID,
    Config,
)

if TYPE_CHECKING:
    from paperzoo.models.vae import VAE
    from paperzoo.papers.disentanglement.training import Env


log = logging.getLogger(__name__)

# -- figures ----------------------------------------------------------------------------------------


def _heatmap(table: dict[str, dict[str, float | None]], steps: tuple[int, ...], n: int) -> Figure:
    """Spearman correlation of each score with WReN accuracy, per step count (the paper's Fig. 4)."""
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
    return fig


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


def _traversal_figure(records: list[dict[str, Any]], cfg: Config, env: Env) -> Figure | str:
    """Latent traversals of the most and the least disentangled VAE (by DCI) whose weights are
    on disk; without any, the reason as a string."""
    from paperzoo.models.vae import VAE, VAEConfig

    vaes = [
        r
        for r in records
        if r.get("kind") == "vae" and "weights" in r and Path(r["weights"]).exists()
    ]
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
    return fig


# -- the experiment ---------------------------------------------------------------------------------


class DisentanglementExperiment(Experiment):
    name = "disentanglement"
    cuda_precision = "bf16"  # the reason: docs/disentanglement.md, "Precision on CUDA"
    # the paper's abstract dSprites needs the 3 GB archive: the binary renderer as a substitute
    cpu_capped_args = (
        "--dataset",
        "dsprites",
        "--set",
        "metric_train=20",
        "--set",
        "metric_eval=20",
        "--set",
        "variance_samples=200",
        "--set",
        "code_train=200",
        "--set",
        "code_test=100",
        "--set",
        "recon_samples=64",
        "--set",
        "wren_test_puzzles=32",
        "--set",
        "dci_trees=5",
    )
    gpu_check = GpuCheck(
        12,
        25,
        "CUDA started, the dSprites archive read (737,280 images), 2 VAEs built with their "
        "metrics on capped points (scikit-learn on the CPU), 2 WReN runs' puzzles generated",
        torchrun=True,
    )
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
    full_not_run = (
        NotRun(
            ("data", "gpu"),
            "dSprites is not reachable from this project's machines; the study trains 180 VAEs "
            "per data set for 300k steps each, then the WReN models: a GPU job.",
            data="dSprites",
        ),
    )

    # Finished items' records: a rerun into the same --out loads them instead of training again.
    resume_state = ("models/*/result.json",)

    def full_cost(self, cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
        return _full_cost(cfg, plan)

    def plan(self, cfg: Config, ctx: RunContext) -> list[tuple[str, int]]:
        from paperzoo.papers.disentanglement.study import grid_items, shard_items

        out: list[tuple[str, int]] = []
        for item in shard_items(grid_items(cfg), ctx.shard, ctx.dist)[1]:
            if item not in (GROUND_TRUTH_ID, RANDOM_ID):  # the codes: only WReNs train on them
                out.append((f"vae {item}", cfg.vae_steps))
            out += [(f"wren {item} #{r}", max(cfg.wren_steps)) for r in range(cfg.wren_runs)]
        return out

    def run(self, cfg: Config, ctx: RunContext) -> Outcome:
        from paperzoo.papers.disentanglement.study import grid_items, shard_items
        from paperzoo.papers.disentanglement.training import environment, evaluate_item

        name = self.dataset_name(ctx)
        assert name is not None
        env = environment(cfg, ctx, name)
        specs = {s.id: s for s in cfg.models}
        shard_list, own = shard_items(grid_items(cfg), ctx.shard, ctx.dist)
        fixed = [i for i in own if i in (GROUND_TRUTH_ID, RANDOM_ID)]  # first in the grid
        models = [i for i in own if i not in fixed]
        for item in fixed:
            evaluate_item(item, cfg, ctx, env, specs)
        # (--max-steps: the first few models; the estimate scales to all of them)
        for i in budget.loop(len(models), "VAE models", kind="repeat"):
            evaluate_item(models[i], cfg, ctx, env, specs)
        # Under torchrun: wait for every rank's models (ranks hold 23 or 22 items of hours each:
        # no collective, whose timeout would kill the early ones), then read them; a rank that
        # ended first ends the wait, and its missing items fail the run below
        try:
            wait_for_all_ranks("the disentanglement grid items")
        except RanksExited as err:
            log.warning("%s", err)
        loaded = {item: self._load(ctx.out_dir, item) for item in shard_list}
        missing = [item for item, r in loaded.items() if r is None]
        if missing and budget.active() is None:  # (--max-steps trains the first few on purpose)
            raise RuntimeError(
                f"{len(missing)} of the {len(shard_list)} grid items have no record in "
                f"{ctx.out_dir / 'models'} ({', '.join(missing[:5])}"
                f"{', ...' if len(missing) > 5 else ''}): the study is not summarised over part "
                "of its grid; rerun the same command to train them"
            )
        records = [r for r in loaded.values() if r is not None]
        return self._outcome(
            records, cfg, ctx, env, shard=ctx.shard, run_dirs=[str(ctx.out_dir.resolve())]
        )

    def merge(self, results: list[dict[str, Any]], ctx: RunContext) -> Outcome:
        from paperzoo.papers.disentanglement.study import grid_items
        from paperzoo.papers.disentanglement.training import environment

        cfg = self.config(ctx.scale)
        by_id: dict[str, dict[str, Any]] = {}
        names, dirs = set(), []
        for res in results:
            det = res.get("details", {})
            names.add(det.get("dataset"))
            dirs += det.get("run_dirs", [])
            for rec in det.get("records", []):
                by_id.setdefault(rec["id"], rec)
            for item, why in det.get("diverged", {}).items():  # named, left out again
                by_id.setdefault(item, {"id": item, "diverged": why})
        if len(names) != 1 or None in names:
            raise ValueError(f"shards must come from one data set, got {sorted(map(str, names))}")
        name = names.pop()
        env = environment(cfg, replace(ctx, dataset=name), name)
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
        return read_record(path) if path.exists() else None

    def _outcome(
        self,
        records: list[dict[str, Any]],
        cfg: Config,
        ctx: RunContext,
        env: Env,
        *,
        shard: tuple[int, int] | None,
        run_dirs: list[str],
    ) -> Outcome:
        from paperzoo.papers.disentanglement.study import summarize

        measured, details = summarize(records, cfg)
        records = details["records"]  # without the items that diverged
        details.update(dataset=env.name, run_dirs=run_dirs, config=_config_dict(cfg))
        figures, notes = [], list(cfg.notes)
        diverged = details.get("diverged", {})
        if diverged:
            notes.append(
                f"{len(diverged)} grid item(s) diverged and are left out of the summary and the "
                "correlations: " + "; ".join(f"{i}: {why}" for i, why in diverged.items())
            )
        if ctx.dist.is_main:
            heatmap = _heatmap(
                details["spearman"], cfg.wren_steps, int(measured["study.num_models"])
            )
            figures.append(ctx.save_figure(heatmap, "spearman_heatmap.png"))
            traversals = _traversal_figure(records, cfg, env)
            if isinstance(traversals, str):
                notes.append(traversals)
            else:
                figures.append(ctx.save_figure(traversals, "latent_traversals.png"))
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
        return Outcome(
            measured=measured,
            data=data,
            figures=figures,
            notes=notes,
            details=details,
            why_not_measured=_why_not_measured(measured, diverged),
        )


# The claims that read the ground-truth item or the random-code item
_ITEM_CLAIMS = {
    GROUND_TRUTH_ID: ("metrics.ground_truth_representation.", "wren.ground_truth."),
    RANDOM_ID: (
        "metrics.random_representation.",
        "wren.random_code.",
        "metrics.ground_truth_representation.sap_minus_random",
        "metrics.ground_truth_representation.modularity_minus_noise",
    ),
}


def _why_not_measured(measured: dict[str, Any], diverged: dict[str, str]) -> dict[str, str]:
    """Claim -> the divergence that left it without a value (the ground-truth or random-code
    item's; a diverged VAE only thins the correlations, named in the notes)."""
    why: dict[str, str] = {}
    for item, prefixes in _ITEM_CLAIMS.items():
        if item in diverged:
            for cid, value in measured.items():
                if value is None and cid.startswith(prefixes):
                    why.setdefault(cid, f"{item}: {diverged[item]}")
    return why


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


def _config_dict(cfg: Config) -> dict[str, Any]:
    d = asdict(cfg)
    d["models"] = [s.id for s in cfg.models]
    return d


def _full_cost(cfg: Any, plan: list[tuple[str, int]]) -> tuple[list[Any], str]:
    from paperzoo.data.abstract_reasoning import render_pgms, sample_pgms
    from paperzoo.data.dsprites import FACTOR_SIZES, AbstractDSprites, DSpritesNPZ
    from paperzoo.data.ground_truth import Quantized
    from paperzoo.models.vae import VAE, VAEConfig
    from paperzoo.models.wren import WReN
    from paperzoo.papers.disentanglement.config import PGM_SIZES
    from paperzoo.utils.flops import KernelCounter
    from paperzoo.utils.work import Piece, forward, host_seconds, step

    vae = VAE(config=VAEConfig(in_channels=1, image_size=cfg.image_size), method="beta_vae")
    f_vae = step(vae, (cfg.vae_batch, 1, cfg.image_size, cfg.image_size))
    latent = VAEConfig().num_latent
    wren = WReN(embed_dim=latent, edge_mlp=cfg.wren_edge, graph_mlp=cfg.wren_graph)
    b = cfg.wren_batch
    f_wren = step(wren, (torch.zeros(b, 8, latent), torch.zeros(b, 6, latent)))
    # Each WReN step draws its puzzles on the host (host work), makes their 14 panels each on
    # the device from the archive (render_pgms on the device: factor indices copied over, the
    # images gathered, unpacked and coloured there; counted on the meta device over an unread
    # stand-in of the archive; the host's share, the puzzles and the panels' archive rows, timed
    # apart), and the frozen VAE encodes them (outside the WReN trainer: no precision hooks).
    n = int(np.prod(FACTOR_SIZES))
    unread = np.empty((n, 64, 8), dtype=np.uint8)  # never touched on the meta device
    archive = DSpritesNPZ.from_packed(unread, image_size=cfg.image_size)
    abstract = AbstractDSprites(archive)
    pgm = Quantized(abstract, PGM_SIZES["abstract-dsprites"])
    rng = np.random.default_rng(0)

    def host_share() -> None:
        p = sample_pgms(pgm.factor_sizes, b, rng)
        f = pgm.to_original(np.concatenate([p.context, p.answers], axis=1).reshape(-1, 6))
        archive.indices(abstract.sprites(abstract.check_factors(f), rng))

    with KernelCounter() as drawn:
        render_pgms(pgm, sample_pgms(pgm.factor_sizes, b, rng), rng, "meta")
    rgb = VAE(config=VAEConfig(in_channels=3, image_size=cfg.image_size), method="beta_vae")
    f_enc = forward(rgb.encoder, (b * 14, 3, cfg.image_size, cfg.image_size))
    f_wren = replace(
        f_wren,
        flop=f_wren.flop + f_enc.flop,
        kernels=f_wren.kernels + f_enc.kernels + drawn.total + 1,  # + the targets' copy
    ).with_host(host=host_seconds(host_share))
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
        "(the sampled WReN hyperparameters vary their widths); each WReN step's "
        f"{b * 14} panels made on the device from the archive ({drawn.total} kernels) and "
        f"encoded by the frozen VAE (a forward pass of its encoder, {f_enc.kernels:.0f} "
        f"kernels); host work: its {b} puzzles drawn and their factor indices prepared on the "
        "CPU, timed; the disentanglement metrics "
        "(gradient-boosted trees, regressions on the CPU) and evaluation are not counted"
    )
