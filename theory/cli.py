"""`python -m escov.theory` (or `escov theory`): run the named checks, print them, optionally plot.

python -m escov.theory                 # table of every check; exit 0 when every claimed check holds
python -m escov.theory --json          # one JSON list on stdout (nothing else on stdout)
python -m escov.theory --plot DIR      # also write sigma-, N- and Fisher-trace-scaling PNGs into DIR
python -m escov.theory --only lemma1 --only dpi --seed 3
"""

from __future__ import annotations

import argparse
import json
import sys

from escov.theory.checks import GROUPS, counts, run_checks


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_table(results: list[dict]) -> str:
    """Fixed-width table: name, predicted, measured, ratio, verdict, and s or the regime note."""
    width = max(len(it["name"]) for it in results)
    lines = [f"{'name':<{width}}  {'predicted':>11}  {'measured':>11}  {'ratio':>8}  verdict  note"]
    for it in results:
        verdict = ("holds" if it["holds"] else "FAILS") if counts(it) else "regime"
        note = it.get("regime") or (f"s = {it['s']:.2g}" if "s" in it else "")
        lines.append(
            f"{it['name']:<{width}}  {_fmt(it['predicted']):>11}  {_fmt(it['measured']):>11}  "
            f"{_fmt(it['ratio']):>8}  {verdict:<7}  {note}"
        )
    claimed = [it for it in results if counts(it)]
    failed = [it["name"] for it in claimed if not it["holds"]]
    lines.append(
        f"\n{len(claimed)} claimed checks, {len(claimed) - len(failed)} hold, {len(failed)} fail; "
        f"{len(results) - len(claimed)} regime items (where an approximation breaks; not counted)"
    )
    lines += [f"FAILED: {name}" for name in failed]
    return "\n".join(lines)


def exit_code(results: list[dict]) -> int:
    """0 when every counted (non-regime) check holds, 1 otherwise."""
    return 0 if all(it["holds"] for it in results if counts(it)) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m escov.theory", description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON list of result items on stdout")
    parser.add_argument("--plot", metavar="DIR", help="write PNG plots of Lemma 1's scalings into DIR")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo draws (default 0)")
    parser.add_argument(
        "--only", action="append", default=[], choices=list(GROUPS), help="run only this group of checks (repeatable)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar (stderr)")
    args = parser.parse_args(argv)
    results = run_checks(seed=args.seed, only=tuple(args.only), progress=not args.no_progress)
    if args.plot:
        from escov.theory.plots import write_plots  # matplotlib only when plots are asked for

        for path in write_plots(results, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(format_table(results))
    return exit_code(results)
