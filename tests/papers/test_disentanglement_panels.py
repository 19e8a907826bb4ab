"""The disentanglement study's WReN steps fed from the device train exactly as from the host."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from paperzoo.data.abstract_reasoning import render_pgms
from paperzoo.engine import seeded
from paperzoo.experiments import RunContext
from paperzoo.models.vae import VAE, VAEConfig
from paperzoo.papers.disentanglement import CONFIGS, training


def _host_render(data, pgms, rng, device=None):
    """``render_pgms`` as the study called it before: panels rendered on the host."""
    return render_pgms(data, pgms, rng)


def test_wren_fed_from_the_device_equals_the_host_path(
    smoke_ctx: RunContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The smoke config with fresh puzzles every step (the full config's feed): the panels'
    codes and the WReN's recorded accuracies are equal, exactly (the same images reach the same
    encoder in the same batches, so nothing is reduced in another order)."""
    cfg = replace(CONFIGS["smoke"], wren_train_puzzles=None)
    env = training.environment(cfg, smoke_ctx, "abstract-dsprites")
    with seeded(0):
        vae = VAE(config=VAEConfig(in_channels=3, image_size=cfg.image_size), method="beta_vae")
    vae.eval()
    rep = training._vae_representation(vae, on_host=False)

    def run(out: str) -> tuple[tuple[torch.Tensor, torch.Tensor], dict]:
        codes = training.panel_codes("vae", rep, env, env.test_pgms, smoke_ctx, "test")
        return codes, training.train_wren("vae", rep, cfg, smoke_ctx, env, tmp_path / out)

    codes, record = run("device")
    monkeypatch.setattr(training, "render_pgms", _host_render)
    host_codes, host_record = run("host")
    assert all(torch.equal(a, b) for a, b in zip(codes, host_codes, strict=True))
    assert record == host_record and record["test_acc"]
