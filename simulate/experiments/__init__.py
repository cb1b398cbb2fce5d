"""The paper's experiments as bandit analogues. Each module has NAME, TITLE and
run(seeds, out, scale, progress) -> a JSON-able summary: for every claim the paper's statement,
the analogue's numbers (mean and spread over seeds), and a verdict computed from the data;
it also writes out/NAME.png.

    entropy_collapse.py       1: does GRPO's entropy collapse while ES's does not, and what of Pass@K?
    passk_vs_base.py          2: how often GRPO ends below the base on Pass@16 / Pass@32, and ES
    pareto.py                 3: the Pass@1-Pass@32 Pareto front of GRPO, ES, GRPO->ES and ES->GRPO
    ablations.py              4: ablations of ES (and one of GRPO) on the default task, equal update counts
    drift_sparsity.py         5: relative drift and functional sparsity of ES against GRPO, beside a null
    lemmas_along_training.py  6: Lemmas 1-3 and Proposition 1 tracked along ES training on the bandit
    common.py                 what every experiment shares: task, hyperparameters, statistics, verdicts, plots
"""

from . import ablations, drift_sparsity, entropy_collapse, lemmas_along_training, pareto, passk_vs_base

EXPERIMENTS = {
    m.NAME: m for m in (entropy_collapse, passk_vs_base, pareto, ablations, drift_sparsity, lemmas_along_training)
}
