"""DCI: disentanglement, completeness, informativeness (Eastwood & Williams 2018, Sec. 2).

One gradient-boosted-trees classifier per factor predicts the factor from all latents
(scikit-learn's ``GradientBoostingClassifier`` with its defaults, as in disentanglement_lib);
its impurity-based feature importances form column f of the importance matrix R (D x F).

* disentanglement: D_i = 1 - H_F(P_i.) with P_ij = R_ij / sum_k R_ik, weighted by
  rho_i = sum_j R_ij / sum_ij R_ij (Eq. 2-3);
* completeness: C_j = 1 - H_D(P~_.j) with P~_ij = R_ij / sum_k R_kj, weighted by factor importance;
* informativeness: the classifiers' accuracy on the training and the test codes.

Entropies use base F (disentanglement) and D (completeness) and a 1e-11 smoothing, as in
disentanglement_lib. The boosted trees dominate the cost; they are fitted once per factor.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier
from torch import Tensor

from paperzoo.metrics.disentanglement.utils import check_codes_factors


class DCIScores(NamedTuple):
    disentanglement: float
    completeness: float
    informativeness_train: (
        float  # mean accuracy of the per-factor classifiers on the training codes
    )
    informativeness_test: float  # ... and on the test codes


def _entropy_rows(p: np.ndarray, base: int) -> np.ndarray:
    """Entropy of each row after normalising it (scipy.stats.entropy along axis 1)."""
    p = p / p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=1) / np.log(base)


def disentanglement_score(importance: np.ndarray) -> float:
    """Weighted per-latent disentanglement of an importance matrix (D, F)."""
    per_code = 1.0 - _entropy_rows(importance + 1e-11, importance.shape[1])
    weights = importance if importance.sum() != 0.0 else np.ones_like(importance)
    return float(np.sum(per_code * weights.sum(axis=1) / weights.sum()))


def completeness_score(importance: np.ndarray) -> float:
    """Weighted per-factor completeness of an importance matrix (D, F)."""
    per_factor = 1.0 - _entropy_rows(importance.T + 1e-11, importance.shape[0])
    weights = importance if importance.sum() != 0.0 else np.ones_like(importance)
    return float(np.sum(per_factor * weights.sum(axis=0) / weights.sum()))


def importance_gbt(
    codes_train: np.ndarray,
    factors_train: np.ndarray,
    codes_test: np.ndarray,
    factors_test: np.ndarray,
    *,
    n_estimators: int = 100,
    random_state: int = 0,
) -> tuple[np.ndarray, float, float]:
    """Importance matrix (D, F) and mean train / test accuracy of the per-factor boosted trees."""
    d, f = codes_train.shape[1], factors_train.shape[1]
    importance = np.zeros((d, f))
    train_acc, test_acc = [], []
    for j in range(f):  # one classifier per factor
        y = factors_train[:, j]
        if len(np.unique(y)) < 2:  # a constant factor: nothing to predict, no importance
            train_acc.append(1.0)
            test_acc.append(float(np.mean(factors_test[:, j] == y[0])))
            continue
        model = GradientBoostingClassifier(n_estimators=n_estimators, random_state=random_state)
        model.fit(codes_train, y)
        importance[:, j] = np.abs(model.feature_importances_)
        train_acc.append(float(np.mean(model.predict(codes_train) == y)))
        test_acc.append(float(np.mean(model.predict(codes_test) == factors_test[:, j])))
    return importance, float(np.mean(train_acc)), float(np.mean(test_acc))


def dci(
    codes_train: np.ndarray | Tensor,
    factors_train: np.ndarray | Tensor,
    codes_test: np.ndarray | Tensor,
    factors_test: np.ndarray | Tensor,
    *,
    n_estimators: int = 100,
    random_state: int = 0,
) -> DCIScores:
    """DCI scores of codes (N, D) w.r.t. factors (N, F); the study uses 10,000 / 5,000 points."""
    ctr, ftr = check_codes_factors(codes_train, factors_train)
    cte, fte = check_codes_factors(codes_test, factors_test)
    imp, acc_tr, acc_te = importance_gbt(
        ctr, ftr, cte, fte, n_estimators=n_estimators, random_state=random_state
    )
    return DCIScores(disentanglement_score(imp), completeness_score(imp), acc_tr, acc_te)
