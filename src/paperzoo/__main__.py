"""``python -m paperzoo`` (used by ``torchrun -m paperzoo ...``)."""

import sys

from paperzoo.cli import main

sys.exit(main())
