"""Disentanglement metrics with the defaults of the abstract-reasoning study (disentanglement_lib).

Pure functions of codes and factors (``mig``, ``modularity``, ``dci``, ``sap``, ``irs``), of codes
alone (``unsupervised``: disentanglement_lib's four unsupervised scores) and of a
ground-truth data set, a representation and a ``numpy.random.Generator`` where the metric
intervenes on factors (``beta_vae_score``, ``factor_vae_score``): ``ArrayGroundTruthData`` makes
one from a user's own (observations, factors) arrays, ``GroundTruthData`` is the interface.
"""

from paperzoo.data.ground_truth import ArrayGroundTruthData, GroundTruthData
from paperzoo.metrics.disentanglement.beta_vae import beta_vae_score
from paperzoo.metrics.disentanglement.dci import DCIScores, dci
from paperzoo.metrics.disentanglement.factor_vae import factor_vae_score
from paperzoo.metrics.disentanglement.irs import IRSScores, irs, irs_scores
from paperzoo.metrics.disentanglement.mig import mig, mig_per_factor
from paperzoo.metrics.disentanglement.modularity import modularity
from paperzoo.metrics.disentanglement.sap import sap
from paperzoo.metrics.disentanglement.unsupervised import (
    UnsupervisedScores,
    gaussian_total_correlation,
    gaussian_wasserstein_correlation,
    unsupervised,
)
from paperzoo.metrics.disentanglement.utils import (
    discrete_entropy,
    discrete_mutual_info,
    histogram_discretize,
)

__all__ = [
    "ArrayGroundTruthData",
    "DCIScores",
    "GroundTruthData",
    "IRSScores",
    "UnsupervisedScores",
    "beta_vae_score",
    "dci",
    "discrete_entropy",
    "discrete_mutual_info",
    "factor_vae_score",
    "gaussian_total_correlation",
    "gaussian_wasserstein_correlation",
    "histogram_discretize",
    "irs",
    "irs_scores",
    "mig",
    "mig_per_factor",
    "modularity",
    "sap",
    "unsupervised",
]
