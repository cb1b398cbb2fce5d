"""The suite's cost table (tests/file_costs.txt): seconds per test file, summed from the per-test times of
`pytest --durations=0` (setup, call and teardown), costliest first. tests/conftest.py hands the costliest files
to the workers first, so that the two workers finish together instead of one waiting on a long file at the end.

    .venv/bin/python -m pytest -q --durations=0 > durations.log
    .venv/bin/python scripts/test_file_costs.py durations.log > tests/file_costs.txt
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+tests/([^:\s]+\.py)::")
SHOWN_FROM_S = 3.0  # cheaper files keep their collection place: their order changes little


def file_costs(lines) -> Counter:
    """{file under tests/: seconds} from pytest's --durations lines."""
    costs: Counter = Counter()
    for line in lines:
        match = LINE.match(line)
        if match:
            costs[match.group(2)] += float(match.group(1))
    return costs


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    log = Path(argv[0])
    if not log.is_file():
        print(f"error: {log}: no such file (the output of pytest --durations=0)", file=sys.stderr)
        return 2
    costs = file_costs(log.read_text().splitlines())
    if not costs:
        print(f"error: {log} holds no --durations lines (run pytest with --durations=0)", file=sys.stderr)
        return 2
    print("# seconds per test file (setup + call + teardown), from pytest --durations=0: scripts/test_file_costs.py")
    for path, seconds in costs.most_common():
        if seconds >= SHOWN_FROM_S:
            print(f"{seconds:.1f} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
