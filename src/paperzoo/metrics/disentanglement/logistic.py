"""L2-regularised logistic regression solved by Newton's method, for the BetaVAE score.

The BetaVAE score's classifier (disentanglement_lib: ``sklearn.linear_model.LogisticRegression()``
with its defaults) minimises, over weights W (K, D) and intercepts b (K,),

    f(W, b) = 1/N sum_i -log softmax(W x_i + b)_{y_i} + 1/(2 C N) ||W||^2,   C = 1,

multinomial for K > 2 classes; for K = 2 one weight vector for the second class, the first
class's scores fixed at 0 (scikit-learn's binomial model). The intercepts are not penalised.
scikit-learn solves it with L-BFGS and stops at a projected gradient of 1e-4 (or after 100
iterations); we take Newton steps with the exact Hessian, all (D + 1) x K parameters at once
(55 for the study's 10 latents and 5 factors), to a gradient of ~1e-10: the same problem solved
more exactly (``fit_logistic_regression`` describes the steps). Predictions therefore agree with
scikit-learn's except for points that lie within L-BFGS's stopping tolerance of a decision
boundary (measured in docs/disentanglement.md and checked by the benchmark and the tests).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from typing import NamedTuple

import numpy as np
from threadpoolctl import ThreadpoolController

log = logging.getLogger(__name__)


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


_CONTROLLER: ThreadpoolController | None = None


def _one_blas_thread() -> AbstractContextManager:
    """numpy's BLAS limited to one thread while the context lasts. The products here are thin
    ((t, N) @ (N, D+1), N ~ 10^4, D+1 and t ~ 10): a second OpenBLAS thread made a fit 7x slower
    on a 2-core AMD EPYC (7 -> 51 ms), one thread costs nothing measurable. The controller (4 ms
    to build: it lists the loaded libraries) is made once."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


_WARM_STRIDE = 8  # warm start: the optimum on every 8th sample first (same penalty per sample)
_WARM_MIN = 4000  # ... when there are at least this many samples


def fit_logistic_regression(
    x: np.ndarray, y: np.ndarray, *, C: float = 1.0, tol: float = 1e-10, max_iter: int = 50
) -> LogisticModel:
    """Fit the L2-regularised logistic regression above by damped Newton steps.

    With at least 4,000 samples, Newton's method first solves the problem on every 8th sample
    (the same objective per sample, so its optimum is close) and the full problem is then
    finished with that solution's inverse Hessian (within ~3% of the full one: each step gains
    more than an order of magnitude, and a step that gains less than half refreshes the Hessian),
    so the full data's Hessian is rarely formed. The optimum reached is the same.

    Args:
        C: inverse regularisation strength (scikit-learn's ``C``).
        tol: stop when the largest gradient entry is below ``tol`` (the objective is a mean).
        max_iter: steps at most per phase (5-8 suffice on the BetaVAE's features).

    Shapes:
        x (N, D) float, y (N,) labels with at least two distinct values
    """
    x = np.asarray(x, dtype=np.float64)
    classes, yi = np.unique(np.asarray(y), return_inverse=True)
    yi = yi.reshape(-1)
    k = len(classes)
    if k < 2:
        raise ValueError("logistic regression needs at least two classes")
    lam = 1.0 / (C * len(x))
    theta = inv = None
    sub = slice(None, None, _WARM_STRIDE)
    with _one_blas_thread():
        if len(x) >= _WARM_MIN and len(np.unique(yi[sub])) == k:
            theta, inv, _ = _newton(x[sub], yi[sub], k, lam, None, None, 1e-6, max_iter)
        theta, _, g_max = _newton(x, yi, k, lam, theta, inv, tol, max_iter)
    if g_max > tol:  # scikit-learn warns (ConvergenceWarning) in the same situation
        log.warning("logistic regression stopped at gradient %.1e > tol %.1e", g_max, tol)
    d = x.shape[1]
    return LogisticModel(classes, theta[:, :d].copy(), theta[:, d].copy())


def _newton(
    x: np.ndarray,
    yi: np.ndarray,
    k: int,
    lam: float,
    theta: np.ndarray | None,
    inv: np.ndarray | None,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray | None, float]:
    """Damped Newton steps on labels 0..k-1 with penalty ``lam``, from ``theta`` (None: zeros)
    with the inverse Hessian ``inv`` (None: formed here); the Hessian is formed again whenever
    a step reduced the largest gradient entry by less than half.

    Returns:
        the parameters (t, D+1), one row per free class with the intercept last; the inverse
        Hessian last used (None if no step was taken); the largest gradient entry at the end
        (0 where the line search found no decrease at rounding level: converged).
    """
    n, d = x.shape
    binary = k == 2
    t = 1 if binary else k  # classes with free parameters (binary: the second class only)
    # Samples last throughout: reductions over classes run across contiguous rows.
    xt = np.concatenate([x.T, np.ones((1, n))])  # (D+1, N) with the intercept row
    onehot = (np.arange(k)[:, None] == yi[None, :]).astype(np.float64)  # (K, N)
    if theta is None:
        theta = np.zeros((t, d + 1))  # rows: classes; last column: intercept
    hessian = _HessianInverse(xt, t, lam, binary)

    def objective(th: np.ndarray) -> tuple[float, np.ndarray]:
        z = th @ xt  # (t, N)
        if binary:
            z = np.concatenate([np.zeros((1, n)), z])  # class 0 scores fixed at 0
        p, lse = _softmax(z)
        loss = (lse.sum() - np.sum(onehot * z)) / n + 0.5 * lam * np.sum(th[:, :d] ** 2)
        return float(loss), p

    f, p = objective(theta)
    last = g_max = np.inf  # the largest gradient entry before the last step, and now
    for steps in range(max_iter + 1):
        q = p[k - t :]  # (t, N) probabilities of the free classes
        g = ((q - onehot[k - t :]) @ xt.T) / n  # (t, D+1)
        g[:, :d] += lam * theta[:, :d]
        g_max = float(np.max(np.abs(g)))
        if g_max <= tol or steps == max_iter:
            break
        if inv is None or g_max > 0.5 * last:
            inv = hessian(q)
        last = g_max
        step = -(inv @ g.ravel()).reshape(t, d + 1)
        slope = float(np.sum(g * step))  # the gradient has no null component: nor has the step
        # Backtracking (Armijo) from the full step.
        size = 1.0
        for _ in range(30):
            f_new, p_new = objective(theta + size * step)
            if f_new <= f + 1e-4 * size * slope:
                break
            size *= 0.5
        else:
            g_max = 0.0  # no decrease at rounding level: converged
            break
        theta = theta + size * step
        f, p = f_new, p_new
    return theta, inv, g_max


class _HessianInverse:
    """The inverse Hessian of the objective at given probabilities, from per-sample outer
    products of the inputs formed once (on first use)."""

    def __init__(self, xt: np.ndarray, t: int, lam: float, binary: bool):
        self.xt, self.t, self.outer = xt, t, None
        d = len(xt) - 1
        size_p = t * (d + 1)
        self.iu, self.ju = np.triu_indices(d + 1)
        self.ai, self.ci = np.triu_indices(t)  # Hessian blocks (a, c), a <= c
        # Where every (block, product) entry goes in the Hessian (P, P), P = t (D+1), parameters
        # ordered (class, feature): the four symmetric positions (a, i; c, j), (a, j; c, i), ...
        a_, c_ = self.ai[:, None], self.ci[:, None]
        i_, j_ = self.iu[None, :], self.ju[None, :]
        self.dst = np.stack(
            [
                (a_ * (d + 1) + i_) * size_p + c_ * (d + 1) + j_,
                (a_ * (d + 1) + j_) * size_p + c_ * (d + 1) + i_,
                (c_ * (d + 1) + i_) * size_p + a_ * (d + 1) + j_,
                (c_ * (d + 1) + j_) * size_p + a_ * (d + 1) + i_,
            ]
        ).reshape(4, -1)  # (4, B*U)
        self.fixed = np.diag(lam * np.tile(np.r_[np.ones(d), 0.0], t))  # intercepts: no penalty
        if not binary:  # shifting every intercept alike changes nothing: the null direction
            null = np.zeros(size_p)
            null[d :: d + 1] = 1.0
            self.fixed += np.outer(null, null)  # keeps the Hessian invertible; no effect on steps

    def __call__(self, q: np.ndarray) -> np.ndarray:
        """q: (t, N) probabilities of the free classes. -> (P, P)."""
        xt, n = self.xt, self.xt.shape[1]
        if self.outer is None:  # per-sample x~ x~^T, upper triangle: (U, N) in triu order
            self.outer = np.empty((len(self.iu), n))
            row = 0
            for i in range(len(xt)):
                np.multiply(xt[i], xt[i:], out=self.outer[row : row + len(xt) - i])
                row += len(xt) - i
        ai, ci = self.ai, self.ci
        # Blocks (a, c): 1/N sum_i p_ia (delta_ac - p_ic) x~_i x~_i^T  (+ lam I on W).
        w = q[ai] * ((ai == ci)[:, None] - q[ci])  # (B, N) block weights
        blocks = ((w @ self.outer.T) / n).ravel()  # (B*U,)
        hess = self.fixed.copy()
        for k_dst in self.dst:
            hess.flat[k_dst] = blocks + self.fixed.flat[k_dst]
        return np.linalg.inv(hess)
