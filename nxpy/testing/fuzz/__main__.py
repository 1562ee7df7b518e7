"""``python -m nxpy.testing.fuzz``: the command line of :mod:`nxpy.testing.fuzz.cli`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
