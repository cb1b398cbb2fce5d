"""The `escov` console script: `escov theory|simulate|llm|paper_checks ARGS...`, and `escov coverage ARGS...`.

Each level's subcommand runs the same entry point as `python -m escov.<level> ARGS...`; `escov coverage` is
`python -m escov.paper_checks coverage` (paper_checks/coverage/cli.py).
"""

from __future__ import annotations

import importlib
import sys

LEVELS = ("theory", "simulate", "llm", "paper_checks")
TOOLS = {"coverage": "escov.paper_checks.coverage.cli"}  # commands of a level that people call by their own name


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in LEVELS + tuple(TOOLS):
        print(f"usage: escov {{{','.join(LEVELS + tuple(TOOLS))}}} [ARGS...]", file=sys.stderr)
        return 2
    module = importlib.import_module(TOOLS.get(argv[0], f"escov.{argv[0]}.cli"))
    return module.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
