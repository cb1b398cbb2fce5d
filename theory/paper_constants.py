"""The paper's settings and thresholds (docs/paper.md), defined once for every level.

ES (easy setting): N = 32 members, sigma = 1.5e-3, alpha = 2.5e-4 (1/sigma folded in), z-scoring
with eps 1e-8; GRPO: G = 8 samples per prompt, advantage eps 1e-4 (TRL). Table 4's magnitude
thresholds tau; Lemma 1 is claimed where its validity parameter s = (sigma^2 / 2) tr I_x is small,
read here as s <= 0.05.
"""
PAPER_POPULATION_SIZE = 32
PAPER_SIGMA = 1.5e-3
PAPER_ALPHA = 2.5e-4
PAPER_NUM_GENERATIONS = 8
ES_ZSCORE_EPS = 1e-8
GRPO_ADVANTAGE_EPS = 1e-4
PAPER_TAUS = (1.0e-3, 1.5e-3, 2.0e-3)
LEMMA1_S_LIMIT = 0.05
