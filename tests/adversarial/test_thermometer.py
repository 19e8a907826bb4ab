"""Thermometer encoding and its BPDA ramp against hand-computed values, and BPDA breaking a trained
thermometer-defended classifier that naive PGD cannot touch.

Athalye et al. (2018), Sec. 5.2.1, after Buckman et al. (2018): with l levels,

    tau(x)_k = 1[x > k / l],   tau_hat(x)_k = min(max(x - k / l, 0) * l, 1).

The paper's example, tau(0.66) = 1111110000 for l = 10, counts k = 1..l; ``ThermometerEncoding``
counts k = 0..l-1, so its channels 1..l-1 are the paper's channels 1..l-1, its channel 0 is
1[x > 0], and the paper's channel l (1[x > 1], always 0 on [0, 1]) is left out.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from paperzoo.adversarial.attacks import BPDA, PGD, bpda
from paperzoo.adversarial.defenses import InputTransformDefense, ThermometerEncoding
from paperzoo.data import load_dataset
from paperzoo.engine import seeded


def _column(values: list[float]) -> torch.Tensor:
    return torch.tensor(values).view(-1, 1, 1, 1)  # (B, C=1, 1, 1)


def test_thermometer_code_and_ramp_match_the_formula_by_hand() -> None:
    therm = ThermometerEncoding(levels=4)  # thresholds k / 4 = 0, 0.25, 0.5, 0.75
    x = _column([0.0, 0.1, 0.25, 0.3, 0.6, 1.0])
    code = [
        [0, 0, 0, 0],  # 0 > 0 is false
        [1, 0, 0, 0],
        [1, 0, 0, 0],  # 0.25 > 0.25 is false
        [1, 1, 0, 0],
        [1, 1, 1, 0],
        [1, 1, 1, 1],
    ]
    ramp = [  # min(max(x - k/4, 0) * 4, 1)
        [0, 0, 0, 0],
        [0.4, 0, 0, 0],
        [1, 0, 0, 0],
        [1, 0.2, 0, 0],
        [1, 1, 0.4, 0],
        [1, 1, 1, 1],
    ]
    torch.testing.assert_close(therm(x).view(6, 4), torch.tensor(code, dtype=torch.float32))
    torch.testing.assert_close(therm.bpda_approx(x).view(6, 4), torch.tensor(ramp))
    # On the grid j / l the ramp equals the code (Athalye et al.: tau_hat agrees with tau there).
    grid = _column([j / 4 for j in range(5)])
    torch.testing.assert_close(therm.bpda_approx(grid), therm(grid))


def test_thermometer_matches_the_papers_ten_level_example() -> None:
    therm = ThermometerEncoding(levels=10)
    x = _column([0.66])
    paper_code = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]  # tau(0.66) = 1111110000, k = 1..10
    paper_ramp = [1, 1, 1, 1, 1, 0.6, 0, 0, 0, 0]  # min(max(0.66 - k/10, 0) * 10, 1), k = 1..10
    ours_code, ours_ramp = therm(x).flatten(), therm.bpda_approx(x).flatten()
    torch.testing.assert_close(ours_code[1:], torch.tensor(paper_code[:-1], dtype=torch.float32))
    torch.testing.assert_close(ours_ramp[1:], torch.tensor(paper_ramp[:-1]))
    assert ours_code[0] == 1 and ours_ramp[0] == 1  # channel 0: 1[x > 0]


def test_bpda_backward_is_the_ramps_slope() -> None:
    """d tau_hat_k / dx = l on (k/l, (k+1)/l), else 0; backward = sum_k upstream_k * slope_k."""
    therm = ThermometerEncoding(levels=4)
    x = _column([0.1, 0.3, 0.6, 0.9]).requires_grad_(True)
    upstream = torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 4, 1, 1)
    out = bpda(x, therm, therm.bpda_approx)
    torch.testing.assert_close(out, therm(x.detach()))  # the forward pass is exact
    (out * upstream).sum().backward()
    # Active ramp: k = 0, 1, 2, 3 respectively, slope 4, upstream k + 1.
    torch.testing.assert_close(x.grad.flatten(), torch.tensor([4.0, 8.0, 12.0, 16.0]))


def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def test_bpda_breaks_a_trained_thermometer_defence_that_naive_pgd_cannot() -> None:
    """400 of scikit-learn's 8x8 digits, an MLP on the 16-level code; l_inf eps 0.2 (~4 s)."""
    split = load_dataset("digits")
    x, y = split.x_train[:400], split.y_train[:400]
    x_test, y_test = split.x_test[:100], split.y_test[:100]
    levels = 16
    with seeded(0):
        clf = nn.Sequential(nn.Flatten(), nn.Linear(levels * 64, 64), nn.ReLU(), nn.Linear(64, 10))
    model = InputTransformDefense(transform=ThermometerEncoding(levels=levels), classifier=clf)
    opt = torch.optim.Adam(clf.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(150):
        idx = torch.randint(0, len(x), (64,), generator=g)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()

    def pgd() -> PGD:
        return PGD(
            model, eps=0.2, alpha=0.025, steps=20, generator=torch.Generator().manual_seed(0)
        )

    clean = _accuracy(model, x_test, y_test)
    _, g_naive = pgd().loss_and_grad(x_test, y_test)
    naive = _accuracy(model, pgd()(x_test, y_test), y_test)
    x_bpda = BPDA(pgd())(x_test, y_test)
    adaptive = _accuracy(model, x_bpda, y_test)
    assert clean >= 0.9
    assert torch.count_nonzero(g_naive) == 0  # shattered: the naive attacker sees no gradient
    assert naive >= 0.8  # looks robust (measured 0.93-0.95 over four training seeds)
    assert adaptive <= 0.1  # BPDA with the ramp: measured 0.00-0.01
    assert (x_bpda - x_test).abs().max() <= 0.2 + 1e-6
