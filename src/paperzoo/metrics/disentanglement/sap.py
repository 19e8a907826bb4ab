"""SAP score: Separated Attribute Predictability (Kumar, Sattigeri, Balakrishnan 2018, Sec. 3).

Score matrix S (D x F): for discrete factors (the study's setting) S_ij is the test accuracy of a
linear SVM that predicts factor j from latent i alone; SAP is the mean over factors of the gap
between the two largest entries of column j.

disentanglement_lib fits ``sklearn.svm.LinearSVC(C=0.01, class_weight="balanced")`` D x F times.
We solve exactly the same optimisation problems -- liblinear's L2-regularised squared-hinge primal
with the bias as a regularised feature (intercept_scaling 1), one-vs-rest for more than two
classes (positives weighted C * w_c, negatives C) and one problem for two classes -- but all of
a latent's problems at once: on one feature the active set of the squared hinge is a prefix or
suffix of the sorted samples, so each generalised-Newton iteration needs only prefix sums and a
binary search. Prediction is cheap for the same reason: a latent's K one-vs-rest scores are K
lines in its value, so their argmax is read off the lines' upper envelope (``upper_envelope``;
one binary search per test point instead of K scores). The solutions agree with liblinear's up
to its stopping tolerance (1e-4), so the predictions, and the score, agree except for test points
within that tolerance of a boundary.

For continuous factors S_ij = cov(z_i, v_j)^2 / (var(z_i) var(v_j)).
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from paperzoo.metrics.disentanglement.utils import check_codes_factors


class _Problems:
    """The squared-hinge SVM problems of one latent, in sufficient-statistic form.

    Sums of (1, x, x^2) over "the samples of class column c among the first p sorted samples" are
    read from one cumulative array over samples sorted by (column, sorted position): a binary
    search finds where the run of column c crosses position p.
    """

    def __init__(
        self,
        xs: np.ndarray,
        cols: np.ndarray,
        pos_col: np.ndarray,
        neg_col: np.ndarray,
        cp: np.ndarray,
        cn: np.ndarray,
    ):
        n = len(xs)
        self.xs, self.n, self.cp, self.cn = xs, n, cp, cn
        self.pos_col, self.neg_col, self.multi = pos_col, np.maximum(neg_col, 0), neg_col < 0
        feats = np.stack([np.ones(n), xs, xs * xs], axis=1)  # (N, 3)
        self.everyone = np.concatenate([np.zeros((1, 3)), np.cumsum(feats, axis=0)])  # (N+1, 3)
        # cols (N, F): the class column of every sorted sample in every factor.
        keys = (cols * (n + 1) + np.arange(n)[:, None]).ravel()  # column-major run, then position
        small = cols.ravel().astype(np.int16 if cols.max() < 2**15 else np.int32)
        order = np.argsort(small, kind="stable")  # radix sort by column; positions stay ascending
        self.keys = keys[order]
        self.cum = np.concatenate(
            [np.zeros((1, 3)), np.cumsum(np.repeat(feats, cols.shape[1], axis=0)[order], axis=0)]
        )
        self.start = np.searchsorted(self.keys, np.arange(int(cols.max()) + 1) * (n + 1))

    def _class_prefix(self, col: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Sums over samples of column ``col`` among the first ``p`` sorted samples. -> (Q, 3)."""
        idx = np.searchsorted(self.keys, col * (self.n + 1) + p)
        return self.cum[idx] - self.cum[self.start[col]]

    def _pos(self, p: np.ndarray) -> np.ndarray:
        return self._class_prefix(self.pos_col, p)

    def _neg(self, p: np.ndarray) -> np.ndarray:
        rest = self.everyone[p] - self._class_prefix(self.pos_col, p)  # one-vs-rest negatives
        return np.where(self.multi[:, None], rest, self._class_prefix(self.neg_col, p))

    def _active(
        self, prefix, w: np.ndarray, b: np.ndarray, target: float, below: bool
    ) -> np.ndarray:
        """Sums (count, x, x^2) over samples with w x + b < target (below) or > target (not below)."""
        total = prefix(np.full(len(w), self.n))
        safe_w = np.where(w == 0, 1.0, w)
        t = (target - b) / safe_w
        lo = prefix(np.searchsorted(self.xs, t, side="left"))  # samples with x < t
        hi = total - prefix(np.searchsorted(self.xs, t, side="right"))  # samples with x > t
        # w > 0: w x + b < target <=> x < t; w < 0: <=> x > t.
        if below:
            res = np.where((w > 0)[:, None], lo, hi)
            all_in = b < target
        else:
            res = np.where((w > 0)[:, None], hi, lo)
            all_in = b > target
        zero = np.where(all_in[:, None], total, 0.0)
        return np.where((w == 0)[:, None], zero, res)

    def value_grad_hess(self, w: np.ndarray, b: np.ndarray):
        s = self._active(self._pos, w, b, 1.0, below=True)  # positives with margin < 1
        t = self._active(self._neg, w, b, -1.0, below=False)  # negatives with w x + b > -1
        a, c = 1.0 - b, 1.0 + b
        pos_loss = a * a * s[:, 0] - 2 * a * w * s[:, 1] + w * w * s[:, 2]  # sum (1 - w x - b)^2
        neg_loss = c * c * t[:, 0] + 2 * c * w * t[:, 1] + w * w * t[:, 2]  # sum (1 + w x + b)^2
        f = 0.5 * (w * w + b * b) + self.cp * pos_loss + self.cn * neg_loss
        gw = (
            w
            + self.cp * (-2 * a * s[:, 1] + 2 * w * s[:, 2])
            + self.cn * (2 * c * t[:, 1] + 2 * w * t[:, 2])
        )
        gb = (
            b
            + self.cp * (-2 * a * s[:, 0] + 2 * w * s[:, 1])
            + self.cn * (2 * c * t[:, 0] + 2 * w * t[:, 1])
        )
        hww = 1 + 2 * self.cp * s[:, 2] + 2 * self.cn * t[:, 2]
        hwb = 2 * self.cp * s[:, 1] + 2 * self.cn * t[:, 1]
        hbb = 1 + 2 * self.cp * s[:, 0] + 2 * self.cn * t[:, 0]
        return f, gw, gb, hww, hwb, hbb

    def solve(self, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """Generalised Newton with Armijo backtracking, vectorised over problems. -> (w, b)."""
        q = len(self.cp)
        w, b = np.zeros(q), np.zeros(q)
        f, gw, gb, hww, hwb, hbb = self.value_grad_hess(w, b)
        done = np.zeros(q, dtype=bool)
        for _ in range(max_iter):
            det = hww * hbb - hwb * hwb
            dw = -(hbb * gw - hwb * gb) / det
            db = -(hww * gb - hwb * gw) / det
            slope = gw * dw + gb * db  # predicted decrease (negative)
            done = done | (np.abs(slope) <= 1e-14 * np.maximum(1.0, np.abs(f)))
            if done.all():
                break
            step = np.ones(q)
            accepted = done.copy()
            for _ in range(40):  # backtracking line search, per problem
                nf = self.value_grad_hess(w + step * dw, b + step * db)[0]
                accepted |= nf <= f + 1e-4 * step * slope
                if accepted.all():
                    break
                step = np.where(accepted, step, step * 0.5)
            done = done | ~accepted  # no decrease possible: converged to rounding
            step = np.where(accepted & ~done, step, 0.0)
            w, b = w + step * dw, b + step * db
            f, gw, gb, hww, hwb, hbb = self.value_grad_hess(w, b)
        return w, b


def upper_envelope(w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The classes that win ``argmax_c (w_c x + b_c)`` on the real line, left to right.

    On one feature every class's score is a line, so the winner is the upper envelope of K lines:
    at most K intervals, the slopes increasing from left to right. Lines with equal slopes keep
    the largest intercept (equal intercepts: the lowest class, as ``np.argmax``).

    Returns:
        breaks (R-1,) ascending, winners (R,): class ``winners[r]`` wins on
        ``breaks[r-1] < x <= breaks[r]`` (the score ties at a break; ``np.argmax`` there picks the
        lower class, this the left one: the two differ only at the break, where the score is tied).

    Shapes:
        w (K,), b (K,) -> (R-1,), (R,) with R <= K
    """
    order = np.lexsort((np.arange(len(w)), -b, w))  # slope ascending, then intercept descending
    hull: list[int] = []
    for c in order.tolist():
        if hull and w[hull[-1]] == w[c]:
            continue  # same slope, lower (or equal, later class) intercept: never the winner
        while len(hull) >= 2:  # the last line loses everywhere if c overtakes it before it wins
            a, m = hull[-2], hull[-1]
            if (b[a] - b[c]) * (w[m] - w[a]) <= (b[a] - b[m]) * (w[c] - w[a]):
                hull.pop()
            else:
                break
        hull.append(c)
    h = np.array(hull)
    breaks = (b[h[:-1]] - b[h[1:]]) / (w[h[1:]] - w[h[:-1]])  # where line r+1 overtakes line r
    return breaks, h


def _svc_problems(factors: np.ndarray, C: float):
    """The SVM problems of every factor, over the concatenated one-hot class columns.

    Returns:
        labels (N, F) class indices, per-factor classes, the column offset of each factor, and per
        problem: factor, positive column, negative column (-1: all other classes), Cp, Cn.
    """
    labels = np.empty(factors.shape, dtype=np.int64)
    classes, offsets = [], []
    fac, pos_col, neg_col, cp, cn = [], [], [], [], []
    offset = 0
    for j in range(factors.shape[1]):
        cls, y = np.unique(factors[:, j], return_inverse=True)
        labels[:, j] = y.reshape(-1)
        classes.append(cls)
        offsets.append(offset)
        k = len(cls)
        weight = len(y) / (k * np.bincount(y.reshape(-1), minlength=k))  # class_weight="balanced"
        if k == 2:  # one problem: class 1 positive (C w_1), class 0 negative (C w_0)
            (
                fac.append(j),
                pos_col.append(offset + 1),
                neg_col.append(offset),
                cp.append(C * weight[1]),
            )
            cn.append(C * weight[0])
        elif k > 2:  # one-vs-rest: class c positive (C w_c), all other classes negative (C)
            for c in range(k):
                (
                    fac.append(j),
                    pos_col.append(offset + c),
                    neg_col.append(-1),
                    cp.append(C * weight[c]),
                )
                cn.append(C)
        offset += k
    return (
        labels,
        classes,
        np.array(offsets),
        offset,
        tuple(np.array(a) for a in (fac, pos_col, neg_col, cp, cn)),
    )


def linear_svc_1d_accuracy(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    *,
    C: float = 0.01,
) -> np.ndarray:
    """Test accuracy of ``LinearSVC(C, class_weight="balanced")`` on each single feature.

    Shapes:
        x_train (N, D), y_train (N,) or (N, F), x_test (M, D), y_test like y_train -> (D,) or (D, F)
    """
    single = np.ndim(y_train) == 1
    ytr = np.asarray(y_train).reshape(len(x_train), -1)
    yte = np.asarray(y_test).reshape(len(x_test), -1)
    labels, classes, offsets, total_cols, (fac, pos_col, neg_col, cp, cn) = _svc_problems(ytr, C)
    cols = offsets[None, :] + labels  # (N, F) class column of every sample and factor
    acc = np.empty((x_train.shape[1], ytr.shape[1]))
    for i in range(x_train.shape[1]):  # loop over latents only; all factors' problems at once
        order = np.argsort(x_train[:, i], kind="stable")
        w = b = np.zeros(0)
        if len(fac):
            w, b = _Problems(x_train[order, i], cols[order], pos_col, neg_col, cp, cn).solve()
        for j, cls in enumerate(classes):
            q = np.nonzero(fac == j)[0]
            if len(cls) < 2:  # a single class: predict it
                pred = np.zeros(len(x_test), dtype=np.int64)
            elif len(cls) == 2:
                pred = (x_test[:, i] * w[q[0]] + b[q[0]] > 0).astype(np.int64)
            else:  # one-vs-rest: the argmax of K lines is read off their upper envelope
                breaks, winners = upper_envelope(w[q], b[q])
                pred = winners[np.searchsorted(breaks, x_test[:, i])]
            acc[i, j] = np.mean(cls[pred] == yte[:, j])
    return acc[:, 0] if single else acc


def sap_score_matrix(
    codes_train: np.ndarray,
    factors_train: np.ndarray,
    codes_test: np.ndarray,
    factors_test: np.ndarray,
    *,
    continuous: bool = False,
    C: float = 0.01,
) -> np.ndarray:
    """The SAP score matrix S (D, F)."""
    if continuous:
        z = codes_train - codes_train.mean(axis=0)
        v = factors_train - factors_train.mean(axis=0)
        n = len(z) - 1
        cov = z.T @ v / n  # (D, F)
        var_z, var_v = (z * z).sum(axis=0) / n, (v * v).sum(axis=0) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            s = cov**2 / (var_z[:, None] * var_v[None, :])
        return np.where(var_z[:, None] > 1e-12, s, 0.0)
    return linear_svc_1d_accuracy(codes_train, factors_train, codes_test, factors_test, C=C)


def sap(
    codes_train: np.ndarray | Tensor,
    factors_train: np.ndarray | Tensor,
    codes_test: np.ndarray | Tensor,
    factors_test: np.ndarray | Tensor,
    *,
    continuous: bool = False,
    C: float = 0.01,
) -> float:
    """SAP score: mean over factors of the gap between the two most predictive latents."""
    ctr, ftr = check_codes_factors(codes_train, factors_train)
    cte, fte = check_codes_factors(codes_test, factors_test)
    if ctr.shape[1] < 2:
        raise ValueError("SAP needs at least two latent dimensions")
    s = np.sort(sap_score_matrix(ctr, ftr, cte, fte, continuous=continuous, C=C), axis=0)
    return float(np.mean(s[-1] - s[-2]))
