import torch

from paperzoo.models.coordconv import CoordConvPainter, CoordConvRegressor, DeconvPainter
from paperzoo.utils import count_params


def test_painter_has_the_papers_7553_parameters():
    assert count_params(CoordConvPainter()) == 7553


def test_shapes_and_gradients_reach_every_parameter():
    coords = torch.rand(3, 2) * 2 - 1
    for model in (CoordConvPainter(), DeconvPainter()):
        out = model(coords)
        assert out.shape == (3, 1, 64, 64)
        out.sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    reg = CoordConvRegressor()
    assert reg(torch.zeros(2, 1, 64, 64)).shape == (2, 2)


def test_painter_output_depends_on_pixel_position_through_coords():
    torch.manual_seed(0)
    out = CoordConvPainter()(torch.zeros(1, 2))
    assert out.std() > 0  # the same (0, 0) input paints differently at different pixels


def test_bad_coordinate_shape_raises():
    import pytest

    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        CoordConvPainter()(torch.zeros(3))
