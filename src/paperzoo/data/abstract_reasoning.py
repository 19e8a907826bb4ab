"""Procedurally generated matrices (PGMs) over any ground-truth data set (van Steenkiste et al. 2019).

A puzzle is a 3 x 3 grid of panels (observations). 1, 2 or 3 *active* factors are constant along
each row (each row its own value); every other factor is random, with the constraint that its
first two rows are neither both constant nor both all-distinct (so no spurious rule appears). The
bottom-right panel is hidden; the solver sees the 8 context panels and 6 candidates: the true
panel and 5 wrong answers. A wrong answer is the bottom-right panel of a freshly sampled puzzle
(new active factors, new values) that violates the puzzle's rule -- the study's "easy" answers;
since the last panel of a fresh puzzle is uniform over the factor grid, we draw it directly. Wrong
answers are distinct from each other (disentanglement_lib's duplicate check is a no-op; we make it
effective), so every puzzle has exactly one candidate consistent with its rules.

The number of active factors is drawn from ``relations`` = (P(1), P(2), P(3)) (the study's
"mixed" puzzles: 1/3 each). Data sets are usually quantized first (``data.ground_truth.Quantized``),
as in the study: abstract dSprites to (5, 6, 3, 3, 4, 4) values and 3dshapes to (10, 10, 10, 4, 4, 4).

Everything is vectorised over puzzles; sampling is a function of a ``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.ground_truth import GroundTruthData

NUM_ROWS = NUM_COLS = 3
NUM_CONTEXT = NUM_ROWS * NUM_COLS - 1  # 8 context panels
NUM_ANSWERS = 6  # candidates (1 correct + 5 wrong)


@dataclass(frozen=True)
class PGMs:
    """A batch of puzzles in factor space.

    Shapes:
        matrix (P, 3, 3, F): the full solution grid (bottom-right = the correct answer).
        active (P, F) bool: the factors constant along rows.
        answers (P, 6, F): the candidates, the correct one at ``target``.
        target (P,) int64: index of the correct candidate.
    """

    matrix: np.ndarray
    active: np.ndarray
    answers: np.ndarray
    target: np.ndarray

    def __len__(self) -> int:
        return len(self.target)

    @property
    def context(self) -> np.ndarray:
        """The 8 visible panels, row-major. (P, 8, F)."""
        p, _, _, f = self.matrix.shape
        return self.matrix.reshape(p, NUM_ROWS * NUM_COLS, f)[:, :NUM_CONTEXT]

    def __getitem__(self, idx: slice | np.ndarray) -> PGMs:
        return PGMs(self.matrix[idx], self.active[idx], self.answers[idx], self.target[idx])


def _bad_inactive_rows(rows: np.ndarray) -> np.ndarray:
    """Whether the first two rows are both constant or both all-distinct. (..., 3, 3) -> (...)."""
    first_two = rows[..., :2, :]  # (..., 2, 3)
    a, b, c = first_two[..., 0], first_two[..., 1], first_two[..., 2]
    constant = (a == b) & (b == c)
    distinct = (a != b) & (b != c) & (a != c)
    return constant.all(axis=-1) | distinct.all(axis=-1)


def consistent(matrix: np.ndarray, active: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Which candidates complete the grid consistently with the puzzle's rules.

    A candidate is consistent iff every active factor is constant along the last row once the
    candidate fills the bottom-right panel (inactive factors impose no constraint on it).

    Shapes:
        matrix (P, 3, 3, F), active (P, F), answers (P, K, F) -> (P, K) bool
    """
    last_row = matrix[:, -1, 0, :]  # (P, F): the active factors' value in the last row
    row_ok = (matrix[:, -1, 0, :] == matrix[:, -1, 1, :])[:, None, :] & (
        answers == last_row[:, None, :]
    )
    return np.where(active[:, None, :], row_ok, True).all(axis=-1)


def sample_pgms(
    factor_sizes: Sequence[int],
    n: int,
    rng: np.random.Generator,
    *,
    relations: Sequence[float] = (1 / 3, 1 / 3, 1 / 3),
) -> PGMs:
    """``n`` puzzles over factors with ``factor_sizes`` values each (every size >= 3)."""
    sizes = np.asarray(factor_sizes, dtype=np.int64)
    f = len(sizes)
    if (sizes < NUM_COLS).any():
        raise ValueError(f"every factor needs at least {NUM_COLS} values, got {list(sizes)}")
    probs = np.asarray(relations, dtype=np.float64)
    if len(probs) > f or not np.isclose(probs.sum(), 1.0):
        raise ValueError(
            f"relations must be probabilities of 1..{f} active factors, got {list(relations)}"
        )
    num_active = 1 + rng.choice(len(probs), size=n, p=probs)  # (n,)
    rank = np.argsort(rng.random((n, f)), axis=1).argsort(axis=1)  # a random permutation per puzzle
    active = rank < num_active[:, None]  # (n, F)

    # Active factors: one value per row, repeated along the row.
    row_values = rng.integers(0, sizes, size=(n, NUM_ROWS, f))
    const = np.repeat(row_values[:, :, None, :], NUM_COLS, axis=2)  # (n, 3, 3, F)
    # Inactive factors: uniform, resampled until the first two rows show no rule.
    rand = rng.integers(0, sizes, size=(n, NUM_ROWS, NUM_COLS, f))
    while True:
        bad = _bad_inactive_rows(np.moveaxis(rand, -1, 1)) & ~active  # (n, F)
        if not bad.any():
            break
        p_idx, f_idx = np.nonzero(bad)
        rand[p_idx, :, :, f_idx] = rng.integers(
            0, sizes[f_idx][:, None, None], size=(len(p_idx), NUM_ROWS, NUM_COLS)
        )
    matrix = np.where(active[:, None, None, :], const, rand)

    # Wrong answers: uniform panels that break the rule and differ from each other.
    correct = matrix[:, -1, -1, :]  # (n, F)
    wrong = np.empty((n, NUM_ANSWERS - 1, f), dtype=np.int64)
    for k in range(NUM_ANSWERS - 1):
        todo = np.arange(n)
        while len(todo):
            cand = rng.integers(0, sizes, size=(len(todo), f))
            breaks_rule = ((cand != correct[todo]) & active[todo]).any(axis=1)
            fresh = ~(cand[:, None, :] == wrong[todo, :k, :]).all(axis=2).any(axis=1)
            ok = breaks_rule & fresh
            wrong[todo[ok], k] = cand[ok]
            todo = todo[~ok]
    target = rng.integers(0, NUM_ANSWERS, size=n)
    answers = np.empty((n, NUM_ANSWERS, f), dtype=np.int64)
    slot = np.arange(NUM_ANSWERS)[None, :]
    wrong_slot = slot - (slot > target[:, None])  # candidates after the target shift by one
    answers[:] = np.take_along_axis(
        wrong, np.clip(wrong_slot, 0, NUM_ANSWERS - 2)[:, :, None], axis=1
    )
    answers[np.arange(n), target] = correct
    return PGMs(matrix, active, answers, target)


def render_pgms(
    data: GroundTruthData,
    pgms: PGMs,
    rng: np.random.Generator,
    device: str | torch.device | None = None,
) -> tuple[Tensor, Tensor]:
    """Images of the context and candidate panels, rendered on the host, or made on ``device``
    (``GroundTruthData.observations_on``: the same images from the same draws of ``rng``).

    Returns:
        context (P, 8, C, H, W), answers (P, 6, C, H, W).
    """
    p, f = len(pgms), pgms.answers.shape[-1]
    panels = np.concatenate([pgms.context, pgms.answers], axis=1).reshape(-1, f)  # (P * 14, F)
    if device is None:
        obs = data.sample_observations_from_factors(panels, rng)
    else:
        obs = data.observations_on(panels, rng, device)
    obs = obs.view(p, NUM_CONTEXT + NUM_ANSWERS, *obs.shape[1:])
    return obs[:, :NUM_CONTEXT], obs[:, NUM_CONTEXT:]


def range_embed(factors: np.ndarray, factor_sizes: Sequence[int]) -> np.ndarray:
    """Factor values mapped linearly to [-0.5, 0.5] (the study's "values" embedding). (..., F)."""
    sizes = np.asarray(factor_sizes, dtype=np.float64)
    return factors / (sizes - 1.0) - 0.5
