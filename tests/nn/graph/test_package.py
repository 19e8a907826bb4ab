"""paperzoo.nn.graph: one layer per module, every name also importable from the package (and the
layers from paperzoo.nn), so ``from paperzoo.nn.graph import ...`` keeps working."""

from __future__ import annotations

import importlib

import pytest

import paperzoo.nn
import paperzoo.nn.graph

HOMES = {
    "GatedGraphPropagation": "gated_propagation",
    "StackedGatedPropagation": "stacked_propagation",
    "GatedReadout": "readout",
    "global_add_pool": "pool",
    "graph_inputs": "utils",
    "to_dense_batch": "utils",
    "reverse_edges": "utils",
    "PropagationPlan": "plan",
    "build_plan": "plan",
}


@pytest.mark.parametrize(("name", "home"), sorted(HOMES.items()))
def test_each_name_lives_in_its_own_module_and_is_re_exported(name: str, home: str) -> None:
    module = importlib.import_module(f"paperzoo.nn.graph.{home}")
    obj = getattr(module, name)
    assert obj.__module__ == module.__name__  # defined there, not imported
    assert getattr(paperzoo.nn.graph, name) is obj
    if name in paperzoo.nn.__all__:
        assert getattr(paperzoo.nn, name) is obj


def test_the_package_exports_exactly_its_layers() -> None:
    assert sorted(paperzoo.nn.graph.__all__) == sorted(HOMES)
