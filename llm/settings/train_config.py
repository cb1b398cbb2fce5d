"""The run's settings (`TrainConfig`): the top-level keys shared by every algorithm, with the `[es]`,
`[grpo]` and `[population]` tables inside; `from_dict` reads them from TOML tables or a config.json."""
from __future__ import annotations

import contextvars
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from escov.llm.device import check_device_spec
from escov.llm.member_options import DistributedConfig, check_options
from escov.llm.settings.es_config import ESConfig
from escov.llm.settings.grpo_config import SCALE_REWARDS_BOOL, GRPOConfig
from escov.llm.settings.population_config import PopulationConfig
from escov.llm.settings.user_data import (
    USER_DATA_DEFAULTS,
    check_reward_settings,
    normalize_reward_settings,
)
from escov.llm.settings.values import _choice, _int_at_least, _known, _positive, _renamed, _table
from escov.llm.tasks import TASKS
from escov.llm.tasks.data_files import parse_fields, train_records_of
from escov.llm.tasks.reasoning_format import PROMPT_STYLES
from escov.llm.tasks.rewards import REWARDS, check_reward
from escov.llm.tracking import REPORT_TO

ALGOS = ("es", "grpo", "es-grpo", "grpo-es")
BUDGETS = ("flops", "responses")
ENGINES = ("hf", "vllm")
DTYPES = ("float32", "bfloat16", "float16")
SECTIONS = ("es", "grpo", "population")
SOLUTION_BLOCK_TASKS = ("countdown", "countdown3")  # the tasks eval_solutions can draw by solution count


@dataclass
class TrainConfig:
    algo: str = "es"                 # es | grpo | es-grpo (ES then GRPO) | grpo-es
    model: str = ""                  # base model directory (save_pretrained format)
    task: str = "countdown"          # countdown | countdown3 | grid_paths | subset_sum | arithmetic | gsm8k |
                                     # deepscaler | prompts (your data)
    data: str = ""                   # train data file (.json/.jsonl/.parquet; llm/tasks/data_files.py); "": generated
                                     # problems
    test_data: str = ""              # test data file
    data_split: str = "files"        # files (data = train, test_data = test) | paper (data: first 200 train, rest test)
                                     # | first-N
    data_fields: str = ""            # the files' column names where they differ: "question=prompt,answer=solution"
    prompt_style: str = "plain"      # plain | instruct | paper (llm/tasks/reasoning_format.py)
    reward: str = "escov"            # escov | es-at-scale-countdown | paper-gsm8k (llm/tasks/rewards.py)
    format_reward: float = 0.0       # reward: escov: reward of a well-formed wrong answer
    # ---- reward functions and user data (llm/tasks/reward_function.py; rules in check_reward_settings) ----
    reward_function: tuple[str, ...] = ()  # "module:function" / "file.py:function", TRL's signature or verl's; repeat
                                           # for several
    reward_weights: tuple[float, ...] = ()  # weight of each reward function (default 1 each); repeat the flag
    correct_reward: str = ""         # what is correct: a reward function | total | verifier; "": verifier, else 1st
    correct_threshold: float = 1.0   # a completion is correct when correct_reward's reward is >= this
    reward_timeout: float = 0.0      # seconds one reward function call may take (0: no limit); longer stops the run
    out: str = ""                    # run directory
    seed: int = 0                    # every random draw of the run derives from it (sampling, noise, batches)
    steps: int = 40                  # budget in GRPO steps; ES runs steps x cost(GRPO step) / cost(ES step) iterations
                                     # (see below)
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
    eval_solutions: int = 0          # generated countdown: test and validation prompts with exactly this many distinct
                                     # solutions (llm/tasks/solution_blocks.py; 0: the task's own draw)
    eval_skip: int = 0               # test prompts: skip the first N of the draw (prompts earlier runs evaluated);
                                     # generated tasks only (0: none)
    train_solutions: int = 0         # generated countdown: training pool prompts with exactly this many distinct
                                     # solutions, so training and evaluation prompts match (0: the task's own draw)
    eval_samples: int = 32           # samples per problem (paper: 32)
    eval_temperature: float = 1.0    # paper: 0.6; the tiny model is trained at 1.0
    eval_ks: tuple[int, ...] = (1, 16, 32)  # k of Pass@k and Maj@k in the evaluations (each <= eval_samples)
    eval_steps: int = 0              # also evaluate the test problems every N steps (TRL's; 0: before and after only)
    heldout_task: str = "arithmetic"  # forgetting: evaluated before and after ("" to skip)
    heldout_problems: int = 64       # forgetting: test problems of heldout_task
    threshold_keep: tuple[float, ...] = (5.0, 22.0, 50.0)  # % of update entries kept in thresholded checkpoints
    workers: int = 1                 # ES: Ray actors sharing the population (1: no Ray)
    ray_address: str = ""            # ES: a Ray cluster ("host:port", "ray://host:port", "auto"); "": local
    # ---- tracking and kept completions (llm/tracking.py) ----
    report_to: str = "none"          # none | tensorboard | wandb | trackio: where metrics go besides the run directory
                                     # (offline)
    completions_kept: int = 8        # prompts whose first completion (with its reward) completions.jsonl keeps per
                                     # evaluation (0: none)
    completions_every: int = 0       # also keep the first completions_kept of the training batch every N steps (0: only
                                     # at evaluations)
    # ---- device (llm/device.py) ----
    device: str = "auto"             # auto (CUDA when available) | cpu | cuda | cuda:N; config.json records the
                                     # resolved one
    gpu_memory_utilization: float = 0.9  # engine = vllm on a GPU: its share of GPU memory (lower it to colocate a GRPO
                                         # policy)
    es: ESConfig = field(default_factory=ESConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    population: PopulationConfig = field(default_factory=PopulationConfig)

    def __post_init__(self) -> None:
        if self.task == "prompts":  # your data: the paper's measurements off where the settings do not name them
            given = _GIVEN.get()
            for name, value in USER_DATA_DEFAULTS.items():
                if name not in given:  # so still at TrainConfig's default
                    setattr(self, name, value)
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
        _int_at_least("eval_steps", self.eval_steps, 0)
        _int_at_least("eval_skip", self.eval_skip, 0)
        if self.eval_skip and (self.data or self.test_data):
            raise ValueError(f"eval_skip = {self.eval_skip} skips generated test problems; with data files choose the "
                             f"rows in the test file (give eval_skip = 0)")
        for name in ("eval_solutions", "train_solutions"):
            k = getattr(self, name)
            _int_at_least(name, k, 0)
            if k and (self.task not in SOLUTION_BLOCK_TASKS or self.data or self.test_data):
                raise ValueError(f"{name} = {k} needs generated problems of task "
                                 f"{' or '.join(SOLUTION_BLOCK_TASKS)} (no data files); give {name} = 0")
        if isinstance(self.reward_timeout, bool) or not isinstance(self.reward_timeout, (int, float)) \
                or not 0 <= self.reward_timeout < math.inf:
            raise ValueError(f"reward_timeout must be a number of seconds >= 0 (0: no limit), "
                             f"got {self.reward_timeout!r}")
        if self.reward_timeout and not (self.reward_function or self.task == "prompts"):
            raise ValueError("reward_timeout limits reward functions (reward_function); the task's own reward has none")
        if self.probe_every and not self.probe:
            raise ValueError(f"probe_every = {self.probe_every} needs probe = true")
        _int_at_least("checkpoint_dense", self.checkpoint_dense, 0)
        if not isinstance(self.truncate_prompts, bool):
            raise ValueError(f"truncate_prompts must be true or false, got {self.truncate_prompts!r}")
        _choice("report_to", self.report_to, REPORT_TO)
        _int_at_least("completions_kept", self.completions_kept, 0)
        _int_at_least("completions_every", self.completions_every, 0)
        if self.algo in ("es-grpo", "grpo-es") and not 0 < self.switch_step < self.steps:
            raise ValueError(f"switch_step must lie in (0, steps={self.steps}) for algo {self.algo}, "
                             f"got {self.switch_step}")
        if self.batch_size > self.train_pool:
            raise ValueError(f"batch_size must be <= train_pool ({self.train_pool}), got {self.batch_size}")
        _choice("prompt_style", self.prompt_style, PROMPT_STYLES)
        uses_functions = check_reward_settings(self)  # reward functions replace the reward convention
        if not uses_functions and self.task in TASKS:
            check_reward(self.reward, self.task, self.format_reward)
        elif not uses_functions:  # a task object given to llm.train.train may carry its own name: the convention's
                                  # rules
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

    def task_settings(self) -> dict[str, Any]:
        """Every setting that shapes the task (data files, prompt style, reward, reward function), as
        llm.tasks.get_task names them."""
        return {"data": self.data or None, "test_data": self.test_data or None, "data_split": self.data_split,
                "fields": parse_fields(self.data_fields), "prompt_style": self.prompt_style, "reward": self.reward,
                "format_reward": self.format_reward, "reward_function": list(self.reward_function),
                "reward_weights": list(self.reward_weights), "correct_reward": self.correct_reward,
                "correct_threshold": self.correct_threshold, "reward_timeout": self.reward_timeout}

    def task_kwargs(self) -> dict[str, Any]:
        """The task settings off their defaults (TrainConfig's own), for llm.tasks.get_task."""
        defaults = TrainConfig().task_settings()
        return {k: v for k, v in self.task_settings().items() if v != defaults[k]}

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
            data = _renamed(_table(data, source), source)
            kwargs = _known(cls, data, source, sections=SECTIONS)
            if "population" in data:
                kwargs["population"] = PopulationConfig(**_known(
                    PopulationConfig, _table(data["population"], f"{source}: population"), f"{source}: [population]"))
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


# the settings a TrainConfig(...) call names, from Python or through from_dict: with task "prompts", each of
# USER_DATA_DEFAULTS it does not name takes its value there, and a named one is kept even where it equals
# TrainConfig's default (TrainConfig(task="prompts", probe=True) runs the probe)
_GIVEN: contextvars.ContextVar[frozenset] = contextvars.ContextVar("given", default=frozenset())
_generated_init = TrainConfig.__init__


def _init_noting_given(self, *args, **kwargs) -> None:
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    token = _GIVEN.set(frozenset(names[: len(args)]) | frozenset(kwargs))
    try:
        _generated_init(self, *args, **kwargs)
    finally:
        _GIVEN.reset(token)


TrainConfig.__init__ = _init_noting_given
