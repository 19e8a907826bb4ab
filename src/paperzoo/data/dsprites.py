"""dSprites (Matthey, Higgins, Hassabis, Lerchner 2017): a procedural renderer and the real file.

dSprites has 737,280 binary 64 x 64 images, one per point of the factor grid
shape 3 (square, ellipse, heart) x scale 6 (linspace(0.5, 1, 6)) x orientation 40
(linspace(0, 2 pi, 40)) x position x 32 x position y 32 (linspace(0, 1, 32)).

* ``DSprites``: renders any point of that grid on demand (vectorised over the batch), so the
  reproduction needs no download. It matches the real data's factor grid exactly; the pixel
  geometry (sprite size, margins, the heart's outline) is our own and not pixel-identical to the
  official images.
* ``DSpritesNPZ``: the official ``dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz`` from
  ``--data-root DIR`` (``DIR/dsprites/``), streamed out of the archive and bit-packed (377 MB in
  memory instead of 3 GB). No ``--download``: we found the file's MD5
  (7da33b31b13a06f4b04a70402ce90c2e) in several independent sources but no SHA-256 in two, so we
  do not fetch it; get it from https://github.com/deepmind/dsprites-dataset. A full run checks
  the archive against that MD5 and the git blob SHA-1 of the authors' repository
  (``paperzoo.data.layouts.PINNED``).
* ``AbstractDSprites``: the variant of the abstract-reasoning study (van Steenkiste et al., 2019):
  orientation is a random nuisance, and two colour factors are added: background colour (5 greys)
  and object colour (6 colours), giving factors (background, object colour, shape, scale, x, y).
"""

from __future__ import annotations

import hashlib
import math
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from paperzoo.data.base import DATASETS, DataError, Split
from paperzoo.data.ground_truth import GROUND_TRUTH, GroundTruthData, ground_truth_split
from paperzoo.data.layouts import PINNED, all_files, register_layout
from paperzoo.engine.transfer import to_device

DSPRITES_FILE = "dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz"
DSPRITES_URL = "https://github.com/deepmind/dsprites-dataset"
DSPRITES_MD5 = PINNED["dsprites"].files[0].md5  # the table a full run is checked against
register_layout(
    "dsprites",
    what="dSprites",
    layout=f"DIR/dsprites/{DSPRITES_FILE}",
    downloadable=False,  # no SHA-256 from two sources to verify a download against
    present=all_files(f"dsprites/{DSPRITES_FILE}"),
)
# The abstract-reasoning study's variant is rendered from the same archive (``AbstractDSprites``).
register_layout(
    "abstract-dsprites",
    what="Abstract dSprites (the study's colour variant, drawn from the dSprites archive)",
    layout=f"DIR/dsprites/{DSPRITES_FILE}",
    downloadable=False,
    present=all_files(f"dsprites/{DSPRITES_FILE}"),
)
FACTOR_NAMES = ("shape", "scale", "orientation", "position_x", "position_y")
FACTOR_SIZES = (3, 6, 40, 32, 32)
SCALES = np.linspace(0.5, 1.0, 6)
ORIENTATIONS = np.linspace(0.0, 2.0 * math.pi, 40)
POSITIONS = np.linspace(0.0, 1.0, 32)

# Geometry of our renderer, in units of the image side.
_HALF_SIZE = 0.16  # half-extent of a sprite at scale 1
_MARGIN = 0.2  # position 0 / 1 puts the sprite centre at 0.2 / 0.8 of the image
_CHUNK = 2048  # images rendered per vectorised chunk (bounds the memory of the (n, H, W) grids)

# Abstract dSprites colours (van Steenkiste et al., 2019): background greys and six object colours.
BACKGROUND_COLORS = np.array([[v, v, v] for v in (0.0, 0.25, 0.5, 0.75, 1.0)], dtype=np.float32)
OBJECT_COLORS = np.array(
    [
        [0.910, 0.588, 0.366],
        [0.635, 0.693, 0.363],
        [0.376, 0.728, 0.596],
        [0.395, 0.707, 0.787],
        [0.696, 0.622, 0.900],
        [0.908, 0.551, 0.749],
    ],
    dtype=np.float32,
)  # a pastel hue circle (husl palette, 6 colours, as in the study)


def render_sprites(
    shape: np.ndarray,
    scale: np.ndarray,
    angle: np.ndarray,
    pos_x: np.ndarray,
    pos_y: np.ndarray,
    *,
    image_size: int = 64,
) -> Tensor:
    """Binary masks of sprites with the given continuous parameters.

    Args:
        shape: 0 square, 1 ellipse, 2 heart.
        scale: relative size (0.5 .. 1 in dSprites).
        angle: rotation in radians (counter-clockwise).
        pos_x, pos_y: position in [0, 1] (x: left to right, y: top to bottom).

    Shapes:
        all inputs (n,) -> (n, image_size, image_size) float32 in {0, 1}
    """
    n = len(shape)
    out = torch.empty(n, image_size, image_size)
    coords = (torch.arange(image_size, dtype=torch.float32) + 0.5) / image_size  # pixel centres
    for s in range(0, n, _CHUNK):
        sl = slice(s, s + _CHUNK)
        cx = torch.as_tensor(_MARGIN + (1 - 2 * _MARGIN) * pos_x[sl], dtype=torch.float32)
        cy = torch.as_tensor(_MARGIN + (1 - 2 * _MARGIN) * pos_y[sl], dtype=torch.float32)
        h = torch.as_tensor(_HALF_SIZE * scale[sl], dtype=torch.float32)
        a = torch.as_tensor(angle[sl], dtype=torch.float32)
        dx = coords.view(1, 1, -1) - cx.view(-1, 1, 1)  # (n, 1, W)
        dy = coords.view(1, -1, 1) - cy.view(-1, 1, 1)  # (n, H, 1)
        cos, sin = torch.cos(a).view(-1, 1, 1), torch.sin(a).view(-1, 1, 1)
        # Rotate the pixel offsets by -angle into the sprite's frame, in units of its half-size.
        u = (cos * dx - sin * dy) / h.view(-1, 1, 1)  # (n, H, W)
        v = (sin * dx + cos * dy) / h.view(-1, 1, 1)
        sh = torch.as_tensor(shape[sl])
        mask = torch.zeros_like(u, dtype=torch.bool)
        for kind in range(3):
            idx = torch.nonzero(sh == kind).flatten()
            if len(idx):
                mask[idx] = _inside(kind, u[idx], v[idx])
        out[sl] = mask.float()
    return out


def _inside(kind: int, u: Tensor, v: Tensor) -> Tensor:
    """Whether sprite-frame points (u, v) (in half-sizes) are inside shape ``kind``."""
    if kind == 0:  # square
        return torch.maximum(u.abs(), v.abs()) <= 0.8
    if kind == 1:  # ellipse with axes 1 and 0.5
        return u.square() + (v / 0.5).square() <= 1.0
    # Heart: (x^2 + y^2 - 1)^3 - x^2 y^3 <= 0 with the point downwards (y grows upwards).
    hx, hy = u * 1.15, -v * 1.15 + 0.15
    r = hx.square() + hy.square() - 1
    return r * r * r - hx.square() * hy * hy * hy <= 0


class DSprites(GroundTruthData):
    """dSprites rendered on demand: factors (shape 3, scale 6, orientation 40, x 32, y 32).

    Args:
        image_size: side of the square images (64 as in the data set; smaller for quick runs).
    """

    name = "dsprites"
    factor_names = FACTOR_NAMES
    factor_sizes = FACTOR_SIZES

    def __init__(self, *, image_size: int = 64) -> None:
        self.image_size = image_size
        self.observation_shape = (1, image_size, image_size)

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        return self._masks(factors)

    def _masks(self, factors: np.ndarray) -> Tensor:
        f = self.check_factors(factors)
        masks = render_sprites(
            f[:, 0], SCALES[f[:, 1]], ORIENTATIONS[f[:, 2]], POSITIONS[f[:, 3]], POSITIONS[f[:, 4]],
            image_size=self.image_size,
        )  # fmt: skip
        return masks.unsqueeze(1)  # (n, 1, H, W)

    def masks_on(self, factors: np.ndarray, device: str | torch.device) -> Tensor:
        """``sample_observations_from_factors`` on ``device``: rendered on the host, sent as
        one byte a pixel (the masks are binary) and made float32 there. (n, 5) -> (n, 1, H, W)."""
        return to_device(self._masks(factors).to(torch.uint8), device).float()


class DSpritesNPZ(GroundTruthData):
    """The official dSprites images from the ``.npz`` archive.

    Images are ordered row-major over (color 1, shape, scale, orientation, x, y); the loader checks
    that ``latents_classes`` follows that order, so image ``i`` of factors ``f`` is found by index.
    ``sha256`` is the SHA-256 of the images read (bit-packed, in grid order).

    Args:
        path: the ``.npz`` file.
        image_size: ``None`` or 64 keeps the originals; 32 (any divisor of 64) average-pools them.
        factor_sizes: the grid the file must hold (the real one by default; tests pass small grids).
    """

    name = "dsprites"
    path: Path | None  # the archive read (None: images given in memory, ``from_packed``)

    def __init__(
        self,
        path: str | Path,
        *,
        image_size: int | None = None,
        factor_sizes: tuple[int, ...] = FACTOR_SIZES,
    ) -> None:
        self.path = Path(path)
        packed, side = _read_npz_images(self.path, tuple(factor_sizes))
        # The identity of the images read (their bits in grid order, checked above), for the
        # data record of a run: equal images give equal digests, whatever the file's name.
        self._setup(packed, side, image_size, factor_sizes, str(self.path))
        self.sha256: str | None = hashlib.sha256(packed.data).hexdigest()

    @classmethod
    def from_packed(
        cls,
        packed: np.ndarray,
        *,
        image_size: int | None = None,
        factor_sizes: tuple[int, ...] = FACTOR_SIZES,
    ) -> DSpritesNPZ:
        """The images already in memory, bit-packed as the archive is read: (N, H, ceil(W / 8))
        uint8 in grid order, H = W (no digest; e.g. an unread stand-in of the grid's shape for
        counting the work of made-on-device panels on the meta device)."""
        self = cls.__new__(cls)
        self.path, self.sha256 = None, None
        self._setup(packed, packed.shape[1], image_size, factor_sizes, "memory")
        return self

    def _setup(
        self,
        packed: np.ndarray,
        side: int,
        image_size: int | None,
        factor_sizes: tuple[int, ...],
        source: str,
    ) -> None:
        self.source = source
        self.factor_names = FACTOR_NAMES
        self.factor_sizes = tuple(factor_sizes)
        if packed.shape != (int(np.prod(self.factor_sizes)), side, (side + 7) // 8):
            raise ValueError(f"packed images of shape {packed.shape} do not fit the grid")
        image_size = side if image_size is None else image_size
        if side % image_size:
            raise ValueError(f"image_size must divide {side}, got {image_size}")
        self._packed, self._side, self.image_size = packed, side, image_size
        self.observation_shape = (1, image_size, image_size)
        self._bases = np.cumprod((self.factor_sizes[1:] + (1,))[::-1])[::-1].astype(np.int64)
        self._on_device: dict[torch.device, Tensor] = {}  # the packed images on each device

    def indices(self, factors: np.ndarray) -> np.ndarray:
        """Row of each factor vector in the archive. (n, 5) -> (n,)."""
        return self.check_factors(factors) @ self._bases

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        bits = np.unpackbits(self._packed[self.indices(factors)], axis=-1, count=self._side)
        x = torch.from_numpy(bits.astype(np.float32)).unsqueeze(1)  # (n, 1, 64, 64)
        if self.image_size != self._side:
            x = torch.nn.functional.avg_pool2d(x, self._side // self.image_size)
        return x

    def masks_on(self, factors: np.ndarray, device: str | torch.device) -> Tensor:
        """``sample_observations_from_factors`` made on ``device``: the images are gathered and
        unpacked there from a copy of the packed archive (made on first use, 377 MB for the
        64 x 64 grid); only the indices are copied from the host. Equal to the host's images
        bit for bit: the bits are integers, and pooling averages 0s and 1s over a power-of-two
        window. (n, 5) -> (n, 1, H, W)."""
        dev = torch.device(device)
        packed = self._on_device.get(dev)
        if packed is None:
            packed = to_device(torch.from_numpy(self._packed), dev)
            self._on_device[dev] = packed
        rows = to_device(torch.from_numpy(self.indices(factors)), dev)
        shifts = torch.arange(7, -1, -1, dtype=torch.uint8, device=dev)  # numpy's bit order
        bits = (packed[rows].unsqueeze(-1) >> shifts) & 1  # (n, H, W / 8, 8)
        x = bits.flatten(-2)[..., : self._side].float().unsqueeze(1)  # (n, 1, 64, 64)
        if self.image_size != self._side:
            x = torch.nn.functional.avg_pool2d(x, self._side // self.image_size)
        return x


def _read_npz_images(path: Path, factor_sizes: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Stream ``imgs`` out of the archive into a bit-packed (N, H, ceil(W / 8)) uint8 array."""
    n_expected = int(np.prod(factor_sizes))
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            for key in ("imgs.npy", "latents_classes.npy"):
                if key not in names:
                    raise DataError(f"{path}: not a dSprites archive (no {key[:-4]!r} array)")
            with zf.open("latents_classes.npy") as f:
                classes = np.lib.format.read_array(f, allow_pickle=False)
            _check_order(path, classes, factor_sizes)
            with zf.open("imgs.npy") as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                else:
                    raise DataError(f"{path}: unsupported .npy format version {version}")
                if len(shape) != 3 or shape[0] != n_expected or fortran or dtype.itemsize != 1:
                    raise DataError(
                        f"{path}: imgs has shape {shape} and dtype {dtype}; expected "
                        f"({n_expected}, H, W) uint8 in C order"
                    )
                n, h, w = shape
                packed = np.empty((n, h, (w + 7) // 8), dtype=np.uint8)
                rows = 8192
                for s in range(0, n, rows):
                    m = min(rows, n - s)
                    buf = f.read(m * h * w)
                    if len(buf) != m * h * w:
                        raise DataError(
                            f"{path}: imgs is truncated at image {s + len(buf) // (h * w)} of {n}"
                        )
                    block = np.frombuffer(buf, dtype=np.uint8).reshape(m, h, w)
                    packed[s : s + m] = np.packbits(block != 0, axis=-1)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        if isinstance(err, DataError):
            raise
        raise DataError(f"{path}: cannot read the archive ({err})") from err
    if h != w:
        raise DataError(f"{path}: images are {h} x {w}, expected square images")
    return packed, w


def _check_order(path: Path, classes: np.ndarray, factor_sizes: tuple[int, ...]) -> None:
    """``latents_classes`` must enumerate (color, *factors) row-major, color constant 0."""
    n = int(np.prod(factor_sizes))
    if classes.shape != (n, len(factor_sizes) + 1):
        raise DataError(
            f"{path}: latents_classes has shape {classes.shape}, expected ({n}, {len(factor_sizes) + 1})"
        )
    grid = np.stack(np.unravel_index(np.arange(n), factor_sizes), axis=1)
    if (classes[:, 0] != 0).any() or not np.array_equal(classes[:, 1:], grid):
        bad = int(np.argmax((classes[:, 1:] != grid).any(axis=1) | (classes[:, 0] != 0)))
        raise DataError(
            f"{path}: latents_classes row {bad} is {classes[bad].tolist()}, expected the row-major grid order"
        )


class AbstractDSprites(GroundTruthData):
    """dSprites for abstract reasoning: (background 5, object colour 6, shape 3, scale 6, x 32, y 32).

    The orientation is drawn uniformly from its 40 values for every observation (a nuisance, not a
    ground-truth factor), as in the study. Images are RGB: object colour inside the sprite,
    background grey outside.

    Args:
        base: the binary dSprites source (renderer or the real archive).
    """

    name = "abstract-dsprites"
    factor_names = (
        "background_color",
        "object_color",
        "shape",
        "scale",
        "position_x",
        "position_y",
    )
    factor_sizes = (5, 6, 3, 6, 32, 32)

    def __init__(self, base: DSprites | DSpritesNPZ) -> None:
        self.base = base
        self.source = base.source
        self.sha256: str | None = getattr(base, "sha256", None)  # the archive's images, if read
        side = base.observation_shape[-1]
        self.observation_shape = (3, side, side)
        self._tables: dict[tuple[int, torch.device], Tensor] = {}  # colours on each device

    def sample_observations_from_factors(
        self, factors: np.ndarray, rng: np.random.Generator
    ) -> Tensor:
        f = self.check_factors(factors)
        mask = self.base.sample_observations_from_factors(self.sprites(f, rng), rng)
        bg = torch.from_numpy(BACKGROUND_COLORS[f[:, 0]]).view(-1, 3, 1, 1)
        fg = torch.from_numpy(OBJECT_COLORS[f[:, 1]]).view(-1, 3, 1, 1)
        return mask * fg + (1 - mask) * bg  # (n, 3, H, W)

    def sprites(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The binary dSprites factors of checked abstract factors: (shape, scale, orientation,
        x, y), the orientation drawn uniformly from ``rng``. (n, 6) -> (n, 5)."""
        orientation = rng.integers(0, 40, size=len(factors))
        f = factors
        return np.stack([f[:, 2], f[:, 3], orientation, f[:, 4], f[:, 5]], axis=1)

    def observations_on(
        self, factors: np.ndarray, rng: np.random.Generator, device: str | torch.device
    ) -> Tensor:
        """``sample_observations_from_factors`` on ``device``, the same values from the same
        draws: the orientations are drawn on the host, the masks come from the base's
        ``masks_on`` (the archive's are made on the device) and are coloured there."""
        f = self.check_factors(factors)
        mask = self.base.masks_on(self.sprites(f, rng), device)  # (n, 1, H, W)
        colours = to_device(torch.from_numpy(f[:, :2]), device)
        bg = self._colours(BACKGROUND_COLORS, device)[colours[:, 0]].view(-1, 3, 1, 1)
        fg = self._colours(OBJECT_COLORS, device)[colours[:, 1]].view(-1, 3, 1, 1)
        return mask * fg + (1 - mask) * bg  # (n, 3, H, W)

    def _colours(self, table: np.ndarray, device: str | torch.device) -> Tensor:
        """A colour table on ``device``, copied there once."""
        key = (id(table), torch.device(device))
        if key not in self._tables:
            self._tables[key] = to_device(torch.from_numpy(table), device)
        return self._tables[key]


def _binary_dsprites(
    data_root: Path | None, download: bool, image_size: int
) -> DSprites | DSpritesNPZ:
    if data_root is None:
        if download:
            raise DataError(
                "dSprites: --download needs --data-root DIR (the file goes to DIR/dsprites/)"
            )
        return DSprites(image_size=image_size)
    path = data_root / "dsprites" / DSPRITES_FILE
    if not path.exists():
        hint = (
            "; --download is not supported (no SHA-256 verified from two sources): "
            if download
            else "; "
        )
        raise DataError(
            f"dSprites: {path} not found{hint}get {DSPRITES_FILE} from {DSPRITES_URL} "
            f"(MD5 {DSPRITES_MD5}), or drop --data-root to use the procedural renderer"
        )
    return DSpritesNPZ(path, image_size=image_size)


@GROUND_TRUTH.register("dsprites")
def dsprites(
    *, data_root: Path | None = None, download: bool = False, image_size: int = 64
) -> GroundTruthData:
    """dSprites: the real archive under ``data_root/dsprites/`` if given, else the renderer."""
    return _binary_dsprites(data_root, download, image_size)


@GROUND_TRUTH.register("abstract-dsprites")
def abstract_dsprites(
    *, data_root: Path | None = None, download: bool = False, image_size: int = 64
) -> GroundTruthData:
    """Abstract dSprites over the real archive (with ``data_root``) or the renderer."""
    return AbstractDSprites(_binary_dsprites(data_root, download, image_size))


@DATASETS.register("dsprites")
def dsprites_split(
    *, data_root: Path | None = None, download: bool = False, seed: int = 0
) -> Split:
    """A classification view of dSprites: 20,000 / 5,000 sampled images labelled by shape."""
    data = _binary_dsprites(data_root, download, 64)
    return ground_truth_split(data, n_train=20000, n_test=5000, seed=seed, label_factor=0)


def write_dsprites_npz(
    path: str | Path,
    *,
    factor_sizes: tuple[int, ...] = FACTOR_SIZES,
    image_size: int = 64,
    chunk: int = 8192,
) -> Path:
    """Write the renderer's images in the official archive's format, streamed (no 3 GB array).

    The file has the official keys ``imgs`` ((N, H, W) uint8 in {0, 1}), ``latents_classes``
    ((N, 6) int64: colour 0, then the factor indices row-major) and ``latents_values`` ((N, 6)
    float64: colour 1, shape 1..3, scale, orientation, x, y), uncompressed as the original. It
    stands in for the real file wherever the *format* is what matters (dry runs of a full run, the
    loader's tests); its pixels are the renderer's, not the official images.

    Args:
        path: the ``.npz`` to write (``DIR/dsprites/`` + ``DSPRITES_FILE`` for ``--data-root DIR``).
        factor_sizes: the grid (the real one by default; smaller grids for tests), each at most
            the real size, the values taken from the start of the real ones.
        image_size: side of the images.
        chunk: images rendered per block.

    Returns:
        the path written.
    """
    path = Path(path)
    sizes = tuple(int(v) for v in factor_sizes)
    if len(sizes) != 5 or any(not 1 <= v <= m for v, m in zip(sizes, FACTOR_SIZES, strict=True)):
        raise ValueError(f"factor_sizes must be 5 sizes within {FACTOR_SIZES}, got {factor_sizes}")
    n = int(np.prod(sizes))
    classes = np.stack(np.unravel_index(np.arange(n), sizes), axis=1)  # (N, 5)
    latents_classes = np.concatenate([np.zeros((n, 1), np.int64), classes], axis=1)
    values = [np.arange(3) + 1.0, SCALES, ORIENTATIONS, POSITIONS, POSITIONS]
    latents_values = np.concatenate(
        [np.ones((n, 1))] + [v[classes[:, i]][:, None] for i, v in enumerate(values)], axis=1
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in (("latents_classes", latents_classes), ("latents_values", latents_values)):
            with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, arr, allow_pickle=False)
        header = {"descr": "|u1", "fortran_order": False, "shape": (n, image_size, image_size)}
        with zf.open("imgs.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, header)
            for s in range(0, n, chunk):
                c = classes[s : s + chunk]
                masks = render_sprites(
                    c[:, 0], SCALES[c[:, 1]], ORIENTATIONS[c[:, 2]], POSITIONS[c[:, 3]],
                    POSITIONS[c[:, 4]], image_size=image_size,
                )  # fmt: skip
                f.write(masks.numpy().astype(np.uint8).tobytes())
    return path
