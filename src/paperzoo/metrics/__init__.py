"""Metrics: classification helpers and (in ``disentanglement/``) representation metrics."""

from paperzoo.metrics.classification import accuracy, predict

__all__ = ["accuracy", "predict"]
