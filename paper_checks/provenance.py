"""The code each run trained with: report.json's `provenance` record and its lines in REPORT.md.

Each run directory's inputs.json records the code it was made from (llm/fingerprints.py code_version: the git
commit, whether tracked files differed from it and the hash of that difference). The record:

    run_commits   run name -> its commit (None: the run records none: no inputs.json, or not a git checkout)
    modified      the runs trained with uncommitted changes (their diff hash beside the commit)
    code          the code most runs trained with (commit, and the diff hash when modified)
    flagged       run name -> its code, for every run trained with other code than `code` (another commit, another
                  diff, or none recorded): runs a reader should not pool without knowing why
"""

from __future__ import annotations

from escov.llm.rundir import RunDirError, read_manifest
from escov.paper_checks.rundir import Run


def code_of(run: Run) -> str | None:
    """The run's code as one string: the commit, with ' (modified, diff XXXXXXXX)' when it trained with uncommitted
    changes; None when inputs.json records no commit."""
    try:
        code = (read_manifest(run.path) or {}).get("code") or {}
    except RunDirError:
        return None
    if not code.get("commit"):
        return None
    diff = code.get("diff_sha256")
    return code["commit"] + (f" (modified, diff {diff[:8]})" if code.get("modified") and diff else "")


def provenance(runs: list[Run]) -> dict:
    """The record of the module docstring for these runs."""
    codes = {run.name: code_of(run) for run in runs}
    recorded = [c for c in codes.values() if c is not None]
    main = max(dict.fromkeys(recorded), key=recorded.count) if recorded else None
    return {
        "run_commits": {name: (c.split(" ")[0] if c else None) for name, c in codes.items()},
        "modified": sorted(name for name, c in codes.items() if c and " (modified" in c),
        "code": main,
        "flagged": {name: c for name, c in codes.items() if c != main},
    }


def render(record: dict | None) -> list[str]:
    """REPORT.md's lines on the code the runs trained with ([] without runs)."""
    if not record or not record["run_commits"]:
        return []
    runs = len(record["run_commits"])
    if record["code"] is None:
        return [f"**Code.** None of the {runs} runs records the commit it trained with (inputs.json).", ""]
    lines = [f"**Code.** {runs - len(record['flagged'])} of {runs} runs trained with `{record['code']}` (inputs.json)."]
    if record["flagged"]:
        lines[0] += " Trained with other code (do not pool them without knowing why):"
        lines += [""] + [f"- `{name}`: `{code or 'not recorded'}`" for name, code in record["flagged"].items()]
    return lines + [""]
