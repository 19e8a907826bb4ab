"""Shared helpers of the graph layer tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

RandomGraph = Callable[[torch.Generator, int, int, int, int], tuple[Tensor, Tensor, Tensor]]


def _random_graph(
    g: torch.Generator, n: int, e: int, k: int, a: int
) -> tuple[Tensor, Tensor, Tensor]:
    """x (n, a), edge_index (2, e) and edge_type (e,) in [0, k), drawn from ``g``."""
    x = torch.rand(n, a, generator=g)
    edge_index = torch.randint(n, (2, e), generator=g)
    edge_type = torch.randint(k, (e,), generator=g)
    return x, edge_index, edge_type


@pytest.fixture
def random_graph() -> RandomGraph:
    """A random graph drawer, ``random_graph(generator, nodes, edges, edge_types, features)``."""
    return _random_graph
