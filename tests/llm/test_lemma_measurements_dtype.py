"""measure_population scores the members the engine sampled: with a bf16 engine, bf16 members."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from escov.llm.engines.hf import HFEngine
from escov.llm.lemma_measurements import measure_population
from escov.llm.tasks import get_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_scorer_gets_the_weights_as_a_bf16_engine_holds_them(tiny_model_dir):
    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)
    scorer = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    task = get_task("countdown")
    center = {n: p.detach().float().clone() + 1e-3 for n, p in scorer.named_parameters()}  # not bf16-representable
    assert any(not torch.equal(c, c.to(torch.bfloat16).float()) for c in center.values())
    m = measure_population(
        engine=engine,
        scorer=scorer,
        task=task,
        problems=task.problems("test", 1, seed=0),
        encode=engine.prompt_token_ids,
        pad_id=engine.tokenizer.pad_token_id,
        center=center,
        sigma=1e-2,
        members=2,
        samples=2,
        center_samples=2,
        temperature=1.0,
        max_new_tokens=4,
        seed=0,
        step=0,
        dtype=torch.bfloat16,
    )
    assert m["members"] == 2
    for n, p in scorer.named_parameters():  # the scorer ends at the center as the engine holds it
        assert torch.equal(p.detach(), center[n].to(torch.bfloat16).float()), n
