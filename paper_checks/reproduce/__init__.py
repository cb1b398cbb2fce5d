"""The experiments behind the verdicts: the budgets, the base models, the job pool, the training runs, the sweep,
the pilot, the premise's control and the Lemma 1 grid's measurement, and their command lines. It sits on the floor
above the verdicts (paper_checks/), which never import it: a report is built from the run directories it writes."""
