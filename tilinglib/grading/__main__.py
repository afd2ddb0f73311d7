"""``python -m tilinglib.grading DIR``: see `tilinglib.grading.cli`."""

import sys

from .cli import main

sys.exit(main())
