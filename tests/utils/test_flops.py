"""count_macs: hand-computed counts for each supported layer type."""

from __future__ import annotations

import torch
from torch import nn

from paperzoo.utils import count_macs


def test_conv_linear_and_grouped_conv() -> None:
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),  # 8*8*8 outputs x 3*9 = 13,824
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=4),  # 8*4*4 x 2*9 = 2,304
        nn.Flatten(),
        nn.Linear(128, 10),  # 1,280
    )
    per: dict[str, int] = {}
    assert count_macs(model, (1, 3, 8, 8), per_module=per) == 13_824 + 2_304 + 1_280
    assert per == {"0": 13_824, "2": 2_304, "4": 1_280}
    assert count_macs(model, torch.zeros(5, 3, 8, 8)) == 5 * (13_824 + 2_304 + 1_280)


def test_transposed_conv_and_reused_module() -> None:
    up = nn.ConvTranspose2d(4, 2, 2, stride=2)  # each of 4*3*3 inputs -> 2*4 outputs = 288

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.fc(x))

    assert count_macs(up, (1, 4, 3, 3)) == 288
    assert count_macs(Twice(), (2, 6)) == 2 * 2 * 36


def test_mode_restored_and_extra_rules() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    bn_rule = {nn.BatchNorm1d: lambda m, i, o: o.numel()}
    assert count_macs(model, (3, 4), extra=bn_rule) == 3 * 16 + 12
    assert model.training
    assert model[1].num_batches_tracked.item() == 0  # eval mode: statistics untouched


def test_meta_device_needs_no_compute() -> None:
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.Flatten())
    assert count_macs(model, (1, 3, 224, 224)) == 64 * 112 * 112 * 3 * 49


def test_step_and_forward_flop_match_a_hand_count():
    """Two linear layers, batch 5: forward 2*5*4*3 + 2*5*3*2 = 180 FLOP; backward: the second
    layer's weight and input gradients (60 + 60), the first layer's weight gradient (120; the
    input needs none); biases add no multiply-adds."""
    from paperzoo.utils.flops import forward_flop, step_flop

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert forward_flop(model, (5, 4)) == 180
    assert step_flop(model, (5, 4)) == 180 + 60 + 60 + 120
    # the same on real tensors (meta=False), and a conv: 2 * (out elements) * (C_in * k * k)
    assert step_flop(model, torch.zeros(5, 4), meta=False) == 420
    conv = nn.Conv2d(3, 8, 3, padding=1)
    assert forward_flop(conv, (2, 3, 6, 6)) == 2 * (2 * 8 * 6 * 6) * (3 * 3 * 3)
    # the model itself is untouched (a copy is counted)
    assert next(model.parameters()).device.type == "cpu"


def test_kernel_counter_counts_the_operations_that_launch_a_kernel():
    """A Linear + ReLU step dispatches addmm, relu and the loss's sum forward, then the seed
    gradient, threshold_backward, the weight gradient (mm) and the bias gradient (sum over the
    batch) backward; the transposes, expands and detaches it also dispatches are views, which
    launch no kernel, and are not counted. The same on the meta device and on real tensors."""
    from paperzoo.utils.flops import KernelCounter, forward_work, step_work

    expected = {
        "aten.addmm.default": 1,
        "aten.relu.default": 1,
        "aten.sum.default": 1,
        "aten.ones_like.default": 1,
        "aten.threshold_backward.default": 1,
        "aten.mm.default": 1,
        "aten.sum.dim_IntList": 1,
    }
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    x = torch.zeros(5, 4)
    with KernelCounter() as counter:
        model(x).sum().backward()
    assert dict(counter.ops) == expected and counter.total == 7
    assert step_work(model, (5, 4)) == (240, 7)
    assert step_work(model, x, meta=False) == (240, 7)
    assert forward_work(model, (5, 4)) == (120, 2)
    with KernelCounter() as counter:
        x.view(20).expand(2, 20).t().detach()
        torch.empty(3)
    assert counter.total == 0


def test_an_lstm_cell_counts_as_cudas_fused_cell():
    """On CUDA nn.LSTMCell is two matrix products and one fused gate kernel forward
    (_thnn_fused_lstm_cell), one fused kernel and the weights' two matrix products backward;
    the CPU's dozen element-wise gate operations are not counted. Its outputs and FLOP are
    nn.LSTMCell's own."""
    from paperzoo.utils.flops import KernelCounter, count_flop

    torch.manual_seed(0)
    cell = nn.LSTMCell(8, 16)
    x, state = torch.randn(4, 8), (torch.randn(4, 16), torch.randn(4, 16))

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        hy, cy = cell(x, state)
        (hy.sum() + cy.sum()).backward()
        return hy, cy

    expected = cell(x, state)
    with KernelCounter() as counter:
        hy, cy = run()
    assert torch.allclose(hy, expected[0]) and torch.allclose(cy, expected[1])
    assert dict(counter.ops) == {
        "aten.mm.default": 4,  # forward: input and hidden gates; backward: both weights
        "aten._thnn_fused_lstm_cell.default": 1,
        "aten._thnn_fused_lstm_cell_backward_impl.default": 1,
        "aten.copy_.default": 1,  # the one bias gradient accumulated into the second bias
        "aten.sum.default": 2,  # the loss
        "aten.add.Tensor": 1,
        "aten.ones_like.default": 1,
    }
    flop = count_flop(run)
    with KernelCounter():
        assert count_flop(run) == flop == 2 * 4 * (8 + 16) * 64 * 2


def test_attention_counts_as_one_fused_kernel_each_way():
    """scaled_dot_product_attention runs as one fused kernel forward and one backward on CUDA;
    the meta device decomposes it into matrix products and a softmax, whose FLOP are still
    counted (the same as without the counter), and its result and gradients are the
    function's own."""
    import torch.nn.functional as F

    from paperzoo.utils.flops import KernelCounter, count_flop, count_work

    class Attend(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(8, 24)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.qkv(x).chunk(3, -1)  # (B, N, 8) each
            return F.scaled_dot_product_attention(q, k, v)

    net = Attend()
    x = torch.randn(2, 5, 8)
    expected = net(x)
    grad = torch.autograd.grad(expected.sum(), net.qkv.weight)[0]
    with KernelCounter() as counter:
        out = net(x)
        assert torch.allclose(torch.autograd.grad(out.sum(), net.qkv.weight)[0], grad)
    assert torch.allclose(out, expected)
    assert counter.ops["aten._scaled_dot_product_fused_attention"] == 1
    assert counter.ops["aten._scaled_dot_product_fused_attention_backward"] == 1

    with torch.device("meta"):
        meta_net, meta_x = Attend(), torch.zeros(2, 5, 8)

    def run() -> None:
        meta_net.zero_grad(set_to_none=True)
        meta_net(meta_x).sum().backward()

    with KernelCounter() as counter:
        run()
    assert dict(counter.ops) == {
        "aten.addmm.default": 1,  # q, k, v
        "aten._scaled_dot_product_fused_attention": 1,
        "aten.sum.default": 1,
        "aten.ones_like.default": 1,
        "aten._scaled_dot_product_fused_attention_backward": 1,
        "aten.cat.default": 1,  # the chunks' gradients
        "aten.mm.default": 1,  # the weight gradient
        "aten.sum.dim_IntList": 1,  # the bias gradient
    }
    flop = count_flop(run)  # without the kernel counter: the decomposed attention's products
    assert flop > 2 * 2 * 5 * 8 * 24 * 2
    assert count_work(run) == (flop, 8)
