"""Which member strategy the settings choose (llm/member_options.py strategy_name), setting by setting and in the
combinations where one setting's effect depends on another: a cluster address with a single worker still means Ray;
population.batched matters only without Ray workers; an explicit population.members overrides both."""

import pytest

from escov.llm.member_options import DistributedConfig, strategy_name, uses_workers
from escov.llm.settings.population_config import PopulationConfig


@pytest.mark.parametrize(
    "workers, address, batched, members, expected",
    [
        (1, "", False, "auto", "one_by_one"),  # one local worker: no Ray
        (1, "", True, "auto", "batched_hf"),
        (1, "auto", False, "auto", "ray"),  # one worker on a cluster: Ray, whatever batched says
        (1, "ray://head:10001", True, "auto", "ray"),
        (2, "", False, "auto", "ray"),  # two local workers: Ray
        (2, "", True, "auto", "ray"),
        (2, "auto", True, "one_by_one", "one_by_one"),  # an explicit strategy is the one that runs
        (1, "", False, "vllm_lora", "vllm_lora"),
    ],
)
def test_the_strategy_follows_workers_address_and_batched_together(workers, address, batched, members, expected):
    distributed = DistributedConfig(workers=workers, address=address)
    population = PopulationConfig(batched=batched, members=members)
    assert strategy_name(population, distributed) == expected
    assert uses_workers(distributed) is (workers > 1 or address != "")


def test_without_distributed_settings_there_are_no_workers():
    assert uses_workers(None) is False
    assert strategy_name(PopulationConfig(batched=True), None) == "batched_hf"
    assert strategy_name(PopulationConfig(batched=False), None) == "one_by_one"


def _check(engine="hf", workers=None, address="", bf16=False, size=4, **population):
    from escov.llm.member_options import check_options
    from escov.llm.settings.es_config import ESConfig

    distributed = None if workers is None else DistributedConfig(workers=workers, address=address)
    check_options(
        ESConfig(population_size=size, inplace_bf16=bf16), PopulationConfig(**population), engine, distributed
    )


ONE_WAY = "population.members {} evaluates members one way; turn population.batched off"
ONE_PROCESS = (
    "population.members {} runs in one process; it does not combine with Ray workers (workers > 1 or a ray address)"
)
NO_BF16 = (
    "population.members {} keeps an fp32 master; es.inplace_bf16 (the paper's bf16 add / subtract) runs with "
    "one_by_one on the HF engine (engine = 'hf')"
)
BATCHED_ENGINE = (
    "population.batched needs engine = 'hf' (one batched forward for all members); set population.batched = false "
    "to evaluate members one by one on vLLM"
)


@pytest.mark.parametrize(
    "settings, message",
    [
        # one_by_one: any engine, one process, one way
        (dict(), None),
        (dict(engine="vllm"), None),
        (dict(workers=1), None),  # one local worker is no Ray
        (dict(members="one_by_one", batched=True), ONE_WAY.format("one_by_one")),
        (dict(members="one_by_one", workers=2), ONE_PROCESS.format("one_by_one")),
        (dict(members="one_by_one", workers=1, address="auto"), ONE_PROCESS.format("one_by_one")),
        (dict(bf16=True), None),  # the paper's bf16 arithmetic runs member by member
        # batched_hf: the HF engine, no in-place bf16, no workers
        (dict(batched=True), None),
        (dict(batched=True, engine="vllm"), BATCHED_ENGINE),
        (dict(members="batched_hf", engine="vllm"), BATCHED_ENGINE),
        (
            dict(batched=True, bf16=True),
            "population.batched cannot reproduce es.inplace_bf16 (in-place perturbation); turn one of them off",
        ),
        (
            dict(members="batched_hf", workers=2),
            "population.members batched_hf runs in one process; with Ray workers "
            "use 'ray' (each actor batched when population.batched)",
        ),
        # ray: workers (more than one, or an address), fp32 replicas, a population the workers divide
        (dict(workers=2), None),
        (dict(workers=2, batched=True, engine="vllm"), None),  # with workers, batched means each actor batched
        (dict(workers=1, address="auto", size=3), None),
        (dict(members="ray"), "population.members ray needs Ray workers (workers > 1 or a ray address)"),
        (dict(members="ray", workers=1), "population.members ray needs Ray workers (workers > 1 or a ray address)"),
        (
            dict(workers=2, bf16=True),
            "distributed ES keeps fp32 replicas; es.inplace_bf16 is not supported with workers",
        ),
        (dict(workers=3), r"es.population_size (4) must be divisible by workers (3)"),
        # vllm_lora: the vLLM engine, one process, one way, fp32 master, a LoRA rank vLLM accepts
        (dict(members="vllm_lora", engine="vllm", noise_rank=1), None),
        (dict(members="vllm_lora", engine="vllm", noise_rank=512), None),
        (dict(members="vllm_lora", noise_rank=4), "population.members vllm_lora needs engine = 'vllm', got 'hf'"),
        (
            dict(members="vllm_lora", engine="vllm"),
            "population.members vllm_lora needs low-rank noise (population.noise_rank >= 1)",
        ),
        (
            dict(members="vllm_lora", engine="vllm", noise_rank=513),
            "population.members vllm_lora: vLLM allows LoRA ranks up to 512, got population.noise_rank 513",
        ),
        (dict(members="vllm_lora", engine="vllm", noise_rank=4, batched=True), ONE_WAY.format("vllm_lora")),
        (dict(members="vllm_lora", engine="vllm", noise_rank=4, workers=2), ONE_PROCESS.format("vllm_lora")),
        (dict(members="vllm_lora", engine="vllm", noise_rank=4, bf16=True), NO_BF16.format("vllm_lora")),
        # vllm_inplace: the vLLM engine, one process, one way, fp32 master
        (dict(members="vllm_inplace", engine="vllm"), None),
        (dict(members="vllm_inplace"), "population.members vllm_inplace needs engine = 'vllm', got 'hf'"),
        (dict(members="vllm_inplace", engine="vllm", batched=True), ONE_WAY.format("vllm_inplace")),
        (dict(members="vllm_inplace", engine="vllm", workers=1, address="auto"), ONE_PROCESS.format("vllm_inplace")),
        (dict(members="vllm_inplace", engine="vllm", bf16=True), NO_BF16.format("vllm_inplace")),
        # the ES and population settings themselves are checked first
        (dict(size=1), "es.population_size must be an integer >= 2, got 1"),
        (
            dict(members="fastest"),
            "population.members must be one of ['auto', 'one_by_one', 'batched_hf', 'ray', 'vllm_lora', "
            "'vllm_inplace'], got 'fastest'",
        ),
    ],
)
def test_each_strategy_refuses_the_options_it_cannot_run_naming_them(settings, message):
    if message is None:
        _check(**settings)
    else:
        with pytest.raises(ValueError) as err:
            _check(**settings)
        assert str(err.value) == message  # the whole message: the setting named, nothing added


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(), None),
        (dict(workers=1, cpus_per_worker=0.01, actor_timeout_s=0.01, gpus_per_worker=0.0, threads_per_worker=1), None),
        (dict(workers=4, gpus_per_worker=1.0, threads_per_worker=3), None),
        (dict(workers=True), "workers must be an integer >= 1, got True"),
        (dict(workers=2.0), "workers must be an integer >= 1, got 2.0"),
        (dict(workers=0), "workers must be an integer >= 1, got 0"),
        (dict(workers=3), "es.population_size (4) must be divisible by workers (3)"),
        (dict(workers=8), "es.population_size (4) must be divisible by workers (8)"),
        (dict(cpus_per_worker=0.0), "cpus_per_worker and actor_timeout_s must be > 0"),
        (dict(actor_timeout_s=0.0), "cpus_per_worker and actor_timeout_s must be > 0"),
        (dict(gpus_per_worker=-0.5), "gpus_per_worker must be >= 0, got -0.5"),
        (dict(gpus_per_worker=float("nan")), "gpus_per_worker must be >= 0, got nan"),
        (dict(threads_per_worker=True), "threads_per_worker must be an integer >= 1, got True"),
        (dict(threads_per_worker=1.0), "threads_per_worker must be an integer >= 1, got 1.0"),
        (dict(threads_per_worker=0), "threads_per_worker must be an integer >= 1, got 0"),
    ],
)
def test_the_workers_settings_are_checked_one_at_a_time(fields, message):
    distributed = DistributedConfig(**fields)
    if message is None:
        distributed.validate(4)
    else:
        with pytest.raises(ValueError) as err:
            distributed.validate(4)
        assert str(err.value) == message
