"""The per-module table of a mutation run: mutants, caught, equivalent, survivors left unexplained.

    python scripts/mutation_summary.py RESULTS DOC

RESULTS is `mutmut results --all true` (one "name: status" line per mutant); DOC is docs/mutation.md,
whose tables name each equivalent mutant in a row holding the word "equivalent". The score is caught /
(mutants - equivalent); a survivor neither caught nor named equivalent is listed. Exit status 1 when
one is left unexplained.
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict

CAUGHT = {"killed", "timeout", "segfault", "suspicious"}  # a test failed, hung or crashed: the bug is noticed
NAME = re.compile(r"^\s*([\w.]+?)\.(?:x_|xǁ)[^\s:]*__mutmut_\d+:\s*(.+?)\s*$")
MUTANT = re.compile(r"[\w.]+\.(?:x_|xǁ)[^\s`|]*__mutmut_\d+")


def equivalent_names(doc: str) -> set[str]:
    return {m for line in doc.splitlines() if "equivalent" in line.lower() for m in MUTANT.findall(line)}


def main(argv: list[str]) -> int:
    results, doc = argv
    equivalent = equivalent_names(open(doc, encoding="utf-8").read())
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    unexplained = []
    for line in open(results, encoding="utf-8"):
        m = NAME.match(line)
        if not m:
            continue
        module, status = m.group(1), m.group(2)
        name = line.split(":")[0].strip()
        row = table[module]
        row["mutants"] += 1
        if status in CAUGHT:
            row["caught"] += 1
        elif name in equivalent:
            row["equivalent"] += 1
        else:
            row["unexplained"] += 1
            unexplained.append(f"{name}: {status}")
    print(f"{'module':34} {'mutants':>7} {'caught':>7} {'equiv':>6} {'left':>5} {'score':>7}")
    for module in sorted(table):
        r = table[module]
        scored = r["mutants"] - r["equivalent"]
        score = f"{100 * r['caught'] / scored:.1f}%" if scored else "-"
        print(f"{module:34} {r['mutants']:7} {r['caught']:7} {r['equivalent']:6} {r['unexplained']:5} {score:>7}")
    if unexplained:
        print(f"\n{len(unexplained)} survivors neither caught nor named equivalent in {doc}:")
        print("\n".join(f"  {u}" for u in unexplained))
    return 1 if unexplained else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
