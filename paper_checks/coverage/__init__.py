"""`escov coverage`: coverage measured the way the RL-narrowing literature measures it, for any trainer's completions.

reader.py (formats) -> sources.py (defaults, scoring.py's verifiers) -> table.py (the checked table, as counts) ->
measure.py (theory/coverage.py's estimators with problem-bootstrap intervals) -> render.py (text), plots.py (PNG);
cli.py is the command. docs/coverage.md describes the measures and the formats read.
"""
