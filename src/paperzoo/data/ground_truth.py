"""Ground-truth data: data sets generated from known, independent, discrete factors of variation.

The interface of disentanglement_lib (Locatello et al., 2019), used by every disentanglement metric
and by the abstract-reasoning puzzles (van Steenkiste et al., 2019): a data set has
``num_factors`` factors, factor ``i`` takes ``factor_sizes[i]`` integer values, factors are drawn
uniformly and independently (``sample_factors``), and an observation is rendered from factors
(``sample_observations_from_factors``; the renderer may use extra randomness, e.g. a nuisance
factor that is not part of the ground truth). ``observations_on`` makes the same observations on
a device (abstract dSprites from the archive renders them there: only factor indices leave the
host).

Randomness always comes from an explicit ``numpy.random.Generator``; observations are float32
tensors in [0, 1] of shape (N, C, H, W).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.base import DataInfo, Split
from paperzoo.engine.transfer import to_device
from paperzoo.registry import Registry


class GroundTruthData(ABC):
    """A data set that is a two-step generative model: factors, then an observation.

    Subclasses set ``name``, ``factor_names`` and ``factor_sizes`` and implement
    ``sample_observations_from_factors``.
    """

    name: str = "ground-truth"
    source: str = "generated"  # "generated" or the file the images come from
    factor_names: tuple[str, ...] = ()
    factor_sizes: tuple[int, ...] = ()
    observation_shape: tuple[int, int, int] = (1, 64, 64)  # (C, H, W)

    @property
    def num_factors(self) -> int:
        return len(self.factor_sizes)

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` factor vectors drawn uniformly and independently. -> (n, num_factors) int64."""
        sizes = np.asarray(self.factor_sizes, dtype=np.int64)
        return rng.integers(0, sizes, size=(n, len(sizes)), dtype=np.int64)

    @abstractmethod
    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        """Render one observation per factor vector. (n, num_factors) -> (n, C, H, W) float32."""

    def observations_on(
        self, factors: np.ndarray, rng: np.random.Generator, device: str | torch.device
    ) -> Tensor:
        """``sample_observations_from_factors`` on ``device``: the same values from the same
        draws of ``rng``. Here rendered on the host and copied (pinned, without blocking the
        host); a data set whose images can be made on the device overrides it."""
        return to_device(self.sample_observations_from_factors(factors, rng), device)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, Tensor]:
        """``n`` (factors, observations) pairs."""
        factors = self.sample_factors(n, rng)
        return factors, self.sample_observations_from_factors(factors, rng)

    def sample_observations(self, n: int, rng: np.random.Generator) -> Tensor:
        return self.sample(n, rng)[1]

    def check_factors(self, factors: np.ndarray) -> np.ndarray:
        """Validate a factor array against ``factor_sizes``; returns it as int64 (n, F)."""
        f = np.asarray(factors)
        if f.ndim != 2 or f.shape[1] != self.num_factors:
            raise ValueError(
                f"{self.name}: factors must have shape (n, {self.num_factors}), got {f.shape}"
            )
        f = f.astype(np.int64, copy=False)
        if len(f) and ((f < 0).any() or (f >= np.asarray(self.factor_sizes)).any()):
            raise ValueError(
                f"{self.name}: factor values out of range for sizes {self.factor_sizes}"
            )
        return f

    def info(self, n_train: int = 0, n_test: int = 0) -> DataInfo:
        return DataInfo(self.name, self.source, n_train, n_test)


class Quantized(GroundTruthData):
    """A ground-truth data set with at most ``max_sizes[i]`` values per factor.

    Value ``v`` of a quantized factor with ``q`` values stands for value ``floor(v * s / q)`` of the
    original factor with ``s`` values. The abstract-reasoning study quantizes its data sets this way
    before building puzzles (abstract dSprites: 5, 6, 3, 3, 4, 4; 3dshapes: 10, 10, 10, 4, 4, 4).
    """

    def __init__(self, data: GroundTruthData, max_sizes: Sequence[int]) -> None:
        if len(max_sizes) != data.num_factors:
            raise ValueError(f"need {data.num_factors} maximal sizes, got {len(max_sizes)}")
        self.data = data
        self.true_sizes = tuple(int(s) for s in data.factor_sizes)
        self.factor_sizes = tuple(
            min(s, int(m)) for s, m in zip(self.true_sizes, max_sizes, strict=True)
        )
        self.factor_names = data.factor_names
        self.observation_shape = data.observation_shape
        self.name = f"{data.name}-quantized"
        self.source = data.source

    def to_original(self, factors: np.ndarray) -> np.ndarray:
        """Quantized factor values -> values of the wrapped data set. (n, F) -> (n, F)."""
        f = self.check_factors(factors).copy()
        for i, (s, q) in enumerate(zip(self.true_sizes, self.factor_sizes, strict=True)):
            if s != q:
                f[:, i] = (f[:, i] * s) // q  # floor(v * s / q), exact in integers
        return f

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        return self.data.sample_observations_from_factors(self.to_original(factors), rng)

    def observations_on(
        self, factors: np.ndarray, rng: np.random.Generator, device: str | torch.device
    ) -> Tensor:
        return self.data.observations_on(self.to_original(factors), rng, device)


class ArrayGroundTruthData(GroundTruthData):
    """Ground-truth data from a user's own arrays: observations and the factors of each.

    Each factor's distinct values (any integers, e.g. 0, 2, 5) become its values 0..K-1 in the
    order of their size (``factor_values[i]`` lists them), so ``factor_sizes`` counts them.
    The interventional metrics (BetaVAE, FactorVAE) fix one factor and draw the others
    uniformly, so every combination of factor values must have at least one observation: the
    constructor refuses arrays that miss one, naming an absent combination. Where a combination
    has several observations, ``sample_observations_from_factors`` draws one of them uniformly
    with ``rng`` (with exactly one each, ``rng`` is not used).

    Args:
        observations: (N, ...) array or tensor (images (N, C, H, W) for the VAEs here); returned
            as float32 tensors, not rescaled.
        factors: (N, F) integer factor values of each observation.
        factor_names: optional names of the F factors.
        name: the data set's name in messages.

    Shapes:
        observations (N, ...), factors (N, F) -> sample_observations_from_factors: (n, F) -> (n, ...)
    """

    def __init__(
        self,
        observations: np.ndarray | Tensor,
        factors: np.ndarray | Tensor,
        *,
        factor_names: Sequence[str] | None = None,
        name: str = "arrays",
    ) -> None:
        obs = torch.as_tensor(observations).detach().cpu().to(torch.float32)
        f = factors.detach().cpu().numpy() if isinstance(factors, Tensor) else np.asarray(factors)
        self.name = name
        self.source = "arrays"
        if f.ndim != 2 or len(f) != len(obs) or len(obs) == 0:
            raise ValueError(
                f"{name}: observations (N, ...) and factors (N, F) must share N >= 1, got "
                f"{tuple(obs.shape)} and {f.shape}"
            )
        if not np.issubdtype(f.dtype, np.integer):
            if not np.array_equal(f, np.round(f)):
                raise ValueError(f"{name}: factors must be integer values (discrete factors)")
            f = f.astype(np.int64)
        values, codes = [], np.empty(f.shape, dtype=np.int64)
        for i in range(f.shape[1]):
            uniq, inv = np.unique(f[:, i], return_inverse=True)
            values.append(tuple(int(v) for v in uniq))
            codes[:, i] = inv.reshape(-1)
        self.factor_values: tuple[tuple[int, ...], ...] = tuple(values)
        self.factor_sizes = tuple(len(v) for v in values)
        self.factor_names = (
            tuple(factor_names)
            if factor_names is not None
            else tuple(f"factor_{i}" for i in range(f.shape[1]))
        )
        if len(self.factor_names) != f.shape[1]:
            raise ValueError(f"{name}: {len(self.factor_names)} names for {f.shape[1]} factors")
        self.observation_shape = tuple(obs.shape[1:])  # type: ignore[assignment]
        cells = np.ravel_multi_index(codes.T, self.factor_sizes)  # (N,)
        total = int(np.prod(self.factor_sizes))
        counts = np.bincount(cells, minlength=total)
        if (counts == 0).any():
            missing = int((counts == 0).sum())
            first = np.unravel_index(int(np.argmin(counts)), self.factor_sizes)
            example = tuple(values[i][int(k)] for i, k in enumerate(first))
            raise ValueError(
                f"{name}: {missing} of {total} factor combinations have no observation (e.g. "
                f"factors {example}); BetaVAE and FactorVAE fix one factor and draw the others "
                "freely, so every combination of the factor values must be present"
            )
        order = np.argsort(cells, kind="stable")
        self._rows = order  # rows sorted by combination
        self._start = np.concatenate([[0], np.cumsum(counts)[:-1]])  # first row per combination
        self._count = counts
        self._observations = obs

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        f = self.check_factors(factors)
        cells = np.ravel_multi_index(f.T, self.factor_sizes) if len(f) else np.zeros(0, np.int64)
        count = self._count[cells]
        pick = np.zeros(len(cells), dtype=np.int64)
        if (count > 1).any():
            pick = (rng.random(len(cells)) * count).astype(np.int64)
        rows = self._rows[self._start[cells] + pick]
        return self._observations[torch.from_numpy(rows)]


# -- representations --------------------------------------------------------------------------------

RepresentationFn = Callable[[Tensor], "np.ndarray | Tensor"]


def as_numpy_codes(codes: np.ndarray | Tensor) -> np.ndarray:
    """Codes as a float64 array (N, D)."""
    if isinstance(codes, Tensor):
        codes = codes.detach().cpu().double().numpy()
    c = np.asarray(codes, dtype=np.float64)
    if c.ndim == 1:
        c = c[:, None]
    if c.ndim != 2:
        raise ValueError(f"codes must have shape (N, D), got {c.shape}")
    return c


def encode(
    representation: RepresentationFn, observations: Tensor, *, batch_size: int = 256
) -> np.ndarray:
    """Apply ``representation`` in batches. (N, C, H, W) -> (N, D) float64."""
    out = [
        as_numpy_codes(representation(observations[i : i + batch_size]))
        for i in range(0, len(observations), batch_size)
    ]
    return np.concatenate(out, axis=0) if out else np.zeros((0, 0))


def sample_codes(
    data: GroundTruthData,
    representation: RepresentationFn,
    n: int,
    rng: np.random.Generator,
    *,
    batch_size: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (codes, factors) pairs: factors drawn from ``data``, codes of their observations.

    Returns:
        codes (n, D) float64, factors (n, F) int64.
    """
    factors = data.sample_factors(n, rng)
    codes = []
    for i in range(0, n, batch_size):
        obs = data.sample_observations_from_factors(factors[i : i + batch_size], rng)
        codes.append(as_numpy_codes(representation(obs)))
    return np.concatenate(codes, axis=0), factors


# -- registry ---------------------------------------------------------------------------------------


def _import_sources() -> None:
    """Import the data modules: the ground-truth sources register themselves on import."""
    from paperzoo.data.base import DATASETS

    DATASETS.names()  # imports every module of paperzoo.data once


GROUND_TRUTH: Registry[GroundTruthData] = Registry(
    "ground-truth data set", populate=_import_sources
)


def load_ground_truth(
    name: str,
    *,
    data_root: str | Path | None = None,
    download: bool = False,
    image_size: int = 64,
) -> GroundTruthData:
    """The registered ground-truth data set ``name`` (``GROUND_TRUTH.names()``).

    Args:
        name: e.g. ``"dsprites"``, ``"abstract-dsprites"``, ``"color-shapes"``.
        data_root: directory with real files (``DIR/dsprites/*.npz``); procedural rendering if None.
        download: fetch missing files (only where a verified checksum is known).
        image_size: side of the rendered square images (64 in the papers).
    """
    root = Path(data_root).expanduser() if data_root is not None else None
    return GROUND_TRUTH.create(name, data_root=root, download=download, image_size=image_size)


def ground_truth_split(
    data: GroundTruthData, *, n_train: int, n_test: int, seed: int, label_factor: int
) -> Split:
    """A classification ``Split`` sampled from ``data``; the label is factor ``label_factor``."""
    rng = np.random.default_rng(seed)
    f_tr, x_tr = data.sample(n_train, rng)
    f_te, x_te = data.sample(n_test, rng)
    y_tr = torch.from_numpy(f_tr[:, label_factor].copy())
    y_te = torch.from_numpy(f_te[:, label_factor].copy())
    return Split(
        x_tr, y_tr, x_te, y_te, data.info(n_train, n_test), data.factor_sizes[label_factor]
    )
