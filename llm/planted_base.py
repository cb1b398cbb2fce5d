"""A first look at a planted base (llm/tinymodel_planted.py): Pass@k on validation prompts, overall and on the
rare-only ones, and the exact coverage measures (llm/tasks/solution_coverage.py) of its samples.

`measure_base(model_dir, task)` samples n completions per validation prompt (HF engine, one process) and
returns: Pass@1 and Pass@n over all prompts and over the rare-only prompts (no solution uses the dominant
strategy; from the exact enumeration), how many prompts are rare-only, the mean share of the enumerated
solution set and of the strategy classes found in the n samples, and the rare strategy's share of the
correct samples on prompts both strategies solve. A measure with nothing to average (no rare-only prompt, no correct
sample on a both-solve prompt) is None, so that the record can be written as JSON.
"""

from __future__ import annotations

import numpy as np

from escov.llm.tasks import get_task
from escov.llm.tasks.solution_coverage import classes_found_share, enumerated, rare_share_on_both, share_found
from escov.theory.metrics import pass_at_k_counts


def measure_base(
    model_dir,
    task_name: str,
    prompts: int = 64,
    n: int = 32,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = 24,
) -> dict:
    """The first-look record of a base on `prompts` validation prompts of the task (module docstring)."""
    from escov.llm.engines import make_engine
    from escov.llm.rollout import rollout

    task = get_task(task_name)
    problems = task.problems("validation", prompts, seed=0)
    engine = make_engine("hf", model_dir)
    out = rollout(
        engine, task, problems, n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, step=0
    )
    texts = [[c.text for c in row] for row in out.completions]
    return base_record(task_name, problems, texts, out.correct) | {"temperature": temperature}


def base_record(task_name: str, problems, texts, correct) -> dict:
    """The first-look record (module docstring; all but the temperature) of n sampled completions per problem:
    texts[i][j] the j-th completion of problems[i], correct[i][j] whether the task counts it correct."""
    task = get_task(task_name)
    correct = np.asarray(correct, dtype=bool)
    n = correct.shape[1]
    counts = correct.sum(axis=1)
    rare_only, both, solution_shares, class_shares, strategies = [], [], [], [], []
    for problem, row, row_correct in zip(problems, texts, correct):
        table = enumerated(task_name, problem.meta)
        kinds = {strategy for _, strategy in table.values()}
        rare_only.append(kinds == {"rare"})
        both.append(kinds == {"dominant", "rare"})
        found = [task.answer(problem, text) for text, ok in zip(row, row_correct) if ok]
        solution_shares.append(share_found(found, table))
        class_shares.append(classes_found_share(found, {s: cls for s, (cls, _) in table.items()}))
        strategies.append([table[s][1] for s in found])
    rare_only = np.array(rare_only)

    def passes(mask) -> dict:
        return {str(k): float(pass_at_k_counts(n, counts[mask], k).mean()) if mask.any() else None for k in (1, n)}

    on_both = rare_share_on_both(strategies, both)

    return {
        "task": task_name,
        "prompts": len(problems),
        "n": n,
        "pass_at_k": passes(np.ones(len(problems), bool)),
        "rare_only_prompts": int(rare_only.sum()),
        "rare_only_pass_at_k": passes(rare_only),
        "solution_share_found": float(np.mean(solution_shares)),
        "class_share_found": float(np.mean(class_shares)),
        "rare_share_on_both": None if np.isnan(on_both) else on_both,
        "both_prompts": int(np.sum(both)),
    }
