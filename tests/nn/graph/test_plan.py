"""The sparse matrices of a propagation plan."""

from __future__ import annotations

import pytest
import torch

from paperzoo.nn.graph.plan import _csr


@pytest.mark.parametrize("index_dtype", [torch.long, torch.int32])
def test_sparse_matrix_counts_every_pair_and_orders_its_rows(index_dtype) -> None:
    g = torch.Generator().manual_seed(3)
    rows, cols = torch.randint(5, (40,), generator=g), torch.randint(7, (40,), generator=g)
    adj = _csr(rows.to(index_dtype), cols.to(index_dtype), (5, 7), torch.float64)
    dense = torch.zeros(5, 7, dtype=torch.float64).index_put_(
        (rows, cols), torch.ones(40, dtype=torch.float64), True
    )
    assert torch.equal(adj.to_dense(), dense)  # duplicate pairs counted, not dropped
    assert adj.crow_indices().dtype == torch.int32
    crow, col = adj.crow_indices(), adj.col_indices()
    for r in range(5):  # columns ascending within each row, no pair twice
        assert bool((col[crow[r] + 1 : crow[r + 1]] > col[crow[r] : crow[r + 1] - 1]).all())
