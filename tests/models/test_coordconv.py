import pytest
import torch
from torch import nn

from paperzoo.data.not_so_clevr import all_centres, onehot_images
from paperzoo.models.coordconv import (
    ConvRegressor,
    CoordConvPainter,
    CoordConvRegressor,
    DeconvPainter,
)
from paperzoo.utils import count_params


def test_painter_has_the_papers_7553_parameters():
    assert count_params(CoordConvPainter()) == 7553


def test_deconv_is_the_authors_net():
    model = DeconvPainter()
    ups = [m for m in model.modules() if isinstance(m, nn.ConvTranspose2d)]
    assert [m.out_channels for m in ups] == [64, 64, 64, 32, 32, 1]
    assert all(m.kernel_size == (3, 3) and m.stride == (2, 2) for m in ups)
    assert sum(isinstance(m, nn.BatchNorm2d) for m in model.modules()) == 5  # all but the last
    # 3x3 kernels + biases (2 -> 64 -> ... -> 1), and the batch norms' scales and shifts
    widths = (2, 64, 64, 64, 32, 32, 1)
    convs = sum(9 * i * o + o for i, o in zip(widths[:-1], widths[1:], strict=True))
    assert count_params(model) == convs + 2 * (64 + 64 + 64 + 32 + 32) == 103_585
    sizes = []
    hooks = [m.register_forward_hook(lambda m, i, o: sizes.append(o.shape[-1])) for m in ups]
    model(torch.zeros(2, 2))
    for h in hooks:
        h.remove()
    assert sizes == [2, 4, 8, 16, 32, 64]  # each transposed convolution doubles the side


def test_shapes_and_gradients_reach_every_parameter():
    coords = torch.rand(3, 2) * 2 - 1
    for model in (CoordConvPainter(), DeconvPainter()):
        out = model(coords)
        assert out.shape == (3, 1, 64, 64)
        out.square().sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    img = onehot_images(torch.tensor([[10, 20], [40, 50], [30, 30]]))
    for model in (CoordConvRegressor(), ConvRegressor()):
        out = model(img)
        assert out.shape == (3, 2)
        out.square().sum().backward()
        assert all(p.grad is not None for p in model.parameters())


def test_painter_output_depends_on_pixel_position_through_coords():
    torch.manual_seed(0)
    out = CoordConvPainter()(torch.zeros(1, 2))
    assert out.std() > 0  # the same (0, 0) input paints differently at different pixels


def test_regressor_sizes_and_twin():
    assert count_params(CoordConvRegressor()) == 906  # 32 + 72 + 72 + 584 + 146
    twin = CoordConvRegressor(add_coords=False)
    assert count_params(twin) == 906 - 2 * 8  # the same net without the two coordinate inputs


def test_twin_cannot_see_where_the_pixel_is():
    torch.manual_seed(0)
    centres = all_centres()[::97]
    out = CoordConvRegressor(add_coords=False)(onehot_images(centres))
    assert torch.allclose(out, out[:1].expand_as(out), atol=1e-5)  # same output everywhere


def test_max_pool_passes_no_gradient_to_the_hot_pixel_when_the_ramp_wins():
    """Why the authors' regressor may not train: at this initialisation (seed 0) each output
    channel's maximum is on the coordinate ramp, away from the hot pixel, for every input; the
    output is then the same everywhere and the hot pixel gets no gradient."""
    torch.manual_seed(0)
    model = CoordConvRegressor()
    img = onehot_images(all_centres()[::97]).requires_grad_(True)
    out = model(img)
    assert torch.allclose(out, out[:1].expand_as(out))
    out.sum().backward()
    assert (img.grad * img.detach()).abs().max() == 0  # zero gradient on every hot pixel


def test_max_pool_regressor_can_express_the_exact_solution():
    """A hand-set solution exists (so a failure to learn it is the optimiser's): a large response
    on the hot pixel plus the pixel's own coordinate; the maximum lands on the hot pixel and reads
    its (i, j) / 64, the authors' normalised location."""
    model = CoordConvRegressor()
    convs = [m for m in model.net if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        for conv in convs:
            conv.weight.zero_()
            conv.bias.zero_()
        for conv in convs[:3]:  # 1x1: pass (x, i, j) through in channels 0-2
            for c in range(3):
                conv.weight[c, c, 0, 0] = 1.0
        for c in range(3):  # 3x3: the centre tap only
            convs[3].weight[c, c, 1, 1] = 1.0
        big, half = 10.0, 63 / 128  # pixel p has grid coordinate g = 2p / 63 - 1
        for k in range(2):
            convs[4].weight[k, 0, 1, 1] = big  # the hot pixel stands out ...
            convs[4].weight[k, 1 + k, 1, 1] = half  # ... and adds (g + 1) * 63 / 128 = p / 64
            convs[4].bias[k] = half - big
    centres = all_centres()
    pred = model(onehot_images(centres)) * 64
    assert torch.allclose(pred, centres.float(), atol=1e-3)


@pytest.mark.parametrize("add_coords", [True, False])
def test_regressor_maps_equal_the_layer_by_layer_network(add_coords):
    """``maps`` (the affine layers collapsed into one 5x5 kernel plus the image-independent part)
    computes the authors' layer-by-layer network: the same maps and the same gradients, for
    images with a zero outer frame (every Not-so-Clevr image) and for any other input."""
    torch.manual_seed(0)
    model = CoordConvRegressor(add_coords=add_coords)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))  # non-zero biases too
    inner = torch.zeros(3, 1, 64, 64)
    inner[:, :, 1:-1, 1:-1] = torch.randn(3, 1, 62, 62)
    edge = torch.randn(2, 1, 64, 64)  # non-zero frame: the layer-by-layer path
    for x in (onehot_images(all_centres()[::301]), inner, edge):
        fast, ref = model.maps(x), model.maps_layer_by_layer(x)
        assert torch.allclose(fast, ref, rtol=1e-5, atol=1e-4 * ref.abs().max().item())
        g_fast = torch.autograd.grad(model(x).sum(), list(model.parameters()))
        g_ref = torch.autograd.grad(
            model.maps_layer_by_layer(x).amax((2, 3)).sum(), list(model.parameters())
        )
        for a, b in zip(g_fast, g_ref, strict=True):
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-4 * b.abs().max().item() + 1e-6)


def test_conv_regressor_outputs_are_non_negative():
    torch.manual_seed(0)
    model = ConvRegressor().eval()
    out = model(onehot_images(all_centres()[::50]))
    assert out.shape[1] == 2 and (out >= 0).all()  # a final ReLU: targets are pixel / 64


def test_bad_coordinate_shape_raises():
    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        CoordConvPainter()(torch.zeros(3))
    with pytest.raises(ValueError, match="size"):
        DeconvPainter(size=32)
