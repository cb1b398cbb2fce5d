"""`python -m theory`: see theory.cli."""
import sys

from theory.cli import main

raise SystemExit(main(sys.argv[1:]))
