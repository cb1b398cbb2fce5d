"""Exact theory of ES populations on toy categorical policies: Lemmas 1-3, Proposition 1, shared metrics.

lemmas.py          the paper's Lemmas 1-3 and Proposition 1 as formulas
symbolic.py        Lemma 1's second-order coefficient derived with sympy, apart from the numeric code
population.py      ES populations theta + sigma eps_i around one policy; Lemma 1 by Monte Carlo
policy.py          what every toy policy shares: input checks, the projected Bernoulli Fisher
categorical.py     the toy categorical policy softmax(A theta + b) over M outcomes, with a verifier
autoregressive.py  a small autoregressive toy: sequences of L tokens, the chain-rule Fisher trace
grpo.py            the GRPO side: its expected update for binary rewards and its entropy change
metrics.py         metrics every level shares (pass@k, maj@k, entropy, JS, ...)
coverage.py        coverage measures: Pass@k grid, Cover@tau, crossing k*, solvability sets, answer diversity
standardize.py     z-scoring a group of rewards: ES member fitness and GRPO group advantages
matched.py         two training curves compared at matched Pass@1 (the reading every level uses)
decisions.py       decision rules every level shares: an interval in, a verdict out
claims.py          the paper's claims, one record each, read by every level
paper.py           the paper transcribed once: its settings and published numbers
budget.py          the cost of one update as the paper counts it, for the bandit and real training
errors.py          the error types every level raises
plots.py           PNG plots of Lemma 1: measured E[JSpol_N] against its prediction
cli.py             `python -m escov.theory`: run the named checks, print them, optionally plot
checks/            the named checks, grouped by topic (checks/__init__.py maps them)
"""
