"""``python -m attntopo.cli`` runs the command line (as ``python -m attntopo`` does)."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
