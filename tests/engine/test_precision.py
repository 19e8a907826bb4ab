"""--precision: bf16 autocast of the trained models' forwards, TF32 flags, and the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from paperzoo.engine import TrainConfig, Trainer
from paperzoo.engine import precision as num_precision
from paperzoo.engine.batched import BatchedKeeper, fit_batched
from paperzoo.experiments import EXPERIMENTS
from paperzoo.metrics.classification import predict


class _Net(nn.Module):
    """Two linear layers; records the dtype of the hidden activation of each forward."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 3)
        self.hidden_dtypes: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        self.hidden_dtypes.append(h.dtype)
        return self.b(h)


def _net() -> _Net:
    torch.manual_seed(0)
    return _Net()


def test_bf16_runs_the_forward_in_bf16_and_returns_fp32():
    net, x = _net(), torch.randn(5, 8)
    exact = net(x)
    with num_precision.using("bf16", "cpu"), num_precision.autocast_modules([net]) as on:
        assert on
        out = net(x)
        direct = net.a(x)  # a submodule called on its own is an outermost call too
    assert out.dtype == torch.float32 and direct.dtype == torch.float32
    assert net.hidden_dtypes[-1] == torch.bfloat16  # inside the model: bf16 activations
    # the same computation by hand in bf16, then cast: what autocast does
    h = torch.relu(
        nn.functional.linear(x.bfloat16(), net.a.weight.bfloat16(), net.a.bias.bfloat16())
    )
    by_hand = nn.functional.linear(h, net.b.weight.bfloat16(), net.b.bias.bfloat16()).float()
    assert torch.equal(out, by_hand)
    assert not torch.equal(out, exact)  # bf16 changed the numbers: autocast was really on
    assert torch.allclose(out, exact, atol=0.05)
    # the hooks are gone after the block
    assert net(x).dtype == torch.float32 and torch.equal(net(x), exact)
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in net.modules())


@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_fp32_and_tf32_leave_the_cpu_forward_exact(precision):
    net, x = _net(), torch.randn(5, 8)
    exact = net(x)
    with num_precision.using(precision, "cpu"), num_precision.autocast_modules([net]) as on:
        assert not on
        assert torch.equal(net(x), exact)


def test_full_precision_inside_a_bf16_block_is_fp32():
    net, x = _net(), torch.randn(5, 8)
    exact = net(x)
    with num_precision.using("bf16", "cpu"), num_precision.autocast_modules([net]):
        with num_precision.full_precision():
            assert torch.equal(net(x), exact)
        assert not torch.equal(net(x), exact)


def test_exact_comparison_is_fp32_inside_bf16():
    net, x = _net(), torch.randn(5, 8)
    exact = net(x)
    with num_precision.using("bf16", "cpu"), num_precision.autocast_modules([net]):
        with num_precision.exact_comparison():
            assert torch.equal(net(x), exact) and net.hidden_dtypes[-1] == torch.float32
            with num_precision.autocast_forward() as on:
                assert not on
        assert not torch.equal(net(x), exact)  # bf16 again after the block


def test_exact_comparison_turns_tf32_off_and_restores_the_flags():
    """(The backend flags exist without a GPU.)"""
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    try:
        with num_precision.exact_comparison():
            assert not torch.backends.cuda.matmul.allow_tf32
            assert not torch.backends.cudnn.allow_tf32
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


def test_outside_using_nothing_changes():
    assert num_precision.active() == num_precision.Setting("fp32", "cpu")
    net = _net()
    with num_precision.autocast_modules([net]) as on:
        assert not on and not net.a._forward_hooks


def test_tf32_flags_on_cuda_are_set_and_restored():
    """On CUDA (here only the backend flags, which exist without a GPU) tf32 turns TF32 on for
    matmuls and cuDNN, fp32 and bf16 turn it off, and the caller's flags come back."""
    before = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    with num_precision.using("tf32", "cuda:0") as s:
        assert s == num_precision.Setting("tf32", "cuda")
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert torch.get_float32_matmul_precision() == "high"
    for p in ("fp32", "bf16"):
        with num_precision.using(p, "cuda"):
            assert not torch.backends.cuda.matmul.allow_tf32
            assert not torch.backends.cudnn.allow_tf32  # PyTorch's default is True: fp32 is fp32
            assert torch.get_float32_matmul_precision() == "highest"
    after = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    assert after == before
    with num_precision.using("tf32", "cpu"):  # no TF32 on the CPU: only recorded
        assert (torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()) == (
            before[1],
            before[2],
        )


def test_unknown_precision_and_defaults():
    with pytest.raises(ValueError, match="unknown precision 'fp16'; choose from fp32, tf32, bf16"):
        num_precision.check("fp16")
    with pytest.raises(ValueError, match="unknown precision"), num_precision.using("half", "cpu"):
        pass
    assert num_precision.default_precision("bf16", "cpu") == "fp32"
    assert num_precision.default_precision("bf16", "cuda:1") == "bf16"
    assert num_precision.default_precision("tf32", "cuda") == "tf32"


def test_to_float32_walks_containers():
    from typing import NamedTuple

    class Out(NamedTuple):
        a: torch.Tensor
        n: torch.Tensor

    b = torch.ones(2, dtype=torch.bfloat16)
    out = num_precision.to_float32(
        {"x": [b, (b, torch.ones(2, dtype=torch.long))], "o": Out(b, b.double())}
    )
    assert out["x"][0].dtype == torch.float32 and out["x"][1][1].dtype == torch.long
    assert isinstance(out["o"], Out) and out["o"].a.dtype == torch.float32
    assert out["o"].n.dtype == torch.float64


def _fit(precision: str, manual: bool = False) -> tuple[_Net, list[torch.dtype], float]:
    net = _net()
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses: list[torch.dtype] = []

    def loss_fn(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        loss = nn.functional.cross_entropy(model(batch[0]), batch[1])
        losses.append(loss.dtype)
        return loss

    def manual_step(model: nn.Module, batch: tuple[torch.Tensor, ...]) -> dict:
        loss = loss_fn(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return {"loss": loss.detach()}

    cfg = TrainConfig(steps=5, batch_size=16, log_every=5, progress=False)
    with num_precision.using(precision, "cpu"):
        trainer = Trainer(
            net,
            None if manual else opt,
            manual_step if manual else loss_fn,
            config=cfg,
            manual=manual,
            eval_fn=lambda m: {"acc": float((predict(m, x).argmax(1) == y).float().mean())},
        )
        history = trainer.fit((x, y))
    return net, losses, history.last("acc")


@pytest.mark.parametrize("manual", [False, True])
def test_trainer_trains_the_forward_in_bf16_with_fp32_loss_and_weights(manual):
    net16, loss_dtypes, _ = _fit("bf16", manual)
    assert set(net16.hidden_dtypes) == {torch.bfloat16}  # training and evaluation forwards
    assert set(loss_dtypes) == {torch.float32}
    assert all(p.dtype == torch.float32 for p in net16.parameters())
    net32, loss_dtypes32, _ = _fit("fp32", manual)
    assert set(net32.hidden_dtypes) == {torch.float32} and set(loss_dtypes32) == {torch.float32}
    # bf16 training moved the weights differently (it ran), but not far in 5 small steps
    w16, w32 = net16.a.weight.detach(), net32.a.weight.detach()
    assert not torch.equal(w16, w32) and torch.allclose(w16, w32, atol=0.02)
    assert not any(m._forward_hooks for m in net16.modules())  # hooks removed after fit


def test_predict_under_bf16_returns_fp32_logits():
    net, x = _net(), torch.randn(7, 8)
    with num_precision.using("bf16", "cpu"):
        logits = predict(net, x, batch_size=3)
    assert logits.dtype == torch.float32 and net.hidden_dtypes[-1] == torch.bfloat16
    assert torch.allclose(logits, net(x), atol=0.05)


def test_fit_batched_runs_the_stacked_forward_in_bf16():
    net = _net()
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)

    def loss_fn(model: nn.Module, step: int) -> torch.Tensor:
        return nn.functional.cross_entropy(model(x), y, reduction="none")[:1]

    with num_precision.using("bf16", "cpu"):
        fit_batched(
            net, loss_fn, opt, steps=3, evaluate=None, eval_every=0, keeper=BatchedKeeper(1)
        )
    assert set(net.hidden_dtypes) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in net.parameters())


# ------------------------------------------------------------------- the ten papers, recorded
PAPERS = EXPERIMENTS.names()  # the ten and any installed plugin


def test_every_paper_declares_a_cuda_precision():
    from paperzoo.experiments.lookup import get_experiment

    for name in PAPERS:
        exp = get_experiment(name)
        assert exp.cuda_precision in num_precision.PRECISIONS, name
        if type(exp).__module__.startswith("paperzoo."):  # a plugin's page is in its own repo
            doc = Path(__file__).resolve().parents[2] / "docs" / f"{name}.md"
            assert "Precision on CUDA" in doc.read_text(), f"{doc} gives no reason for its default"


@pytest.mark.parametrize("name", PAPERS)
def test_every_paper_runs_at_smoke_in_bf16_and_records_it(name, smoke_ctx, monkeypatch):
    """CPU autocast runs the same code path as CUDA's: each paper trains with some module
    computing in bf16, and results.json says bf16."""
    from dataclasses import replace

    from paperzoo.experiments.runner import run_experiment

    seen: set[torch.dtype] = set()

    def spy(module: nn.Module, args: object, output: object) -> None:
        # (global hooks see a module's output before the autocast hook casts it to fp32)
        if isinstance(output, torch.Tensor):
            seen.add(output.dtype)

    handle = nn.modules.module.register_module_forward_hook(spy)
    try:
        result = run_experiment(name, replace(smoke_ctx, precision="bf16"))
    finally:
        handle.remove()
    assert torch.bfloat16 in seen, f"{name}: no module ran in bf16"
    stored = json.loads((smoke_ctx.out_dir / "results.json").read_text())
    assert stored["precision"] == "bf16" and result.precision == "bf16"
    assert "(bf16)" in (smoke_ctx.out_dir / "report.md").read_text()


def test_cli_records_bf16_and_refuses_a_bad_precision(tmp_path, capsys):
    from paperzoo.cli import main

    out = tmp_path / "cc"
    argv = ["reproduce", "coordconv", "--scale", "smoke", "--quiet", "--precision", "bf16"]
    assert main([*argv, "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["precision"] == "bf16"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "coordconv", "--scale", "smoke", "--precision", "fp16"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--precision takes fp32, tf32, bf16, got 'fp16'" in err and err.count("\n") == 1


def test_precision_is_part_of_the_run_identity_and_merge_refuses_mixed(tmp_path):
    from dataclasses import replace

    from paperzoo.experiments import RunContext
    from paperzoo.experiments.runner import resolve_config, run_spec
    from paperzoo.verdict import Result, check_same_run

    ctx = RunContext(scale="smoke", out_dir=tmp_path)
    cfg = resolve_config("coordconv", "smoke")
    fp32 = run_spec("coordconv", ctx, cfg, None)
    bf16 = run_spec("coordconv", replace(ctx, precision="bf16"), cfg, None)
    assert "precision" not in fp32  # older run records (no key) are fp32 runs
    assert bf16["precision"] == "bf16"
    assert {k: v for k, v in bf16.items() if k != "precision"} == fp32

    def result(seed: int, precision: str) -> Result:
        return Result(
            "coordconv", "t", "smoke", [seed], "cpu", 1.0, "0", "2", [], [], precision=precision
        )

    check_same_run([result(0, "bf16"), result(1, "bf16")])
    with pytest.raises(ValueError, match="must share one precision, got bf16, fp32"):
        check_same_run([result(0, "fp32"), result(1, "bf16")])
    # results.json round trip; a file from before --precision reads as fp32
    d = result(0, "tf32").to_dict()
    assert d["precision"] == "tf32" and Result.from_dict(d).precision == "tf32"
    del d["precision"]
    assert Result.from_dict(d).precision == "fp32"


def test_cudnn_benchmark_is_on_for_a_cuda_run_only():
    """A run on CUDA lets cuDNN pick its fastest convolution algorithm per shape (the papers'
    shapes are fixed); the caller's flag comes back, and a CPU run leaves it alone."""
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    try:
        for p in ("fp32", "tf32", "bf16"):
            with num_precision.using(p, "cuda:0"):
                assert torch.backends.cudnn.benchmark
            assert not torch.backends.cudnn.benchmark
        with num_precision.using("fp32", "cpu"):
            assert not torch.backends.cudnn.benchmark
    finally:
        torch.backends.cudnn.benchmark = before
