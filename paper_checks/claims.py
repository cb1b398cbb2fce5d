"""The paper's claims as data: an id, the statement, the paper's numbers, and where each level of
the toolkit tests it (theory check names, a simulate experiment's claim, a real-run check).

A claim that a level cannot test has no entry for that level, and the report says so; a level
whose inputs are missing reports "missing data" for it.
"""
from __future__ import annotations

from dataclasses import dataclass

from paper_checks import paper_numbers as paper


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    paper: str
    theory: str | None = None              # prefix of `python -m theory` check names
    simulate: tuple[str, str] | None = None  # (experiment, start of the claim text in its summary)
    real: bool = True                      # a real-run check exists in paper_checks.real_checks
    untestable: str = ""                   # what our miniature cannot test, and why


def _t2(method: str, model: str = "Qwen2.5-1.5B") -> str:
    return "/".join(f"{v:.1f}" for v in paper.TABLE2_EASY[model][method])


CLAIMS: tuple[Claim, ...] = (
    Claim("entropy_collapse", "GRPO raises Pass@1 but its token entropy collapses; ES keeps its entropy",
          "entropy curves (qualitative)", simulate=("entropy_collapse", "GRPO's policy entropy collapses")),
    Claim("grpo_raises_pass1", "GRPO raises Pass@1 over the base",
          f"Qwen2.5-1.5B {_t2('Base')} -> {_t2('GRPO')} (Pass@1/16/32)", simulate=("entropy_collapse", "Endpoints after equal FLOPs")),
    Claim("es_improves_over_base", "ES improves Pass@1, Pass@16 and Pass@32 over the base",
          f"Qwen2.5-1.5B {_t2('Base')} -> {_t2('ES')}", simulate=("passk_vs_base", "ES improves Pass@1")),
    Claim("es_passk_above_grpo", "ES's Pass@16 and Pass@32 are above GRPO's",
          "all 3 models of Table 2 on Pass@16 and Pass@32", simulate=("entropy_collapse", "At matched Pass@1, ES has the higher Pass@32")),
    Claim("grpo_passk_below_base", "GRPO ends below the base on both Pass@16 and Pass@32",
          f"{paper.GRPO_BELOW_BASE[0]} of {paper.GRPO_BELOW_BASE[1]} task-model comparisons",
          simulate=("passk_vs_base", "GRPO ends below the base"),
          untestable="the paper counts 6 tasks x 3 models; we have one task and tiny models"),
    Claim("schedules_pareto", "Sequential schedules extend the Pass@1-Pass@32 front; ES->GRPO gives the best Pass@32",
          f"Table 3: ES->GRPO {paper.TABLE3_HARD['ES->GRPO'][2]} Pass@32 (best)"),
    Claim("drift_ratio", "ES moves the weights much further than GRPO (relative L2 drift)",
          f"{min(v['ratio'] for v in paper.TABLE4_DRIFT.values())}x-{max(v['ratio'] for v in paper.TABLE4_DRIFT.values())}x GRPO's",
          simulate=("drift_sparsity", "ES moves the weights much further")),
    Claim("update_sparsity", "Most non-zero ES update entries are tiny: |delta| <= 1.5e-3",
          f"{min(v['share'][1] for v in paper.TABLE4_DRIFT.values())}%-{max(v['share'][1] for v in paper.TABLE4_DRIFT.values())}% of entries",
          simulate=("drift_sparsity", "ES's update-magnitude shares carry the reward signal")),
    Claim("thresholded_pass1", "Keeping only the largest updates (about 78% sparsity) keeps Pass@1",
          f"Pass@1 change {', '.join(f'{v:+.2f}' for v in paper.THRESHOLDED_PASS1_CHANGE)} points",
          simulate=("drift_sparsity", "Keeping only the largest 22%")),
    Claim("no_forgetting", "No broad forgetting on held-out tasks after ES (or GRPO)",
          "held-out Pass@1 change: ES +0.0/+1.4/-0.5, GRPO +0.7/+2.3/+0.9 points"),
    Claim("population_size", "A larger model needs a smaller ES population",
          "Table 6: smoothed reward gain N=8->64: 0.5B +0.087, 1.5B +0.016, 3B +0.013",
          simulate=("ablations", "A larger model needs a smaller population")),
    Claim("zscore_essential", "Reward z-scoring is essential for ES", "stated (no table)",
          simulate=("ablations", "Reward z-scoring is essential")),
    Claim("one_point_vs_two_point", "One-point ES is at least as good as two-point (antithetic) ES",
          f"stated; +eps/-eps reward correlation {paper.ANTITHETIC_REWARD_CORRELATION}",
          simulate=("ablations", "Two-point (antithetic) ES gives no gain")),
    Claim("lemma1", "E[JSpol_N] = (sigma^2/2)(1 - 1/N) tr I_x(theta) + O(sigma^4)", "Lemma 1",
          theory="lemma1/", simulate=("lemmas_along_training", "Lemma 1")),
    Claim("dpi", "0 <= JSsucc_N <= JSpol_N (data processing)", "stated with Lemma 1", theory="dpi/",
          simulate=("lemmas_along_training", "0 <= JSsucc_N"), real=False),
    Claim("lemma2", "P_pop = 1 - prod(1 - p_i) >= P_same = 1 - (1 - p_bar)^N", "Lemma 2",
          theory="lemma2/", simulate=("lemmas_along_training", "Lemma 2")),
    Claim("lemma3", "Mixture weights w: p_w - p_bar = N Cov(w, p)", "Lemma 3", theory="lemma3/",
          simulate=("lemmas_along_training", "Lemma 3"), real=False),
    Claim("prop1", "If J_K(pi_w) - J_K(pi_theta) > K sqrt(eps_succ/2) then J_K(pi_theta+) > J_K(pi_theta)",
          "Proposition 1", theory="prop1/", simulate=("lemmas_along_training", "Proposition 1"), real=False),
)

OPEN_QUESTIONS = (
    ("mechanism", "Does ES's Pass@K behaviour come from population diversity or from greedy member rollouts?"),
    ("zero_success", "Cross-prompt structure: the share of test prompts with no correct sample among 32, before and after each method"),
    ("null_controls", "Which of the paper's drift and sparsity numbers survive a random-z null and bf16 in-place perturbation?"),
    ("lemma1_validity", "Is Lemma 1 valid at the paper's sigma on a real model? The measured s = E KL(pi_{theta+sigma eps} || pi_theta)"),
)

CLAIM_IDS = tuple(c.id for c in CLAIMS)
