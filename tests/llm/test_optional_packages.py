"""The project without its optional packages: with vLLM, Ray and math-verify hidden from every Python
process (a sitecustomize that makes the import system find none of them, as on a GPU node where they are
not installed), every module imports, the HF paths run an ES step and a GRPO step, and a math task says
what is missing when it grades."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("vllm", "ray", "math_verify")

SITECUSTOMIZE = f"""
import sys

HIDDEN = {HIDDEN!r}


class Hide:
    '''A meta-path finder that finds nothing of HIDDEN and delegates everything else.'''

    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        return self.inner.find_spec(name, path, target)

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


sys.meta_path[:] = [Hide(finder) for finder in sys.meta_path]
"""

CHILD = """
import importlib, importlib.util, json, sys
import torch

modules = ["escov.llm.train", "escov.llm.cli", "escov.llm.evaluate", "escov.llm.grpo", "escov.llm.es",
           "escov.llm.es.ray_actors", "escov.llm.es.vllm_inplace", "escov.llm.es.vllm_lora",
           "escov.llm.engines.vllm_engine", "escov.llm.tasks.math_grader", "escov.llm.tasks.math_data",
           "escov.paper_checks.console"]
for name in modules:
    importlib.import_module(name)
out = {"found": {m: importlib.util.find_spec(m) is not None for m in HIDDEN}}

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, make_es
from escov.llm.grpo import GRPO, GRPOConfig
from escov.llm.random_models import save_random_model
from escov.llm.tasks import get_task
from transformers import AutoModelForCausalLM

torch.set_num_threads(1)
model_dir = save_random_model(sys.argv[1], "qwen2", "tiny")
engine = HFEngine(model_dir)
task = get_task("countdown")
problems = task.problems("train", 2, 0)
master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
es = make_es(ESConfig(population_size=2, sigma=0.01, alpha=0.01), engine, task, sorted(master), master,
             max_new_tokens=4, seed=0)
out["es_rewards"] = es.step(problems, 0).rewards.tolist()
policy = AutoModelForCausalLM.from_pretrained(model_dir)
grpo = GRPO(GRPOConfig(num_generations=2, beta=0.0), engine, task, policy, None, engine.prompt_token_ids,
            temperature=1.0, max_new_tokens=4, seed=0, pad_id=engine.tokenizer.pad_token_id)
out["grpo_loss"] = grpo.step(problems, 0).loss

from escov.llm.tasks.math_grader import MathVerifyMissing, grade
try:
    grade("41", "\\\\boxed{41}")
    out["math"] = "graded"
except MathVerifyMissing as err:
    out["math"] = str(err)
out["loaded"] = sorted(m for m in sys.modules if m.partition(".")[0] in HIDDEN)
print(json.dumps(out))
"""


def test_without_vllm_ray_and_math_verify_the_project_imports_and_the_hf_paths_run(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": f"{site}:{ROOT}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", f"HIDDEN = {HIDDEN!r}\n" + CHILD, str(tmp_path / "model")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["found"] == {m: False for m in HIDDEN}  # the hiding works (else this test proves nothing)
    assert out["loaded"] == []
    assert len(out["es_rewards"]) == 2 and isinstance(out["grpo_loss"], float)
    assert "needs math-verify" in out["math"] and "pip install 'math-verify" in out["math"]
