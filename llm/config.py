"""Every setting of a training run: dataclasses filled from defaults < a TOML file < command-line flags.

Top-level keys (`TrainConfig`) are shared by every algorithm; the `[es]` table (`ESConfig`) holds the
settings of ES (llm/es/algorithm.py), `[grpo]` (`GRPOConfig`) those of GRPO (llm/grpo.py), and
`[population]` (`PopulationConfig`) how ES evaluates its members (llm/es/options.py: one
population-batched generate, low-rank noise; which strategy evaluates them and its rules on the
settings: llm/member_options.py). A flag has the key's name: `--steps 40`,
`--es.sigma 1e-3`, `--grpo.beta 0.0`, `--population.batched true`, `--workers 2`. A key or flag that
does not exist is an error; so is a value of the wrong type or outside its range.

Each field's description is the comment on its line (`name: type = default  # description`, the
convention tyro reads too); `--help` (llm/settings_help.py) shows it with the default, so every field
needs one. This module imports no torch: `llm train --help` answers without it.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from escov.llm.device import check_device_spec
from escov.llm.grpo_losses import LOSSES
from escov.llm.grpo_variant_settings import check_variant_settings
from escov.llm.member_options import MEMBER_MODES, DistributedConfig, check_options
from escov.llm.tasks.data_files import parse_fields, train_records_of
from escov.llm.tasks.reasoning_format import PROMPT_STYLES
from escov.llm.tasks import TASKS
from escov.llm.tasks.reward_function import check_alone, check_path, check_weights
from escov.llm.tasks.rewards import REWARDS, check_reward
from escov.llm.tracking import REPORT_TO
from escov.theory.paper import PAPER_ALPHA, PAPER_POPULATION_SIZE, PAPER_SIGMA

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, packaged as tomli (a dependency there)
    import tomli as tomllib

ALGOS = ("es", "grpo", "es-grpo", "grpo-es")
BUDGETS = ("flops", "responses")
ENGINES = ("hf", "vllm")
DTYPES = ("float32", "bfloat16", "float16")
SECTIONS = ("es", "grpo", "population")
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


# ----------------------------------------------------------------------------- [es]: llm/es/algorithm.py

@dataclass
class ESConfig:
    population_size: int = PAPER_POPULATION_SIZE  # N members (antithetic: N/2 directions, each used with + and -)
    sigma: float = PAPER_SIGMA       # perturbation scale
    alpha: float = PAPER_ALPHA       # step size with 1/sigma folded in
    member_temperature: float = 0.0  # 0: greedy member rollouts (paper, easy setting); > 0: sampled
    member_samples: int = 1          # rollouts per prompt per member (1 when greedy)
    antithetic: bool = False         # two-point: pairs +eps, -eps
    zscore: bool = True              # False: z_i = R_i - mean R (centered, not scaled)
    center_scale: float = 1.0        # zscore False: centered rewards times this (alpha rescaled to the z-scored update norm)
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
            raise ValueError(f"es.center_scale rescales centered rewards: it needs es.zscore = false, got {self.center_scale!r}")
        for name in ("sigma", "alpha", "center_scale"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"es.{name} must be a finite number > 0, got {v!r}")
        if not isinstance(self.member_temperature, (int, float)) or not 0 <= self.member_temperature < float("inf"):
            raise ValueError(f"es.member_temperature must be >= 0 (0 = greedy), got {self.member_temperature!r}")
        if isinstance(self.member_samples, bool) or not isinstance(self.member_samples, int) or self.member_samples < 1:
            raise ValueError(f"es.member_samples must be an integer >= 1, got {self.member_samples!r}")
        if self.member_temperature == 0 and self.member_samples != 1:
            raise ValueError(f"es.member_samples must be 1 with greedy rollouts (member_temperature 0), got {self.member_samples}")
        check_noise_chunk(self.noise_chunk)
        if not isinstance(self.tag, str) or not re.fullmatch(r"[a-z0-9-]*", self.tag):
            raise ValueError(f"es.tag must be lowercase letters, digits and '-', got {self.tag!r}")
        try:
            re.compile(self.param_pattern)
        except re.error as err:
            raise ValueError(f"es.param_pattern is not a valid regular expression: {err}") from None


# ----------------------------------------------------------------------------- [grpo]: llm/grpo.py

SCALE_REWARDS = ("group", "batch", "none")  # what the centred rewards are divided by (TRL's names)
# scale_rewards's former true / false (TRL takes both)
SCALE_REWARDS_BOOL = {True: "group", False: "none", "true": "group", "false": "none"}
# llm/grpo.py lr_factor: transformers' schedules of these names
LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")


@dataclass
class GRPOConfig:
    num_generations: int = 8         # G completions per prompt (paper 8)
    learning_rate: float = 1e-6      # AdamW (paper 1e-6); typical: 1e-6 to 1e-5 for 1B-7B checkpoints (1e-5 to 1e-4 with LoRA), 1e-4 to 1e-2 for the tiny model
    beta: float = 0.001              # KL penalty to the frozen reference (paper 0.001); 0: no reference
    epsilon: float = 0.2             # PPO clip range (paper 0.2)
    num_iterations: int = 1          # mu: optimizer steps per batch of rollouts
    loss_type: str = "grpo"          # grpo: mean over completions of their token mean | bnpo, dapo: token mean of the batch | dr_grpo: token sum / (completions x max_completion_length) | cispo, sapo, clip_cov, kl_cov
    scale_rewards: str = "group"     # advantages (r - group mean) divided by the std of the group | batch | none (true = group, false = none)
    max_grad_norm: float = 1.0       # gradient clipping (0: none)
    weight_decay: float = 0.0        # AdamW weight decay
    micro_batch_size: int = 64       # sequences per forward/backward (memory only)
    # ---- TRL's GRPO variants (llm/grpo.py); the defaults keep the settings above as they were ----
    epsilon_high: float = 0.0        # upper clip: ratio clipped to [1 - epsilon, 1 + epsilon_high] (DAPO: 0.28); 0: epsilon
    mask_truncated_completions: bool = False  # completions cut at max_completion_length get no loss
    top_p: float = 1.0               # rollouts: nucleus sampling (1: off)
    top_k: int = 0                   # rollouts: sample among the k most likely tokens (0: off)
    min_p: float = 0.0               # rollouts: drop tokens below min_p x the top token's probability (0: off)
    lr_scheduler_type: str = "constant"  # constant | constant_with_warmup | linear (to 0) | cosine (to 0), over the phase's optimizer steps
    warmup_ratio: float = 0.0        # linear warmup from 0 over this share of the phase's optimizer steps (rounded up)
    warmup_steps: int = 0            # linear warmup over this many optimizer steps (overrides warmup_ratio)
    use_peft: bool = False           # train LoRA adapters (peft) instead of all weights; checkpoints hold the merged weights
    lora_r: int = 16                 # LoRA rank
    lora_alpha: int = 32             # LoRA scale alpha (update B A x alpha / r)
    lora_dropout: float = 0.05       # dropout on the LoRA branch's input during the update
    lora_target_modules: str = ""    # comma-separated module names ("q_proj,v_proj"); "": peft's default for the architecture
    gradient_checkpointing: bool = False  # recompute activations in the backward pass (less memory, same gradient)
    # ---- coverage-keeping variants (docs/training.md; names and defaults: TRL 1.16, else verl 0.9) ----
    entropy_coef: float = 0.0        # TRL: loss - entropy_coef x mean token entropy (entropy bonus); 0: none
    use_adaptive_entropy: bool = False  # TRL (Skywork-OR1): entropy_coef +- entropy_coef_delta each optimizer step
    entropy_coef_min: float = 0.0    # TRL, adaptive entropy: lower bound of the coefficient
    entropy_coef_max: float = 1.0    # TRL, adaptive entropy: upper bound of the coefficient
    entropy_coef_delta: float = 0.005  # TRL, adaptive entropy: the coefficient's step
    entropy_target: float = 0.2      # TRL, adaptive entropy: the bonus acts while mean token entropy (nats) <= this
    top_entropy_quantile: float = 1.0  # TRL (80/20 rule): only this top share of tokens by entropy gets a loss
    importance_sampling_level: str = "token"  # TRL: token | sequence (GSPO: one geometric-mean ratio per completion)
    sapo_temperature_pos: float = 1.0  # TRL, loss_type sapo: soft-gate temperature for advantages > 0
    sapo_temperature_neg: float = 1.05  # TRL, loss_type sapo: soft-gate temperature for advantages <= 0
    clip_cov_ratio: float = 0.0002   # verl, loss_type clip_cov: share of tokens whose gradient is cut
    clip_cov_lb: float = 1.0         # verl, loss_type clip_cov: covariance lower bound of the candidates
    clip_cov_ub: float = 5.0         # verl, loss_type clip_cov: covariance upper bound of the candidates
    kl_cov_ratio: float = 0.0002     # verl, loss_type kl_cov: share of tokens (largest covariance) KL-penalized
    ppo_kl_coef: float = 1.0         # verl, loss_type kl_cov: weight of |log pi - log pi_old| on those tokens
    adv_estimator: str = "grpo"      # grpo | grpo_passk (verl: the best gets r_max - r_second) | passk_analytic | pkpo
    pass_k: int = 4                  # adv_estimator passk_analytic (Chen et al. 2025), pkpo (PKPO): the k of Pass@k
    zero_success_gating: bool = False  # update only on prompts never solved at an earlier step of the phase
    outcome_bonus_coef: float = 0.0  # outcome-based exploration (Song et al. 2025): reward + c / sqrt(n(answer)); 0: off

    def __post_init__(self) -> None:
        if isinstance(self.scale_rewards, (bool, str)):
            self.scale_rewards = SCALE_REWARDS_BOOL.get(self.scale_rewards, self.scale_rewards)

    @property
    def clip_high(self) -> float:
        """The upper clip range: epsilon_high, or epsilon when it is 0."""
        return self.epsilon_high or self.epsilon

    def validate(self) -> None:
        for name in ("num_generations", "num_iterations", "micro_batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"grpo.{name} must be an integer >= 1, got {v!r}")
        if self.num_generations < 2:
            raise ValueError(f"grpo.num_generations must be >= 2 (a group), got {self.num_generations}")
        for name, low_open in (("learning_rate", True), ("epsilon", True), ("beta", False),
                               ("max_grad_norm", False), ("weight_decay", False)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0 or (low_open and v == 0):
                raise ValueError(f"grpo.{name} must be a finite number {'> 0' if low_open else '>= 0'}, got {v!r}")
        if self.loss_type not in LOSSES:
            raise ValueError(f"grpo.loss_type must be one of {list(LOSSES)}, got {self.loss_type!r}")
        for name, choices in (("scale_rewards", SCALE_REWARDS), ("lr_scheduler_type", LR_SCHEDULERS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"grpo.{name} must be one of {list(choices)}, got {getattr(self, name)!r}")
        for name, low, high in (("epsilon_high", 0.0, math.inf), ("top_p", 0.0, 1.0), ("min_p", 0.0, 1.0),
                                ("warmup_ratio", 0.0, 1.0), ("lora_dropout", 0.0, 1.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high \
                    or (name == "top_p" and v == 0):
                where = ">= 0" if high == math.inf else f"in {'(' if name == 'top_p' else '['}{low:g}, {high:g}]"
                raise ValueError(f"grpo.{name} must be a finite number {where}, got {v!r}")
        for name, low in (("top_k", 0), ("warmup_steps", 0), ("lora_r", 1), ("lora_alpha", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"grpo.{name} must be an integer >= {low}, got {v!r}")
        if self.lr_scheduler_type == "constant" and (self.warmup_ratio or self.warmup_steps):
            raise ValueError("grpo.warmup_ratio / grpo.warmup_steps need grpo.lr_scheduler_type constant_with_warmup, "
                             "linear or cosine (constant has no warmup, as in transformers)")
        for name in ("mask_truncated_completions", "use_peft", "gradient_checkpointing"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"grpo.{name} must be true or false, got {getattr(self, name)!r}")
        targets = self.lora_target_modules
        if not isinstance(targets, str) or not re.fullmatch(r"([\w.]+(,[\w.]+)*)?", targets):
            raise ValueError(f"grpo.lora_target_modules must be comma-separated module names, got {targets!r}")
        check_variant_settings(self)  # llm/grpo_variant_settings.py


# ----------------------------------------------------------------------------- [population]: llm/es/options.py

LOWRANK_LAYOUTS = ("auto", "factored", "stacked")
STACK_AUTO_BYTES = 256 * 2 ** 20  # "auto" stacks low-rank members while their matrices take at most this


@dataclass
class PopulationConfig:
    batched: bool = False     # all members in one batched generate (HF engine); False: member by member
    noise_rank: int = 0       # 0: full-rank noise; r > 0: low-rank E = A B^T / sqrt(r) for weight matrices
    max_rows: int = 4096      # rows per batched forward (whole members per block)
    lowrank_layout: str = "auto"  # low rank, batched: factored x W^T + (x B) A^T | stacked W_m | auto
    keep_noise_mb: int = 1024  # noise runs read for the members, kept for the update (0: read again from the seeds)
    members: str = "auto"     # the member-evaluation strategy: auto (Ray with workers, batched_hf when batched, else one_by_one) | one_by_one | batched_hf | ray | vllm_lora | vllm_inplace

    def validate(self) -> None:
        if not isinstance(self.batched, bool):
            raise ValueError(f"population.batched must be true or false, got {self.batched!r}")
        check_noise_rank(self.noise_rank)
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ValueError(f"population.max_rows must be an integer >= 1, got {self.max_rows!r}")
        if isinstance(self.keep_noise_mb, bool) or not isinstance(self.keep_noise_mb, int) or self.keep_noise_mb < 0:
            raise ValueError(f"population.keep_noise_mb must be an integer >= 0, got {self.keep_noise_mb!r}")
        if self.lowrank_layout not in LOWRANK_LAYOUTS:
            raise ValueError(f"population.lowrank_layout must be one of {list(LOWRANK_LAYOUTS)}, got {self.lowrank_layout!r}")
        if self.members not in MEMBER_MODES:
            raise ValueError(f"population.members must be one of {list(MEMBER_MODES)}, got {self.members!r}")

    @property
    def plain(self) -> bool:
        """Member by member with full-rank noise: ES exactly as the paper's loop, no noise kept."""
        return not self.batched and not self.noise_rank

    def factored(self, members: int, matrix_shapes: list[tuple[int, ...]], dtype) -> bool:
        """Whether low-rank members are applied factored (see lowrank_layout)."""
        if self.lowrank_layout != "auto":
            return self.lowrank_layout == "factored"
        stacked = members * sum(math.prod(s) for s in matrix_shapes) * dtype.itemsize
        return stacked > STACK_AUTO_BYTES


# ----------------------------------------------------------------------------- the run's settings


@dataclass
class TrainConfig:
    algo: str = "es"                 # es | grpo | es-grpo (ES then GRPO) | grpo-es
    model: str = ""                  # base model directory (save_pretrained format)
    task: str = "countdown"          # countdown | countdown3 | arithmetic | gsm8k | deepscaler (llm/tasks/)
    data: str = ""                   # train data file (.json/.jsonl/.parquet; llm/tasks/data_files.py); "": generated problems
    test_data: str = ""              # test data file
    data_split: str = "files"        # files (data = train, test_data = test) | paper (data: first 200 train, rest test) | first-N
    data_fields: str = ""            # the files' column names where they differ: "question=prompt,answer=solution"
    prompt_style: str = "plain"      # plain | instruct | paper (llm/tasks/reasoning_format.py)
    reward: str = "escov"            # escov | es-at-scale-countdown | paper-gsm8k (llm/tasks/rewards.py)
    format_reward: float = 0.0       # reward: escov: reward of a well-formed wrong answer
    # ---- reward functions and user data (llm/tasks/reward_function.py; rules in check_reward_settings) ----
    reward_function: tuple[str, ...] = ()  # "module:function" / "file.py:function", TRL's signature or verl's; repeat for several
    reward_weights: tuple[float, ...] = ()  # weight of each reward function (default 1 each); repeat the flag
    out: str = ""                    # run directory
    seed: int = 0                    # every random draw of the run derives from it (sampling, noise, batches)
    steps: int = 40                  # budget in GRPO steps; ES runs steps x cost(GRPO step) / cost(ES step) iterations (see below)
    switch_step: int = 0             # es-grpo / grpo-es: budget (GRPO steps) spent in the first phase
    budget: str = "flops"            # flops (FLOPs_ES = FLOPs_GRPO when N = 4G) | responses (sampled responses)
    batch_size: int = 16             # prompts per step (paper: 64)
    train_pool: int = 512            # size of the training prompt pool the batches are drawn from
    temperature: float = 1.0         # sampling temperature: GRPO rollouts, per-step metrics, the Lemma 1 probe
    max_completion_length: int = 24  # new tokens per completion
    truncate_prompts: bool = False   # prompts over the context: false stops at load, true keeps their last tokens
    engine: str = "hf"               # hf | vllm
    dtype: str = "float32"           # engine weights; trainers keep fp32 master weights
    threads: int = 2                 # torch CPU threads (part of the config: results depend on it)
    checkpoint_every: int = 10       # C: checkpoint every C steps (and at the end)
    checkpoint_dense: int = 0        # D: also checkpoint after each of the first D steps (where Pass@1 moves fast)
    probe: bool = True               # the Lemma 1 probe of the center (probe.json); false: none
    probe_every: int = 0             # E: Lemma 1 probe of the center every E steps (0: only before and after)
    step_samples: int = 4            # ES: samples per batch prompt from the center for per-step metrics
    probe_prompts: int = 4           # population: fixed probe prompts (test split)
    probe_members: int = 8           # population: members theta + sigma eps_i
    probe_samples: int = 8           # population: samples per member per probe prompt
    probe_center_samples: int = 16   # population: samples from the center (Fisher trace, center Pass@K)
    eval_problems: int = 64          # final evaluation: test problems of the task
    eval_samples: int = 32           # samples per problem (paper: 32)
    eval_temperature: float = 1.0    # paper: 0.6; the tiny model is trained at 1.0
    eval_ks: tuple[int, ...] = (1, 16, 32)  # k of Pass@k and Maj@k in the evaluations (each <= eval_samples)
    heldout_task: str = "arithmetic"  # forgetting: evaluated before and after ("" to skip)
    heldout_problems: int = 64       # forgetting: test problems of heldout_task
    threshold_keep: tuple[float, ...] = (5.0, 22.0, 50.0)  # % of update entries kept in thresholded checkpoints
    workers: int = 1                 # ES: Ray actors sharing the population (1: no Ray)
    ray_address: str = ""            # ES: a Ray cluster ("host:port", "ray://host:port", "auto"); "": local
    # ---- tracking and kept completions (llm/tracking.py) ----
    report_to: str = "none"          # none | tensorboard | wandb | trackio: where metrics go besides the run directory (offline)
    completions_kept: int = 8        # prompts whose first completion (with its reward) completions.jsonl keeps per evaluation (0: none)
    completions_every: int = 0       # also keep the first completions_kept of the training batch every N steps (0: only at evaluations)
    # ---- device (llm/device.py) ----
    device: str = "auto"             # auto (CUDA when available) | cpu | cuda | cuda:N; config.json records the resolved one
    gpu_memory_utilization: float = 0.9  # engine = vllm on a GPU: its share of GPU memory (lower it to colocate a GRPO policy)
    es: ESConfig = field(default_factory=ESConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)

    def __post_init__(self) -> None:
        normalize_reward_settings(self)
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first setting that is out of range."""
        _choice("algo", self.algo, ALGOS)
        _choice("budget", self.budget, BUDGETS)
        _choice("engine", self.engine, ENGINES)
        _choice("dtype", self.dtype, DTYPES)
        for name in ("steps", "batch_size", "train_pool", "max_completion_length", "threads", "checkpoint_every",
                     "step_samples", "probe_prompts", "probe_members", "probe_samples", "probe_center_samples",
                     "eval_problems", "eval_samples", "heldout_problems"):
            _int_at_least(name, getattr(self, name), 1)
        _int_at_least("seed", self.seed, 0)
        _int_at_least("switch_step", self.switch_step, 0)
        _int_at_least("probe_every", self.probe_every, 0)
        if self.probe_every and not self.probe:
            raise ValueError(f"probe_every = {self.probe_every} needs probe = true")
        _int_at_least("checkpoint_dense", self.checkpoint_dense, 0)
        if not isinstance(self.truncate_prompts, bool):
            raise ValueError(f"truncate_prompts must be true or false, got {self.truncate_prompts!r}")
        _choice("report_to", self.report_to, REPORT_TO)
        _int_at_least("completions_kept", self.completions_kept, 0)
        _int_at_least("completions_every", self.completions_every, 0)
        if self.algo in ("es-grpo", "grpo-es") and not 0 < self.switch_step < self.steps:
            raise ValueError(f"switch_step must lie in (0, steps={self.steps}) for algo {self.algo}, got {self.switch_step}")
        if self.batch_size > self.train_pool:
            raise ValueError(f"batch_size must be <= train_pool ({self.train_pool}), got {self.batch_size}")
        _choice("prompt_style", self.prompt_style, PROMPT_STYLES)
        uses_functions = check_reward_settings(self)  # reward functions replace the reward convention
        if not uses_functions and self.task in TASKS:
            check_reward(self.reward, self.task, self.format_reward)
        elif not uses_functions:  # a task object given to llm.train.train may carry its own name: the convention's rules
            _choice("reward", self.reward, tuple(REWARDS))
            check_reward(self.reward, REWARDS[self.reward][0], self.format_reward)
        train_records_of(self.data_split)
        parse_fields(self.data_fields)
        for name in ("data", "test_data"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a file path (a string), got {getattr(self, name)!r}")
        _positive("temperature", self.temperature)
        _positive("eval_temperature", self.eval_temperature)
        if not self.eval_ks or any(not isinstance(k, int) or k < 1 or k > self.eval_samples for k in self.eval_ks):
            raise ValueError(f"eval_ks must be integers in [1, eval_samples={self.eval_samples}], got {self.eval_ks}")
        if any(not 0 < q <= 100 for q in self.threshold_keep):
            raise ValueError(f"threshold_keep must hold percentages in (0, 100], got {self.threshold_keep}")
        _int_at_least("workers", self.workers, 1)
        if not isinstance(self.ray_address, str):
            raise ValueError(f"ray_address must be a string, got {self.ray_address!r}")
        check_device_spec(self.device)
        if isinstance(self.gpu_memory_utilization, bool) or not isinstance(self.gpu_memory_utilization, (int, float)) \
                or not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must lie in (0, 1], got {self.gpu_memory_utilization!r}")
        self.grpo.validate()
        check_options(self.es, self.population, self.engine, self.distributed())  # llm/member_options.py

    def task_kwargs(self) -> dict[str, Any]:
        """The settings that shape the task (data files, prompt style, reward, reward function), for llm.tasks.get_task."""
        given = {"data": self.data or None, "test_data": self.test_data or None, "data_split": self.data_split,
                 "fields": parse_fields(self.data_fields), "prompt_style": self.prompt_style, "reward": self.reward,
                 "format_reward": self.format_reward, "reward_function": list(self.reward_function),
                 "reward_weights": list(self.reward_weights)}
        defaults = {"data": None, "test_data": None, "data_split": "files", "fields": None, "prompt_style": "plain",
                    "reward": "escov", "format_reward": 0.0, "reward_function": [], "reward_weights": []}
        return {k: v for k, v in given.items() if v != defaults[k]}

    def make_task(self):
        """The run's task, built from its settings (data files, split, prompt style, reward): the one way
        train, curve, evaluation and the reproduction build it."""
        from escov.llm.tasks import get_task

        return get_task(self.task, **self.task_kwargs())

    def distributed(self) -> DistributedConfig | None:
        """The Ray actors that evaluate the ES population (workers > 1 or a cluster address), each with
        `threads` torch threads on as many Ray CPUs (and one GPU of its own when the run's device is CUDA);
        None when ES runs in this process."""
        if self.workers == 1 and not self.ray_address:
            return None
        return DistributedConfig(workers=self.workers, address=self.ray_address, cpus_per_worker=float(self.threads),
                                 threads_per_worker=self.threads,
                                 gpus_per_worker=1.0 if self.device.startswith("cuda") else 0.0)  # one engine per GPU

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> "TrainConfig":
        """Build from nested dicts (TOML tables / config.json); unknown keys and bad values raise
        ValueError, its message starting with the source."""
        try:
            data = user_data_defaults(_renamed(_table(data, source), source))
            kwargs = _known(cls, data, source, sections=SECTIONS)
            if "population" in data:
                kwargs["population"] = PopulationConfig(**_known(PopulationConfig, _table(data["population"], f"{source}: population"),
                                                                 f"{source}: [population]"))
            if "es" in data:
                kwargs["es"] = ESConfig(**_known(ESConfig, _table(data["es"], f"{source}: es"), f"{source}: [es]"))
            if "grpo" in data:
                grpo = {k: SCALE_REWARDS_BOOL[v] if k == "scale_rewards" and isinstance(v, bool) else v
                        for k, v in _table(data["grpo"], f"{source}: grpo").items()}
                kwargs["grpo"] = GRPOConfig(**_known(GRPOConfig, grpo, f"{source}: [grpo]"))
            return cls(**kwargs)
        except ValueError as err:
            if str(err).startswith(source):
                raise
            raise ValueError(f"{source}: {err}") from None


# settings renamed so that a name says one thing (old name -> new name); config files and run
# directories written with the old name still read
RENAMED = {"population_every": "probe_every"}  # the Lemma 1 probe, not the ES population


def _renamed(data: dict, source: str) -> dict:
    """data with renamed settings under their new names (both given: an error naming them)."""
    for old, new in RENAMED.items():
        if old in data:
            if new in data:
                raise ValueError(f"{source}: {old!r} is the old name of {new!r}; give only {new!r}")
            data = {(new if k == old else k): v for k, v in data.items()}
    return data


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def _int_at_least(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _table(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a table of settings, got {value!r}")
    return value


def _known(cls, data: dict, source: str, sections: tuple[str, ...] = ()) -> dict:
    """The entries of data that are fields of cls (sections excluded), with types coerced; unknown -> error."""
    names = {f.name: f for f in fields(cls)}
    out = {}
    for key, value in data.items():
        if key in sections:
            continue
        if key not in names:
            raise ValueError(f"{source}: unknown setting {key!r}; known settings: {sorted(n for n in names if n not in sections)}")
        out[key] = _coerce(key, value, names[key].type)
    return out


def _coerce(key: str, value: Any, typ: str) -> Any:
    """Check a value against the field's annotated type (annotations are strings here)."""
    if typ.startswith("tuple"):
        inner = "int" if "int" in typ else "str" if "str" in typ else "float"
        if inner == "str" and isinstance(value, str):  # one entry given alone: reward_function = "m:f"
            value = [value] if value else []
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be a list, got {value!r}")
        return tuple(_coerce(key, v, inner) for v in value)
    if typ == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} must be an integer, got {value!r}")
        return value
    if typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key} must be a number, got {value!r}")
        return float(value)
    if typ == "str":
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a string, got {value!r}")
        return value
    raise TypeError(f"unsupported field type {typ} for {key}")


# ---------------------------------------------------------------------------- reward functions, user data, flags

REPEATED_FLAGS = {"reward_function": "MODULE:FUNCTION", "reward_weights": "FLOAT"}  # flag -> metavar; each use adds one
# the paper's measurements, off by default on the user's own data (task "prompts"): the Lemma 1 probe,
# the held-out arithmetic task and the thresholded-checkpoint evaluations; give the keys to have them
USER_DATA_DEFAULTS = {"probe": False, "heldout_task": "", "threshold_keep": ()}
# settings that only one algorithm reads. Every run reads es.sigma and es.param_pattern (the Lemma 1
# probe's) and es.alpha (the update analysis's unit); grpo.num_generations and grpo.num_iterations
# price a GRPO step, which sets an ES run's iterations under the budget (llm/schedules.py)
ES_ONLY = ("workers", "ray_address", "step_samples", "es.population_size", "es.member_temperature", "es.member_samples",
           "es.antithetic", "es.zscore", "es.center_scale", "es.null_control", "es.inplace_bf16", "es.noise_chunk")
ES_ONLY_TABLES = ("population.",)
GRPO_ONLY_TABLES = ("grpo.",)
GRPO_READ_BY_ES = ("grpo.num_generations", "grpo.num_iterations")


def normalize_reward_settings(cfg: "TrainConfig") -> None:
    """reward_function and reward_weights as tuples: one entry may be given alone, and a function given as a
    callable is recorded by its import path (config.json keeps paths; resume imports them again)."""
    from escov.llm.tasks.reward_function import as_list, import_path

    cfg.reward_function = tuple(f if isinstance(f, str) else import_path(f) for f in as_list(cfg.reward_function))
    weights = cfg.reward_weights
    cfg.reward_weights = tuple(weights) if isinstance(weights, (list, tuple)) else (weights,)


def check_reward_settings(cfg: "TrainConfig") -> bool:
    """ValueError for a bad reward_function / reward_weights, or a prompts task without a function;
    True when reward functions replace the reward convention."""
    for path in cfg.reward_function:
        check_path(path)
    check_weights(list(cfg.reward_function), list(cfg.reward_weights))
    if cfg.reward_function or cfg.task == "prompts":
        check_alone(list(cfg.reward_function), cfg.reward, cfg.format_reward)
        if not cfg.reward_function:
            raise ValueError("task 'prompts' needs reward_function = 'module:function' "
                             "(--reward_function my_rewards:accuracy)")
        return True
    return False


def user_data_defaults(data: dict) -> dict:
    """data with the paper's measurements off (USER_DATA_DEFAULTS) where task is "prompts" and they are not given."""
    if data.get("task") != "prompts":
        return data
    return {**USER_DATA_DEFAULTS, **data}


def flag_applies(name: str, algo: str) -> bool:
    """Whether a run of `algo` reads the setting `name` ("workers", "es.sigma", ...); schedules read every one."""
    if algo == "grpo":
        return name not in ES_ONLY and not name.startswith(ES_ONLY_TABLES)
    if algo == "es":
        return not name.startswith(GRPO_ONLY_TABLES) or name in GRPO_READ_BY_ES
    return True


def check_flags_apply(cfg: "TrainConfig", given: set[str]) -> None:
    """ValueError (one line) for a flag the run's algorithm never reads: ES's with algo grpo, GRPO's with algo es."""
    unused = sorted(name for name in given if not flag_applies(name, cfg.algo))
    if unused:
        other = "es" if cfg.algo == "grpo" else "grpo"
        raise ValueError(f"{', '.join('--' + n for n in unused)} {'does' if len(unused) == 1 else 'do'} nothing with "
                         f"--algo {cfg.algo}: {'it is' if len(unused) == 1 else 'they are'} read only by "
                         f"--algo {other} "
                         f"(and es-grpo, grpo-es); drop {'it' if len(unused) == 1 else 'them'}")


# ----------------------------------------------------------------------------- command line

def _parse_flag(text: str, typ: str) -> Any:
    """Turn a flag's text into the field's type (lists are comma separated; bools are true/false)."""
    if typ.startswith("tuple"):
        inner = "int" if "int" in typ else "str" if "str" in typ else "float"
        return tuple(_parse_flag(t.strip(), inner) for t in text.split(",") if t.strip())
    if typ == "bool":
        if text.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    if typ == "int":
        return int(text)
    if typ == "float":
        return float(text)
    return text


def _setting_fields() -> list[tuple[str, Any]]:
    """(flag name, field) of every setting: `steps`, ..., `es.sigma`, ..., `grpo.beta`, ..., `population.batched`"""
    tables = (("", TrainConfig), ("es.", ESConfig), ("grpo.", GRPOConfig), ("population.", PopulationConfig))
    return [(prefix + f.name, f) for prefix, cls in tables for f in fields(cls) if f.name not in SECTIONS]


def setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (those not left at None); a repeated flag (REPEATED_FLAGS) gives all its values."""
    given = {name: getattr(args, name) for name, _ in _setting_fields() if getattr(args, name, None) is not None}
    for name in REPEATED_FLAGS:
        if name in given:
            given[name] = tuple(v for values in given[name] for v in values)
    return given


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """defaults < --config TOML < flags."""
    data: dict[str, Any] = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise ValueError(f"--config: no such file {path}")
        from escov.llm.rundir import read_text

        try:
            data = tomllib.loads(read_text(path))
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
    for key, value in setting_flags(args).items():
        if "." in key:
            section, name = key.split(".", 1)
            data.setdefault(section, {})[name] = value
        else:
            data[key] = value
    cfg = TrainConfig.from_dict(data, source=str(args.config or "flags"))
    check_flags_apply(cfg, set(setting_flags(args)))
    for name in ("model", "out"):
        if not getattr(cfg, name):
            raise ValueError(f"{name} is required (flag --{name} or key {name!r} in the config file)")
    return cfg


def load_config(run_dir: str | Path) -> TrainConfig:
    """The resolved config saved in a run directory."""
    from escov.llm.rundir import CONFIG, read_config

    return saved_config(read_config(run_dir), source=str(Path(run_dir) / CONFIG))


def saved_config(data: dict, source: str = "config.json") -> TrainConfig:
    """The TrainConfig of a run's config.json as read (its settings and the schedule the run wrote beside them,
    llm/schedules.py describe, which is not a setting)."""
    return TrainConfig.from_dict({k: v for k, v in data.items() if k != "schedule"}, source=source)
