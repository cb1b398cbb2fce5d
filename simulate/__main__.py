"""`python -m simulate ...`: see simulate/cli.py."""
import sys

from simulate.cli import main

sys.exit(main())
