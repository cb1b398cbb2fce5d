"""`python -m escov.simulate ...`: see simulate/cli.py."""

import sys

from escov.simulate.cli import main

sys.exit(main())
