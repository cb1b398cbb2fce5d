"""Evolution Strategies for LLMs: the paper's loop and the ways of evaluating its population.

    algorithm.py   standardize, ES.step: the file to hold against docs/paper.md (ESConfig: llm/settings/)
    plan.py        what ES decides about an iteration, once: seeds, sigma, each member's direction and sign
    noise.py       eps regenerated from the seeds (full rank or low-rank EGGROLL)
    center.py      the center and its arithmetic: fp32 master, or the paper's bf16 in place
    members.py     the member-evaluation interface; members one by one in the engine
    batched_hf.py  all members in one population-batched generate on the HF engine
    ray_actors.py  members spread over Ray actors, each with its own replica
    traffic.py     the bytes that cross to and from each Ray actor, counted per step
    vllm_lora.py   low-rank members as vLLM LoRA adapters in one generate
    vllm_inplace.py  members perturbed and restored in place inside vLLM's workers (CUDA)
    options.py     the [population] settings explained; Ray present and reachable
    factory.py     the strategy table (each strategy's class, constructor and checks); make_es: ES with the chosen
                   strategy

The settings (ESConfig, PopulationConfig: llm/settings/) and the strategies' rules on them
(DistributedConfig, strategy_name, check_options: llm/member_options.py) import no torch.
"""

from escov.llm.es.algorithm import ES, ESConfig, ESStep, select_parameters, standardize
from escov.llm.es.factory import check_options, check_setup, make_es
from escov.llm.es.options import DistributedConfig, PopulationConfig

__all__ = [
    "ES",
    "ESConfig",
    "ESStep",
    "select_parameters",
    "standardize",
    "make_es",
    "PopulationConfig",
    "check_options",
    "check_setup",
    "DistributedConfig",
]
