"""``python -m bench.chaos``: see :mod:`bench.chaos.run`."""

import sys

from bench.chaos.run import main

sys.exit(main())
