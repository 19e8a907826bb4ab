"""Small helpers shared across papers."""

from paperzoo.utils.flops import count_macs
from paperzoo.utils.io import atomic_write_bytes, atomic_write_text, sha256_file
from paperzoo.utils.modules import count_params, import_submodules, lazy_exports

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "count_macs",
    "count_params",
    "import_submodules",
    "lazy_exports",
    "sha256_file",
]
