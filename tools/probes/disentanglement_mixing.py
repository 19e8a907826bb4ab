"""Positive control for the disentanglement study's quick findings: codes whose disentanglement is
varied by construction at fixed information, fed to the study's metrics and to its WReN.

The study's findings (``study.spearman.{beta_vae,factor_vae,dci}.early`` and their margins over
reconstruction) are Spearman correlations, over a seed's representations, between a
disentanglement score and WReN's test accuracy after 100 steps. At quick the 12 VAEs span almost
no range of disentanglement. This probe asks whether the pipeline (the metrics as the study
computes them, and WReN's accuracy at 100 / 300 / 600 steps as the study measures it) detects the
paper's ordering when disentanglement does vary over a real range:

- base code: the quantized puzzle factors of abstract dSprites (5, 6, 3, 3, 4, 4), each
  standardised to mean 0 and variance 1, padded with 4 zero dimensions to the VAEs' 10 latents;
  isotropic Gaussian noise of standard deviation ``--noise`` added in all 10 dimensions (drawn
  afresh for every observation, as a sampled panel);
- family ``rotation``: the code times ``Q^t``, ``Q`` a Haar-random rotation of R^10 drawn from the
  seed, ``t`` in 12 levels k / 11 (t = 0: disentangled; t = 1: a random rotation). A rotation
  keeps the information (invertible), the total variance and the noise's isotropy;
- family ``coupling``: 4 additive coupling layers (a random permutation, then the second half of
  the coordinates plus 2 ``t`` times a random tanh MLP of the first half), then one global scale
  that restores the t = 0 code's total variance. Invertible, so again at fixed information; the
  factors become non-linearly entangled as ``t`` grows.

Each code is scored by the study's own functions (``training.representation_metrics`` on the
factors as observations, as the study scores the ground-truth code) and a WReN is trained on it by
``training.train_wren`` with the quick config (the panels' codes come from the puzzles' factors
instead of rendered images). ``--baseline`` also runs the study's ground-truth item (the
``range_embed`` factor values), whose numbers must equal the committed validation run's record
for the same seed.

Output: ``OUT/seed-S.json`` per seed (every code's t, metrics, WReN accuracies, and the per-family
Spearman correlations). ``--summarize`` reads those files and the committed validation run and
prints the rule's table (docs/disentanglement.md, "Quick findings that do not reproduce: why").

    PYTHONPATH=src /work/bin/cpuslot 1 .venv/bin/python tools/probes/disentanglement_mixing.py \\
        --seed 100 --baseline --out results/probes/disentanglement-mixing
    .venv/bin/python tools/probes/disentanglement_mixing.py --summarize \\
        --out results/probes/disentanglement-mixing

``--smoke`` runs the same code at the study's smoke config on 3 levels per family (seconds; the
numbers mean nothing), as the tests do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.linalg
import torch

LEVELS = 12  # codes per family (the study's 12 VAEs at quick)
SMOKE_LEVELS = 3  # codes per family at --smoke
DIM = 10  # the VAEs' latent size
FAMILIES = ("rotation", "coupling", "coupling4")
FINDING_METRICS = ("beta_vae", "factor_vae", "dci")
VALIDATION = Path("results/validation/disentanglement-quick-s100-107")
# the coupling's strength at t = 1: "coupling" (the first runs), "coupling4" (the FactorVAE follow-up)
COUPLING_GAIN = {"coupling": 2.0, "coupling4": 4.0, "coupling8": 8.0}


def say(*parts: object) -> None:
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def _standardise(factors: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Factor values (..., F) -> mean 0, variance 1 under the uniform distribution of each."""
    mean = (sizes - 1) / 2.0
    std = np.sqrt((sizes**2 - 1) / 12.0)
    return (factors - mean) / std


def _haar_rotation(rng: np.random.Generator, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


class MixedCode:
    """factors (N, F) -> codes (N, DIM): noise, then the family's mixing at strength ``t``."""

    def __init__(self, family: str, t: float, sizes, seed: int, noise: float) -> None:
        self.family, self.t, self.noise = family, float(t), noise
        self.sizes = np.asarray(sizes, dtype=np.float64)
        rng = np.random.default_rng([seed, 0x5EED])  # the same mixing for every level of a seed
        if family == "rotation":
            log_q = scipy.linalg.logm(_haar_rotation(rng, DIM))
            self.matrix = np.real(scipy.linalg.expm(self.t * np.real(log_q)))
        elif family in COUPLING_GAIN:
            self.gain = COUPLING_GAIN[family]
            self.layers = []
            for _ in range(4):
                perm = rng.permutation(DIM)
                w1 = rng.standard_normal((DIM // 2, 16)) * (2.0 / np.sqrt(DIM // 2))
                b1 = rng.standard_normal(16) * 0.5
                w2 = rng.standard_normal((16, DIM // 2)) / np.sqrt(16)
                self.layers.append((perm, w1, b1, w2))
            # one global scale: the total variance of the t = 0 code (noise included)
            ref = np.random.default_rng([seed, 0xC0DE])
            f = np.stack([ref.integers(0, int(s), 20000) for s in self.sizes], 1)
            x = self._base(f, ref)
            self.scale = np.sqrt(x.var(0).sum() / self._couple(x).var(0).sum())
        else:
            raise ValueError(family)
        self.noise_rng = np.random.default_rng([seed, 0x401E, int(round(t * 1000))])

    def _base(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        z = np.zeros((len(factors), DIM))
        z[:, : len(self.sizes)] = _standardise(factors, self.sizes)
        return z + self.noise * rng.standard_normal(z.shape)

    def _couple(self, x: np.ndarray) -> np.ndarray:
        for perm, w1, b1, w2 in self.layers:
            x = x[:, perm].copy()
            a = x[:, : DIM // 2]
            x[:, DIM // 2 :] += self.gain * self.t * (np.tanh(a @ w1 + b1) @ w2)
        return x

    def __call__(self, factors: np.ndarray) -> np.ndarray:
        x = self._base(np.asarray(factors, dtype=np.float64), self.noise_rng)
        if self.family == "rotation":
            return x @ self.matrix.T
        return self.scale * self._couple(x)


@contextlib.contextmanager
def mixed_panels(codes: dict[str, MixedCode], sizes) -> Iterator[None]:
    """For the block, ``training.panel_codes`` (what the study's WReN loop encodes its puzzles
    with) gives the items in ``codes`` their mixed code of the puzzles' factors; every other item
    keeps the study's encoding."""
    from paperzoo.data.abstract_reasoning import PGMs
    from paperzoo.papers.disentanglement import training

    study_codes = training.panel_codes

    def mixed_panel_codes(item, rep, env_, pgms: PGMs, ctx_, key):
        if item not in codes:
            return study_codes(item, rep, env_, pgms, ctx_, key)
        code = codes[item]
        c = code(pgms.context.reshape(-1, len(sizes))).reshape(len(pgms), 8, DIM)
        a = code(pgms.answers.reshape(-1, len(sizes))).reshape(len(pgms), 6, DIM)
        return torch.tensor(c, dtype=torch.float32), torch.tensor(a, dtype=torch.float32)

    training.panel_codes = mixed_panel_codes
    try:
        yield
    finally:
        training.panel_codes = study_codes


def run_seed(
    seed: int, out: Path, noise: float, baseline: bool, families, *, smoke: bool = False
) -> None:
    """Score and train on every level of ``families`` at ``seed``; write ``out/seed-S.json``."""
    with tempfile.TemporaryDirectory(prefix="dis-mixing-") as work:
        result = measure_seed(seed, Path(work), noise, baseline, families, smoke=smoke)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"seed-{seed}.json").write_text(json.dumps(result, indent=1) + "\n")
    say(f"seed {seed}: {result['cpu_seconds']:.0f} CPU-s -> {out / f'seed-{seed}.json'}")


def measure_seed(
    seed: int, tmp: Path, noise: float, baseline: bool, families, *, smoke: bool = False
) -> dict:
    """The record of one seed (``run_seed``), the run's files under ``tmp``."""
    from paperzoo.experiments.base import RunContext
    from paperzoo.papers.disentanglement import training
    from paperzoo.papers.disentanglement.config import CONFIGS, GROUND_TRUTH_ID
    from paperzoo.papers.disentanglement.study import spearman

    torch.set_num_threads(1)
    scale, levels = ("smoke", SMOKE_LEVELS) if smoke else ("quick", LEVELS)
    cfg = CONFIGS[scale]
    ctx = RunContext(scale=scale, seed=seed, out_dir=tmp, quiet=True)
    env = training.environment(cfg, ctx, "abstract-dsprites")
    sizes = env.pgm.factor_sizes
    codes: dict[str, MixedCode] = {}
    result: dict = {"seed": seed, "scale": scale, "noise": noise, "levels": levels, "families": {}}
    t0 = time.process_time()
    with mixed_panels(codes, sizes):  # the WReN loop itself is the study's
        if baseline:
            rec = training.representation_metrics(
                lambda x: x, training.FactorsAsObservations(env.train), cfg, ctx
            )
            wren = training.train_wren(
                GROUND_TRUTH_ID, None, cfg, ctx, env, tmp / "models" / GROUND_TRUTH_ID
            )
            result["baseline_ground_truth"] = {"metrics": rec, "wren": wren}
        obs = training.FactorsAsObservations(env.train)
        for family in families:
            items = []
            for k in range(levels):
                t = k / (levels - 1)
                item = f"{family}-t{t:.3f}"
                code = MixedCode(family, t, sizes, seed, noise)
                codes[item] = code
                metrics = training.representation_metrics(
                    lambda x, c=code: torch.tensor(c(x.numpy()), dtype=torch.float32),
                    obs,
                    cfg,
                    ctx,
                )
                wren = training.train_wren(item, None, cfg, ctx, env, tmp / "models" / item)
                items.append({"id": item, "t": t, "metrics": metrics, "wren": wren})
                say(
                    f"seed {seed} {item}: "
                    + " ".join(f"{m} {metrics[m]:.3f}" for m in FINDING_METRICS)
                    + f" acc {wren['test_acc']}"
                )
            steps = items[0]["wren"]["steps"]
            rho = {
                m: {
                    str(s): spearman(
                        [it["metrics"][m] for it in items],
                        [it["wren"]["test_acc"][i] for it in items],
                    )
                    for i, s in enumerate(steps)
                }
                for m in FINDING_METRICS
            }
            rho_t = {
                m: spearman([it["t"] for it in items], [it["metrics"][m] for it in items])
                for m in FINDING_METRICS
            }
            result["families"][family] = {
                "items": items,
                "spearman_metric_acc": rho,
                "spearman_t_metric": rho_t,
                "spearman_t_acc": {
                    str(s): spearman(
                        [it["t"] for it in items], [it["wren"]["test_acc"][i] for it in items]
                    )
                    for i, s in enumerate(steps)
                },
            }
    result["cpu_seconds"] = time.process_time() - t0
    return result


def calibrate(seed: int, out: Path, *, smoke: bool = False) -> None:
    """The FactorVAE follow-up's gain, chosen on a seed that decides nothing else: BetaVAE,
    FactorVAE and DCI of the ``coupling4`` / ``coupling8`` codes at t = 0.5 and 1 (no WReN)."""
    from paperzoo.experiments.base import RunContext
    from paperzoo.papers.disentanglement import training
    from paperzoo.papers.disentanglement.config import CONFIGS

    torch.set_num_threads(1)
    scale = "smoke" if smoke else "quick"
    cfg = CONFIGS[scale]
    with tempfile.TemporaryDirectory(prefix="dis-mixing-") as work:
        ctx = RunContext(scale=scale, seed=seed, out_dir=Path(work), quiet=True)
        env = training.environment(cfg, ctx, "abstract-dsprites")
        obs = training.FactorsAsObservations(env.train)
        rows = []
        for family in ("coupling4", "coupling8"):
            for t in (0.5, 1.0):
                code = MixedCode(family, t, env.pgm.factor_sizes, seed, 0.1)
                m = training.representation_metrics(
                    lambda x, c=code: torch.tensor(c(x.numpy()), dtype=torch.float32), obs, cfg, ctx
                )
                rows.append({"family": family, "t": t, **{k: m[k] for k in FINDING_METRICS}})
                say(rows[-1])
    fv = {r["family"]: r["factor_vae"] for r in rows if r["t"] == 1.0}
    chosen = "coupling4" if fv["coupling4"] <= 0.45 else "coupling8"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"calibration-seed-{seed}.json").write_text(
        json.dumps({"seed": seed, "rows": rows, "chosen": chosen}, indent=1) + "\n"
    )
    say("chosen:", chosen)


def _vae_ranges(seed: int) -> dict[str, float]:
    recs = json.loads((VALIDATION / f"seed-{seed}" / "results.json").read_text())["details"]
    vaes = [r for r in recs["records"] if r.get("kind") == "vae" and not r.get("diverged")]
    return {
        m: max(r["metrics"][m] for r in vaes) - min(r["metrics"][m] for r in vaes)
        for m in FINDING_METRICS
    }


def summarize(out: Path) -> None:
    files = sorted(out.glob("seed-*.json"))
    runs = [json.loads(f.read_text()) for f in files]
    say(f"{len(runs)} seeds: {[r['seed'] for r in runs]}")
    for r in runs:
        if "baseline_ground_truth" in r:
            b = r["baseline_ground_truth"]
            say(
                f"baseline ground truth seed {r['seed']}: metrics {b['metrics']}, "
                f"WReN {b['wren']['test_acc']}"
            )
    for family in FAMILIES:
        fam = [r for r in runs if family in r["families"]]
        if not fam:
            continue
        say(f"\n## {family}")
        steps = fam[0]["families"][family]["items"][0]["wren"]["steps"]
        for m in FINDING_METRICS:
            say(f"\n{m}")
            rows = {
                "rho(t, metric)": [r["families"][family]["spearman_t_metric"][m] for r in fam],
                "control range": [
                    max(it["metrics"][m] for it in r["families"][family]["items"])
                    - min(it["metrics"][m] for it in r["families"][family]["items"])
                    for r in fam
                ],
                "quick VAE range": [_vae_ranges(r["seed"])[m] for r in fam],
            }
            for s in steps:
                rows[f"rho(metric, acc@{s})"] = [
                    r["families"][family]["spearman_metric_acc"][m][str(s)] for r in fam
                ]
            for name, vals in rows.items():
                v = np.array([np.nan if x is None else x for x in vals], dtype=float)
                pos = int(np.sum(v > 0))
                say(
                    f"  {name:24s} "
                    + " ".join(f"{x:+.3f}" for x in v)
                    + f" | mean {np.nanmean(v):+.3f} median {np.nanmedian(v):+.3f} (>0: {pos}/{len(v)})"
                )
        for s in steps:
            v = [r["families"][family]["spearman_t_acc"][str(s)] for r in fam]
            say(
                f"  rho(t, acc@{s})          "
                + " ".join(f"{x:+.3f}" for x in v)
                + f" | mean {np.mean(v):+.3f}"
            )
        for r in fam:
            accs = np.array([it["wren"]["test_acc"] for it in r["families"][family]["items"]])
            say(f"  seed {r['seed']} acc by t (rows: steps {steps}):")
            for i in range(len(steps)):
                say("    " + " ".join(f"{a:.3f}" for a in accs[:, i]))
        say("  CPU-s per seed:", [round(r["cpu_seconds"]) for r in fam])


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=int, help="the run seed (validation seeds 100-107)")
    p.add_argument("--out", type=Path, default=Path("results/probes/disentanglement-mixing"))
    p.add_argument("--noise", type=float, default=0.1, help="code noise standard deviation")
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--baseline", action="store_true", help="also the study's ground-truth item")
    p.add_argument("--summarize", action="store_true", help="print the rule's tables and exit")
    p.add_argument(
        "--calibrate", action="store_true", help="choose the FactorVAE follow-up's gain (seed 999)"
    )
    p.add_argument(
        "--smoke", action="store_true", help="the study's smoke config, 3 levels (a code check)"
    )
    a = p.parse_args()
    if a.summarize:
        summarize(a.out)
    elif a.seed is None:
        p.error("--seed is required unless --summarize")
    elif a.calibrate:
        calibrate(a.seed, a.out, smoke=a.smoke)
    else:
        run_seed(a.seed, a.out, a.noise, a.baseline, a.families.split(","), smoke=a.smoke)


if __name__ == "__main__":
    main()
