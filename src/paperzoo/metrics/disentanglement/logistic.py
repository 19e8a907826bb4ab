"""L2-regularised logistic regression solved by Newton's method, for the BetaVAE score.

The BetaVAE score's classifier (disentanglement_lib: ``sklearn.linear_model.LogisticRegression()``
with its defaults) minimises, over weights W (K, D) and intercepts b (K,),

    f(W, b) = 1/N sum_i -log softmax(W x_i + b)_{y_i} + 1/(2 C N) ||W||^2,   C = 1,

multinomial for K > 2 classes; for K = 2 one weight vector for the second class, the first
class's scores fixed at 0 (scikit-learn's binomial model). The intercepts are not penalised.
scikit-learn solves it with L-BFGS and stops at a projected gradient of 1e-4 (or after 100
iterations); we take Newton steps with the exact Hessian, all (D + 1) x K parameters at once
(55 for the study's 10 latents and 5 factors), to a gradient of ~1e-10: the same problem solved
more exactly, in 5-8 steps instead of ~80. Predictions therefore agree with scikit-learn's
except for points that lie within L-BFGS's stopping tolerance of a decision boundary (measured
in docs/disentanglement.md and checked by the benchmark and the tests).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class LogisticModel(NamedTuple):
    """A fitted model: scores x @ coef.T + intercept, the class of the largest (binary: > 0)."""

    classes: np.ndarray  # (K,)
    coef: np.ndarray  # (K, D); binary: (1, D), the second class's weights
    intercept: np.ndarray  # (K,); binary: (1,)

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """Scores. (M, D) -> (M, K), binary (M, 1)."""
        return np.asarray(x, dtype=np.float64) @ self.coef.T + self.intercept

    def predict(self, x: np.ndarray) -> np.ndarray:
        s = self.decision_function(x)
        idx = (s[:, 0] > 0).astype(np.int64) if s.shape[1] == 1 else np.argmax(s, axis=1)
        return self.classes[idx]

    def score(self, x: np.ndarray, y: np.ndarray) -> float:
        """Accuracy on (x, y)."""
        return float(np.mean(self.predict(x) == np.asarray(y)))


def _softmax(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and log-sum-exp of scores, classes first. (K, N) -> (K, N), (N,)."""
    m = z.max(axis=0)
    e = np.exp(z - m)
    s = e.sum(axis=0)
    return e / s, np.log(s) + m


def fit_logistic_regression(
    x: np.ndarray, y: np.ndarray, *, C: float = 1.0, tol: float = 1e-10, max_iter: int = 50
) -> LogisticModel:
    """Fit the L2-regularised logistic regression above by damped Newton steps.

    Args:
        C: inverse regularisation strength (scikit-learn's ``C``).
        tol: stop when the largest gradient entry is below ``tol`` (the objective is a mean).
        max_iter: Newton steps at most (5-8 suffice on the BetaVAE's features).

    Shapes:
        x (N, D) float, y (N,) labels with at least two distinct values
    """
    x = np.asarray(x, dtype=np.float64)
    classes, yi = np.unique(np.asarray(y), return_inverse=True)
    yi = yi.reshape(-1)
    n, d = x.shape
    k = len(classes)
    if k < 2:
        raise ValueError("logistic regression needs at least two classes")
    binary = k == 2
    t = 1 if binary else k  # classes with free parameters (binary: the second class only)
    lam = 1.0 / (C * n)
    # Samples last throughout: reductions over classes run across contiguous rows.
    xt = np.concatenate([x.T, np.ones((1, n))])  # (D+1, N) with the intercept row
    onehot = (np.arange(k)[:, None] == yi[None, :]).astype(np.float64)  # (K, N)
    # Per-sample outer products x~ x~^T, upper triangle: the Hessian is a weighted sum of them.
    iu, ju = np.triu_indices(d + 1)
    outer = np.empty((len(iu), n))  # (U, N), U = (D+1)(D+2)/2, rows in triu_indices order
    row = 0
    for i in range(d + 1):
        np.multiply(xt[i], xt[i:], out=outer[row : row + d + 1 - i])
        row += d + 1 - i
    ai, ci = np.triu_indices(t)  # Hessian blocks (a, c), a <= c
    # Where every (block, product) entry goes in the Hessian (P, P), P = t (D+1), parameters
    # ordered (class, feature): the four symmetric positions (a, i; c, j), (a, j; c, i), ...
    size_p = t * (d + 1)
    a_, c_, i_, j_ = ai[:, None], ci[:, None], iu[None, :], ju[None, :]
    dst = np.stack(
        [
            (a_ * (d + 1) + i_) * size_p + c_ * (d + 1) + j_,
            (a_ * (d + 1) + j_) * size_p + c_ * (d + 1) + i_,
            (c_ * (d + 1) + i_) * size_p + a_ * (d + 1) + j_,
            (c_ * (d + 1) + j_) * size_p + a_ * (d + 1) + i_,
        ]
    ).reshape(4, -1)  # (4, B*U)
    fixed = np.diag(lam * np.tile(np.r_[np.ones(d), 0.0], t))  # the intercepts: no penalty
    # Null direction (K > 2): shifting every intercept alike changes nothing.
    if not binary:
        null = np.zeros(size_p)
        null[d :: d + 1] = 1.0
        fixed += np.outer(null, null)  # keeps the Hessian invertible; no effect on the step
    theta = np.zeros((t, d + 1))  # rows: classes; last column: intercept

    def objective(th: np.ndarray) -> tuple[float, np.ndarray]:
        z = th @ xt  # (t, N)
        if binary:
            z = np.concatenate([np.zeros((1, n)), z])  # class 0 scores fixed at 0
        p, lse = _softmax(z)
        loss = (lse.sum() - np.sum(onehot * z)) / n + 0.5 * lam * np.sum(th[:, :d] ** 2)
        return float(loss), p

    f, p = objective(theta)
    for _ in range(max_iter):
        q = p[k - t :]  # (t, N) probabilities of the free classes
        g = ((q - onehot[k - t :]) @ xt.T) / n  # (t, D+1)
        g[:, :d] += lam * theta[:, :d]
        if np.max(np.abs(g)) <= tol:
            break
        # Hessian blocks (a, c): 1/N sum_i p_ia (delta_ac - p_ic) x~_i x~_i^T  (+ lam I on W).
        w = q[ai] * ((ai == ci)[:, None] - q[ci])  # (B, N) block weights
        blocks = ((w @ outer.T) / n).ravel()  # (B*U,)
        hess = fixed.copy()
        for k_dst in dst:
            hess.flat[k_dst] = blocks + fixed.flat[k_dst]
        step = -np.linalg.solve(hess, g.ravel()).reshape(t, d + 1)
        slope = float(np.sum(g * step))  # the gradient has no null component: nor has the step
        # Backtracking (Armijo) from the full Newton step.
        size = 1.0
        for _ in range(30):
            f_new, p_new = objective(theta + size * step)
            if f_new <= f + 1e-4 * size * slope:
                break
            size *= 0.5
        else:
            break  # no decrease at rounding level: converged
        theta = theta + size * step
        f, p = f_new, p_new
    return LogisticModel(classes, theta[:, :d].copy(), theta[:, d].copy())
