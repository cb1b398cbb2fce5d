#!/usr/bin/env bash
# Copy a finished reproduction's report into results/ (no checkpoints, no run directories):
#   bash scripts/publish_results.sh OUT_DIR [RESULTS_DIR [BESIDE...]]   (RESULTS_DIR defaults to results)
# OUT_DIR is the --out of `python -m escov.paper_checks reproduce`; its report/ must hold REPORT.md,
# report.json and run_info.json (written when the reproduction finished). results/REPORT.md gets a
# header with the exact command, the commit, the wall time and the machine; the simulate plots the
# report links to are copied beside it and the links rewritten; the premise's positive control (control.json,
# control.md, control.png), when the reproduction ran one, goes to RESULTS_DIR/premise-control/. BESIDE: folders under RESULTS_DIR that hold
# other published reports (e.g. the same answer from another base); their base models join RESULTS_DIR's
# report.json "bases" entry, each base tagged with the report that measured it.
set -euo pipefail
out="${1:?usage: publish_results.sh OUT_DIR [RESULTS_DIR]}"
dest="${2:-results}"
beside=("${@:3}")
report="$out/report"
for f in REPORT.md report.json run_info.json; do
  [ -f "$report/$f" ] || { echo "error: $report/$f missing (has the reproduction finished?)" >&2; exit 2; }
done
py="${PYTHON:-.venv/bin/python}"
mkdir -p "$dest"
cp "$report/report.json" "$report/run_info.json" "$dest/"
find "$report" -maxdepth 1 -name '*.png' -exec cp {} "$dest/" \;
if [ -f "$out/premise-control/control.json" ]; then   # the premise's positive control, when the budget ran one
  mkdir -p "$dest/premise-control"
  cp "$out/premise-control/control.json" "$out/premise-control/control.md" "$dest/premise-control/"
  [ ! -f "$out/premise-control/control.png" ] || cp "$out/premise-control/control.png" "$dest/premise-control/"
fi
if [ -d "$out/simulate" ]; then
  mkdir -p "$dest/simulate"
  find "$out/simulate" -maxdepth 1 -name '*.png' -exec cp {} "$dest/simulate/" \;
fi
"$py" - "$report" "$dest" "${beside[@]}" <<'PY'
import json, sys
from pathlib import Path
report, dest, beside = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
data = json.loads((dest / "report.json").read_text())
if "bases" in data or beside:
    bases = [b | {"report": "REPORT.md"} for b in data.get("bases", [])]
    for folder in beside:
        other = dest / folder / "report.json"
        if not other.is_file():
            sys.exit(f"error: {other} missing (publish that report first)")
        bases += [b | {"report": f"{folder}/REPORT.md"} for b in json.loads(other.read_text()).get("bases", [])]
    (dest / "report.json").write_text(json.dumps(data | {"bases": bases}, indent=1) + "\n")
info = json.loads((report / "run_info.json").read_text())
m = info["machine"]
minutes = info["wall_seconds"] / 60
calls = info.get("invocations") or [info]  # a run_info.json written before invocations were kept: one
later = [c for c in info.get("commits", [info["commit"]]) if c != info["commit"]]
span = (f"{len(calls)} invocations, started {info['started_utc']}" if len(calls) > 1 and info.get("started_utc")
        else f"{len(calls)} invocation" + "s" * (len(calls) > 1))
header = (f"<!-- published by scripts/publish_results.sh from {info['budget']!r} -->\n"
          f"> **Command:** `{info['command']}`  \n"
          f"> **Commit:** `{info['commit']}`{' (with uncommitted changes)' if info['uncommitted_changes'] else ''}"
          + (f"; later invocations at {', '.join(f'`{c}`' for c in later)}" if later else "") + "  \n"
          f"> **Wall time:** {minutes:.1f} min ({info['jobs']} runs at a time; {span}; finished "
          f"{info['finished_utc']}; every invocation in run_info.json)  \n"
          f"> **Machine:** {m['platform']}, {m['processor']}, {m['cpu_count']} CPU cores, Python {m['python']}, "
          f"torch {m['torch']}\n\n")
text = (report / "REPORT.md").read_text().replace("](../simulate/", "](simulate/")
(dest / "REPORT.md").write_text(header + text)
print(f"published {report} -> {dest}/REPORT.md")
PY
