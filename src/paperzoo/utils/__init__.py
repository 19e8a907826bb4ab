"""Small helpers shared across papers."""

from paperzoo.utils.io import atomic_write_bytes, atomic_write_text, sha256_file
from paperzoo.utils.modules import import_submodules

__all__ = ["atomic_write_bytes", "atomic_write_text", "import_submodules", "sha256_file"]
