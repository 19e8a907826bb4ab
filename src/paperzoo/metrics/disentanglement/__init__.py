"""Disentanglement metrics with the defaults of the abstract-reasoning study (disentanglement_lib).

Pure functions of codes and factors (``mig``, ``modularity``, ``dci``, ``sap``) and of a
ground-truth data set, a representation and a ``numpy.random.Generator`` where the metric
intervenes on factors (``beta_vae_score``, ``factor_vae_score``).
"""

from paperzoo.metrics.disentanglement.beta_vae import beta_vae_score
from paperzoo.metrics.disentanglement.dci import DCIScores, dci
from paperzoo.metrics.disentanglement.factor_vae import factor_vae_score
from paperzoo.metrics.disentanglement.mig import mig, mig_per_factor
from paperzoo.metrics.disentanglement.modularity import modularity
from paperzoo.metrics.disentanglement.sap import sap
from paperzoo.metrics.disentanglement.utils import (
    discrete_entropy,
    discrete_mutual_info,
    histogram_discretize,
)

__all__ = [
    "DCIScores",
    "beta_vae_score",
    "dci",
    "discrete_entropy",
    "discrete_mutual_info",
    "factor_vae_score",
    "histogram_discretize",
    "mig",
    "mig_per_factor",
    "modularity",
    "sap",
]
