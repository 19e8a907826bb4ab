"""engine.batched: K models trained as one stacked model follow the trajectories they follow
alone (own initialisation, data, batch order, Adam state, clamping, selection)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from paperzoo.engine import TrainConfig, Trainer, budget
from paperzoo.engine.batched import BatchedKeeper, fit_batched, model_samplers

K, D = 3, 4


def _data(k: int) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(100 + k)
    n = 13 + 4 * k  # different sizes: last batches of an epoch differ in size
    x = torch.randn(n, D, generator=g)
    y = x @ torch.randn(D, generator=g) + 0.1 * torch.randn(n, generator=g)
    return x, y


def _init(k: int) -> Tensor:
    return torch.randn(D, generator=torch.Generator().manual_seed(k)) * 3


class _Stacked(nn.Module):
    def __init__(self, w: Tensor) -> None:
        super().__init__()
        self.w = nn.Parameter(w.clone())  # (K, D)


class _One(nn.Module):
    def __init__(self, w: Tensor) -> None:
        super().__init__()
        self.w = nn.Parameter(w.clone())  # (D,)


def _val(k: int) -> tuple[Tensor, Tensor]:
    x, y = _data(k + 10)
    return x[:8], y[:8]


def _val_metrics(w: Tensor, k: int) -> tuple[float, float]:
    x, y = _val(k)
    err = (x @ w - y).abs()
    return float((err < 0.5).float().mean()), float(err.pow(2).mean())


def _alone(k: int, steps: int, eval_every: int) -> tuple[list[float], list[dict], _One]:
    """Model k alone, with ``Trainer`` (manual step: Adam, clamp to [-1, 1])."""
    model = _One(_init(k))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses: list[float] = []
    best: dict = {"score": (-1.0, 0.0), "w": None}

    def step(m: nn.Module, b: tuple[Tensor, Tensor]) -> dict[str, Tensor]:
        x, y = b
        loss = (x @ m.w - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        m.w.grad.clamp_(-1.0, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        return {"loss": loss.detach()}

    def keep(m: nn.Module) -> dict[str, float]:
        acc, loss = _val_metrics(m.w.detach(), k)
        if (acc, -loss) > best["score"]:
            best["score"], best["w"] = (acc, -loss), m.w.detach().clone()
        return {"val_acc": acc, "val_loss": loss}

    trainer = Trainer(
        model,
        None,
        step,
        config=TrainConfig(steps=steps, batch_size=5, seed=1000 + k, eval_every=eval_every),
        eval_fn=keep,
        manual=True,
    )
    history = trainer.fit(_data(k))
    return losses, [r for r in history.records if "val_acc" in r], best["w"]


def _batched(
    steps: int, eval_every: int, out_dir: Path | None = None, fail_at: int | None = None, **kw
):
    data = [_data(k) for k in range(K)]
    model = _Stacked(torch.stack([_init(k) for k in range(K)]))
    samplers = model_samplers([len(d[0]) for d in data], [5] * K, [1000 + k for k in range(K)])
    seen: list[Tensor] = []

    def loss_fn(m: nn.Module, step: int) -> Tensor:
        if step == fail_at:
            raise RuntimeError("stopped")
        out = []
        for k, (x, y) in enumerate(data):
            i = samplers[k].indices(step)
            out.append((x[i] @ m.w[k] - y[i]).pow(2).mean())
        losses = torch.stack(out)
        seen.append(losses.detach())
        return losses

    def evaluate(m: nn.Module) -> tuple[list[float], list[float]]:
        res = [_val_metrics(m.w[k].detach(), k) for k in range(K)]
        return [a for a, _ in res], [lo for _, lo in res]

    keeper = BatchedKeeper(K)
    hist = fit_batched(
        model,
        loss_fn,
        torch.optim.Adam(model.parameters(), lr=0.05),
        steps=steps,
        evaluate=evaluate,
        eval_every=eval_every,
        keeper=keeper,
        clamp=1.0,
        out_dir=out_dir,
        **kw,
    )
    return seen, hist, model, keeper


def test_each_model_follows_its_trajectory_alone() -> None:
    steps, every = 23, 4
    seen, hist, model, keeper = _batched(steps, every)
    assert len(seen) == steps
    for k in range(K):
        losses, evals, best_w = _alone(k, steps, every)
        torch.testing.assert_close(torch.stack(seen)[:, k], torch.tensor(losses))
        assert [h["step"] for h in hist] == [e["step"] for e in evals]
        # mean_loss: model k's mean loss over the updates since the previous record.
        bounds = [0] + [h["step"] for h in hist]
        means = [sum(losses[a:b]) / (b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
        assert [h["mean_loss"][k] for h in hist] == pytest.approx(means, rel=1e-6)
        assert [h["val_loss"][k] for h in hist] == pytest.approx(
            [e["val_loss"] for e in evals], rel=1e-5
        )
        # The selected parameters are model k's best on its own validation data.
        torch.testing.assert_close(model.w[k].detach(), best_w)
        assert keeper.best[k][0] == max(e["val_acc"] for e in evals)


def test_models_are_independent() -> None:
    """Changing one model's data changes no other model's trajectory."""
    a, _, _, _ = _batched(9, 3)
    global _data
    orig = _data

    def other(k: int) -> tuple[Tensor, Tensor]:
        x, y = orig(k)
        return (x, y + 5.0) if k == 1 else (x, y)

    _data = other
    try:
        b, _, _, _ = _batched(9, 3)
    finally:
        _data = orig
    sa, sb = torch.stack(a), torch.stack(b)
    assert torch.equal(sa[:, [0, 2]], sb[:, [0, 2]])
    assert not torch.allclose(sa[:, 1], sb[:, 1])


def test_a_finished_run_is_loaded_not_trained_again(tmp_path: Path) -> None:
    seen, hist, model, _ = _batched(10, 5, out_dir=tmp_path)
    assert (tmp_path / "metrics.jsonl").is_file()
    seen2, hist2, model2, _ = _batched(10, 5, out_dir=tmp_path)
    assert seen2 == [] and hist2 == hist
    torch.testing.assert_close(model2.w, model.w)


def test_resume_continues_the_same_trajectory(tmp_path: Path) -> None:
    full, hist, model, _ = _batched(12, 4)
    # Stopped at step 7 (a checkpoint after every step), then run again from the checkpoint.
    with pytest.raises(RuntimeError, match="stopped"):
        _batched(12, 4, out_dir=tmp_path, fail_at=7, checkpoint_seconds=1e-9)
    rest, hist2, resumed, _ = _batched(12, 4, out_dir=tmp_path)
    assert len(rest) == 5
    torch.testing.assert_close(torch.stack(rest), torch.stack(full)[7:])
    assert hist2 == hist
    torch.testing.assert_close(resumed.w, model.w)


def test_under_a_step_budget_the_group_is_one_timed_loop() -> None:
    b = budget.StepBudget(2)
    with budget.capped(b):
        seen, _, _, _ = _batched(50, 10)
    assert len(seen) == 2
    (loop,) = b.root.children
    assert (loop.kind, loop.planned, loop.run) == ("steps", 50, 2)
    assert loop.extra_seconds >= 0.0 and loop.estimate() is not None


def test_a_non_finite_loss_names_its_step_without_a_read_per_step(monkeypatch) -> None:  # noqa: ANN001
    """Model 1's loss turns NaN at update 3 of 8: the loop raises naming that update, having read
    the device only at its one sync point (the end: no validation, no checkpoint here)."""
    model = _Stacked(torch.stack([_init(k) for k in range(K)]))

    def loss_fn(m: nn.Module, step: int) -> Tensor:
        losses = m.w.pow(2).sum(1)
        if step == 2:  # the third update
            losses = losses * torch.tensor([1.0, float("nan"), 1.0])
        return losses

    reads: list[str] = []
    for name in ("__bool__", "item", "tolist", "__int__"):
        real = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor,
            name,
            lambda self, *a, _n=name, _r=real: (reads.append(_n), _r(self, *a))[1],
        )
    with pytest.raises(FloatingPointError, match="non-finite loss at step 3"):
        fit_batched(
            model,
            loss_fn,
            torch.optim.SGD(model.parameters(), lr=0.01),
            steps=8,
            evaluate=None,
            eval_every=0,
            keeper=BatchedKeeper(K),
        )
    assert reads == ["__int__"]
