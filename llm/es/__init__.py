"""Evolution Strategies for LLMs: the paper's loop and the ways of evaluating its population.

    algorithm.py   standardize, the update, ES.step: the file to hold against docs/paper.md (ESConfig: llm/config.py)
    noise.py       seeds of an iteration, eps regenerated from them (full rank or low-rank EGGROLL)
    members.py     the member-evaluation interface; members one by one in the engine
    batched_hf.py  all members in one population-batched generate on the HF engine
    ray_actors.py  members spread over Ray actors, each with its own replica
    vllm_lora.py   low-rank members as vLLM LoRA adapters in one generate
    vllm_inplace.py  members perturbed and restored in place inside vLLM's workers (CUDA)
    options.py     the one validator of every ES option (PopulationConfig: llm/config.py)
    factory.py     make_es: ES with the member evaluation its options ask for
"""
from llm.es.algorithm import ES, ESConfig, ESStep, select_parameters, standardize
from llm.es.factory import make_es
from llm.es.options import DistributedConfig, PopulationConfig, check_options, check_setup

__all__ = ["ES", "ESConfig", "ESStep", "select_parameters", "standardize", "make_es", "PopulationConfig",
           "check_options", "check_setup", "DistributedConfig"]
