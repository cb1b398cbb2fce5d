"""The paper's experiments as bandit analogues. Each module has NAME, TITLE and
run(seeds, out, scale, progress) -> a JSON-able summary: for every claim the paper's statement,
the analogue's numbers (mean and spread over seeds), and a verdict computed from the data;
it also writes out/NAME.png."""
from . import ablations, drift_sparsity, entropy_collapse, lemmas_along_training, pareto, passk_vs_base

EXPERIMENTS = {m.NAME: m for m in (entropy_collapse, passk_vs_base, pareto, ablations, drift_sparsity,
                                   lemmas_along_training)}
