"""Gradient-boosted trees for DCI, batched: the algorithm of scikit-learn's
``GradientBoostingClassifier`` with its defaults, vectorised over the trees of a stage.

Friedman (2001), "Greedy Function Approximation", Algorithm 6 (multiclass log-loss boosting):
every stage fits one regression tree per class to the residuals y_k - p_k (softmax of the raw
scores), depth 3, splits chosen by the squared-error criterion, and sets each leaf to one Newton
step, (K - 1) / K * sum(r) / sum(p (1 - p)) (binary: one tree, sum(r) / sum(p (1 - p))); the raw
scores move by 0.1 times the leaf value. The importance of a feature is the impurity decrease of
its splits, per tree divided by N, averaged over the trees that split at all and normalised.

What is the same as scikit-learn (1.x defaults: learning_rate 0.1, max_depth 3, squared error
(scikit-learn 1.9's trees; its former friedman_mse ranks the splits alike),
min_samples_split 2, min_samples_leaf 1, subsample 1, prior initialisation): the features are
rounded to float32 first, candidate thresholds lie between neighbouring values more than 1e-7
apart, a threshold is the midpoint a/2 + b/2 of the two sample values around it, a node with
impurity <= machine epsilon or fewer than 2 samples is a leaf, and ties in the split criterion
(frequent in the first stages, where a tree's residuals take two values, and between duplicated
latents) are decided as scikit-learn decides them: ``random_state`` seeds every tree as there
(one ``randint(0, 2**31 - 1)`` per tree from ``RandomState(random_state)``, stage after stage,
class after class), each node's features are drawn in the order of scikit-learn's
``BestSplitter`` (its Fisher-Yates pass with the tree's xorshift generator, the constant
features set aside and remembered for the descendants, nodes in its depth-first order:
``_TreeSampler``), and the feature drawn first wins a tie, then the lowest threshold. With the
same ``random_state`` the trees are then scikit-learn's wherever its criterion values and ours
compare alike. To that end the left sums of a node's cuts run from 0 at the node's first sample
in the feature's sorted order, as scikit-learn's ``criterion.update`` adds them, so equal cuts of
different features tie or order as there, and the criterion is computed in scikit-learn's
arithmetic, s_l^2 / n_l + (S - s_l)^2 / n_r with S the node's total (at the root summed in
sample order, as there).
Tested: to rounding on integer codes with duplicated columns and a binary factor, and on a
duplicated continuous latent with a 3-class factor (breaking ties by the lowest feature instead
is off by 0.4 to 0.6 in the importances there).

What still differs: scikit-learn sometimes takes a left sum as the node total minus the samples
from the end (a jump over equal values past the middle of the node), orders equal values
arbitrarily, and sums a node's total in the order its partitions left the samples, so a tie can
still split by rounding there, or a rounding-level difference collapse into a tie here (also
where two features cut the same samples in mirror image, one's left set the other's right set:
both then compare rounded values, differently; such cuts move the test points of small nodes); a node
whose residuals are equal up to rounding has an impurity of rounding size, often above machine
epsilon in scikit-learn (its children's sums are the parent's minus the sibling's), and is then
split on rounding noise, where ours, summed directly, may not be: this happens often for factors
with many values, where most nodes hold a single class. Such a split moves predictions and
importances by rounding only, but it draws features, so the later ties of that tree are decided
by another, equally random, order. Values within 1e-7 are grouped by a chain over the whole
feature, not per node. So on such codes the scores differ from scikit-learn's under the same
``random_state`` by about as much as scikit-learn's own scores under another one (measured in
docs/disentanglement.md). The replay costs a Python loop over the features of every split
node (about 7 x D steps per tree) and a test of the constant features of every child that is
split.

``max_bins`` (optional) restricts the thresholds to bin edges and builds histograms instead
(ties decided in the same order; features with at most ``max_bins`` distinct values give the
exact trees): faster, but a coarser model whose scores move further (also measured).

Why it is faster: scikit-learn grows the K trees of a stage one after another and re-sorts
every node's samples per feature; here the features are sorted once, a node's cuts on all
features are one prefix sum over (features, samples), and each level of a block of trees ends
with a stable radix partition of every node's segment.
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


_RAND_R_MAX = 0x7FFFFFFF  # scikit-learn's RAND_R_MAX (sklearn/utils/_random.pxd)


class _TreeSampler:
    """The feature sampling of scikit-learn's ``BestSplitter`` for one tree, replayed.

    ``sklearn/tree/_splitter.pyx`` (1.x, ``node_split_best``): every node that is split draws the
    features without replacement by a Fisher-Yates pass over ``splitter.features`` with the
    tree's own xorshift generator (``our_rand_r`` in ``sklearn/utils/_random.pxd``, seeded by
    ``random_state.randint(0, RAND_R_MAX)`` when the tree is fitted), skipping the features known
    to be constant from an ancestor and setting aside the ones found constant in the node
    (max - min <= 1e-7); the others are evaluated in the order drawn, and a later feature
    replaces the best split only if its criterion is strictly larger. ``features`` and the
    constant-feature list persist from node to node in the builder's depth-first order (root,
    left subtree, right subtree), so the order of a node depends on every node split before it.
    """

    __slots__ = ("constant", "features", "state")

    def __init__(self, seed: int, d: int):
        self.state = int(seed)
        self.features = list(range(d))
        self.constant = [0] * d

    def _rand_int(self, low: int, high: int) -> int:
        """``rand_int``: low + our_rand_r(state) % (high - low), our_rand_r a 32-bit xorshift."""
        s = self.state or 1  # our_rand_r replaces a zero state by DEFAULT_SEED = 1
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        self.state = s
        return low + (s % (_RAND_R_MAX + 1)) % (high - low)

    def visit(self, n_known: int, constant: np.ndarray) -> tuple[list[int], int]:
        """Draw the features of one node that is split.

        Args:
            n_known: the constant features known from the ancestors (the parent's total).
            constant: (D,) whether each feature is constant in this node.

        Returns:
            the features evaluated, in the order drawn, and the node's total of known constants
            (its children's ``n_known``).
        """
        f, d = self.features, len(self.features)
        f_i, n_found, n_drawn, n_total, visited = d, 0, 0, n_known, 0
        order = []
        # The loop of node_split_best with max_features = n_features (the trees' default).
        while f_i > n_total and (visited < d or visited <= n_found + n_drawn):
            visited += 1
            f_j = self._rand_int(n_drawn, f_i - n_found)
            if f_j < n_known:  # a constant known from an ancestor: set aside, not evaluated
                f[n_drawn], f[f_j] = f[f_j], f[n_drawn]
                n_drawn += 1
                continue
            f_j += n_found
            if constant[f[f_j]]:  # found constant here
                f[f_j], f[n_total] = f[n_total], f[f_j]
                n_found += 1
                n_total += 1
                continue
            f_i -= 1
            f[f_i], f[f_j] = f[f_j], f[f_i]
            order.append(f[f_i])
        f[:n_known] = self.constant[:n_known]  # the known constants keep their order
        self.constant[n_known:n_total] = f[n_known:n_total]
        return order, n_total


class _SplitterReplay:
    """scikit-learn's feature order at every node of a block of B trees grown level by level.

    A node's order is drawn (``visit``) when scikit-learn's depth-first builder would reach it:
    at level 0 the root; at level 1 the left node, then (once the left node's split is chosen)
    its two children, then the right node and its children. With depth 3 the children of a
    level-1 node have only leaves below them, so their draws need only their own samples, and
    the level-2 orders are all known before level 2 is grown. ``pick`` then resolves a tie in the
    split criterion as scikit-learn does: the feature drawn first, then the lowest threshold.
    """

    def __init__(self, seeds: list[int], d: int, root_constant: np.ndarray):
        assert _DEPTH <= 3, "the replay visits a level-1 node's children right after its split"
        self.trees = [_TreeSampler(s, d) for s in seeds]
        self.d = d
        b_n = len(seeds)
        self.known: dict[tuple[int, int], np.ndarray] = {(0, 0): np.zeros(b_n, dtype=np.int64)}
        self.constant: dict[tuple[int, int], np.ndarray] = {
            (0, 0): np.broadcast_to(root_constant, (b_n, d))
        }
        self.splittable: dict[tuple[int, int], np.ndarray] = {}
        self.rank: dict[tuple[int, int], np.ndarray] = {}  # (B, D): D for features not evaluated
        self.order: dict[tuple[int, int], np.ndarray] = {}  # (B, D + 1) feature at each rank

    def visit(self, level: int, m: int, splittable: np.ndarray) -> None:
        """Draw node m of ``level`` in the trees where it is split (splittable (B,) bool)."""
        if (level, m) in self.rank:
            return
        b_n, d = len(self.trees), self.d
        rank = np.full((b_n, d), d, dtype=np.int64)
        order = np.full((b_n, d + 1), -1, dtype=np.int64)
        total = np.zeros(b_n, dtype=np.int64)
        known, constant = self.known[(level, m)], self.constant[(level, m)]
        for b in np.nonzero(splittable)[0]:
            feats, total[b] = self.trees[b].visit(int(known[b]), constant[b])
            rank[b, feats] = np.arange(len(feats))
            order[b, : len(feats)] = feats
        self.rank[(level, m)], self.order[(level, m)] = rank, order
        self.known[(level + 1, 2 * m)] = self.known[(level + 1, 2 * m + 1)] = total

    def set_children(self, level: int, m: int, splittable: np.ndarray, constant: np.ndarray):
        """Record the children of node m of ``level``: splittable (B, 2), constant (B, 2, D)."""
        for k in range(2):
            self.splittable[(level + 1, 2 * m + k)] = splittable[:, k]
            self.constant[(level + 1, 2 * m + k)] = constant[:, k]
        if level + 1 == _DEPTH - 1:  # only leaves below the children: draw them now
            for k in range(2):
                self.visit(level + 1, 2 * m + k, splittable[:, k])

    def pick(
        self,
        level: int,
        m: int,
        tree: np.ndarray,
        feature: np.ndarray,
        pos: np.ndarray,
        n_pos: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The winner among a node's best candidates (tree, feature, cut position), per tree:
        the feature drawn first, then the lowest position. Returns best feature (B,) (-1 where
        a tree has no candidate) and position (B,)."""
        b_n = len(self.trees)
        rank = self.rank[(level, m)]
        key = rank[tree, feature] * n_pos + pos
        best = np.full(b_n, np.iinfo(np.int64).max)
        np.minimum.at(best, tree, key)
        has = best < self.d * n_pos  # a candidate among the features evaluated
        r = np.where(has, best // n_pos, self.d)
        f = np.where(has, self.order[(level, m)][np.arange(b_n), r], -1)
        return f, np.where(has, best % n_pos, 0)


def _children_stats(
    order_t: np.ndarray,
    xs_t: np.ndarray,
    x_t: np.ndarray,
    r_t: np.ndarray,
    rr_t: np.ndarray,
    member: np.ndarray,
    right: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Whether the two children of a node can be split, and which features are constant there.

    The children's counts and residual sums are ``bincount``s over the node's samples in sample
    order: the same additions, in the same order, as the next level's sums, so the same leaf
    decisions (>= 2 samples, impurity > machine epsilon). A child's smallest and largest value
    of a feature are its first and last samples in that feature's sorted order.

    Args:
        order_t: (D, N) sample ids in increasing order of each feature; xs_t: (D, N) the sorted
            values and x_t: (D, N) the values (float32-rounded, as float64).
        r_t, rr_t: (B, N) residuals and their squares.
        member: (B, N) the node's samples; right: (B, N) whether each goes right.

    Returns:
        splittable (B, 2), constant (B, 2, D) (max - min <= 1e-7, scikit-learn's test; False
        where the child is not split).
    """
    b_n, n = member.shape
    d = order_t.shape[0]
    idx = np.flatnonzero(member)  # tree-major, samples in order
    cell = (idx // n) * 2 + right.ravel()[idx]
    cnt = np.bincount(cell, minlength=2 * b_n).reshape(b_n, 2).astype(np.float64)
    tot = np.bincount(cell, weights=r_t.ravel()[idx], minlength=2 * b_n).reshape(b_n, 2)
    sq = np.bincount(cell, weights=rr_t.ravel()[idx], minlength=2 * b_n).reshape(b_n, 2)
    safe = np.maximum(cnt, 1)
    splittable = (cnt >= 2) & (sq / safe - (tot / safe) ** 2 > _EPS)
    # Only a child that will be split draws features, so only its constant features matter.
    # Two of its samples (its first and last in sample order) that differ by more than 1e-7
    # settle a feature at once; the sorted-order test runs for the trees where some are left.
    constant = np.zeros((b_n, 2, d), dtype=bool)
    feat = np.arange(d)[None, :]
    for k in range(2):
        inside = member & (right == k)  # (B, N)
        first = np.argmax(inside, axis=1)
        last = n - 1 - np.argmax(inside[:, ::-1], axis=1)
        maybe = splittable[:, k, None] & (
            np.abs(x_t[:, last] - x_t[:, first]).T <= _FEATURE_THRESHOLD
        )
        rows = np.flatnonzero(maybe.any(axis=1))
        if rows.size == 0:
            continue
        in_order = inside[rows][:, order_t]  # (R, D, N) whether each sorted position is inside
        lo = np.argmax(in_order, axis=2)  # (R, D); a boolean argmax stops at the first True
        hi = n - 1 - np.argmax(in_order[:, :, ::-1], axis=2)
        constant[rows, k] = maybe[rows] & (xs_t[feat, hi] <= xs_t[feat, lo] + _FEATURE_THRESHOLD)
    return splittable, constant


def _route_exact(
    best_f: np.ndarray,
    best_p: np.ndarray,
    at: np.ndarray,
    pos: np.ndarray,
    perm: np.ndarray,
    right: np.ndarray,
) -> None:
    """Route: in its node's split feature order, a sample right of the cut goes right.

    Writes ``right`` (B*N,) for the samples of every node with a split in best_f (B, M)."""
    f_at = np.take_along_axis(best_f, at, axis=1)  # (B, N)
    right_pos = (f_at >= 0) & (pos > np.take_along_axis(best_p, at, axis=1))
    sample_at = np.take_along_axis(perm, np.maximum(f_at, 0)[:, None, :], axis=1)[:, 0]
    right[sample_at.ravel()] = right_pos.ravel()


def _grow_exact(
    r_t: np.ndarray,
    order_t: np.ndarray,
    gid_t: np.ndarray,
    x_t: np.ndarray,
    xs_t: np.ndarray,
    importance: np.ndarray,
    replay: _SplitterReplay,
):
    """Grow B trees (depth 3) on their targets r_t (B, N), every threshold tried.

    Each tree keeps, per feature, its samples ordered by (node, value): a node is a segment with
    one prefix sum over (D, segment); after the splits every segment is partitioned stably (a
    radix argsort of the child index).

    Args:
        order_t: (D, N) sample ids in increasing order of each feature.
        gid_t: (D, N) int32 value group of each sorted position (1e-7 apart: new group).
        x_t: (D, N) float64 feature values (float32-rounded); xs_t: (D, N) the same sorted.
        importance: (D,) accumulates every split's impurity decrease / N.
        replay: scikit-learn's feature order of the B trees (ties go to the feature drawn first).

    Returns:
        per level (features (2^l, B), thresholds (2^l, B)), leaf of every sample (B, N),
        whether each tree split its root (B,).
    """
    b_n, n = r_t.shape
    d = order_t.shape[0]
    bi = np.arange(b_n)[:, None]
    pos = np.arange(n)[None, :]
    r_flat = r_t.ravel()
    rr_t = r_t * r_t
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
        sq = np.bincount(cell, weights=rr_t.ravel(), minlength=b_n * m_n)
        safe = np.maximum(cnt, 1)
        impurity = sq.reshape(b_n, m_n) / safe - (tot / safe) ** 2
        can = alive & (cnt >= 2) & (impurity > _EPS)  # (B, M)
        starts = (np.cumsum(cnt, axis=1) - cnt).astype(np.int64)  # (B, M) segment starts
        at = np.zeros((b_n, n), dtype=np.int64)  # node of each position, same for all features
        for m in range(1, m_n):
            at += pos >= starts[:, m : m + 1]
        rs = r_flat.take(perm)  # (B, D, N) residuals in (node, value) order
        # Prefix sums per node, each from 0 at the node's first sample in the feature's order:
        # scikit-learn's running sum_left (criterion.update, forward), the same additions in
        # the same order wherever its samples are in value order, so equal cuts of different
        # features compare as there (a tie stays a tie, an order stays an order).
        if m_n == 1:
            s_full = np.cumsum(rs, axis=2)
        else:
            s_full = np.empty_like(rs)
            ends = starts + cnt.astype(np.int64)
            for b in range(b_n):  # one cumsum per (tree, node): about 7 per tree
                for m in range(m_n):
                    a, e = starts[b, m], ends[b, m]
                    if e > a:
                        np.cumsum(rs[b, :, a:e], axis=1, out=s_full[b, :, a:e])
        s_l = s_full[:, :, :-1]  # (B, D, N-1) sums left of the cut after p
        at_c = at[:, :-1]
        c_l = pos[:, :-1] + 1 - np.take_along_axis(starts, at_c, axis=1)  # (B, N-1)
        n_at = np.take_along_axis(cnt, at_c, axis=1)
        s_at = np.take_along_axis(tot, at_c, axis=1)
        ok_at = np.take_along_axis(can, at_c, axis=1) & (c_l < n_at)
        # scikit-learn's squared-error proxy, in its arithmetic (MSE.proxy_impurity_improvement,
        # the right sum as the node total minus the left): s_l^2 / n_l + s_r^2 / n_r; -1 where
        # there is no cut (equal values).
        s_r = s_at[:, None, :] - s_l
        s_r *= s_r
        proxy = s_l * s_l
        proxy /= np.where(ok_at, c_l, 1.0)[:, None, :]
        s_r /= np.where(ok_at, n_at - c_l, 1.0)[:, None, :]
        proxy += s_r
        np.copyto(proxy, -1.0, where=gid[:, :, 1:] == gid[:, :, :-1])
        np.copyto(proxy, -1.0, where=~ok_at[:, None, :])
        # The best value of every node, then every (feature, position) attaining it: ties are
        # resolved in scikit-learn's order (``_SplitterReplay.pick``), node by node in the order
        # its depth-first builder visits them.
        v_pos = proxy.max(axis=1)  # (B, N-1)
        best_v = np.empty((b_n, m_n))
        for m in range(m_n):
            best_v[:, m] = np.where(at_c == m, v_pos, -2.0).max(axis=1)
        found = can & (best_v >= 0)
        target = np.take_along_axis(np.where(found, best_v, np.nan), at_c, axis=1)  # (B, N-1)
        cb, cd, cp = np.nonzero(proxy == target[:, None, :])
        cm = at_c[cb, cp]
        best_f = np.full((b_n, m_n), -1)
        best_p = np.zeros((b_n, m_n), dtype=np.int64)
        right = np.zeros(b_n * n, dtype=np.int64)
        for m in range(m_n):
            replay.visit(level, m, can[:, m])
            sel = cm == m
            best_f[:, m], best_p[:, m] = replay.pick(level, m, cb[sel], cd[sel], cp[sel], n)
            if level + 1 < _DEPTH:  # route node m's samples, then its children's draws
                _route_exact(best_f, best_p, at, pos, perm, right)
                member = node == m
                split_m = best_f[:, m] >= 0
                ok, const = _children_stats(
                    order_t, xs_t, x_t, r_t, rr_t, member, right.reshape(b_n, n) == 1
                )
                replay.set_children(level, m, ok & split_m[:, None], const)
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
        if level + 1 == _DEPTH:
            _route_exact(best_f, best_p, at, pos, perm, right)
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
        # each feature's sorted order and values, for the constant-feature tests
        self.order_t = np.ascontiguousarray(np.argsort(x32, axis=0, kind="stable").T)  # (D, N)
        self.xs_t = np.take_along_axis(x32.T, self.order_t, axis=1).astype(np.float64)
        self.x_t = np.ascontiguousarray(x32.T, dtype=np.float64)

    def grow(self, r: np.ndarray, importance: np.ndarray, replay: _SplitterReplay):
        """Grow the T trees of a stage on r (N, T); same returns as ``_grow_exact`` (trees last);
        ``replay``: scikit-learn's feature order of the T trees (ties go to the first drawn)."""
        n, t = r.shape
        r_t = np.ascontiguousarray(r.T)
        rr_t = r_t * r_t
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
                s_r = tot[None, :, None, :] - s_l
                proxy = np.where(
                    ok, s_l * s_l / c_l + s_r * s_r / (cnt[None, :, None, :] - c_l), -np.inf
                )
            # the squared-error proxy maximised per (node, tree) over (feature, cut)
            flat = np.moveaxis(proxy, (0, 2), (2, 3)).reshape(m_nodes, t, -1)  # (M, T, D*(B-1))
            best_v = flat.max(axis=2)  # (M, T)
            found = can_split & (best_v > -np.inf)
            # Every (feature, cut) attaining its node's best value; ties resolved node by node
            # in scikit-learn's feature order (as in the exact growth).
            cm, ct, cj = np.nonzero(flat == np.where(found, best_v, np.nan)[:, :, None])
            best_f = np.full((m_nodes, t), -1)
            best_c = np.zeros((m_nodes, t), dtype=np.int64)
            for m in range(m_nodes):
                replay.visit(level, m, can_split[m])
                sel = cm == m
                best_f[m], best_c[m] = replay.pick(
                    level, m, ct[sel], cj[sel] // (nb - 1), cj[sel] % (nb - 1), nb - 1
                )
                if level + 1 < _DEPTH:  # node m's children: their draws come next
                    inm = node == m
                    f_m = best_f[m]
                    go = inm & (f_m >= 0) & (bins[:, np.maximum(f_m, 0)] > best_c[m])  # (N, T)
                    ok, const = _children_stats(
                        self.order_t, self.xs_t, self.x_t, r_t, rr_t, inm.T, go.T
                    )
                    replay.set_children(level, m, ok & (f_m >= 0)[:, None], const)
            split = best_f >= 0  # (M, T)
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


def tree_seeds(random_state: int | np.random.RandomState, count: int) -> list[int]:
    """The seeds of scikit-learn's trees: each ``DecisionTreeRegressor`` of a boosting run shares
    the run's ``RandomState`` and draws ``randint(0, RAND_R_MAX)`` once when it is fitted
    (``Splitter.init``), stage after stage, class after class."""
    if isinstance(random_state, np.random.RandomState):
        rs = random_state
    elif isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        rs = np.random.RandomState(random_state)
    else:
        raise ValueError(
            f"random_state must be an int or a numpy RandomState, got {random_state!r}"
        )
    return [int(rs.randint(0, _RAND_R_MAX)) for _ in range(count)]


def fit_batched_gbt(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_estimators: int = 100,
    max_bins: int | None = None,
    random_state: int | np.random.RandomState = 0,
) -> BatchedGBT:
    """Fit the boosted trees of one factor.

    Args:
        x: (N, D) features.
        y: (N,) labels with at least two distinct values.
        n_estimators: boosting stages.
        max_bins: None tries every threshold between distinct values, as scikit-learn; an integer
            restricts thresholds to that many equal-count bins per feature (faster,
            coarser: scores move by more than scikit-learn's own seed-to-seed spread).
        random_state: as scikit-learn's ``GradientBoostingClassifier(random_state=...)``: it
            seeds the feature order of every tree, which decides ties between equally good
            splits.

    Returns:
        the fitted ``BatchedGBT``.
    """
    x32 = np.asarray(x, dtype=np.float32)
    if x32.ndim != 2 or len(x32) != len(y):
        raise ValueError(f"x {x32.shape} and y {np.shape(y)} must be (N, D) and (N,)")
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
    seeds = tree_seeds(random_state, n_estimators * t)
    lo32, hi32 = x32.min(axis=0).astype(np.float64), x32.max(axis=0).astype(np.float64)
    root_constant = hi32 <= lo32 + _FEATURE_THRESHOLD  # (D,) constant over all samples
    for stage in range(n_estimators):
        r = onehot - _probabilities(raw)  # (N, T) negative gradient: every tree's target
        if max_bins is None:
            r_t = np.ascontiguousarray(r.T)  # (T, N)
            node_t = np.empty((t, n), dtype=np.int64)
            feats = [np.empty((1 << lv, t), dtype=np.int64) for lv in range(_DEPTH)]
            thrs = [np.empty((1 << lv, t)) for lv in range(_DEPTH)]
            for b0 in range(0, t, block):
                b1 = min(t, b0 + block)
                replay = _SplitterReplay(seeds[stage * t + b0 : stage * t + b1], d, root_constant)
                f_b, th_b, node_t[b0:b1], root = _grow_exact(
                    r_t[b0:b1], order, gid, x_t, xs, importance, replay
                )
                relevant += int(root.sum())
                for lv in range(_DEPTH):
                    feats[lv][:, b0:b1], thrs[lv][:, b0:b1] = f_b[lv], th_b[lv]
            node = node_t.T  # (N, T) leaf of every sample
        else:
            replay = _SplitterReplay(seeds[stage * t : (stage + 1) * t], d, root_constant)
            feats, thrs, node, root = hists.grow(r, importance, replay)
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
