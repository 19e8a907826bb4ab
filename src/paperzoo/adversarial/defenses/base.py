"""Preprocessing defences: ``classifier(transform(x))`` with the transform exposed for BPDA."""

from __future__ import annotations

from torch import Tensor, nn


class InputTransformDefense(nn.Module):
    """A classifier behind an input transformation (the defence).

    ``BPDA`` finds ``transform`` and ``classifier`` on this module; a transform may carry a
    ``bpda_approx`` method, the smooth approximation BPDA differentiates instead.

    Shapes:
        x: (B, ...) in [0, 1] -> logits (B, K)
    """

    def __init__(self, *, transform: nn.Module, classifier: nn.Module) -> None:
        super().__init__()
        self.transform = transform
        self.classifier = classifier

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.transform(x))
