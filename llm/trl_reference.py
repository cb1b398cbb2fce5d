"""Our GRPO loss against TRL's GRPOTrainer on one identical batch: the settings that mean the same,
TRL's trainer on our prompts and verifier, and the loss and gradient of both (needs `trl`).

Used by tests/llm/test_grpo_trl_parity.py and benchmarks/bench_trl_grpo.py (whose docstring lists the
settings mapped between the two). The batch is sampled from a model; the policy and reference are
perturbed copies of it (every weight w moved by scale * mean|w| * N(0, 1), seeded) so that ratios move
and some are clipped.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass


@dataclass
class Settings:
    model: str
    batch: int = 16  # prompts per step
    num_generations: int = 8  # G
    max_new_tokens: int = 32
    temperature: float = 1.0
    learning_rate: float = 1e-4
    beta: float = 0.001
    epsilon: float = 0.2
    loss_type: str = "grpo"
    max_grad_norm: float = 1.0
    threads: int = 1
    seed: int = 0
    policy_scale: float = 0.05  # part 2: policy = base + policy_scale * mean|w| * noise (old log-probs: base)
    ref_scale: float = 0.02  # part 2: reference = base + ref_scale * mean|w| * other noise


def step_problems(s: Settings, steps: int):
    """The Countdown problems of every step: steps x batch distinct training prompts."""
    from escov.llm.tasks import get_task

    task = get_task("countdown")
    problems = task.problems("train", steps * s.batch, seed=s.seed)
    return task, [problems[i * s.batch : (i + 1) * s.batch] for i in range(steps)]


def trl_config(
    s: Settings,
    out_dir: str,
    *,
    loss_type: str | None = None,
    beta: float | None = None,
    bias_correction_kl: bool = False,
    max_steps: int = 1,
    epsilon_high: float | None = None,
    scale_rewards: str = "group",
    mask_truncated: bool = False,
    variant: dict | None = None,
):
    """TRL's GRPOConfig meaning the same as our GRPOConfig (see the module docstring for the mapping); variant:
    settings of TRL's variants that our GRPOConfig names alike (entropy_coef, top_entropy_quantile,
    importance_sampling_level, sapo_temperature_pos, ...)."""
    from trl import GRPOConfig as TRLGRPOConfig

    return TRLGRPOConfig(
        output_dir=out_dir,
        report_to="none",
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        save_strategy="no",
        logging_steps=10**9,
        seed=s.seed,
        max_steps=max_steps,
        per_device_train_batch_size=s.batch * s.num_generations,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=1,
        num_generations=s.num_generations,
        max_completion_length=s.max_new_tokens,
        temperature=s.temperature,
        top_p=1.0,
        top_k=0,
        learning_rate=s.learning_rate,
        lr_scheduler_type="constant",
        weight_decay=0.0,
        max_grad_norm=s.max_grad_norm,
        beta=s.beta if beta is None else beta,
        epsilon=s.epsilon,
        loss_type=s.loss_type if loss_type is None else loss_type,
        scale_rewards=scale_rewards,
        epsilon_high=epsilon_high,
        mask_truncated_completions=mask_truncated,
        use_bias_correction_kl=bias_correction_kl,
        gradient_checkpointing=False,
        shuffle_dataset=False,
        **{"importance_sampling_level": "token"} | (variant or {}),
    )


def trl_trainer(
    s: Settings, model, task, problems, out_dir: str, callbacks=(), rewards_seen: list | None = None, **config
):
    """GRPOTrainer on an in-memory dataset of the problems' prompts, rewarded by our verifier
    (whose rewards are also appended to rewards_seen when given)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    def countdown_reward(prompts, completions, problem, **_):
        rewards = [task.score(problems[i], c) for i, c in zip(problem, completions)]
        if rewards_seen is not None:
            rewards_seen.extend(rewards)
        return rewards

    dataset = Dataset.from_dict({"prompt": [p.prompt for p in problems], "problem": list(range(len(problems)))})
    return GRPOTrainer(
        model=model,
        reward_funcs=countdown_reward,
        train_dataset=dataset,
        args=trl_config(s, out_dir, **config),
        callbacks=list(callbacks),
        processing_class=AutoTokenizer.from_pretrained(s.model),
    )


def perturbed(model_dir: str, scale: float, seed: int):
    """The model with every weight w moved by scale * mean|w| * N(0, 1) (seeded); scale 0: the model itself."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.add_(scale * p.abs().mean() * torch.randn(p.shape, generator=gen))
    model.train(False)
    return model


def identical_batch(s: Settings):
    """Rollouts of the base model on one batch, padded both ways, with frozen log-probs of base and reference."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.rollout import completion_logprobs, pad_batch, rollout

    task, (problems,) = step_problems(s, 1)
    engine = HFEngine(s.model)
    out = rollout(
        engine,
        task,
        problems,
        n=s.num_generations,
        temperature=s.temperature,
        max_new_tokens=s.max_new_tokens,
        seed=s.seed,
        step=0,
    )
    pad = engine.tokenizer.pad_token_id
    prompt_ids = [engine.prompt_token_ids(p.prompt) for p in problems for _ in range(s.num_generations)]
    completion_ids = [c.token_ids for row in out.completions for c in row]
    seq, attention, mask = pad_batch(prompt_ids, completion_ids, pad)
    with torch.no_grad():
        old = completion_logprobs(engine.model, seq, attention, mask, s.temperature)
        ref = completion_logprobs(perturbed(s.model, s.ref_scale, s.seed + 2), seq, attention, mask, s.temperature)
    # TRL's layout: prompts left-padded, completions right-padded, log-probs per completion position
    width_p, width_c = max(map(len, prompt_ids)), max(map(len, completion_ids))
    trl = {
        k: torch.full((len(seq), w), fill, dtype=dt)
        for k, w, fill, dt in (
            ("prompt_ids", width_p, pad, torch.long),
            ("prompt_mask", width_p, 0, torch.long),
            ("completion_ids", width_c, pad, torch.long),
            ("completion_mask", width_c, 0, torch.long),
            ("old_per_token_logps", width_c, 0.0, torch.float32),
            ("ref_per_token_logps", width_c, 0.0, torch.float32),
        )
    }
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        trl["prompt_ids"][i, width_p - len(p) :] = torch.tensor(p)
        trl["prompt_mask"][i, width_p - len(p) :] = 1
        trl["completion_ids"][i, : len(c)] = torch.tensor(c)
        trl["completion_mask"][i, : len(c)] = 1
        trl["old_per_token_logps"][i, : len(c)] = old[i, len(p) - 1 : len(p) - 1 + len(c)]
        trl["ref_per_token_logps"][i, : len(c)] = ref[i, len(p) - 1 : len(p) - 1 + len(c)]
    trl["num_items_in_batch"] = trl["completion_mask"].sum()
    return (
        task,
        problems,
        out,
        {
            "seq": seq,
            "attention": attention,
            "mask": mask,
            "old": old,
            "ref": ref,
            "completions": [c for row in out.completions for c in row],
        },
        trl,
    )


def gradients(model) -> dict:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def trl_masked_truncated(trainer, trl_inputs: dict) -> dict:
    """TRL's inputs with mask_truncated_completions applied as its _generate_and_score_completions does: a
    completion whose last id is neither an end-of-sequence nor the pad token loses its completion mask, and
    num_items_in_batch counts what is left."""
    import torch

    ends = [*trainer.eos_token_ids, trainer._tokenizer.pad_token_id]
    ids, mask = trl_inputs["completion_ids"], trl_inputs["completion_mask"]
    last = [int(row[int(m.sum()) - 1]) for row, m in zip(ids, mask)]
    is_truncated = torch.tensor([t not in ends for t in last])
    out = dict(trl_inputs, completion_mask=mask * (~is_truncated).unsqueeze(1).int())
    out["num_items_in_batch"] = out["completion_mask"].sum()
    return out


def loss_case(
    s: Settings,
    task,
    problems,
    ours_batch: dict,
    trl_inputs: dict,
    adv,
    loss_type: str,
    beta: float,
    bias_kl: bool,
    on_policy: bool,
    *,
    epsilon_high: float | None = None,
    mask_truncated: bool = False,
    completions=None,
    trainer=None,
    variant: dict | None = None,
) -> dict:
    """Our loss and TRL's (GRPOTrainer.compute_loss) on the identical batch with advantages adv, and their gradients.
    bias_kl: TRL's use_bias_correction_kl; on_policy: old log-probs are the policy's own (else the base model's);
    epsilon_high: the upper clip (None: epsilon); mask_truncated: mask_truncated_completions, ours from the
    completions' finish reasons, TRL's from its rule on the completion ids; trainer: a GRPOTrainer made by
    trl_trainer with the same settings (else one is made here); variant: TRL's variant settings by their names,
    which are ours too (the entropy bonus is TRL's static one: trainer made with use_adaptive_entropy keeps its
    coefficient 0 until an entropy is measured, as ours does)."""
    import torch

    from escov.llm.grpo import GRPOConfig, grpo_loss, truncated_rows
    from escov.llm.grpo_entropy import high_entropy_mask
    from escov.llm.rollout import completion_logprobs

    tmask = ours_batch["mask"][:, 1:]
    if mask_truncated:
        tmask = tmask * truncated_rows(completions)[:, None]
    policy = perturbed(s.model, s.policy_scale, s.seed + 1)
    cfg = GRPOConfig(
        num_generations=s.num_generations,
        learning_rate=s.learning_rate,
        beta=beta,
        epsilon=s.epsilon,
        loss_type=loss_type,
        epsilon_high=epsilon_high or 0.0,
        mask_truncated_completions=mask_truncated,
        **(variant or {}),
    )
    logp, entropy = completion_logprobs(
        policy, ours_batch["seq"], ours_batch["attention"], ours_batch["mask"], s.temperature, with_entropy=True
    )
    old = logp.detach() if on_policy else ours_batch["old"]  # GRPO.step's old log-probs when num_iterations = 1
    selected = None
    if cfg.top_entropy_quantile < 1.0:
        selected = high_entropy_mask(entropy.detach(), tmask, cfg.top_entropy_quantile).to(tmask.dtype)
    coef = 0.0 if cfg.use_adaptive_entropy else cfg.entropy_coef
    loss_ours, _, ratio = grpo_loss(
        logp,
        old,
        ours_batch["ref"],
        adv,
        tmask,
        cfg,
        n_seq=len(adv),
        n_tok=float(tmask.sum()),
        max_completion_length=s.max_new_tokens,
        entropy=entropy,
        selected=selected,
        entropy_coef=coef,
        n_selected=float((tmask if selected is None else tmask * selected).sum()),
    )
    loss_ours.backward()
    g_ours = gradients(policy)
    with tempfile.TemporaryDirectory() as tmp:
        if trainer is None:
            trainer = trl_trainer(
                s,
                perturbed(s.model, s.policy_scale, s.seed + 1),
                task,
                problems,
                tmp,
                loss_type=loss_type,
                beta=beta,
                bias_correction_kl=bias_kl,
                epsilon_high=epsilon_high,
                variant=variant,
            )
        # eval mode: normalizer 1, as in training with gradient_accumulation_steps = 1 (the attribute TRL reads
        # in train mode exists only inside Trainer.train); no dropout, as GRPO.step
        trainer.model.train(False)
        trainer.model.zero_grad(set_to_none=True)
        inputs = trl_masked_truncated(trainer, trl_inputs) if mask_truncated else dict(trl_inputs)
        inputs = {k: v for k, v in inputs.items() if not (on_policy and k == "old_per_token_logps")}
        inputs["advantages"] = adv.clone()
        loss_trl = trainer.compute_loss(trainer.model, inputs)  # without old log-probs: TRL's on-policy path
        loss_trl.backward()
        g_trl = gradients(trainer.model)
    names = sorted(g_ours)
    if names != sorted(g_trl):
        raise RuntimeError(f"gradients cover different parameters: {set(names) ^ set(g_trl)}")
    diff = torch.cat([(g_trl[n] - g_ours[n]).flatten() for n in names])
    ref_norm = torch.cat([g_ours[n].flatten() for n in names]).norm()
    lo, lt = float(loss_ours.detach()), float(loss_trl.detach())
    return {
        "loss_type": loss_type,
        "beta": beta,
        "use_bias_correction_kl": bias_kl,
        "on_policy": on_policy,
        "variant": dict(variant or {}),
        "selected_share": 1.0 if selected is None else float((tmask * selected).sum() / tmask.sum()),
        "epsilon_high": epsilon_high,
        "mask_truncated": mask_truncated,
        "tokens": float(tmask.sum()),
        "loss_ours": lo,
        "loss_trl": lt,
        "loss_abs_diff": abs(lt - lo),
        "loss_rel_diff": abs(lt - lo) / max(abs(lo), 1e-30),
        "grad_norm_ours": float(ref_norm),
        "grad_max_abs_diff": float(diff.abs().max()),
        "grad_rel_diff": float(diff.norm() / ref_norm),
        "clip_fraction": float((((ratio - 1).abs() > s.epsilon).float() * tmask).sum() / tmask.sum().clamp(min=1.0)),
    }
