"""Gradient-boosted trees for DCI, batched: the algorithm of scikit-learn's
``GradientBoostingClassifier`` with its defaults, vectorised over the trees of a stage.

Friedman (2001), "Greedy Function Approximation", Algorithm 6 (multiclass log-loss boosting):
every stage fits one regression tree per class to the residuals y_k - p_k (softmax of the raw
scores), depth 3, splits chosen by Friedman's MSE criterion, and sets each leaf to one Newton
step, (K - 1) / K * sum(r) / sum(p (1 - p)) (binary: one tree, sum(r) / sum(p (1 - p))); the raw
scores move by 0.1 times the leaf value. The importance of a feature is the impurity decrease of
its splits, per tree divided by N, averaged over the trees that split at all and normalised.

What is the same as scikit-learn (1.x defaults: learning_rate 0.1, max_depth 3, friedman_mse,
min_samples_split 2, min_samples_leaf 1, subsample 1, prior initialisation): the features are
rounded to float32 first, candidate thresholds lie between neighbouring values more than 1e-7
apart, a threshold is the midpoint a/2 + b/2 of the two sample values around it, a node with
impurity <= machine epsilon or fewer than 2 samples is a leaf. What differs: ties in the split
criterion (frequent in the first stages, where a tree's residuals take two values) go to the
first position and lowest feature, where scikit-learn visits the features in an order drawn
from ``random_state``; sums are accumulated in another order (last-bit differences that can
flip a near-tie); and values within 1e-7 are grouped by a chain over the whole feature, not
per node. One tie decided differently changes every later stage, so the scores differ by about
as much as scikit-learn's own scores under another ``random_state`` (measured in
docs/disentanglement.md); binary factors without ties give the same trees.

``max_bins`` (optional) restricts the thresholds to bin edges and builds histograms instead:
about 1.5x faster again at 2,000 codes and 3.7x at 10,000, but a coarser model whose scores
move further (also measured).

Why it is faster: scikit-learn grows the K trees of a stage one after another and re-sorts
every node's samples per feature; here the features are sorted once and each level of a block
of trees is one segmented prefix sum over (trees, features, samples), followed by a stable
radix partition of every node's segment.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix

_EPS = np.finfo(np.float64).eps
_FEATURE_THRESHOLD = 1e-7  # scikit-learn's: values closer than this are not split apart
_DEPTH = 3  # scikit-learn's default max_depth
_LEARNING_RATE = 0.1
_CELLS = 1 << 17  # (tree, feature, sample) cells per block of exact growth: stays in cache


class _Stage(NamedTuple):
    features: list[np.ndarray]  # per level l: (2^l, T) split feature, -1 where the node is a leaf
    thresholds: list[np.ndarray]  # per level l: (2^l, T) float64
    leaf_values: np.ndarray  # (2^depth, T); a leaf above the last level sits on its leftmost path


class BatchedGBT(NamedTuple):
    """A fitted batched gradient-boosting classifier (one per factor)."""

    classes: np.ndarray  # (K,)
    init_raw: np.ndarray  # (T,) raw score of the prior; T = 1 for two classes, else K
    stages: list[_Stage]
    feature_importances: np.ndarray  # (D,)
    train_raw: np.ndarray  # (N, T) raw scores of the training samples after the last stage

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Raw scores. (M, D) -> (M, T)."""
        x32 = np.asarray(x, dtype=np.float32)
        rows = np.arange(len(x32))[:, None]
        cols = np.arange(len(self.init_raw))[None, :]
        raw = np.tile(self.init_raw, (len(x32), 1))
        for st in self.stages:
            node = np.zeros(raw.shape, dtype=np.int64)  # (M, T)
            for feat, thr in zip(st.features, st.thresholds, strict=True):
                f = feat[node, cols]  # (M, T)
                right = (f >= 0) & (x32[rows, np.maximum(f, 0)] > thr[node, cols])
                node = 2 * node + right
            raw += _LEARNING_RATE * st.leaf_values[node, cols]
        return raw

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.classes[_decide(self.decision_function(x))]

    def train_predictions(self) -> np.ndarray:
        """Predicted classes of the training samples (as ``predict`` on them)."""
        return self.classes[_decide(self.train_raw)]


def _decide(raw: np.ndarray) -> np.ndarray:
    """Class index from raw scores, as scikit-learn: raw >= 0 (binary) or argmax."""
    return (raw[:, 0] >= 0).astype(np.int64) if raw.shape[1] == 1 else np.argmax(raw, axis=1)


def _probabilities(raw: np.ndarray) -> np.ndarray:
    if raw.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-raw))
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _grow_exact(
    r_t: np.ndarray, order_t: np.ndarray, gid_t: np.ndarray, x_t: np.ndarray, importance: np.ndarray
):
    """Grow B trees (depth 3) on their targets r_t (B, N), every threshold tried.

    Each tree keeps, per feature, its samples ordered by (node, value): a node is a segment, a
    level is one segmented prefix sum over (B, D, N); after the splits every segment is
    partitioned stably (a radix argsort of the child index).

    Args:
        order_t: (D, N) sample ids in increasing order of each feature.
        gid_t: (D, N) int32 value group of each sorted position (1e-7 apart: new group).
        x_t: (D, N) float64 feature values (float32-rounded).
        importance: (D,) accumulates every split's impurity decrease / N.

    Returns:
        per level (features (2^l, B), thresholds (2^l, B)), leaf of every sample (B, N),
        whether each tree split its root (B,).
    """
    b_n, n = r_t.shape
    d = order_t.shape[0]
    bi = np.arange(b_n)[:, None]
    pos = np.arange(n)[None, :]
    r_flat = r_t.ravel()
    offs = (bi * n)[:, :, None]  # (B, 1, 1) row offset of each tree in flat (B*N) arrays
    perm = order_t[None] + offs  # (B, D, N) flat index (tree, sample) at each position
    gid = np.broadcast_to(gid_t, (b_n, d, n))
    node = np.zeros((b_n, n), dtype=np.int64)  # (B, N) node of every sample (heap index)
    alive = np.ones((b_n, 1), dtype=bool)
    feats, thrs = [], []
    root_split = np.zeros(b_n, dtype=bool)
    for level in range(_DEPTH):
        m_n = 1 << level
        cell = (bi * m_n + node).ravel()
        cnt = np.bincount(cell, minlength=b_n * m_n).reshape(b_n, m_n).astype(np.float64)
        tot = np.bincount(cell, weights=r_flat, minlength=b_n * m_n).reshape(b_n, m_n)
        sq = np.bincount(cell, weights=r_flat * r_flat, minlength=b_n * m_n)
        safe = np.maximum(cnt, 1)
        impurity = sq.reshape(b_n, m_n) / safe - (tot / safe) ** 2
        can = alive & (cnt >= 2) & (impurity > _EPS)  # (B, M)
        starts = (np.cumsum(cnt, axis=1) - cnt).astype(np.int64)  # (B, M) segment starts
        at = np.zeros((b_n, n), dtype=np.int64)  # node of each position, same for all features
        for m in range(1, m_n):
            at += pos >= starts[:, m : m + 1]
        rs = r_flat.take(perm)  # (B, D, N) residuals in (node, value) order
        # Segmented prefix sums: at each segment start subtract the totals of the segments
        # before it (the same nodes' samples for every feature).
        done = np.zeros(b_n)  # amounts subtracted so far, per tree
        for m in range(1, m_n):
            rows = np.nonzero(cnt[:, m] > 0)[0]  # empty segments have no start to adjust
            amount = tot[rows, :m].sum(axis=1) - done[rows]  # the running sum entering segment m
            rs[rows, :, starts[rows, m]] -= amount[:, None]
            done[rows] += amount
        s_l = np.cumsum(rs, axis=2)[:, :, :-1]  # (B, D, N-1) sums left of the cut after p
        at_c = at[:, :-1]
        c_l = pos[:, :-1] + 1 - np.take_along_axis(starts, at_c, axis=1)  # (B, N-1)
        n_at = np.take_along_axis(cnt, at_c, axis=1)
        s_at = np.take_along_axis(tot, at_c, axis=1)
        ok_at = np.take_along_axis(can, at_c, axis=1) & (c_l < n_at)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(ok_at, 1.0 / (c_l * (n_at - c_l)), 0.0)[:, None, :]  # (B, 1, N-1)
        # Friedman's proxy (n s_l - n_l s)^2 / (n_l n_r); -1 where no cut (equal values).
        proxy = s_l * n_at[:, None, :]
        proxy -= (c_l * s_at)[:, None, :]
        proxy *= proxy
        proxy *= inv
        np.copyto(proxy, -1.0, where=gid[:, :, 1:] == gid[:, :, :-1])
        np.copyto(proxy, -1.0, where=~ok_at[:, None, :])
        f_pos = np.argmax(proxy, axis=1)  # (B, N-1) lowest best feature per position
        v_pos = np.take_along_axis(proxy, f_pos[:, None, :], axis=1)[:, 0]
        best_f = np.full((b_n, m_n), -1)
        best_p = np.zeros((b_n, m_n), dtype=np.int64)
        for m in range(m_n):
            vm = np.where(at_c == m, v_pos, -2.0)
            p = np.argmax(vm, axis=1)  # first best position of the segment
            found = can[:, m] & (vm[bi[:, 0], p] >= 0)
            best_f[:, m] = np.where(found, f_pos[bi[:, 0], p], -1)
            best_p[:, m] = p
        split = best_f >= 0  # (B, M)
        fs = np.maximum(best_f, 0)
        sl = s_l[bi, fs, best_p]
        nl = c_l[bi, best_p].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = (sl**2 / nl + (tot - sl) ** 2 / (cnt - nl) - tot**2 / cnt) / n
        np.add.at(importance, best_f[split], gain[split])
        lo = x_t[fs, perm[bi, fs, best_p] - bi * n]
        hi = x_t[fs, perm[bi, fs, np.minimum(best_p + 1, n - 1)] - bi * n]
        with np.errstate(invalid="ignore", over="ignore"):
            mid = lo / 2.0 + hi / 2.0
        mid = np.where((mid == hi) | ~np.isfinite(mid), lo, mid)
        feats.append(best_f.T.copy())
        thrs.append(np.where(split, mid, 0.0).T.copy())
        if level == 0:
            root_split = split[:, 0]
        # Route: in its node's split feature order, a sample right of the cut goes right.
        f_at = np.take_along_axis(best_f, at, axis=1)  # (B, N)
        right_pos = (f_at >= 0) & (pos > np.take_along_axis(best_p, at, axis=1))
        sample_at = np.take_along_axis(perm, np.maximum(f_at, 0)[:, None, :], axis=1)[:, 0]
        right = np.zeros(b_n * n, dtype=np.int64)
        right[sample_at.ravel()] = right_pos.ravel()
        node = 2 * node + right.reshape(b_n, n)
        alive = np.repeat(split, 2, axis=1)
        if level + 1 < _DEPTH:  # stable partition of every segment: order by (node, value)
            key = node.astype(np.int8).ravel().take(perm)  # (B, D, N)
            idx = np.argsort(key, axis=2, kind="stable")
            idx += (np.arange(b_n * d) * n).reshape(b_n, d, 1)
            perm = perm.ravel().take(idx)
            gid = np.ascontiguousarray(gid).ravel().take(idx)
    return feats, thrs, node, root_split


def _bin_features(x32: np.ndarray, max_bins: int) -> np.ndarray:
    """Per-feature bin of every sample: at most ``max_bins`` runs of sorted values of about equal
    count, never separating values within 1e-7 of each other.

    Shapes:
        (N, D) float32 -> (N, D) int64, bins 0..B_f-1 per feature
    """
    out = np.empty(x32.shape, dtype=np.int64)
    for f in range(x32.shape[1]):  # loop over features only
        v, inv, counts = np.unique(x32[:, f], return_inverse=True, return_counts=True)
        group = np.concatenate([[0], np.cumsum(np.diff(v.astype(np.float64)) > _FEATURE_THRESHOLD)])
        if group[-1] + 1 > max_bins:
            g_counts = np.bincount(group, weights=counts)
            mid = (np.cumsum(g_counts) - g_counts / 2) / len(x32)  # centre of each group, in (0, 1)
            group = np.unique((mid * max_bins).astype(np.int64), return_inverse=True)[1][group]
        out[:, f] = group[inv.reshape(-1)]
    return out


class _Histograms:
    """Binned growth: per level, one histogram per (node, feature, bin) of every tree's residual
    sums and counts, a sparse (feature, bin) x sample product; a right child is its parent minus
    its left sibling. Cuts lie between bins only."""

    def __init__(self, x32: np.ndarray, max_bins: int, t: int):
        n, d = x32.shape
        self.bins = _bin_features(x32, max_bins)  # (N, D)
        self.nb = nb = int(self.bins.max()) + 1  # B: bins of the widest feature
        # cut c (left: bins <= c) exists for feature f if c < B_f - 1.
        self.valid = np.arange(nb - 1)[None, :] < self.bins.max(axis=0)[:, None]  # (D, B-1)
        flat = (np.arange(d)[None, :] * nb + self.bins).ravel()  # (N*D,) (feature, bin)
        self.one_hot = csr_matrix(
            (np.ones(n * d), (flat, np.repeat(np.arange(n), d))), shape=(d * nb, n)
        )  # (D*B, N)
        x64 = x32.astype(np.float64).ravel()
        lo, hi = np.full(d * nb, np.inf), np.full(d * nb, -np.inf)
        np.minimum.at(lo, flat, x64)
        np.maximum.at(hi, flat, x64)
        self.bin_lo, self.bin_hi = lo.reshape(d, nb), hi.reshape(d, nb)  # value range of bins
        self.z = np.empty((n, 2 * t))

    def grow(self, r: np.ndarray, importance: np.ndarray):
        """Grow the T trees of a stage on r (N, T); same returns as ``_grow_exact`` (trees last)."""
        n, t = r.shape
        d, nb, bins = self.bins.shape[1], self.nb, self.bins
        rows, cols = np.arange(n)[:, None], np.arange(t)[None, :]
        node = np.zeros((n, t), dtype=np.int64)  # heap index within the current level
        alive = np.ones((1, t), dtype=bool)  # (M, T) nodes not made leaves above this level
        feats, thrs = [], []
        root = np.zeros(t, dtype=bool)
        parent_hist = np.zeros(0)
        for level in range(_DEPTH):
            m_nodes = 1 << level
            cell = (node * t + cols).ravel()  # (N*T,) node and tree of every sample
            cnt = np.bincount(cell, minlength=m_nodes * t).reshape(m_nodes, t).astype(np.float64)
            tot = np.bincount(cell, weights=r.ravel(), minlength=m_nodes * t).reshape(m_nodes, t)
            sq = np.bincount(cell, weights=(r * r).ravel(), minlength=m_nodes * t)
            safe = np.maximum(cnt, 1)
            impurity = sq.reshape(m_nodes, t) / safe - (tot / safe) ** 2
            can_split = alive & (cnt >= 2) & (impurity > _EPS)  # (M, T) scikit-learn's rules
            hist = np.zeros((m_nodes, d, nb, 2 * t))  # hist[m]: (D, B, 2T) sums, then counts
            for m in range(0, m_nodes, 2):
                if level > 0 and not (can_split[m].any() or can_split[m + 1].any()):
                    continue
                inm = node == m
                np.multiply(r, inm, out=self.z[:, :t])  # (N, 2T): members' residuals, then 1s
                self.z[:, t:] = inm
                hist[m] = (self.one_hot @ self.z).reshape(d, nb, 2 * t)
                if level > 0:
                    hist[m + 1] = parent_hist[m // 2] - hist[m]
            parent_hist = hist
            s_l = np.cumsum(hist[..., :t], axis=2)[:, :, :-1]  # (M, D, B-1, T) sums left of cuts
            c_l = np.cumsum(hist[..., t:], axis=2)[:, :, :-1]
            s_l, c_l = np.moveaxis(s_l, 0, 1), np.moveaxis(c_l, 0, 1)  # (D, M, B-1, T)
            ok = self.valid[:, None, :, None] & (c_l > 0) & (c_l < cnt[None, :, None, :])
            with np.errstate(divide="ignore", invalid="ignore"):
                diff = cnt[None, :, None, :] * s_l - c_l * tot[None, :, None, :]
                proxy = np.where(ok, diff * diff / (c_l * (cnt[None, :, None, :] - c_l)), -np.inf)
            # Friedman's proxy maximised per (node, tree) over (feature, cut), feature-major.
            flat = np.moveaxis(proxy, (0, 2), (2, 3)).reshape(m_nodes, t, -1)  # (M, T, D*(B-1))
            a = np.argmax(flat, axis=2)  # (M, T)
            found = np.take_along_axis(flat, a[:, :, None], axis=2)[:, :, 0] > -np.inf
            split = can_split & found
            best_f = np.where(split, a // (nb - 1), -1)  # (M, T)
            best_c = a % (nb - 1)
            mi = np.arange(m_nodes)[:, None]
            f_safe = np.maximum(best_f, 0)
            sl, nl = s_l[f_safe, mi, best_c, cols], c_l[f_safe, mi, best_c, cols]
            if level == 0:
                root = split[0]
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = (sl**2 / nl + (tot - sl) ** 2 / (cnt - nl) - tot**2 / cnt) / n
            np.add.at(importance, best_f[split], gain[split])
            # Threshold: between the largest value of the cut's bin (the first best cut follows a
            # member) and the smallest of the node's next non-empty bin: global bin extremes.
            cl_sel = np.moveaxis(c_l[f_safe, mi, :, cols], 2, 0)  # (B-1, M, T)
            later = (cl_sel > nl[None]) & (np.arange(nb - 1)[:, None, None] > best_c[None])
            nxt = np.where(later.any(axis=0), np.argmax(later, axis=0), nb - 1)  # (M, T)
            lo, hi = self.bin_hi[f_safe, best_c], self.bin_lo[f_safe, nxt]
            with np.errstate(invalid="ignore", over="ignore"):
                mid = lo / 2.0 + hi / 2.0
            mid = np.where((mid == hi) | ~np.isfinite(mid), lo, mid)
            thrs.append(np.where(split, mid, 0.0))
            feats.append(best_f)
            # Route the training samples: right iff their bin in the split feature is past the cut.
            f_of = best_f.ravel().take(cell).reshape(n, t)  # (N, T) split feature of the node
            past = bins.ravel().take(rows * d + np.maximum(f_of, 0))
            right = (f_of >= 0) & (past > best_c.ravel().take(cell).reshape(n, t))
            node = 2 * node + right
            alive = np.repeat(split, 2, axis=0)  # children of split nodes: (2M, T)
        return feats, thrs, node, root


def fit_batched_gbt(
    x: np.ndarray, y: np.ndarray, *, n_estimators: int = 100, max_bins: int | None = None
) -> BatchedGBT:
    """Fit the boosted trees of one factor.

    Args:
        max_bins: None tries every threshold between distinct values, as scikit-learn; an integer
            restricts thresholds to that many equal-count bins per feature (faster,
            coarser: scores move by more than scikit-learn's own seed-to-seed spread).

    Shapes:
        x (N, D) float, y (N,) labels with at least two distinct values
    """
    x32 = np.asarray(x, dtype=np.float32)
    n, d = x32.shape
    classes, yi = np.unique(y, return_inverse=True)
    yi = yi.reshape(-1)
    k = len(classes)
    if k < 2:
        raise ValueError("boosting needs at least two classes")
    t = 1 if k == 2 else k  # trees per stage
    targets = np.arange(1, 2) if t == 1 else np.arange(k)
    onehot = (yi[:, None] == targets[None, :]).astype(np.float64)  # (N, T)
    prior = np.clip(np.bincount(yi, minlength=k) / n, _EPS, 1 - _EPS)
    if t == 1:
        init = np.log(prior[1:] / (1 - prior[1:]))  # logit
    else:
        init = np.log(prior) - np.mean(np.log(prior))  # symmetric multinomial logit
    raw = np.tile(init, (n, 1))  # (N, T)
    if max_bins is None:
        order = np.ascontiguousarray(np.argsort(x32, axis=0, kind="stable").T)  # (D, N)
        xs = np.take_along_axis(x32.T, order, axis=1).astype(np.float64)  # (D, N) sorted
        gid = np.zeros((d, n), dtype=np.int32)  # value group of each sorted position
        np.cumsum(xs[:, 1:] > xs[:, :-1] + _FEATURE_THRESHOLD, axis=1, out=gid[:, 1:])
        x_t = np.ascontiguousarray(x32.T, dtype=np.float64)
        block = max(1, _CELLS // (d * n))  # trees per block
    else:
        hists = _Histograms(x32, max_bins, t)
    cols = np.arange(t)[None, :]
    importance = np.zeros(d)
    relevant = 0
    stages = []
    for _ in range(n_estimators):
        r = onehot - _probabilities(raw)  # (N, T) negative gradient: every tree's target
        if max_bins is None:
            r_t = np.ascontiguousarray(r.T)  # (T, N)
            node_t = np.empty((t, n), dtype=np.int64)
            feats = [np.empty((1 << lv, t), dtype=np.int64) for lv in range(_DEPTH)]
            thrs = [np.empty((1 << lv, t)) for lv in range(_DEPTH)]
            for b0 in range(0, t, block):
                b1 = min(t, b0 + block)
                f_b, th_b, node_t[b0:b1], root = _grow_exact(
                    r_t[b0:b1], order, gid, x_t, importance
                )
                relevant += int(root.sum())
                for lv in range(_DEPTH):
                    feats[lv][:, b0:b1], thrs[lv][:, b0:b1] = f_b[lv], th_b[lv]
            node = node_t.T  # (N, T) leaf of every sample
        else:
            feats, thrs, node, root = hists.grow(r, importance)
            relevant += int(root.sum())
        # Leaf values: one Newton step per leaf (scikit-learn's _update_terminal_regions).
        n_leaves = 1 << _DEPTH
        cell = (node * t + cols).ravel()
        size = n_leaves * t
        count = np.maximum(np.bincount(cell, minlength=size), 1)
        prob = onehot - r
        num = np.bincount(cell, weights=r.ravel(), minlength=size) / count
        den = np.bincount(cell, weights=(prob * (1 - prob)).ravel(), minlength=size) / count
        if t > 1:
            num = num * ((k - 1) / k)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(np.abs(den) < 1e-150, 0.0, num / den).reshape(n_leaves, t)
        raw = raw + _LEARNING_RATE * value[node, cols]
        stages.append(_Stage(feats, thrs, value))
    if relevant == 0:
        imp = np.zeros(d)
    else:
        avg = importance / relevant  # the mean over trees that split at all
        imp = avg / avg.sum()
    return BatchedGBT(classes, init, stages, imp, raw)
