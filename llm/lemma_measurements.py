"""The paper's population measurements on a real model, around a center theta (docs/paper.md, "The theory").

On each probe prompt x, with members pi_j = pi_{theta + sigma eps_j} (j = 1..N) at the sampling
temperature and the center pi_0 = pi_theta:

- JSpol_N = (1/N) sum_j KL(pi_j || pi_bar), by the chain rule: KL(pi_j || pi_bar) = E_{y ~ pi_j} sum_t
  KL(pi_j(. | x, y_<t) || pi_bar(. | x, y_<t)), where the mixture's next-token distribution is
  pi_bar(. | x, y_<t) = sum_k w_k pi_k(. | x, y_<t) with w_k proportional to pi_k(y_<t | x). Every
  position's token is averaged exactly over the vocabulary (Rao-Blackwell), so only the prefixes are
  sampled: on the paper-regime base this estimate's relative standard error is 5-10 times smaller than
  that of the sequence-level mixture estimator (mixture_terms: r_k = N pi_k(y) / sum_l pi_l(y),
  f(y) = (1/N) sum_k r_k log r_k, the reference it is checked against). The draw is stratified (m samples
  from every member): the 95% interval uses the stratified standard error.
- Lemma 1's prediction for the population actually drawn: with d_j = eps_j - eps_bar (eps_j the member's
  noise), Q = (sigma^2 / 2) (1/N) sum_j d_j^T I_x d_j, the second-order value of JSpol_N for these
  members, whose expectation over the noise is (sigma^2 / 2)(1 - 1/N) tr I_x. d_j^T I_x d_k is computed
  exactly along the directions, given center completions (direction_gram: forward-mode derivatives of
  the logits), so only the choice of completions adds noise; measured against JSpol_N population by
  population, the noise's own spread (large: I_x is dominated by a few directions) cancels.
- JSsucc_N = h(p_bar) - (1/N) sum_j h(p_j) from the members' success rates p_j = c_j / m. The
  plug-in value is biased upward by about (1 - 1/N) / (2m); reported beside it are the Miller-Madow
  corrected value and a permutation null (the plug-in value when the pooled outcomes are dealt to
  members at random, i.e. its bias when all p_j are equal) with plug-in minus null.
- tr I_x(theta) = E_{y ~ pi_0} ||grad_theta log pi_0(y | x)||^2 (whole-sequence score, over the trained
  parameters), from center samples, and Lemma 1's prediction (sigma^2 / 2)(1 - 1/N) tr I_x.
- the validity parameter s = E_j KL(pi_j || pi_0), measured from y ~ pi_j with the k3 estimator
  (r - 1) - log r, r = pi_0(y) / pi_j(y), against its second-order value (sigma^2 / 2) tr I_x.
- Lemma 2 measured: the chance that one sample from each of K distinct members holds a correct
  answer, 1 - e_K(1 - p) / C(N, K) (unbiased from independent members' rates), and for K = N also
  directly (sample s of every member forms one draw), beside the center's Pass@K and 1 - (1 - p_bar)^K.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np
import torch
import torch.nn.functional as F
from scipy.special import logsumexp

from escov.llm.es.noise import noise
from escov.llm.rollout import completion_logprobs, derive_seed, pad_batch, rollout
from escov.llm.tasks.base import Problem, Task
from escov.theory.lemmas import (
    distinct_members_pass,
    lemma1_prediction,
    lemma2_gap_local,
    population_pass,
    same_policy_pass,
    validity_parameter,
)
from escov.theory.metrics import binary_entropy, jssucc, jssucc_batch, pass_at_k, pass_at_k_from_p

if TYPE_CHECKING:
    from escov.llm.engines.base import Engine

Z95 = 1.959963984540054


# ----------------------------------------------------------------------------- estimators (numpy)

def mixture_terms(logp: np.ndarray) -> np.ndarray:
    """f(y) = (1/N) sum_k r_k log r_k with r_k = N pi_k(y) / sum_l pi_l(y); logp [..., N] holds log pi_k(y)."""
    n = logp.shape[-1]
    log_r = math.log(n) + logp - logsumexp(logp, axis=-1, keepdims=True)
    return np.sum(np.exp(log_r) * log_r, axis=-1) / n


def stratified_mean(terms: np.ndarray) -> tuple[float, float]:
    """The mean of terms [N, m] (m samples from each of N members) and its stratified standard error."""
    n, m = terms.shape
    var = terms.var(axis=1, ddof=1).sum() / (n * n * m) if m > 1 else float("nan")
    return float(terms.mean()), float(math.sqrt(var))


def jspol_estimate(logp: np.ndarray) -> tuple[float, float]:
    """Stratified mixture estimate of JSpol_N and its standard error.

    logp [N, m, N]: logp[j, s, k] = log pi_k(y_js) for the s-th sample y_js drawn from member j."""
    return stratified_mean(mixture_terms(logp))


def _miller_madow_h(c: np.ndarray, m: int) -> np.ndarray:
    """Binary entropy of c / m plus the Miller-Madow term (#outcomes seen - 1) / (2 m)."""
    seen = (c > 0).astype(float) + (c < m).astype(float)
    return binary_entropy(c / m) + (seen - 1.0) / (2.0 * m)


def jssucc_estimates(correct: np.ndarray, n_permutations: int = 200, seed: int = 0) -> dict:
    """JSsucc_N from member outcomes correct [N, m] (bool): plug-in, Miller-Madow, permutation null."""
    n, m = correct.shape
    c = correct.sum(axis=1)
    plug_in = jssucc(c / m)
    mm = float(_miller_madow_h(np.array(c.sum()), n * m) - _miller_madow_h(c, m).mean())
    rng = np.random.default_rng(seed)
    flat = correct.reshape(-1)
    null = float(np.mean([jssucc(rng.permutation(flat).reshape(n, m).mean(axis=1)) for _ in range(n_permutations)]))
    return {"plug_in": plug_in, "miller_madow": mm, "permutation_null": null, "plug_in_minus_null": plug_in - null,
            "first_order_bias": (1 - 1 / n) / (2 * m)}


def validity_estimate(logp: np.ndarray) -> float:
    """s = E_j KL(pi_j || pi_0) from logp [N, m, N + 1] (logp[j, s, k] = log pi_k(y_js), y_js ~ pi_j, k = N the
    center): the k3 estimator (r - 1) - log r with r = pi_0(y) / pi_j(y), averaged over members and samples:
    unbiased (E r = 1), never negative, and of lower variance than log pi_j - log pi_0."""
    n = logp.shape[0]
    log_r = np.array([logp[j, :, n] - logp[j, :, j] for j in range(n)])
    return float((np.expm1(log_r) - log_r).mean())


def success_diversity(correct: np.ndarray, n_permutations: int = 200, seed: int = 0) -> dict:
    """The verifier-projected side of one population on one prompt, from member outcomes correct [N, m]:
    JSsucc_N, Lemma 2's gap P_pop - P_same = (1 - prod(1 - p_j)) - (1 - (1 - p_bar)^N) and its local form
    N p_bar (1 - p_bar)^(N-1) JSsucc_N, all three plug-in on p_j = c_j / m, each beside its permutation null
    (the same statistic with the pooled outcomes dealt to members at random: its value when all p_j are
    equal, i.e. the plug-in bias from m samples). Plug-in minus null is the bias-corrected estimate; the
    same permutations serve all three, so the corrected gap and local form are compared like for like."""
    n, m = correct.shape
    p = correct.mean(axis=1)

    def stats(rates: np.ndarray) -> np.ndarray:  # rates [..., N] -> [..., 3]: jssucc, gap, local form
        gap = population_pass(rates) - same_policy_pass(rates)
        return np.stack([jssucc_batch(rates), gap, lemma2_gap_local(rates)], axis=-1)

    rng = np.random.default_rng(seed)
    flat = correct.reshape(-1)
    shuffled = np.stack([rng.permutation(flat).reshape(n, m).mean(axis=1) for _ in range(n_permutations)])
    plug, null = stats(p), stats(shuffled).mean(axis=0)
    return {f"{name}{suffix}": float(v) for (suffix, values) in (("", plug), ("_null", null))
            for name, v in zip(("jssucc", "gap", "local"), values)}


def lemma2_estimates(member_correct: np.ndarray, center_correct: np.ndarray, ks: list[int]) -> dict:
    """For each K: one draw from each of K distinct members vs the center's Pass@K vs 1 - (1 - p_bar)^K."""
    n, m = member_correct.shape
    p = member_correct.mean(axis=1)
    c0, m0 = int(center_correct.sum()), center_correct.size
    return {
        "K": ks,
        "distinct_members_pass": [float(distinct_members_pass(p, k)) for k in ks],
        "center_pass_at_k": [pass_at_k(m0, c0, k) if k <= m0 else None for k in ks],
        "same_policy_pass": [float(pass_at_k_from_p(p.mean(), k)) for k in ks],
        "direct_one_from_each": float(member_correct.any(axis=0).mean()),  # K = N, draw s = sample s of each member
    }


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """The mean of n independent values and its standard error s / sqrt(n) (s: their standard deviation with
    ddof 1); the standard error is nan from a single value, where no spread can be measured."""
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else float("nan")
    return float(v.mean()), float(se)


def pooled_mean(means: list[float], ses: list[float]) -> tuple[float, float]:
    """The mean of P independent estimates and its standard error sqrt(sum se_i^2) / P."""
    return float(np.mean(means)), math.sqrt(sum(se**2 for se in ses)) / len(ses)


def normal_ci(mean: float, se: float) -> list[float]:
    """The normal 95% interval mean -+ Z95 se."""
    return [mean - Z95 * se, mean + Z95 * se]


def _mean_ci(values: np.ndarray) -> dict:
    """Mean over prompts and its normal 95% interval; the interval is None (null in probe.json)
    from a single prompt, where no spread can be measured."""
    mean, se = mean_and_se(values)
    return {"mean": mean, "ci95": None if math.isnan(se) else normal_ci(mean, se)}


# ----------------------------------------------------------------------------- model side (torch)

def score_sq_norms(model: torch.nn.Module, params: list[torch.nn.Parameter], prompt_ids: list[list[int]],
                   completion_ids: list[list[int]], temperature: float, pad_id: int) -> np.ndarray:
    """||grad_theta log pi(y | x)||^2 over the given parameters, one backward pass per sample."""
    out = []
    for p_ids, c_ids in zip(prompt_ids, completion_ids):
        seq, att, mask = pad_batch([p_ids], [c_ids], pad_id)
        logp = completion_logprobs(model, seq, att, mask, temperature).sum()
        grads = torch.autograd.grad(logp, params, allow_unused=True)
        out.append(sum(float((g.double() ** 2).sum()) for g in grads if g is not None))
    return np.array(out)


def _load(scorer: torch.nn.Module, weights) -> None:
    """Copy (name, tensor) pairs into the scorer's live parameters."""
    with torch.no_grad():
        live = dict(scorer.named_parameters())
        for n, w in weights:
            live[n].copy_(w)


def population_direction(center: dict[str, torch.Tensor], seed: int, step: int, member: int) -> dict[str, torch.Tensor]:
    """eps_j of member j of the population drawn from (seed, step), shaped like center: N(0, 1) entries
    (llm.es.noise)."""
    noise_seed = derive_seed(seed, step, "population-noise")
    return {n: noise(noise_seed, member, n, c.shape, device=c.device) for n, c in center.items()}


def score_population(scorer: torch.nn.Module, weights: Callable[[int], Iterable], members: int,
                     prompt_ids: list[list[int]], completion_ids: list[list[int]], owner: list[int], temperature: float,
                     pad_id: int, micro_batch: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Every completion scored under models k = 0..members (weights(k): (name, tensor) pairs; k = members is the
    center), with the chain-rule term of JSpol_N.

    Returns (logp [row, k] = log pi_k(y_row | x_row) at the temperature, chain [row] = sum_t KL(pi_j(. | x, y_<t) ||
    pi_bar(. | x, y_<t)) with j = owner[row], the member that sampled the row, and pi_bar(v | x, y_<t) =
    sum_k pi_k(y_<t | x) pi_k(v | x, y_<t) / sum_k pi_k(y_<t | x) over the members k < members: the mixture's own
    next-token distribution, so that E_{y ~ pi_j} chain = KL(pi_j || pi_bar) exactly)."""
    device = next(scorer.parameters()).device
    batches = [(i, [t.to(device)
                    for t in pad_batch(prompt_ids[i:i + micro_batch], completion_ids[i:i + micro_batch], pad_id)])
               for i in range(0, len(prompt_ids), micro_batch)]
    owner = torch.as_tensor(owner, device=device)
    logp = np.zeros((len(prompt_ids), members + 1))
    # per batch: log sum_k pi_k(y_<t) pi_k(v | y_<t), log sum_k pi_k(y_<t), log pi_j(v | y_<t)
    mix, norm, own = {}, {}, {}
    for k in range(members + 1):
        _load(scorer, weights(k))
        with torch.no_grad():
            for i, (seq, att, mask) in batches:
                logits = scorer(input_ids=seq, attention_mask=att, use_cache=False).logits[:, :-1].double()
                lp = F.log_softmax(logits / temperature, dim=-1)                  # [S, L, V]
                # log pi_k(y_t | y_<t), 0 off the completion
                tok = lp.gather(2, seq[:, 1:, None]).squeeze(2) * mask[:, 1:]
                logp[i:i + len(seq), k] = tok.sum(1).cpu().numpy()
                if k == members:
                    continue
                prefix = tok.cumsum(1) - tok                                      # log pi_k(y_<t)
                term = prefix[..., None] + lp
                mix[i] = term if k == 0 else torch.logaddexp(mix[i], term)
                norm[i] = prefix if k == 0 else torch.logaddexp(norm[i], prefix)
                mine = owner[i:i + len(seq)] == k
                if k == 0:
                    own[i] = torch.zeros_like(lp)
                own[i][mine] = lp[mine]
    chain = np.zeros(len(prompt_ids))
    for i, (seq, att, mask) in batches:
        log_mix = mix[i] - norm[i][..., None]
        kl = (own[i].exp() * (own[i] - log_mix)).sum(-1) * mask[:, 1:]
        chain[i:i + len(seq)] = kl.sum(1).cpu().numpy()
    return logp, chain


def population_samples(*, engine: Engine, scorer: torch.nn.Module, task: Task, problems: list[Problem],
                       encode: Callable[[str], list[int]], pad_id: int, center: dict[str, torch.Tensor], sigma: float,
                       members: int, samples: int, temperature: float, max_new_tokens: int, seed: int, step: int,
                       dtype: torch.dtype = torch.float32,
                       sign: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One population pi_{theta + sign sigma eps_j} (j = 1..members; eps_j = population_direction(center, seed, step,
    j); sign -1 gives the antithetic population) around `center`: `samples` completions per member and prompt, each
    scored under every member and the center.

    Returns (logp [prompt, j, s, k], correct [prompt, j, s], chain [prompt, j, s]): logp[i, j, s, k] =
    log pi_k(y_ijs | x_i) at the temperature, with k = members the center; correct: the verifier's outcome of y_ijs;
    chain: its chain-rule term of JSpol_N (score_population), so that stratified_mean(chain[i]) estimates JSpol_N on
    prompt i. The engine generates (weights written with load_weights) and the scorer scores, with the weights rounded
    to `dtype` (a bf16 engine samples bf16 members); both hold the center on return."""
    names = list(center)

    def member_w(j: int):
        if j == members:
            return ((n, center[n].to(dtype).float()) for n in names)
        eps = population_direction(center, seed, step, j)
        return ((n, (center[n] + sign * sigma * eps[n]).to(dtype).float()) for n in names)

    member_out = []
    for j in range(members):
        engine.load_weights(member_w(j))
        sample_seed = derive_seed(seed, step, "population-sample", j, *(() if sign == 1 else ("sign", sign)))
        member_out.append(rollout(engine, task, problems, n=samples, temperature=temperature,
                                  max_new_tokens=max_new_tokens, seed=sample_seed, step=step))
    engine.load_weights((n, center[n]) for n in names)

    prompt_ids = [encode(p.prompt) for p in problems]
    rows = [(j, i, s) for j in range(members) for i in range(len(problems)) for s in range(samples)]
    # the center last: the scorer holds it
    logp, chain = score_population(scorer, member_w, members, [prompt_ids[i] for _, i, _ in rows],
                                   [member_out[j].completions[i][s].token_ids for j, i, s in rows],
                                   [j for j, _, _ in rows], temperature, pad_id)
    shape = (members, len(problems), samples)
    logp = logp.reshape(*shape, members + 1).transpose(1, 0, 2, 3)  # [prompt, j, s, k]
    chain = chain.reshape(shape).transpose(1, 0, 2)
    correct = np.stack([np.stack([member_out[j].correct[i] for j in range(members)]) for i in range(len(problems))])
    return logp, correct, chain


@contextmanager
def _eager_attention(model: torch.nn.Module):
    """The model with transformers' eager attention (the fused CPU kernels have no forward-mode derivative)."""
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        model.set_attn_implementation(before)


def direction_gram(model: torch.nn.Module, center: dict[str, torch.Tensor], prompt_ids: list[list[int]],
                   completion_ids: list[list[int]], directions: list[dict[str, torch.Tensor]], temperature: float,
                   pad_id: int) -> np.ndarray:
    """G [j, k, b] = sum_t (J_bt d_j)^T (diag pi_bt - pi_bt pi_bt^T) (J_bt d_k) for completion b and directions d_j
    (parameter-shaped, over the parameters named in `center`, at the weights `center`), where
    J_bt = d(logits / T)/d theta at completion position t of y_b and pi_bt the next-token distribution there.
    For y_b ~ pi(. | x) the mean over b of G is an unbiased estimate of d_j^T I_x d_k (I_x the whole-sequence Fisher of
    fisher_sketch), exactly along the directions: J d is a forward-mode derivative (one per direction), so only the
    completions are sampled."""
    from torch.func import functional_call, jvp

    device = next(model.parameters()).device
    seq, att, mask = (t.to(device) for t in pad_batch(prompt_ids, completion_ids, pad_id))
    names = list(center)

    def logits(*weights):
        out = functional_call(model, dict(zip(names, weights)), (seq,), {"attention_mask": att, "use_cache": False})
        return out.logits[:, :-1].double() / temperature

    primals = tuple(center[n] for n in names)
    with _eager_attention(model), torch.no_grad():
        tangents = []
        for d in directions:
            a, da = jvp(logits, primals, tuple(d[n].to(center[n].dtype) for n in names))
            tangents.append(da * mask[:, 1:, None])
        u = torch.stack(tangents)                          # [K, B, L, V]
        pi = torch.softmax(a, dim=-1)
        pu = (pi * u).sum(-1)                              # [K, B, L]
        gram = torch.einsum("blv,jblv,kblv->jkb", pi, u, u) - torch.einsum("jbl,kbl->jkb", pu, pu)
    return gram.cpu().numpy()


def population_prediction(gram: np.ndarray, sigma: float) -> float:
    """(sigma^2 / 2) (1/N) sum_j d_j^T I d_j with d_j = eps_j - eps_bar, from gram [N, N] = eps_j^T I eps_k: Lemma 1's
    second-order JSpol_N of the population drawn; over the noise its mean is (sigma^2 / 2)(1 - 1/N) tr I."""
    n = gram.shape[0]
    centering = np.eye(n) - 1.0 / n
    return float(0.5 * sigma ** 2 * np.trace(centering @ gram @ centering) / n)


def center_scores(*, engine: Engine, scorer: torch.nn.Module, task: Task, problems: list[Problem],
                  encode: Callable[[str], list[int]], pad_id: int, center: dict[str, torch.Tensor], samples: int,
                  temperature: float, max_new_tokens: int, seed: int, step: int,
                  dtype: torch.dtype = torch.float32) -> tuple[np.ndarray, np.ndarray]:
    """`samples` completions per prompt from the center: (||grad log pi_0(y | x)||^2 over the parameters named in
    `center` [prompt, samples], one backward pass each, correct [prompt, samples]); the mean of a prompt's row
    estimates tr I_x(theta). Engine and scorer hold the center on return."""
    names = list(center)
    engine.load_weights((n, center[n]) for n in names)
    _load(scorer, ((n, center[n].to(dtype).float()) for n in names))
    out = rollout(engine, task, problems, n=samples, temperature=temperature, max_new_tokens=max_new_tokens,
                  seed=derive_seed(seed, step, "population-center"), step=step)
    prompt_ids = [encode(p.prompt) for p in problems]
    params = [dict(scorer.named_parameters())[n] for n in names]
    cp_ids = [prompt_ids[i] for i in range(len(problems)) for _ in range(samples)]
    cc_ids = [out.completions[i][s].token_ids for i in range(len(problems)) for s in range(samples)]
    sq = score_sq_norms(scorer, params, cp_ids, cc_ids, temperature, pad_id).reshape(len(problems), samples)
    return sq, np.asarray(out.correct)


def measure_population(*, engine: Engine, scorer: torch.nn.Module, task: Task, problems: list[Problem],
                       encode: Callable[[str], list[int]], pad_id: int, center: dict[str, torch.Tensor],
                       sigma: float, members: int, samples: int, center_samples: int, temperature: float,
                       max_new_tokens: int, seed: int, step: int, ks: list[int] | None = None,
                       dtype: torch.dtype = torch.float32) -> dict:
    """All population measurements at the center weights `center` (fp32, by parameter name): one
    population (population_samples) and the center's samples (center_scores).

    The engine generates (member weights written with load_weights); the scorer (an HF model, which
    may be the engine's own) computes log-probs and score gradients. Both hold the center on return.
    dtype: the engine's weight dtype; the scorer gets the weights rounded to it, so it scores the
    members the engine sampled (a bf16 engine samples bf16 members)."""
    ks = sorted({k for k in (ks or [2, 4, members]) if 1 <= k <= members})
    common = dict(engine=engine, scorer=scorer, task=task, problems=problems, encode=encode, pad_id=pad_id,
                  center=center, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, step=step,
                  dtype=dtype)
    logp, correct, chain = population_samples(sigma=sigma, members=members, samples=samples, **common)
    sq, center_correct = center_scores(samples=center_samples, **common)

    per_prompt = []
    for i, prob in enumerate(problems):
        lp = logp[i]
        js, js_se = stratified_mean(chain[i])
        tr_i = float(sq[i].mean())
        member_correct = correct[i]
        per_prompt.append({
            "problem": prob.id, "jspol": js, "jspol_se": js_se,
            "jssucc": jssucc_estimates(member_correct, seed=derive_seed(seed, step, "population-perm", i)),
            "fisher_trace": tr_i,
            "fisher_trace_se": mean_and_se(sq[i])[1] if center_samples > 1 else None,
            "lemma1_prediction": lemma1_prediction(tr_i, sigma, members),
            "validity_measured": validity_estimate(lp), "validity_predicted": validity_parameter(tr_i, sigma),
            "member_success": member_correct.mean(axis=1).tolist(), "center_success": float(center_correct[i].mean()),
            "lemma2": lemma2_estimates(member_correct, center_correct[i], ks),
        })

    def mean_of(key: str, sub: str | None = None) -> float:
        return float(np.mean([(r[key][sub] if sub else r[key]) for r in per_prompt]))

    js_mean, js_se = pooled_mean([r["jspol"] for r in per_prompt], [r["jspol_se"] for r in per_prompt])
    center_k = [[r["lemma2"]["center_pass_at_k"][x] for r in per_prompt] for x in range(len(ks))]
    return {
        "step": step, "sigma": sigma, "members": members, "samples_per_member": samples,
        "center_samples": center_samples, "temperature": temperature, "probe_problems": [p.id for p in problems],
        "jspol": {"mean": js_mean, "ci95": normal_ci(js_mean, js_se),
                  "per_prompt": [r["jspol"] for r in per_prompt]},
        "jssucc": {k: mean_of("jssucc", k) for k in per_prompt[0]["jssucc"]},
        "fisher_trace": _mean_ci(np.array([r["fisher_trace"] for r in per_prompt])),
        "lemma1_prediction": mean_of("lemma1_prediction"),
        "validity": {"measured": _mean_ci(np.array([r["validity_measured"] for r in per_prompt])),
                     "predicted": mean_of("validity_predicted")},
        "lemma2": {"K": ks, **{key: np.mean([r["lemma2"][key] for r in per_prompt], axis=0).tolist()
                               for key in ("distinct_members_pass", "same_policy_pass", "direct_one_from_each")},
                   "center_pass_at_k": [None if None in col else float(np.mean(col)) for col in center_k]},
        "per_prompt": per_prompt,
    }
