"""Fourier position features: bands, layout, values, any number of axes."""

from __future__ import annotations

import math

import pytest
import torch

from paperzoo.nn.fourier import (
    FourierPositionEncoding,
    fourier_bands,
    fourier_channels,
    fourier_features,
    linear_positions,
)


def test_bands_linear_from_one_to_half_resolution() -> None:
    bands = fourier_bands((224, 28), 64)
    assert bands.shape == (2, 64)
    assert bands[0, 0].item() == 1.0 and bands[0, -1].item() == pytest.approx(112.0)
    assert bands[1, -1].item() == pytest.approx(14.0)
    steps = bands[0].diff()
    torch.testing.assert_close(steps, torch.full_like(steps, 111.0 / 63))


def test_layout_sin_cos_then_raw_position() -> None:
    # One axis, mu = 8, K = 3 bands: f = 1, 2.5, 4.
    pos = torch.tensor([[0.5], [-1.0]])
    out = fourier_features(pos, num_bands=3, max_resolution=(8,))
    f = torch.tensor([1.0, 2.5, 4.0])
    expected = torch.cat([torch.sin(math.pi * f * pos), torch.cos(math.pi * f * pos), pos], dim=-1)
    torch.testing.assert_close(out, expected)
    assert out.shape == (2, fourier_channels(1, 3)) == (2, 7)


@pytest.mark.parametrize("dims", [(5,), (4, 6), (3, 4, 5)])
def test_any_number_of_axes(dims: tuple[int, ...]) -> None:
    enc = FourierPositionEncoding(index_dims=dims, num_bands=4)
    feats = enc()
    d = len(dims)
    assert feats.shape == (math.prod(dims), d * 9) == (math.prod(dims), enc.out_channels)
    # The raw coordinates are the last d channels, each axis spanning [-1, 1].
    raw = feats[:, -d:].reshape(*dims, d)
    torch.testing.assert_close(raw, linear_positions(dims))
    for a in range(d):
        assert raw[..., a].min().item() == -1.0 and raw[..., a].max().item() == 1.0
    # Features are bounded and distinct for distinct cells.
    assert feats[:, :-d].abs().max() <= 1.0
    assert torch.unique(feats, dim=0).shape[0] == math.prod(dims)


def test_per_axis_max_resolution_and_sine_only() -> None:
    pos = torch.rand(10, 2) * 2 - 1
    out = fourier_features(
        pos, num_bands=5, max_resolution=(10, 40), concat_pos=False, sine_only=True
    )
    assert out.shape == (10, 10)
    # Axis 1's top band is 20: sin(20 pi y).
    torch.testing.assert_close(out[:, 9], torch.sin(20 * math.pi * pos[:, 1]))


def test_encode_arbitrary_coordinates_matches_grid() -> None:
    enc = FourierPositionEncoding(index_dims=(7, 9), num_bands=6)
    torch.testing.assert_close(enc(enc.grid), enc())
    batch = enc.grid.expand(3, -1, -1)  # (B, M, d)
    assert enc(batch).shape == (3, 63, enc.out_channels)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="axes"):
        fourier_features(torch.zeros(4, 2), num_bands=3, max_resolution=(8,))
    with pytest.raises(ValueError, match="num_bands"):
        fourier_bands((8,), 0)
    with pytest.raises(ValueError, match="index_dims"):
        linear_positions(())
