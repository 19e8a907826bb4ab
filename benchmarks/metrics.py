"""Disentanglement metrics: paperzoo against the straightforward implementation of disentanglement_lib.

All six metrics of the abstract-reasoning study on 10,000 samples (BetaVAE / FactorVAE: 10,000
training and 5,000 evaluation points of batch 64, 10,000 variance samples; MIG, DCI, SAP,
modularity: 10,000 training and 5,000 test codes), on the dSprites factor grid
(3, 6, 40, 32, 32) with a fixed deterministic representation (a random linear map of the factors,
so that both sides see identical codes and the encoder costs little).

``reference`` follows disentanglement_lib: a Python loop over training points for BetaVAE and
FactorVAE (one representation call per batch), ``sklearn.metrics.mutual_info_score`` for every
(latent, factor) pair for MIG and modularity, one ``LinearSVC`` per (latent, factor) for SAP and
one ``GradientBoostingClassifier`` per factor for DCI. ``ours`` is ``paperzoo.metrics.
disentanglement``, calling the representation on 4,096 observations at a time. Both consume the
same pre-drawn factor samples, so the values must agree (SAP up to liblinear's stopping
tolerance: ours solves the same SVMs exactly).

Two more rows, disentanglement_lib's metrics outside the study's six: "IRS" (``irs``: one
partial sort per factor value on contiguous slices; the reference masks all samples and calls
``np.percentile`` per factor value, as disentanglement_lib's ``compute_irs``) on the training
codes, and "unsupervised" (``unsupervised``: the four scores, from ``eigvalsh`` and one
``bincount`` per latent; the reference uses ``scipy.linalg.sqrtm`` and ``mutual_info_score`` per
pair of latents, as ``unsupervised_metrics``) on the training codes plus Gaussian noise of
standard deviation 0.05 (the linear code alone has rank 5: a singular covariance). Their values
are printed as the first one (the IRS; the Gaussian total correlation), checked on all four.

Two rows per metric with a fast mode, each against the same reference run: "BetaVAE" is the
default (scikit-learn's L-BFGS logistic regression: identical values), "BetaVAE fast" is
``beta_vae_score(fast=True)`` (the same logistic regression solved to convergence by Newton's
method, pair batches encoded interleaved: predictions differ only within L-BFGS's stopping
tolerance); "DCI" fits the same boosted trees on both sides (``n_jobs`` = the threads on ours:
the factors in parallel), "DCI batched" is ``dci(backend="batched")`` (the same boosting
algorithm, all trees of a stage grown together; ties between equally good splits decided in
scikit-learn's order, near-ties still by rounding, so the values differ slightly) and "DCI 256 bins" its binned variant (thresholds
between 256 equal-count bins: a coarser model). Every group (a reference and its contenders) is
timed interleaved, ``--repeat`` times, the fastest run of each kept; DCI runs once.

Threads: ``--threads`` (default: torch's setting, which ``paperzoo bench --threads N`` sets)
limits torch, numpy's BLAS and scikit-learn's OpenMP on both sides (threadpoolctl).

    python benchmarks/metrics.py [--samples N] [--dci-trees T] [--threads T] [--quick]

Rows for ``paperzoo bench --json``: per metric, ours' and the reference's seconds (ratio
reference / ours) and the agreement of the two values, with tolerances fixed before any run:
1e-6 where both sides compute the same thing (BetaVAE, FactorVAE, MIG, modularity, DCI with the
same boosted trees, IRS, the largest difference of the four unsupervised scores), 1e-3 for
BetaVAE fast (5 of the 5,000 evaluation points), 1e-2 for SAP (liblinear stops at its
tolerance, ours solves exactly) and for DCI batched / 256 bins (near-ties decided by rounding;
coarser thresholds). The totals sum rows: "all six" the defaults, "all, batched" with DCI
batched, "all, fast" with BetaVAE fast and DCI 256 bins, "all but DCI" the defaults without
DCI; a total's check is the largest absolute difference / tolerance of its rows (<= 1: all
within), every row's difference listed.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.linalg
import torch
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import mutual_info_score
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from _common import agreement, apply_quick, result, row, threads_in_use
from paperzoo.data.ground_truth import GroundTruthData
from paperzoo.metrics.disentanglement import dci, irs, mig, modularity, sap, unsupervised
from paperzoo.metrics.disentanglement.beta_vae import (
    beta_vae_points,
    beta_vae_score_from_features,
    sample_beta_vae_pairs,
)
from paperzoo.metrics.disentanglement.factor_vae import (
    factor_vae_points_votes,
    factor_vae_score_from_votes,
    sample_factor_vae_batches,
)
from paperzoo.metrics.disentanglement.utils import encode_factors

warnings.simplefilter("ignore", ConvergenceWarning)


class Factors(GroundTruthData):
    """dSprites' factor grid; the observation is the factor vector (the cost is in the metrics)."""

    name = "dsprites-factors"
    factor_sizes = (3, 6, 40, 32, 32)

    def sample_observations_from_factors(self, factors, rng):
        return torch.from_numpy(np.asarray(factors, dtype=np.float32))


DATA = Factors()
_W = np.random.default_rng(0).normal(size=(5, 10)) / np.array(
    [[2.0], [5.0], [39.0], [31.0], [31.0]]
)


def representation(x: torch.Tensor) -> np.ndarray:
    """A cheap deterministic 10-d code (a fixed random linear map of the factors), so the timings
    measure the metrics, not an encoder (which both sides would pay alike)."""
    return np.asarray(x, dtype=np.float64) @ _W


# -- the straightforward implementations (disentanglement_lib's structure) ---------------------------


def ref_beta_vae(index, f1, f2, index_e, f1_e, f2_e) -> float:
    def points(idx, a, b):
        feats = np.zeros((len(idx), 10))
        for i in range(len(idx)):  # one training point at a time
            z1 = representation(DATA.sample_observations_from_factors(a[i], None))
            z2 = representation(DATA.sample_observations_from_factors(b[i], None))
            feats[i] = np.mean(np.abs(z1 - z2), axis=0)
        return feats, idx

    x, y = points(index, f1, f2)
    model = LogisticRegression().fit(x, y)
    xe, ye = points(index_e, f1_e, f2_e)
    return float(model.score(xe, ye))


def ref_factor_vae(var_factors, index, f, index_e, f_e) -> float:
    global_var = np.var(
        representation(DATA.sample_observations_from_factors(var_factors, None)), axis=0, ddof=1
    )
    active = np.sqrt(global_var) >= 0.05

    def votes(idx, fac):
        v = np.zeros((DATA.num_factors, int(active.sum())), dtype=np.int64)
        for i in range(len(idx)):  # one training point at a time
            z = representation(DATA.sample_observations_from_factors(fac[i], None))
            local = np.var(z, axis=0, ddof=1)
            v[idx[i], np.argmin(local[active] / global_var[active])] += 1
        return v

    train, evals = votes(index, f), votes(index_e, f_e)
    classifier = np.argmax(train, axis=0)
    cols = np.arange(train.shape[1])
    return float(np.sum(evals[classifier, cols]) / np.sum(evals))


def ref_discretize(mus: np.ndarray) -> np.ndarray:
    out = np.zeros_like(mus)
    for i in range(mus.shape[1]):
        out[:, i] = np.digitize(mus[:, i], np.histogram(mus[:, i], 20)[1][:-1])
    return out


def ref_mutual_info(mus: np.ndarray, ys: np.ndarray) -> np.ndarray:
    m = np.zeros((mus.shape[1], ys.shape[1]))
    for i in range(mus.shape[1]):
        for j in range(ys.shape[1]):
            m[i, j] = mutual_info_score(ys[:, j], mus[:, i])
    return m


def ref_mig(codes, factors) -> float:
    m = ref_mutual_info(ref_discretize(codes), factors)
    h = np.array([mutual_info_score(factors[:, j], factors[:, j]) for j in range(factors.shape[1])])
    s = np.sort(m, axis=0)[::-1]
    return float(np.mean((s[0] - s[1]) / h))


def ref_modularity(codes, factors) -> float:
    sq = np.square(ref_mutual_info(ref_discretize(codes), factors))
    top = np.max(sq, axis=1)
    score = 1.0 - (np.sum(sq, axis=1) - top) / (top * (sq.shape[1] - 1.0))
    score[top == 0.0] = 0.0
    return float(np.mean(score))


def ref_sap(codes, factors, codes_t, factors_t) -> float:
    s = np.zeros((codes.shape[1], factors.shape[1]))
    for i in range(codes.shape[1]):
        for j in range(factors.shape[1]):
            clf = LinearSVC(C=0.01, class_weight="balanced").fit(codes[:, [i]], factors[:, j])
            s[i, j] = np.mean(clf.predict(codes_t[:, [i]]) == factors_t[:, j])
    s = np.sort(s, axis=0)
    return float(np.mean(s[-1] - s[-2]))


def ref_dci(codes, factors, codes_t, factors_t, trees: int) -> float:
    from scipy.stats import entropy

    imp = np.zeros((codes.shape[1], factors.shape[1]))
    for j in range(factors.shape[1]):
        model = GradientBoostingClassifier(n_estimators=trees, random_state=0).fit(
            codes, factors[:, j]
        )
        imp[:, j] = np.abs(model.feature_importances_)
    per_code = 1.0 - entropy(imp.T + 1e-11, base=imp.shape[1])
    return float(np.sum(per_code * imp.sum(axis=1) / imp.sum()))


def ref_irs(codes, factors) -> float:
    """disentanglement_lib's compute_irs: factors through the 20-bin discretiser, constant latents
    dropped, then per factor and per factor value a boolean mask, the group mean and
    ``np.percentile`` of the absolute deviations (q = 0.99)."""
    ys = ref_discretize(factors.astype(np.float64))
    z = codes[:, codes.var(axis=0) > 0.0]
    max_dev = np.max(np.abs(z - z.mean(axis=0)), axis=0)
    cum = np.zeros((z.shape[1], ys.shape[1]))
    for i in range(ys.shape[1]):
        values = np.unique(ys[:, i])
        for v in values:
            match = ys[:, i] == v
            diffs = np.abs(z[match] - np.mean(z[match], axis=0))
            cum[:, i] += np.percentile(diffs, q=99.0, axis=0)
        cum[:, i] /= len(values)
    scores = (1.0 - cum / max_dev[:, None]).max(axis=1)
    return float(np.average(scores, weights=max_dev))


def ref_unsupervised(codes) -> np.ndarray:
    """disentanglement_lib's unsupervised_metrics: np.cov, the total correlation from slogdet,
    the Wasserstein correlation from scipy's sqrtm, and scikit-learn's mutual information of
    every pair of discretised latents."""
    cov = np.cov(codes.T)
    tc = 0.5 * (np.sum(np.log(np.diag(cov))) - np.linalg.slogdet(cov)[1])
    root = scipy.linalg.sqrtm(cov * np.expand_dims(np.diag(cov), axis=1))
    wc = 2 * np.trace(cov) - 2 * np.real(np.trace(root))
    m = ref_mutual_info(ref_discretize(codes), ref_discretize(codes))
    np.fill_diagonal(m, 0)
    d = codes.shape[1]
    return np.array([tc, wc, wc / np.sum(np.diag(cov)), np.sum(m) / (d * d - d)])


# -- ours ------------------------------------------------------------------------------------------


ENCODE_BATCH = 1 << 12  # observations per representation call on our side (64 points)


def ours_beta_vae(index, f1, f2, index_e, f1_e, f2_e) -> float:
    """``beta_vae_score(..., fast=True)`` on the pre-drawn pairs: pair batches interleaved, the
    logistic regression solved by Newton's method."""

    def points(idx, a, b):
        kw = {"encode_batch": ENCODE_BATCH, "interleave": True}
        return beta_vae_points(DATA, representation, a, b, None, **kw), idx

    pts = (*points(index, f1, f2), *points(index_e, f1_e, f2_e))
    return beta_vae_score_from_features(*pts, solver="newton")[1]


def shared_floor(bv, fv) -> tuple[float, float]:
    """Seconds both sides pay whatever the implementation: the representation applied to every
    row, in calls of ``ENCODE_BATCH`` rows (the outputs dropped)."""

    def encode_all(*factor_arrays) -> None:
        for f in factor_arrays:
            flat = f.reshape(-1, f.shape[-1])
            for s in range(0, len(flat), ENCODE_BATCH):
                obs = DATA.sample_observations_from_factors(flat[s : s + ENCODE_BATCH], None)
                representation(obs)

    index, f1, f2, index_e, f1_e, f2_e = bv
    t_bv, _ = timed(encode_all, f1, f2, f1_e, f2_e)
    t_fv, _ = timed(encode_all, fv[0], fv[2], fv[4])
    return t_bv, t_fv


def ours_factor_vae(var_factors, index, f, index_e, f_e) -> float:
    """``factor_vae_score`` on the pre-drawn batches (codes reduced batch by batch)."""
    codes = encode_factors(DATA, representation, var_factors, None, batch_size=ENCODE_BATCH)
    global_var = np.var(codes, axis=0, ddof=1)
    active = np.sqrt(global_var) >= 0.05
    v = [
        factor_vae_points_votes(
            DATA, representation, i, fac, None, global_var, active, encode_batch=ENCODE_BATCH
        )
        for i, fac in ((index, f), (index_e, f_e))
    ]
    return factor_vae_score_from_votes(*v)[1]


def ours_beta_vae_default(index, f1, f2, index_e, f1_e, f2_e) -> float:
    """``beta_vae_score``'s default (``fast=False``): scikit-learn's L-BFGS, the codes of the first
    observations stored (the previous releases' rng order)."""
    x = beta_vae_points(DATA, representation, f1, f2, None, encode_batch=ENCODE_BATCH)
    xe = beta_vae_points(DATA, representation, f1_e, f2_e, None, encode_batch=ENCODE_BATCH)
    return beta_vae_score_from_features(x, index, xe, index_e)[1]


REPEAT = 1  # runs per timing (the minimum is kept): set by --repeat


def timed(fn, *args) -> tuple[float, float]:
    """(seconds, value); the fastest of REPEAT runs, as timeit does on a noisy machine."""
    best = float("inf")
    for _ in range(REPEAT):
        start = time.perf_counter()
        value = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--samples", type=int, default=10000, help="training points / codes (eval/test: half)"
    )
    p.add_argument(
        "--dci-trees",
        type=int,
        default=10,
        help="boosting stages of DCI (the study: 100; every stage costs about the same, so the "
        "ratios hold, and 10 keeps the run to a few minutes)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for both sides (BLAS, OpenMP, torch; ours also fits DCI's factors in "
        "parallel); default: torch's setting, which `paperzoo bench --threads N` sets",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per timing, the fastest kept (DCI: always one run)",
    )
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, to test the plumbing (not for timing)"
    )
    args = p.parse_args(argv)
    apply_quick(args, samples=100, dci_trees=2, repeat=1)
    global REPEAT
    REPEAT = max(1, args.repeat)
    threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    with threadpool_limits(limits=threads):  # numpy's BLAS and scikit-learn's OpenMP too
        rows = run(args.samples, args.dci_trees, threads)
        used = threads_in_use()  # as measured inside the limits
    return result("metrics", args, rows, threads=used)


# tolerances of the agreement checks, fixed before any run (see the module docstring)
TOL = {"SAP": 1e-2, "BetaVAE fast": 1e-3, "DCI batched": 1e-2, "DCI 256 bins": 1e-2}
UNSUPERVISED_NOISE = 0.05  # added to the rank-5 linear code for the unsupervised scores
EXACT_TOL = 1e-6
OTHERS = ["FactorVAE", "MIG", "SAP", "modularity"]  # one mode each
TOTALS = {  # label: the rows summed
    "all six": ["BetaVAE", *OTHERS, "DCI"],
    "all, batched": ["BetaVAE", *OTHERS, "DCI batched"],
    "all, fast": ["BetaVAE fast", *OTHERS, "DCI 256 bins"],
    "all but DCI": ["BetaVAE", *OTHERS],
}


def _fmt(values: np.ndarray) -> str:
    """One value as before (6 significant digits); several as a list."""
    if values.size == 1:
        return f"{values[0]:.6g}"
    return "[" + ", ".join(f"{v:.6g}" for v in values) + "]"


def interleaved(reference, contenders: dict, repeat: int) -> dict[str, tuple[float, float]]:
    """(seconds, value) of the reference and of every contender, run in turn ``repeat`` times
    (so that changes in machine load hit them alike); the fastest run of each is kept."""
    fns = {"reference": reference, **contenders}
    best = dict.fromkeys(fns, float("inf"))
    values = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            values[name] = fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: (best[name], values[name]) for name in fns}


def run(n: int, trees: int, threads: int) -> list[dict]:
    n_eval = n // 2
    rng = np.random.default_rng(0)
    bv = (*sample_beta_vae_pairs(DATA, n, 64, rng), *sample_beta_vae_pairs(DATA, n_eval, 64, rng))
    fv = (
        DATA.sample_factors(n, rng),
        *sample_factor_vae_batches(DATA, n, 64, rng),
        *sample_factor_vae_batches(DATA, n_eval, 64, rng),
    )
    f_tr, f_te = DATA.sample_factors(n, rng), DATA.sample_factors(n_eval, rng)
    c_tr, c_te = representation(torch.from_numpy(f_tr)), representation(torch.from_numpy(f_te))
    codes = (c_tr, f_tr, c_te, f_te)
    # The linear code has rank 5 (singular covariance, infinite Gaussian total correlation):
    # the unsupervised scores get it with independent Gaussian noise added.
    noisy = c_tr + UNSUPERVISED_NOISE * np.random.default_rng(1).normal(size=c_tr.shape)

    def ours_dci(**kw):
        return lambda: dci(*codes, n_estimators=trees, n_jobs=threads, **kw).disentanglement

    # (reference, {row: ours}): each group is timed interleaved; DCI once (it takes seconds)
    groups = [
        (
            lambda: ref_beta_vae(*bv),
            {
                "BetaVAE": lambda: ours_beta_vae_default(*bv),
                "BetaVAE fast": lambda: ours_beta_vae(*bv),
            },
            REPEAT,
        ),
        (lambda: ref_factor_vae(*fv), {"FactorVAE": lambda: ours_factor_vae(*fv)}, REPEAT),
        (lambda: ref_mig(c_tr, f_tr), {"MIG": lambda: mig(c_tr, f_tr)}, REPEAT),
        (lambda: ref_sap(*codes), {"SAP": lambda: sap(*codes)}, REPEAT),
        (
            lambda: ref_modularity(c_tr, f_tr),
            {"modularity": lambda: modularity(c_tr, f_tr)},
            REPEAT,
        ),
        (
            lambda: ref_dci(*codes, trees),
            {
                "DCI": ours_dci(),
                "DCI batched": ours_dci(backend="batched", max_bins=None),
                "DCI 256 bins": ours_dci(backend="batched", max_bins=256),
            },
            1,
        ),
        (lambda: ref_irs(c_tr, f_tr), {"IRS": lambda: irs(c_tr, f_tr)}, REPEAT),
        (
            lambda: ref_unsupervised(noisy),
            {"unsupervised": lambda: np.array(unsupervised(noisy))},
            REPEAT,
        ),
    ]
    print(
        f"{n} samples, dSprites factor grid, DCI with {trees} boosting stages, {threads} "
        f"thread(s), fastest of {REPEAT} interleaved run(s) (DCI: 1)"
    )
    print(
        f"{'metric':<13} {'ours s':>9} {'reference s':>12} {'ratio':>7}  {'ours':>9} "
        f"{'reference':>9}  {'|diff|':>8}"
    )
    times: dict[str, tuple[float, float]] = {}
    checks: dict[str, dict] = {}
    out: dict[str, dict] = {}
    for reference, contenders, repeat in groups:
        measured = interleaved(reference, contenders, repeat)
        tr, vr = measured["reference"]
        for name in contenders:
            to, vo = measured[name]
            times[name] = (to, tr)
            vo_a, vr_a = np.atleast_1d(vo), np.atleast_1d(vr)  # unsupervised: four values
            diff = float(np.max(np.abs(vo_a - vr_a)))
            checks[name] = agreement(
                f"metric value (ours {_fmt(vo_a)}, reference {_fmt(vr_a)})",
                diff,
                TOL.get(name, EXACT_TOL),
            )
            out[name] = row(
                f"{name}, {n} samples" + (f", {trees} boosting stages" if "DCI" in name else ""),
                {"paperzoo": to, "reference": tr},
                ours="paperzoo",
                anchor="reference",
                unit="s (fastest of the interleaved runs; DCI one run)",
                agreed=checks[name],
            )
            print(
                f"{name:<13} {to:>9.3f} {tr:>12.3f} {tr / to:>6.1f}x  {vo_a[0]:>9.5f} {vr_a[0]:>9.5f}  "
                f"{diff:>8.1e}"
            )
    floor = dict(zip(("BetaVAE fast", "FactorVAE"), shared_floor(bv, fv), strict=True))
    for name, shared in floor.items():
        to, tr = times[name]
        print(
            f"{name}: {shared:.3f} s of either side is the representation on every row; "
            f"the rest: ours {max(to - shared, 0.0):.3f} s, reference {tr - shared:.3f} s"
        )
        out[name]["shared_s"] = shared
    for label, parts in TOTALS.items():
        to, tr = sum(times[k][0] for k in parts), sum(times[k][1] for k in parts)
        print(f"{label:<13} {to:>9.3f} {tr:>12.3f} {tr / to:>6.1f}x")
        # The total's check: every summed row within its tolerance; the largest difference as a
        # fraction of its row's tolerance (<= 1: all within), every row's difference named.
        worst = max(checks[k]["max_diff"] / checks[k]["tol"] for k in parts)
        listed = ", ".join(
            f"{k} {checks[k]['max_diff']:.1e} (tol {checks[k]['tol']:g})" for k in parts
        )
        out[label] = row(
            f"{label}, {n} samples",
            {"paperzoo": to, "reference": tr},
            ours="paperzoo",
            anchor="reference",
            unit="s, summed",
            agreed=agreement(
                f"largest absolute difference / tolerance over the summed rows ({listed})",
                worst,
                1.0,
            ),
            rows=parts,
        )
    return list(out.values())


if __name__ == "__main__":
    main()
