"""Command line: `python -m escov.simulate list | run NAME [--seeds S] [--out DIR] | all [--seeds S] [--out DIR]`.

`run` writes DIR/NAME.json and DIR/NAME.png and prints each claim's verdict; `all` runs every
experiment and also writes DIR/summary.json. `--scale` (default 1) shrinks the number of updates
for a quick look; verdicts at a reduced scale are not the reported ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from escov.theory.claims import Test

from .experiments import EXPERIMENTS

DEFAULT_OUT = "out/simulate"


def _jsonable(obj):
    if isinstance(obj, Test):  # a claim's test (theory.claims), written as its description
        return obj.describe()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON-serializable: {type(obj).__name__}")


def run_one(name: str, seeds: int | None, out: Path, scale: float, progress: bool = True) -> dict:
    """Run one experiment, write NAME.json beside its plot, print its verdicts; return its summary."""
    module = EXPERIMENTS[name]
    start = time.perf_counter()
    kwargs = {} if seeds is None else {"seeds": seeds}
    result = module.run(out=out, scale=scale, progress=progress, **kwargs)
    result["seconds"] = round(time.perf_counter() - start, 2)
    result["scale"] = scale
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=_jsonable))
    print(f"== {name} ({result['seconds']:.1f} s): {result['title']}")
    for c in result["claims"]:
        print(f"  [{c['verdict']}] {c['claim']}\n      {c['why']}")
    return result


def run_all(seeds: int | None, out: Path, scale: float, progress: bool = True) -> dict:
    """Run every experiment (run_one) and write out/summary.json; return the summary as built, whose
    claims' entries hold their records' own statement and test objects (theory.claims)."""
    start = time.perf_counter()
    results = [run_one(name, seeds, out, scale, progress) for name in EXPERIMENTS]
    summary = {
        "seconds": round(time.perf_counter() - start, 2),
        "scale": scale,
        "seeds": seeds,
        "experiments": {r["name"]: r for r in results},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=_jsonable))
    print(f"wrote {out / 'summary.json'} and {len(results)} plots in {summary['seconds']:.1f} s")
    return summary


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: `list`, `run NAME` and `all`, the last two with the experiments' settings."""
    parser = argparse.ArgumentParser(prog="python -m escov.simulate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    p_run = sub.add_parser("run", help="run one experiment")
    p_run.add_argument("name", choices=sorted(EXPERIMENTS))
    p_all = sub.add_parser("all", help="run every experiment and write summary.json")
    for p in (p_run, p_all):
        p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT), help=f"output folder (default {DEFAULT_OUT})")
        p.add_argument("--scale", type=float, default=1.0, help="shrink the updates per run (quick looks)")
        p.add_argument("--no-progress", action="store_true", help="hide progress bars")
        p.add_argument("--seeds", type=int, default=None, help="number of seeds (default: each experiment's own)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, module in EXPERIMENTS.items():
            print(f"{name:24s} {module.TITLE}")
        return 0
    if args.seeds is not None and args.seeds < 2:
        parser.error("--seeds must be >= 2 (spreads and verdicts need at least two seeds)")
    if not 0 < args.scale <= 10:
        parser.error("--scale must be in (0, 10]")
    if args.command == "run":
        run_one(args.name, args.seeds, args.out, args.scale, not args.no_progress)
        return 0
    run_all(args.seeds, args.out, args.scale, not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
