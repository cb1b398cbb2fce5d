"""The `[es]` table (`ESConfig`): the settings of ES (llm/es/algorithm.py), and the noise table's sizes."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from escov.theory.paper import PAPER_ALPHA, PAPER_POPULATION_SIZE, PAPER_SIGMA

NOISE_CHUNK = 1 << 20  # elements per noise-table slice of a tensor (the default of es.noise_chunk; llm/es/noise.py)
NOISE_TABLE_SIZE = 1 << 24  # standard normals in ES's noise table (64 MB of fp32 per process and device)


def check_noise_rank(rank, setting: str = "population.noise_rank") -> None:
    """ValueError unless rank is an integer >= 0 (0: full-rank noise); the message names the setting."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"{setting} must be an integer >= 0 (0 = full rank), got {rank!r}")


def check_noise_chunk(chunk) -> None:
    """ValueError unless 1 <= chunk <= NOISE_TABLE_SIZE (a slice of a tensor's noise must fit in the table)."""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or not 1 <= chunk <= NOISE_TABLE_SIZE:
        raise ValueError(f"es.noise_chunk must be an integer in [1, {NOISE_TABLE_SIZE}], got {chunk!r}")


@dataclass
class ESConfig:
    population_size: int = PAPER_POPULATION_SIZE  # N members (antithetic: N/2 directions, each used with + and -)
    sigma: float = PAPER_SIGMA       # perturbation scale
    alpha: float = PAPER_ALPHA       # step size with 1/sigma folded in
    member_temperature: float = 0.0  # 0: greedy member rollouts (paper, easy setting); > 0: sampled
    member_samples: int = 1          # rollouts per prompt per member (1 when greedy)
    antithetic: bool = False         # two-point: pairs +eps, -eps
    zscore: bool = True              # False: z_i = R_i - mean R (centered, not scaled)
    center_scale: float = 1.0        # zscore False: centered rewards times this (alpha rescaled to the z-scored update
                                     # norm)
    param_pattern: str = ""          # regex on parameter names to perturb ("" = all parameters)
    null_control: bool = False       # z replaced by standardized random normals (no reward signal)
    inplace_bf16: bool = False       # the paper code's in-place add / subtract on bf16 engine weights
    noise_chunk: int = NOISE_CHUNK   # elements per noise-table slice (part of the noise's definition)
    tag: str = ""                    # a label, nothing computed: reports name the run's variant es[...,TAG]

    def validate(self) -> None:
        n = self.population_size
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise ValueError(f"es.population_size must be an integer >= 2, got {n!r}")
        if self.antithetic and n % 2:
            raise ValueError(f"es.population_size must be even with es.antithetic, got {n}")
        if self.zscore and self.center_scale != 1.0:
            raise ValueError("es.center_scale rescales centered rewards: it needs es.zscore = false, "
                             f"got {self.center_scale!r}")
        for name in ("sigma", "alpha", "center_scale"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"es.{name} must be a finite number > 0, got {v!r}")
        if not isinstance(self.member_temperature, (int, float)) or not 0 <= self.member_temperature < float("inf"):
            raise ValueError(f"es.member_temperature must be >= 0 (0 = greedy), got {self.member_temperature!r}")
        if isinstance(self.member_samples, bool) or not isinstance(self.member_samples, int) or self.member_samples < 1:
            raise ValueError(f"es.member_samples must be an integer >= 1, got {self.member_samples!r}")
        if self.member_temperature == 0 and self.member_samples != 1:
            raise ValueError("es.member_samples must be 1 with greedy rollouts (member_temperature 0), "
                             f"got {self.member_samples}")
        check_noise_chunk(self.noise_chunk)
        if not isinstance(self.tag, str) or not re.fullmatch(r"[a-z0-9-]*", self.tag):
            raise ValueError(f"es.tag must be lowercase letters, digits and '-', got {self.tag!r}")
        try:
            re.compile(self.param_pattern)
        except re.error as err:
            raise ValueError(f"es.param_pattern is not a valid regular expression: {err}") from None
