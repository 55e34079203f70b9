"""``python -m attntopo``: the command line (see :mod:`attntopo.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
