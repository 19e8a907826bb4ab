"""The experiments' own training steps neither read the device nor copy to it blocking.

The engine's loops read the device only at their sync points (tests/engine/test_trainer.py,
test_batched.py); the code an experiment runs inside each step (its batch source, its loss, a
model's regulariser, an attack's random start) must not add a sync point of its own.

No accelerator here: the meta device stands in for one (as in test_eval_on_device.py). What an
experiment keeps on its device is put on the meta device, and ``recording_syncs`` notes

* every read of a tensor that is not on the CPU (``item``, ``tolist``, ``float``, ``int``,
  ``bool``, ``numpy``, ``cpu``), answered with zeros where a number is asked (copying a meta
  tensor to the host raises);
* every ``Tensor.to`` that moves a tensor to another device without ``non_blocking=True``: on
  CUDA, from ordinary host memory, a copy the host waits for behind the queued kernels;
* every ``non_blocking`` copy from host memory that is not pinned: on CUDA such a copy is made
  synchronously all the same (the meta device stands for CUDA here: ``to_device`` pins what it
  sends there, with ``pin_memory`` and ``is_pinned`` answered by the recorder, as this host has
  no pinned memory);
* every index of a device tensor by a host tensor (``x[idx]``), which PyTorch copies to the
  device that way.

One step of each loop must record nothing. On the CPU the same code gives the numbers it gave
before (here the AnnealedVAE's regulariser; the smoke runs of every paper compare whole runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
import torch
from torch import Tensor

from paperzoo.engine import transfer
from paperzoo.engine.transfer import to_device

META = torch.device("meta")
_READS = ("item", "tolist", "__float__", "__int__", "__bool__", "numpy", "cpu")


def _target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device | None:
    dev = kwargs.get("device")
    for a in args:
        if isinstance(a, str | torch.device):
            dev = a
        elif isinstance(a, Tensor):
            dev = a.device
    return None if dev is None else torch.device(dev)


def _non_blocking(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    flags = [a for a in args if isinstance(a, bool)]  # to(device, dtype, non_blocking, copy)
    return bool(kwargs.get("non_blocking", flags[0] if flags else False))


@contextmanager
def recording_syncs() -> Iterator[list[str]]:
    """Record the device reads and blocking copies made inside the block (see the module)."""
    events: list[str] = []
    names = (*_READS, "to", "__getitem__", "pin_memory", "is_pinned")
    saved = {name: getattr(torch.Tensor, name) for name in names}
    pinned: list[Tensor] = []  # the host tensors "pinned" in the block (kept: ids stay unique)

    def reader(name: str) -> Any:
        original = saved[name]

        def read(self: Tensor, *args: Any, **kwargs: Any) -> Any:
            if self.device.type == "cpu":
                return original(self, *args, **kwargs)
            events.append(f"{name} of a {self.device.type} tensor")
            if name in ("cpu", "numpy"):
                return original(self, *args, **kwargs)  # a meta tensor's copy raises
            if name == "tolist":
                return saved["tolist"](torch.zeros(self.shape))
            return {"__bool__": False, "__int__": 0}.get(name, 0.0)

        return read

    def getitem(self: Tensor, index: Any) -> Any:
        parts = index if isinstance(index, tuple) else (index,)
        if self.device.type != "cpu" and any(
            isinstance(i, Tensor) and i.device.type == "cpu" for i in parts
        ):
            events.append(f"host index into a {self.device.type} tensor")
        return saved["__getitem__"](self, index)

    def is_pinned(self: Tensor) -> bool:
        return any(t is self for t in pinned)

    def pin_memory(self: Tensor) -> Tensor:
        copy = self.clone()
        pinned.append(copy)
        return copy

    def to(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        dev = _target(args, kwargs)
        if dev is not None and dev.type != self.device.type:
            if not _non_blocking(args, kwargs):
                events.append(f"blocking copy {self.device.type} -> {dev.type}")
            elif self.device.type == "cpu" and not is_pinned(self):
                events.append(f"unpinned copy cpu -> {dev.type}")
        return saved["to"](self, *args, **kwargs)

    for name in _READS:
        setattr(torch.Tensor, name, reader(name))
    torch.Tensor.to = to  # type: ignore[method-assign]
    torch.Tensor.__getitem__ = getitem  # type: ignore[method-assign]
    torch.Tensor.pin_memory = pin_memory  # type: ignore[method-assign]
    torch.Tensor.is_pinned = is_pinned  # type: ignore[method-assign]
    devices = transfer.PINNED_COPY_DEVICES
    transfer.PINNED_COPY_DEVICES = devices | {"meta"}  # meta stands for CUDA
    try:
        yield events
    finally:
        transfer.PINNED_COPY_DEVICES = devices
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)


def test_the_recorder_sees_a_blocking_copy_and_a_read() -> None:
    x = torch.zeros(3)
    with recording_syncs() as events:
        y = x.to(META)
        x.to(META, non_blocking=True)
        x.pin_memory().to(META, non_blocking=True)
        to_device(x, META)  # pins first
        x.to(torch.float64)  # no device: no copy between devices
        float(y.sum())
        y[torch.tensor([0, 2])]
        y[torch.tensor([0, 2], device=META)]
    assert events == [
        "blocking copy cpu -> meta",
        "unpinned copy cpu -> meta",
        "__float__ of a meta tensor",
        "host index into a meta tensor",
    ]


# -- the helper ------------------------------------------------------------------------------------


def test_to_device_on_the_cpu_is_tensor_to() -> None:
    x = torch.arange(4)
    assert to_device(x, "cpu") is x
    assert to_device(x, torch.device("cpu"), torch.float64).dtype == torch.float64
    with recording_syncs() as events:
        assert to_device(x, META, torch.float32).device == META
    assert not events


def test_to_device_pins_host_memory_and_copies_to_cuda_without_blocking(monkeypatch) -> None:
    """(No GPU here: the pinning and the copy are recorded, not made.)"""
    calls: list[tuple[str, Any]] = []
    pinned = {"state": False}
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: pinned["state"])

    def pin(self: Tensor) -> Tensor:
        calls.append(("pin_memory", None))
        return self

    def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        calls.append(("to", (args, kwargs)))
        return self

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    monkeypatch.setattr(torch.Tensor, "to", to)
    x = torch.zeros(2)
    to_device(x, "cuda", torch.float64)
    assert calls == [
        ("pin_memory", None),
        ("to", ((torch.device("cuda"), torch.float64), {"non_blocking": True})),
    ]
    calls.clear()
    pinned["state"] = True  # a loader's pinned batch: copied as it is
    to_device(x, "cuda:1")
    assert calls == [("to", ((torch.device("cuda:1"), None), {"non_blocking": True}))]


# -- the Trainer's batches -------------------------------------------------------------------------


def _trainer(steps: int = 2, device: str = "cpu") -> Any:
    from paperzoo.engine.trainer import TrainConfig, Trainer

    model = torch.nn.Linear(3, 1)
    return Trainer(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        lambda m, b: m(b[0]).pow(2).mean(),
        config=TrainConfig(steps=steps, batch_size=4, progress=False),
        device=device,
    )


def test_the_trainer_gathers_data_that_live_on_the_device_there() -> None:
    """Data tensors on the device: the step's indices go there without blocking and the batch
    is gathered there (before: a host index into device memory every step)."""
    trainer = _trainer()
    x, y = torch.arange(30.0).view(10, 3), torch.arange(10.0)
    with recording_syncs() as events:
        xb, yb = next(trainer._batches((x.to(META, non_blocking=True), y)))  # a mixed pair
    assert events == ["unpinned copy cpu -> meta"]  # the test's own copy of x, nothing else
    assert (xb.device, xb.shape, yb.device) == (META, (4, 3), torch.device("cpu"))
    # on the CPU the same batch as before
    xc, yc = next(_trainer()._batches((x, y)))
    idx = yc.long()
    assert torch.equal(xc, x[idx]) and len(set(idx.tolist())) == 4


def test_the_trainers_host_batches_reach_the_device_pinned_and_stay_put_on_the_cpu() -> None:
    from paperzoo.engine.transfer import batch_to_device

    batch = (torch.zeros(4, 3), {"y": torch.zeros(4)}, [torch.zeros(2)])
    with recording_syncs() as events:
        moved = batch_to_device(batch, META, channels_last=False)
    assert not events
    assert {moved[0].device, moved[1]["y"].device, moved[2][0].device} == {META}
    with recording_syncs() as events:
        same = batch_to_device(batch, torch.device("cpu"), channels_last=False)
    assert not events and same[0] is batch[0]  # no copy, no pinning on the CPU


def test_a_capped_step_on_cuda_records_its_synchronising_calls(monkeypatch) -> None:  # noqa: ANN001
    """Under --max-steps on CUDA the steps after the first run under
    ``torch.cuda.set_sync_debug_mode("warn")`` and every sync they make is recorded in the
    loop (results.json's estimate); the mode is restored after each step. (No GPU here: the
    mode is recorded, and a sync is a warning of the text CUDA gives.)"""
    import warnings

    from paperzoo.engine import budget

    modes = ["default"]
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda m: modes.append(str(m)))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: modes.append("reset"))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 3 * 2**29)
    node = budget.Loop("train", "steps", planned=10)
    clock = budget.StepClock(node, lambda: None, on_cuda=True)
    for step in range(3):
        with clock.step():
            if step > 0:
                warnings.warn("called a synchronizing CUDA operation", stacklevel=1)
        clock.done()
    clock.finish()
    assert modes == ["default", "reset", "warn", "0", "warn", "0"]  # not around the first step
    assert node.sync_checked == 2
    ((where, count),) = node.step_syncs.items()
    assert count == 2 and where.endswith(": called a synchronizing CUDA operation")
    assert __file__ in where
    d = node.to_dict()
    assert d["steps_checked_for_syncs"] == 2 and d["step_syncs"] == {where: 2}
    assert d["peak_gpu_memory_gib"] == 1.5  # the loop's peak GPU memory, recorded too
    # off CUDA nothing is watched and nothing recorded
    plain = budget.Loop("train", "steps", planned=10)
    clock = budget.StepClock(plain, lambda: None)
    for _ in range(2):
        with clock.step():
            pass
        clock.done()
    assert "step_syncs" not in plain.to_dict() and "peak_gpu_memory_gib" not in plain.to_dict()
    assert modes[-1] == "0"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_a_capped_trainer_records_a_sync_in_its_step() -> None:
    from paperzoo.engine import budget
    from paperzoo.engine.trainer import TrainConfig, Trainer

    def reading(m: torch.nn.Module, b: Any) -> Tensor:
        loss = m(b[0]).pow(2).mean()
        loss.item()  # a sync the step should not make
        return loss

    for loss_fn, syncs in ((lambda m, b: m(b[0]).pow(2).mean(), False), (reading, True)):
        model = torch.nn.Linear(3, 1)
        trainer = Trainer(
            model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn,
            config=TrainConfig(steps=10, batch_size=4, progress=False), device="cuda",
        )  # fmt: skip
        b = budget.StepBudget(3, "cuda")
        with budget.capped(b):
            trainer.fit((torch.rand(16, 3), torch.rand(16)))
        (loop,) = b.root.children
        assert loop.sync_checked == 2 and loop.peak_gpu_bytes > 0
        assert bool(loop.step_syncs) == syncs


# -- the experiments' steps ------------------------------------------------------------------------


def test_resnet_batch_source_neither_reads_nor_blocks() -> None:
    """The training set lives on the device; the step's indices and the crop/flip draws are
    made on the host and go there without blocking."""
    from paperzoo.papers.resnet.config import CONFIGS
    from paperzoo.papers.resnet.training import batches

    cfg = replace(CONFIGS["smoke"], batch_size=8, pad=4, flip=True)
    x = torch.zeros(20, 3, 8, 8, device=META)
    y = torch.zeros(20, dtype=torch.long, device=META)
    batch = batches(x, y, cfg, seed=0)
    with recording_syncs() as events:
        for step in range(3):
            xb, yb = batch(step, torch.Generator().manual_seed(step))
    assert not events
    assert (xb.device, xb.shape, yb.shape) == (META, (8, 3, 8, 8), (8,))


def _vae(method: str, **kw: Any) -> Any:
    from paperzoo.models.vae import VAE, VAEConfig

    torch.manual_seed(0)
    return VAE(config=VAEConfig(image_size=16), method=method, disc_width=8, **kw)


@pytest.mark.parametrize("method", ["beta_vae", "annealed_vae", "factor_vae", "dip_vae_ii"])
def test_a_vae_training_step_neither_reads_nor_blocks(method: str) -> None:
    from paperzoo.models.vae import make_optimizers, train_step

    model = _vae(method).to(META)
    vae_opt, disc_opt = make_optimizers(model)
    with recording_syncs() as events:
        terms = train_step(model, torch.zeros(4, 1, 16, 16, device=META), vae_opt, disc_opt)
    assert not events
    assert terms["loss"].device == META


def test_the_annealed_capacity_on_the_cpu_is_the_former_number() -> None:
    """C = min(c_max, c_max * step / threshold), from the step buffer on its device, gives the
    regulariser the Python float gave, bit for bit."""
    model = _vae("annealed_vae", gamma=100.0, c_max=25.0, iteration_threshold=7)
    out = model(torch.rand(4, 1, 16, 16))
    kl = torch.tensor(3.3, dtype=torch.float32)
    for step in (0, 1, 3, 6, 7, 8, 1000):
        model.step.fill_(step)
        c = min(25.0, 25.0 * float(step) / 7)
        assert torch.equal(model.regularizer(out, kl), 100.0 * (kl - c).abs())


def _disentanglement_env() -> tuple[Any, Any, Any]:
    from paperzoo.experiments import RunContext
    from paperzoo.papers.disentanglement import CONFIGS
    from paperzoo.papers.disentanglement.training import environment

    cfg = replace(CONFIGS["smoke"], wren_train_puzzles=0, wren_batch=4)  # fresh puzzles per step
    ctx = RunContext(scale="smoke", seed=0, device="meta", quiet=True)
    return cfg, ctx, environment(cfg, ctx, "dsprites")


def test_a_wren_step_on_a_vae_code_neither_reads_nor_blocks() -> None:
    """Fresh puzzles each step, rendered on the host, encoded by the VAE on the device: the
    codes stay there (before: a blocking copy of the panels and a copy of the codes back)."""
    from paperzoo.papers.disentanglement.training import _vae_representation, _wren_batches

    cfg, ctx, env = _disentanglement_env()
    model = _vae("beta_vae").to(META).eval()
    data = _wren_batches("beta_vae-s0", _vae_representation(model, on_host=False), cfg, ctx, env)
    with recording_syncs() as events:
        c, a, y = data(0, torch.Generator().manual_seed(0))
    assert not events
    assert (c.device, c.shape[:2], a.shape[:2], y.device) == (META, (4, 8), (4, 6), META)


def test_a_wren_step_on_a_host_code_copies_without_blocking() -> None:
    from paperzoo.papers.disentanglement.config import RANDOM_ID
    from paperzoo.papers.disentanglement.training import _random_code, _wren_batches

    cfg, ctx, env = _disentanglement_env()
    data = _wren_batches(RANDOM_ID, _random_code(10, 0), cfg, ctx, env)
    with recording_syncs() as events:
        c, _, y = data(0, torch.Generator().manual_seed(0))
    assert not events and c.device == y.device == META


def test_the_vae_batch_source_goes_to_the_device_without_blocking() -> None:
    from paperzoo.papers.disentanglement.training import _vae_batches

    cfg, ctx, env = _disentanglement_env()
    batch = _vae_batches(env, cfg, ctx.device)
    with recording_syncs() as events:
        (x,) = batch(0, torch.Generator().manual_seed(0))
    assert not events
    assert (x.device, len(x)) == (META, cfg.vae_batch)


def test_a_ggnn_batch_goes_to_the_device_without_blocking() -> None:
    from paperzoo.papers.ggnn.training import batch_on_device

    b = {"x": torch.zeros(6, 4), "edge_index": torch.zeros(2, 5, dtype=torch.long)}
    with recording_syncs() as events:
        out = batch_on_device(b, META, torch.float64)
    assert not events
    assert out["x"].dtype == torch.float64 and out["edge_index"].dtype == torch.long
    assert {t.device for t in out.values()} == {META}


def test_ggnn_node_selection_takes_the_largest_graph_from_the_host() -> None:
    """The padded (graph, node) scores of a step: the graphs' sizes are known on the host
    (``batch_on_device`` leaves ``num_nodes`` there), so nothing is read back (before: a
    ``bincount`` sized from the device's data and ``int(counts.max())`` every step)."""
    from paperzoo.models.ggnn import node_selection_logits
    from paperzoo.papers.ggnn.training import _max_nodes, batch_on_device

    host = {
        "batch": torch.tensor([0, 0, 0, 1, 1, 2]),
        "num_nodes": torch.tensor([3, 2, 1]),
        "y": torch.zeros(3, 1, dtype=torch.long),
    }
    scores = torch.arange(6.0)
    with recording_syncs() as events:
        b = batch_on_device(host, META, torch.float32)
        assert b["num_nodes"] is host["num_nodes"] and b["batch"].device == META
        logp = node_selection_logits(to_device(scores, META), b["batch"], 3, _max_nodes(b))
    assert not events and (logp.device, logp.shape) == (META, (3, 3))
    # on the CPU the same numbers as without the size
    expected = node_selection_logits(scores, host["batch"], 3)
    assert torch.equal(node_selection_logits(scores, host["batch"], 3, 3), expected)


def test_ggnn_sequence_baselines_take_their_lengths_from_the_host() -> None:
    """The stacked RNN / LSTM baselines' step: the loop's length and the steps at which every
    sequence still reads come from the lengths in host memory, not from the device."""
    from paperzoo.models.ggnn import SequenceBaseline, StackedSequenceBaseline

    torch.manual_seed(0)
    models = [SequenceBaseline(vocab_size=7, num_classes=3, cell="lstm") for _ in range(2)]
    stacked = StackedSequenceBaseline(models=models)
    tokens = torch.randint(3, 7, (2, 4, 5))
    lengths = torch.tensor([[5, 3, 2, 5], [1, 5, 4, 2]])
    before = stacked(tokens, lengths, num_outputs=2)
    assert torch.equal(stacked(tokens, lengths, num_outputs=2, host_lengths=lengths), before)
    meta = stacked.to(META)
    with recording_syncs() as events:
        t, n = to_device(tokens, META), to_device(lengths, META)
        out = meta(t, n, num_outputs=2, host_lengths=lengths)
    assert not events and (out.device, out.shape) == (META, (2, 4, 2, 3))
    # without them: read from the device (a meta tensor's copy to the host raises)
    with recording_syncs() as events, pytest.raises(NotImplementedError):
        meta(t, n, num_outputs=2)
    assert events == ["cpu of a meta tensor"]


def test_an_attacks_random_start_drawn_on_the_host_does_not_block() -> None:
    """PGD's random start drawn by a CPU generator for a batch on the device (adversarial
    training calls it every step)."""
    from paperzoo.adversarial.attacks import random_in_ball

    like = torch.zeros(3, 1, 4, 4, device=META)
    for norm in ("linf", "l2"):
        with recording_syncs() as events:
            delta = random_in_ball(like, 0.3, norm, torch.Generator().manual_seed(0))
        assert not events and delta.device == META


def test_the_perceiver_experiments_permutation_is_applied_on_the_device() -> None:
    """The permuted models' ``prepare`` runs in every training step: the fixed permutation is
    copied to the images' device once, not indexed from the host each step."""
    from paperzoo.papers.perceiver import CONFIGS as PERCEIVER
    from paperzoo.papers.perceiver.training import build_models

    perm = torch.randperm(16, generator=torch.Generator().manual_seed(0))
    cands = build_models(
        PERCEIVER["smoke"], image_shape=(1, 4, 4), num_classes=3, perm=perm, seed=0
    )
    x = torch.arange(32.0).view(2, 1, 4, 4)
    with recording_syncs() as events:
        for key in ("perceiver_permuted", "convnet_permuted"):
            for _ in range(2):  # two steps
                assert cands[key].prepare(to_device(x, META)).device == META
    assert not events
    expected = x.flatten(2)[:, :, perm]  # on the CPU: the permutation as before
    assert torch.equal(cands["convnet_permuted"].prepare(x).flatten(2), expected)


def test_the_coordconv_regressor_step_does_not_read_its_input_back() -> None:
    """On the CPU ``maps`` picks its fused path by looking at the image frame; on a device it
    takes the layer-by-layer path without reading the frame back."""
    from paperzoo.models.coordconv import CoordConvRegressor

    torch.manual_seed(0)
    model = CoordConvRegressor()
    x = torch.zeros(2, 1, 16, 16)
    x[:, 0, 8, 8] = 1.0
    cpu = model(x)
    meta = model.to(META)
    with recording_syncs() as events:
        assert meta(to_device(x, META)).shape == cpu.shape
    assert not events


def test_a_ggnn_steps_plan_is_built_on_the_host_and_moved_without_blocking() -> None:
    """The propagation plan of a step's batch (CSR matrices of its edges) is built from the host
    batch and moved like the batch: built from the device batch, its index arithmetic (on the
    host) reads the edges back every step."""
    from paperzoo.models.ggnn import GatedGraphNet, StackedGatedGraphNet
    from paperzoo.papers.ggnn.training import plan_on_device

    torch.manual_seed(0)
    net = GatedGraphNet(state_dim=4, annotation_dim=1, num_edge_types=1, num_steps=2)
    stacked = StackedGatedGraphNet(models=[net, net])
    edge_index = torch.tensor([[0, 1, 3, 4], [1, 2, 4, 5]])  # two models' graphs, 3 nodes each
    edge_type = torch.zeros(4, dtype=torch.long)
    plan = stacked.plan(edge_index, edge_type, 6)
    assert plan_on_device(plan, "cpu") is plan  # on the CPU: the plan itself
    with recording_syncs() as events:
        moved = plan_on_device(plan, META)
    assert not events
    assert moved.adj.device == moved.adj_t.device == moved.degree.device == META
    assert moved.adj.shape == plan.adj.shape and moved.adj.layout == torch.sparse_csr
    # what the step did before: the plan from the device batch reads the device
    with recording_syncs() as events, pytest.raises(NotImplementedError):
        stacked.plan(edge_index.to(META, non_blocking=True), edge_type.to(META), 6)
    assert any(e.endswith("of a meta tensor") for e in events)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_steps_make_no_synchronising_call() -> None:
    """The same steps on a GPU under ``torch.cuda.set_sync_debug_mode("error")``, which raises
    on every call that makes the host wait for the device (each step runs once before, outside
    the check, so that one-time set-up is not counted)."""
    from paperzoo.adversarial.attacks import random_in_ball
    from paperzoo.models.vae import make_optimizers, train_step
    from paperzoo.papers.resnet.config import CONFIGS
    from paperzoo.papers.resnet.training import batches

    cuda = torch.device("cuda")
    cfg = replace(CONFIGS["smoke"], batch_size=8, pad=4, flip=True)
    x, y = torch.rand(20, 3, 8, 8, device=cuda), torch.zeros(20, dtype=torch.long, device=cuda)
    resnet_batch = batches(x, y, cfg, seed=0)
    vae = _vae("annealed_vae").to(cuda)
    vae_opt, _ = make_optimizers(vae)
    images = torch.rand(4, 1, 16, 16)
    like = torch.zeros(3, 1, 4, 4, device=cuda)
    steps = [
        lambda: resnet_batch(0, torch.Generator().manual_seed(0)),
        lambda: train_step(vae, to_device(images, cuda), vae_opt),
        lambda: random_in_ball(like, 0.3, "linf", torch.Generator().manual_seed(0)),
    ]
    for step in steps:
        step()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for step in steps:
            step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_a_wren_steps_panels_made_from_the_archive_neither_read_nor_block() -> None:
    """Abstract dSprites from the archive (the full config's data): the panels are gathered,
    unpacked and coloured on the device from the rows the host sends over without blocking."""
    import numpy as np

    from paperzoo.data.abstract_reasoning import render_pgms, sample_pgms
    from paperzoo.data.dsprites import FACTOR_SIZES, AbstractDSprites, DSpritesNPZ
    from paperzoo.data.ground_truth import Quantized
    from paperzoo.papers.disentanglement.config import PGM_SIZES

    unread = np.empty((int(np.prod(FACTOR_SIZES)), 64, 8), dtype=np.uint8)  # never read on meta
    data = Quantized(
        AbstractDSprites(DSpritesNPZ.from_packed(unread)), PGM_SIZES["abstract-dsprites"]
    )
    rng = np.random.default_rng(0)
    pgms = sample_pgms(data.factor_sizes, 4, rng)
    render_pgms(data, pgms, rng, META)  # the archive's first copy to the device, once
    with recording_syncs() as events:
        context, answers = render_pgms(data, pgms, rng, META)
    assert not events
    assert context.shape == (4, 8, 3, 64, 64) and answers.device == META
