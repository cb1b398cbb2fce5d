"""The `escov` console script: `escov theory|simulate|llm|paper_checks ARGS...`.

Each subcommand runs the same entry point as `python -m escov.<level> ARGS...`.
"""
from __future__ import annotations

import importlib
import sys

LEVELS = ("theory", "simulate", "llm", "paper_checks")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in LEVELS:
        print(f"usage: escov {{{','.join(LEVELS)}}} [ARGS...]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"escov.{argv[0]}.cli")
    return module.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
