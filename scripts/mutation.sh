#!/usr/bin/env bash
# Mutation testing: plant one small bug at a time (mutmut: a comparison flipped, a constant changed, an
# argument dropped, ...) in the modules where a silent bug changes a published verdict or reward, and
# run the tests that reach the mutated function; a mutant that survives is a bug no test notices.
# The modules and their tests are set in pyproject.toml [tool.mutmut]; docs/mutation.md lists the
# survivors with a reason for each. Not part of CI (the `mutation` extra installs mutmut).
#
#   bash scripts/mutation.sh                                # every configured module
#   bash scripts/mutation.sh 'llm.tasks.safe_arith.*'       # some modules: mutant-name globs
#   bash scripts/mutation.sh --summary                      # the table of the last run only
#
# It runs niced on all cores (JOBS=2 by default), writes mutants/ (ignored by git; delete it to start
# afresh after the tests change) and ends with the per-module table of scripts/mutation_summary.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if [ "${1:-}" != "--summary" ]; then
  nice -n 10 "$PY" -m mutmut run --max-children "${JOBS:-2}" "$@" >mutants-run.log 2>&1 || {
    echo "mutmut failed; its output is in mutants-run.log" >&2; tail -n 30 mutants-run.log >&2; exit 1; }
fi
"$PY" -m mutmut results --all true >mutants-results.txt
"$PY" scripts/mutation_summary.py mutants-results.txt docs/mutation.md
