"""`python -m escov.theory`: see theory.cli."""

import sys

from escov.theory.cli import main

raise SystemExit(main(sys.argv[1:]))
