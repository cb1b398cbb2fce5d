"""llm/es/members.py: each member's fitness is its own mean reward and the step's tokens are every member's; one by
one, each member in bf16 in place starts from the restored center (the paper's loop subtracts every member again)."""

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.members import OneByOne, weight_hash
from escov.llm.rollout import rollout
from tests.llm.tasks_for_tests import CountdownScoredBy, digit_share_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")
MAX_NEW_TOKENS = 6


def _ends_with_plus(completion: str) -> float:
    return float(completion.endswith("+"))


def _es(engine, population=None, task=None, **kw):
    cfg = ESConfig(**{"population_size": 4, "alpha": 1e-2} | kw)
    names = select_parameters(engine.model.named_parameters(), "")
    master = None if cfg.inplace_bf16 else {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    return make_es(
        cfg,
        engine,
        task or digit_share_task(),
        names,
        master,
        max_new_tokens=MAX_NEW_TOKENS,
        seed=3,
        population=population,
    )


@pytest.mark.parametrize("batched", [False, True])
def test_members_as_the_center_score_the_centers_mean_reward_and_tokens_add_up_over_members(tiny_model_dir, batched):
    """sigma = 1e-9 leaves every greedy member at the center's completions: each member's fitness is the center's mean
    reward, and the step generated the center's tokens once per member (rolled out here, without ES)."""
    engine = HFEngine(tiny_model_dir)
    task = CountdownScoredBy("ends-with-plus", _ends_with_plus)
    problems = task.problems("train", 4, 2)
    center = rollout(engine, task, problems, n=1, temperature=0.0, max_new_tokens=MAX_NEW_TOKENS, seed=0, step=0)
    assert np.ptp(center.rewards) > 0 and center.n_tokens > 0  # the mean differs from any one prompt's reward
    es = _es(engine, PopulationConfig(batched=batched), task, sigma=1e-9)
    assert type(es.members).__name__ == ("BatchedHF" if batched else "OneByOne")
    out = es.step(problems, 0)
    np.testing.assert_allclose(out.rewards, np.full(4, center.rewards.mean()), rtol=0, atol=1e-12)
    assert out.n_tokens == 4 * center.n_tokens


def test_one_by_one_in_bf16_starts_each_member_from_the_restored_center(tiny_model_dir):
    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)
    sigma = 1e-2
    es = _es(engine, sigma=sigma, inplace_bf16=True)
    assert type(es.members) is OneByOne and not es.center.exact_restore
    start = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    seen = []
    perturb = es.center.perturb

    def recording(plan, member):  # the weights each member is written onto
        seen.append({n: p.detach().float().clone() for n, p in engine.model.named_parameters()})
        perturb(plan, member)

    es.center.perturb = recording
    task = digit_share_task()
    es.members.rewards(es.plan(0), task.problems("train", 2, 1))
    assert len(seen) == 4
    numel = sum(t.numel() for t in start.values())
    for weights in seen:  # bf16 rounding residue of the earlier members, far below one member's sigma |E|
        distance = sum(float(((weights[n] - start[n]) ** 2).sum()) for n in start) ** 0.5
        assert distance < 0.1 * sigma * numel**0.5


def test_the_weight_hash_is_sha256_of_names_and_fp32_bytes_in_name_order():
    import hashlib

    a, b = torch.arange(60, dtype=torch.float32).reshape(6, 10), torch.tensor([0.5, -1.0], dtype=torch.bfloat16)
    expected = hashlib.sha256(b"a" + a.numpy().tobytes() + b"b" + np.array([0.5, -1.0], np.float32).tobytes())
    assert weight_hash({"b": b, "a": a}) == weight_hash({"a": a, "b": b}) == expected.hexdigest()
    changed = a.clone()
    changed[-1, -1] += 1.0  # the last entry of the first tensor
    assert weight_hash({"a": changed, "b": b}) != expected.hexdigest()
