"""Batch transforms on image tensors (``paperzoo.data.transforms``)."""

from __future__ import annotations

import torch

from paperzoo.data.transforms import as_set, translate


def test_translate_shifts_each_image_within_bounds() -> None:
    torch.manual_seed(0)
    x = torch.zeros(64, 1, 6, 6)
    x[:, 0, 2, 3] = 1.0  # one lit pixel, away from the border
    out = translate(x, 1, fill=-0.5)
    assert out.shape == x.shape
    lit = (out == 1.0).nonzero()[:, 2:]  # (64, 2) row, column of the lit pixel
    assert len(lit) == 64
    assert ((lit[:, 0] - 2).abs() <= 1).all() and ((lit[:, 1] - 3).abs() <= 1).all()
    assert len({tuple(t.tolist()) for t in lit}) > 1  # offsets differ between images
    # Uncovered border pixels take the fill value; shift 0 is the identity.
    assert set(out.unique().tolist()) <= {-0.5, 0.0, 1.0}
    assert torch.equal(translate(x, 0, fill=-0.5), x)


def test_as_set_lists_pixels_in_raster_order() -> None:
    x = torch.arange(2 * 3 * 2 * 4, dtype=torch.float32).reshape(2, 3, 2, 4)  # (N, C, H, W)
    s = as_set(x)
    assert s.shape == (2, 8, 3)
    assert torch.equal(s[1, 4 * 1 + 2], x[1, :, 1, 2])  # pixel (row 1, column 2)
