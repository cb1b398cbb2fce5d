"""TRL's GRPO variants beside the losses (tests/llm/test_grpo_trl_parity.py checks those against TRL): the default
loss pinned, the learning-rate schedule, top_k / min_p sampling, gradient checkpointing and LoRA, on the tiny model."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from escov.llm.config import GRPOConfig
from escov.llm.engines.hf import HFEngine, sample_next
from escov.llm.grpo import GRPO, grpo_loss, lr_factor
from tests.llm.tasks_for_tests import CountdownScoredBy


def test_default_loss_is_pinned():
    """The default settings (loss_type grpo, epsilon 0.2 both sides, beta 0.001) on fixed numbers: TRL's formula
    -min(r A, clip(r, 0.8, 1.2) A) + beta (exp(d) - d - 1), d = ref - logp, averaged per completion then over
    completions, written out by hand; and the value it had before the variants were added."""
    logp = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -1.5, 0.0]], dtype=torch.float64)
    old = torch.tensor([[-1.3, -1.9, -0.5], [-0.1, -1.5, 0.0]], dtype=torch.float64)
    ref = torch.tensor([[-1.1, -2.2, -0.4], [-0.2, -1.0, 0.0]], dtype=torch.float64)
    adv = torch.tensor([0.7, -1.2], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.float64)
    cfg = GRPOConfig()
    loss, _, _ = grpo_loss(logp, old, ref, adv, mask, cfg, n_seq=2, n_tok=5.0)

    def term(lp, o, r, a):
        ratio = math.exp(lp - o)
        d = r - lp
        return -min(ratio * a, min(max(ratio, 0.8), 1.2) * a) + 0.001 * (math.exp(d) - d - 1)

    rows = [
        [
            term(*v)
            for v, m in zip(
                zip(logp[i].tolist(), old[i].tolist(), ref[i].tolist(), [adv[i].item()] * 3), mask[i].tolist()
            )
            if m
        ]
        for i in range(2)
    ]
    by_hand = (sum(rows[0]) / 3 + sum(rows[1]) / 2) / 2
    assert float(loss) == pytest.approx(by_hand, rel=1e-14)
    assert float(loss) == pytest.approx(0.1834314567145915, rel=1e-14)


# ----------------------------------------------------------------------------- learning-rate schedule


@pytest.mark.parametrize(
    "kind,warmup",
    [
        ("constant", {}),
        ("constant_with_warmup", {"warmup_steps": 3}),
        ("linear", {"warmup_ratio": 0.25}),
        ("cosine", {"warmup_steps": 2}),
        ("cosine", {}),
    ],
)
def test_lr_factor_is_transformers_schedule(kind, warmup):
    """lr_factor(k) against transformers' get_scheduler of the same name on a real optimizer, step by step."""
    from transformers import get_scheduler

    total = 10
    cfg = GRPOConfig(lr_scheduler_type=kind, **warmup)
    cfg.validate()
    w = warmup.get("warmup_steps") or math.ceil(warmup.get("warmup_ratio", 0.0) * total)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = get_scheduler(kind, opt, num_warmup_steps=w, num_training_steps=total)
    for k in range(total):
        assert lr_factor(cfg, k, total) == pytest.approx(opt.param_groups[0]["lr"], abs=1e-15), (k, kind)
        opt.step()
        sched.step()


def test_warmup_with_a_constant_schedule_is_refused():
    with pytest.raises(ValueError, match="lr_scheduler_type constant_with_warmup"):
        GRPOConfig(warmup_ratio=0.1).validate()


def _grpo(model_dir, task, **kw):
    engine = HFEngine(model_dir)
    cfg = GRPOConfig(**{"num_generations": 4, "learning_rate": 1e-2, "beta": 0.0} | kw)
    cfg.validate()
    return engine, GRPO(
        cfg,
        engine,
        task,
        engine.model,
        None,
        engine.prompt_token_ids,
        temperature=1.0,
        max_new_tokens=5,
        seed=0,
        pad_id=engine.tokenizer.pad_token_id,
        phase_start=2,
        phase_steps=3,
    )


def _starts_with_digit():
    return CountdownScoredBy("starts-with-digit", lambda completion: 1.0 if completion[:1].isdigit() else 0.0)


def test_grpo_steps_use_the_scheduled_lr(tiny_model_dir):
    """A phase of 3 GRPO steps from step 2, 2 optimizer steps each (6 in all), cosine with 2 warmup steps: the lr
    AdamW used at optimizer step k is 1e-2 x (k / 2 while k < 2, then (1 + cos(pi (k - 2) / 4)) / 2)."""
    task = _starts_with_digit()
    _, grpo = _grpo(tiny_model_dir, task, lr_scheduler_type="cosine", warmup_steps=2, num_iterations=2)
    used = []
    original = grpo.optimizer.step

    def recording_step(*a, **k):
        used.append(grpo.optimizer.param_groups[0]["lr"])
        return original(*a, **k)

    grpo.optimizer.step = recording_step
    problems = task.problems("train", 6, seed=1)
    for step in (2, 3, 4):
        grpo.step(problems[(step - 2) * 2 : (step - 1) * 2], step)
    closed = [1e-2 * (k / 2 if k < 2 else (1 + math.cos(math.pi * (k - 2) / 4)) / 2) for k in range(6)]
    assert used == pytest.approx(closed, abs=1e-15)


# ----------------------------------------------------------------------------- sampling restrictions


@pytest.mark.parametrize("top_k,min_p", [(3, 0.0), (0, 0.2), (4, 0.1)])
def test_top_k_and_min_p_sample_the_restricted_law(top_k, min_p):
    """sample_next draws only from the k most likely tokens whose probability is at least min_p x the top one's,
    and reports the log-probability under that renormalized law (its frequencies agree with it)."""
    logits = torch.tensor([[2.0, 1.5, 1.0, 0.2, -0.5, -1.0, -3.0]])
    p = F.softmax(logits[0] / 0.9, dim=-1).double()
    keep = torch.ones_like(p, dtype=torch.bool)
    if top_k:
        keep &= p >= p.sort(descending=True).values[top_k - 1]
    if min_p:
        keep &= p >= min_p * p.max()
    law = torch.where(keep, p, 0.0) / torch.where(keep, p, 0.0).sum()
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros_like(p)
    for _ in range(4000):
        token, logp = sample_next(logits, 0.9, 1.0, gen, top_k=top_k, min_p=min_p)
        counts[token] += 1
        assert float(logp) == pytest.approx(math.log(law[token].item()), abs=1e-5)
    assert set(torch.nonzero(counts).flatten().tolist()) == set(torch.nonzero(keep).flatten().tolist())
    assert np.abs((counts / counts.sum() - law).numpy()).max() < 0.03


def test_top_k_reaches_the_rollouts(tiny_model_dir):
    """grpo.top_k = 1 samples the argmax at every token: every completion of a prompt is the greedy one."""
    task = _starts_with_digit()
    engine, grpo = _grpo(tiny_model_dir, task, top_k=1, learning_rate=1e-9)
    problems = task.problems("train", 2, seed=3)
    greedy = engine.generate([p.prompt for p in problems], n=1, temperature=0.0, max_new_tokens=5, seed=0)
    out = grpo.step(problems, 0)
    for row, g in zip(out.rollouts.completions, greedy):
        assert {c.text for c in row} == {g[0].text}


# ----------------------------------------------------------------------------- gradient checkpointing


def test_gradient_checkpointing_gives_the_same_loss_and_gradient(tiny_model_dir):
    """One step with and without gradient_checkpointing from the same weights and seed: the same loss and
    gradient norm (to float tolerance), the same updated weights; and the layers did recompute (checkpointed)."""
    task = _starts_with_digit()
    problems = task.problems("train", 6, seed=1)
    results = {}
    for on in (False, True):
        engine, grpo = _grpo(tiny_model_dir, task, gradient_checkpointing=on, num_generations=6)
        calls = []
        layer = grpo.policy.model.layers[0]
        hook = layer.register_forward_pre_hook(lambda *_: calls.append(torch.is_grad_enabled()))
        out = grpo.step(problems, 0)
        hook.remove()
        results[on] = (
            out.loss,
            out.grad_norm,
            {n: p.detach().clone() for n, p in grpo.policy.named_parameters()},
            calls,
        )
    (l0, g0, w0, c0), (l1, g1, w1, c1) = results[False], results[True]
    assert g0 > 0 and l1 == pytest.approx(l0, rel=1e-5, abs=1e-7) and g1 == pytest.approx(g0, rel=1e-4)
    for n in w0:
        torch.testing.assert_close(w1[n], w0[n], rtol=1e-4, atol=1e-6)
    assert len(c1) > len(c0)  # the backward pass ran the layer's forward again
    assert not any(m.training for m in grpo.policy.modules())  # generation afterwards keeps its KV cache


# ----------------------------------------------------------------------------- LoRA

pytest.importorskip("peft")


def test_lora_step_trains_only_the_adapters(tiny_model_dir):
    """A GRPO step with use_peft: the optimizer holds only LoRA's A and B; the run's model moves in q_proj and v_proj
    alone, each by a matrix of rank <= lora_r, which is (alpha / r) B A; every other weight stays bit for bit."""
    task = _starts_with_digit()
    engine, grpo = _grpo(
        tiny_model_dir,
        task,
        use_peft=True,
        lora_r=2,
        lora_alpha=4,
        lora_target_modules="q_proj,v_proj",
        num_generations=6,
        learning_rate=5e-2,
    )
    before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    trained = [p for g in grpo.optimizer.param_groups for p in g["params"]]
    names = {id(p): n for n, p in grpo.policy.named_parameters()}
    assert trained and all("lora_" in names[id(p)] for p in trained)
    out = grpo.step(task.problems("train", 6, seed=1), 0)
    assert out.grad_norm > 0
    changed = sorted(n for n, p in engine.model.named_parameters() if not torch.equal(p, before[n]))
    assert changed and all(n.endswith(("q_proj.weight", "v_proj.weight")) for n in changed), changed
    for n in changed:
        delta = (dict(engine.model.named_parameters())[n] - before[n]).double()
        s = torch.linalg.svdvals(delta)
        assert int((s > 1e-6 * s[0]).sum()) <= 2, (n, s[:4])
        layer = grpo.policy.get_base_model().get_submodule(n[: -len(".weight")])
        a, b = layer.lora_A["default"].weight.double(), layer.lora_B["default"].weight.double()
        torch.testing.assert_close(delta, (4 / 2) * b @ a, rtol=1e-4, atol=1e-7)


def test_lora_dropout_drops_the_adapters_input_in_the_update_only(tiny_model_dir):
    """lora_dropout p: every LoRA dropout module drops with p, in the update's forwards only (the sampling
    policy has none); on the same rollouts a step with p = 0.5 gets another gradient than one with p = 0, and
    with p = 0 two steps from the same start get the same one."""
    task = _starts_with_digit()
    norms = {}
    for p, run in ((0.0, "a"), (0.0, "b"), (0.5, "a")):
        torch.manual_seed(0)
        engine, grpo = _grpo(
            tiny_model_dir,
            task,
            use_peft=True,
            lora_r=2,
            lora_alpha=4,
            lora_dropout=p,
            lora_target_modules="q_proj,v_proj",
            num_generations=6,
            learning_rate=5e-2,
        )
        dropouts = [m for n, m in grpo.policy.named_modules() if n.endswith("lora_dropout.default")]
        assert dropouts and all(getattr(m, "p", 0.0) == p for m in dropouts)
        with grpo._training_forward():
            assert all(m.training for m in dropouts)
        assert not any(m.training for m in dropouts)
        norms[(p, run)] = grpo.step(task.problems("train", 6, seed=1), 0).grad_norm
    assert norms[(0.0, "a")] == norms[(0.0, "b")] != norms[(0.5, "a")]


def _train(model_dir, out, extra=(), env_extra=None):
    args = [
        sys.executable,
        "-m",
        "escov.llm",
        "train",
        "--algo",
        "grpo",
        "--model",
        str(model_dir),
        "--out",
        str(out),
        "--steps",
        "4",
        "--batch_size",
        "2",
        "--train_pool",
        "8",
        "--threads",
        "1",
        "--max_completion_length",
        "6",
        "--checkpoint_every",
        "2",
        "--probe",
        "false",
        "--eval_problems",
        "2",
        "--eval_samples",
        "2",
        "--eval_ks",
        "1",
        "--heldout_task",
        "",
        "--threshold_keep",
        "50",
        "--format_reward",
        "0.1",
        "--grpo.num_generations",
        "4",
        "--grpo.learning_rate",
        "0.05",
        "--grpo.use_peft",
        "true",
        "--grpo.lora_r",
        "2",
        "--grpo.lora_alpha",
        "4",
        "--grpo.lora_target_modules",
        "q_proj,v_proj",
        *extra,
    ]
    env = os.environ | {"OMP_NUM_THREADS": "1"} | (env_extra or {})
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


# three small runs and an evaluation (about a minute); test_lora_step_trains_only_the_adapters is fast
@pytest.mark.slow
def test_lora_changes_only_the_adapted_matrices_by_rank_r_and_eval_loads_it(tiny_model_dir, tmp_path):
    """GRPO with use_peft: the checkpoint's weights are the base's, bit for bit, except q_proj and v_proj, each moved
    by a matrix of rank <= lora_r = 2; the adapters are kept beside them; `llm eval` loads the checkpoint; a run
    killed after step 3 and resumed ends with the same weights as the uninterrupted run."""
    from safetensors.torch import load_file

    done = _train(tiny_model_dir, tmp_path / "run")
    assert done.returncode == 0, done.stderr[-2000:]
    base, final = _weights(tiny_model_dir), _weights(tmp_path / "run" / "checkpoints" / "step-4")
    changed = sorted(n for n in base if not torch.equal(base[n], final[n]))
    assert changed and all(n.endswith(("q_proj.weight", "v_proj.weight")) for n in changed), changed
    assert len(changed) == 2 * sum(1 for n in base if n.endswith("q_proj.weight"))
    for n in changed:
        s = torch.linalg.svdvals((final[n] - base[n]).double())
        assert int((s > 1e-6 * s[0]).sum()) <= 2, (n, s[:4])
    adapter = load_file(str(tmp_path / "run" / "checkpoints" / "step-2" / "adapter" / "adapter_model.safetensors"))
    assert adapter and all("lora_" in n and ".default." not in n for n in adapter)
    ev = subprocess.run(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "eval",
            "--model",
            str(tmp_path / "run" / "checkpoints" / "step-4"),
            "--task",
            "countdown",
            "--eval_samples",
            "2",
            "--eval_ks",
            "1",
            "--eval_problems",
            "2",
            "--max_completion_length",
            "6",
            "--out",
            str(tmp_path / "eval"),
            "--no-progress",
        ],
        env=os.environ | {"OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ev.returncode == 0, ev.stderr[-2000:]
    assert "1" in json.loads((tmp_path / "eval" / "eval.json").read_text())["pass_at_k"]
    killed = _train(tiny_model_dir, tmp_path / "killed", env_extra={"ESCOV_TEST_STOP_AT": "step-3"})
    assert killed.returncode != 0
    resumed = subprocess.run(
        [sys.executable, "-m", "escov.llm", "train", "--resume", str(tmp_path / "killed")],
        env=os.environ | {"OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    again = _weights(tmp_path / "killed" / "checkpoints" / "step-4")
    assert all(torch.equal(again[n], final[n]) for n in final)


def _short_is_right():
    return CountdownScoredBy("short", lambda completion: 1.0 if len(completion) < 4 else 0.0)


@pytest.mark.parametrize("reward", ["starts-with-digit", "short"])
def test_a_cispo_steps_statistics_count_the_tokens_that_get_a_loss(tiny_model_dir, reward):
    """One optimizer step per batch, so every importance weight is exactly 1: the weight's token mean is 1, and with
    epsilon_high = 0.5 every token of a completion with A > 0 has its weight capped (CISPO's clip ratio, TRL's:
    w > epsilon_high with A > 0; A = 0 is not capped). With truncated completions masked, both count only the tokens
    of completions that ended: the ratio is (tokens of ended completions with a reward above their group's mean) /
    (tokens of ended completions), from the step's own rollouts. Two rewards, so that both sides of the rule are
    reached: "starts with a digit" leaves an ended completion at A = 0 (its group all right), "short" rewards the
    completions that end early, some above their group's mean."""
    task = _starts_with_digit() if reward == "starts-with-digit" else _short_is_right()
    _, grpo = _grpo(
        tiny_model_dir, task, loss_type="cispo", epsilon_high=0.5, mask_truncated_completions=True, num_iterations=1
    )
    out = grpo.step(task.problems("train", 4, seed=2), 2)
    rewards = np.asarray(out.rollouts.rewards, dtype=float)
    ended = above = 0
    ended_at_zero_advantage = False
    for row, completions in zip(rewards, out.rollouts.completions):
        for r, c in zip(row, completions):
            if c.finish_reason != "length":
                ended += len(c.token_ids)
                above += len(c.token_ids) if r > row.mean() else 0
                ended_at_zero_advantage |= bool(np.all(row == row[0]))
    truncated = sum(c.finish_reason == "length" for row in out.rollouts.completions for c in row)
    assert ended > 0 and truncated > 0  # both kinds of completion occur: masking changes the counts
    if reward == "starts-with-digit":
        assert ended_at_zero_advantage  # an ended completion at A = 0: A's sign changes the count
    else:
        assert above > 0  # ended completions above their group's mean (the truncated ones, longer, earn 0)
    assert out.variants["ratio_mean"] == pytest.approx(1.0, abs=1e-6)
    assert out.variants["cispo_clip_ratio"] == pytest.approx(above / ended)
