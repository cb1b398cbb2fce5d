"""The paper, transcribed once (Ba et al. 2026, arXiv 2608.27351, the version VERSION of DATE): its settings,
thresholds and reported numbers, for every level. docs/paper.md describes them in words.

Settings (easy setting): ES with N = 32 members, sigma = 1.5e-3, alpha = 2.5e-4 (1/sigma folded in),
z-scoring with eps 1e-8; GRPO with G = 8 samples per prompt, advantage eps 1e-4 (TRL). Table 4's
magnitude thresholds tau; Lemma 1 is claimed where its validity parameter s = (sigma^2 / 2) tr I_x is
small, read here as s <= 0.05. Reported Pass@K values are x100.
"""

from __future__ import annotations

ARXIV, VERSION, DATE = "2608.27351", "v1", "29 August 2026"  # the version transcribed, as the paper gives it

# ----------------------------------------------------------------------------- settings and thresholds
PAPER_POPULATION_SIZE = 32
PAPER_SIGMA = 1.5e-3
PAPER_ALPHA = 2.5e-4
PAPER_NUM_GENERATIONS = 8
ES_ZSCORE_EPS = 1e-8
GRPO_ADVANTAGE_EPS = 1e-4
PAPER_TAUS = (1.0e-3, 1.5e-3, 2.0e-3)
LEMMA1_S_LIMIT = 0.05

# ----------------------------------------------------------------------------- reported numbers
METHODS = ("Base", "GRPO", "ES", "ES->GRPO", "GRPO->ES")

# Table 2, easy setting: average over GSM8K, CSQA, HotpotQA, Countdown, GPQA, MBPP.
# model -> method -> (Pass@1, Pass@16, Pass@32)
TABLE2_EASY = {
    "Qwen2.5-1.5B": {
        "Base": (41.0, 75.4, 80.2),
        "GRPO": (42.9, 75.1, 79.9),
        "ES": (41.5, 76.0, 80.9),
        "ES->GRPO": (42.3, 75.3, 80.0),
        "GRPO->ES": (42.1, 75.0, 79.9),
    },
    "Llama-3.2-3B": {
        "Base": (44.1, 74.0, 78.6),
        "GRPO": (47.1, 72.7, 77.0),
        "ES": (45.9, 75.8, 80.4),
        "ES->GRPO": (46.7, 72.1, 76.5),
        "GRPO->ES": (46.6, 73.8, 78.5),
    },
    "Qwen2.5-7B": {
        "Base": (60.1, 80.3, 83.0),
        "GRPO": (61.0, 79.0, 81.5),
        "ES": (59.6, 80.6, 83.1),
        "ES->GRPO": (60.8, 79.7, 82.0),
        "GRPO->ES": (60.4, 79.6, 82.3),
    },
}

# GSM8K alone, Qwen2.5-1.5B.
GSM8K_QWEN15 = {"Base": (70.3, 94.8, 96.4), "GRPO": (78.1, 93.9, 95.3), "ES": (73.2, 94.9, 96.6)}

# GRPO below the base on both Pass@16 and Pass@32 in this many task-model comparisons.
GRPO_BELOW_BASE = (15, 18)

# Table 3, hard setting, DeepSeek-R1-Distill-Qwen-1.5B, math average (its GRPO is an outside checkpoint).
TABLE3_HARD = {
    "Base": (47.7, 73.5, 77.4),
    "GRPO": (52.9, 74.7, 78.0),
    "ES": (49.9, 75.0, 78.9),
    "ES->GRPO": (52.3, 75.8, 79.2),
    "GRPO->ES": (51.6, 76.2, 78.2),
}

# Table 4: relative L2 drift (x1e-2) of GRPO and ES, and the share of non-zero ES update entries
# with |delta| <= tau for each tau of PAPER_TAUS (percent).
TABLE4_DRIFT = {
    "Qwen2.5-1.5B": {"grpo": 0.0475, "es": 1.933, "ratio": 40.7, "share": (79.11, 92.47, 97.57)},
    "Llama-3.2-3B": {"grpo": 0.0954, "es": 4.185, "ratio": 43.9, "share": (78.08, 92.64, 97.89)},
    "Qwen2.5-7B": {"grpo": 0.0831, "es": 3.664, "ratio": 44.1, "share": (78.41, 93.02, 98.11)},
    "R1-Distill-1.5B": {"grpo": 0.0548, "es": 2.338, "ratio": 42.7, "share": (62.18, 77.61, 87.29)},
}
TABLE4_TAUS = PAPER_TAUS

# Magnitude-thresholded ES at about 78% sparsity: Pass@1 change (points) for the four models above.
THRESHOLDED_PASS1_CHANGE = (-0.35, -0.13, +0.49, +0.17)
THRESHOLDED_SPARSITY = 0.78

# Table 6: smoothed GSM8K training reward after 300 updates by population size N.
TABLE6_POPULATION = {
    "0.5B": {8: 0.4421, 16: 0.4935, 32: 0.5253, 64: 0.5287},
    "1.5B": {8: 0.8276, 16: 0.8387, 32: 0.8449, 64: 0.8438},
    "3B": {8: 0.8901, 16: 0.9001, 32: 0.9004, 64: 0.9031},
}

# Held-out changes (points, Pass@1 / @16 / @32) after training.
HELD_OUT_CHANGE = {
    "GRPO": {"Qwen2.5-1.5B": (0.7, -0.2, -0.1), "Llama-3.2-3B": (2.3, -1.3, -1.6), "Qwen2.5-7B": (0.9, -1.4, -1.6)},
    "ES": {"Qwen2.5-1.5B": (0.0, 0.6, 0.8), "Llama-3.2-3B": (1.4, 2.2, 2.2), "Qwen2.5-7B": (-0.5, 0.3, 0.2)},
}

# Hyperparameters as the paper runs them.
ES_HPARAMS = {
    "population_size": PAPER_POPULATION_SIZE,
    "sigma": PAPER_SIGMA,
    "alpha": PAPER_ALPHA,
    "batch_prompts": 64,
    "member_temperature": 0.0,
}
GRPO_HPARAMS = {
    "num_generations": PAPER_NUM_GENERATIONS,
    "epsilon": 0.2,
    "beta": 0.001,
    "learning_rate": 1e-6,
    "temperature": 1.0,
}
ANTITHETIC_REWARD_CORRELATION = 0.278  # corr of +eps and -eps rewards at sigma = 1e-3, common seed
