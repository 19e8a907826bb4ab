import torch

from paperzoo.nn.coord import AddCoords, CoordConv2d, coord_grid


def test_addcoords_values_on_non_square_input():
    x = torch.zeros(2, 3, 4, 7)
    out = AddCoords()(x)
    assert out.shape == (2, 5, 4, 7)
    i, j = out[0, 3], out[0, 4]
    # i varies along rows only (height 4), j along columns only (width 7), each over [-1, 1]
    assert torch.allclose(i[:, 0], torch.tensor([-1.0, -1 / 3, 1 / 3, 1.0]))
    assert torch.allclose(i, i[:, :1].expand(4, 7))
    assert torch.allclose(j[0], torch.linspace(-1, 1, 7))
    assert torch.allclose(j, j[:1].expand(4, 7))
    # the official code's swapped denominators would give j[0, -1] == 6 / 3 * 2 - 1 = 3, not 1
    assert j.max() == 1.0 and i.max() == 1.0


def test_with_r_and_degenerate_axes():
    out = AddCoords(with_r=True)(torch.zeros(1, 1, 3, 3))
    assert out.shape == (1, 4, 3, 3)
    assert out[0, 3, 1, 1] == 0.0 and torch.isclose(out[0, 3, 0, 0], torch.tensor(2.0).sqrt())
    flat = coord_grid(1, 5)
    assert (flat[0] == 0).all() and torch.allclose(flat[1, 0], torch.linspace(-1, 1, 5))


def test_input_channels_pass_through_and_cache_is_per_size():
    layer = AddCoords()
    x = torch.randn(2, 3, 5, 6)
    assert torch.equal(layer(x)[:, :3], x)
    layer(torch.randn(1, 1, 8, 8))
    assert len(layer._cache) == 2


def test_coordconv2d_sees_position():
    torch.manual_seed(0)
    conv = CoordConv2d(1, 4, 3, padding=1)
    assert conv.conv.in_channels == 3
    y = conv(torch.zeros(1, 1, 6, 9))
    assert y.shape == (1, 4, 6, 9)
    # a plain conv maps a constant input to a constant output; CoordConv does not
    assert y[0, :, 2:4, 2:7].std() > 0


def test_coordconv2d_takes_conv2d_positional_arguments():
    conv = CoordConv2d(3, 8, 3, 2, 1)  # in, out, kernel, stride, padding as nn.Conv2d
    assert conv.conv.stride == (2, 2) and conv.conv.padding == (1, 1)
    assert conv(torch.zeros(1, 3, 8, 8)).shape == (1, 8, 4, 4)
    full = CoordConv2d(5, 4, 3, 1, 2, 2, 2, False, "reflect", with_r=True)
    assert full.conv.in_channels == 8 and full.conv.dilation == (2, 2)
    assert full.conv.groups == 2 and full.conv.bias is None and full.conv.padding_mode == "reflect"
    keyword = CoordConv2d(1, 4, kernel_size=3, padding=1, dtype=torch.float64)
    assert keyword.conv.weight.dtype == torch.float64 and keyword.conv.padding == (1, 1)
