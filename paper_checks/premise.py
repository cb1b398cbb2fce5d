"""The premise's positive control read from its runs' curves: can GRPO narrow coverage on this base? Its endpoints,
plateau rule, verdict, prompt families and table, for the control (paper_checks/reproduce/premise_control.py,
`python -m escov.paper_checks premise-control`) and for the report's premise record (paper_checks/premise_record.py).

Endpoints, fixed before the control first ran; each the plateau minus the base per (seed, prompt), with the
seeds x prompts interval of paper_checks/design.py (95%):

    pass@32       the unbiased Pass@32 of a prompt from c correct of n samples, 1 - C(n - c, 32) / C(n, 32)
    no_correct    1 when none of the n samples is correct, else 0
    distinct      distinct correct solutions of a solved prompt (canonical forms, llm/tasks/countdown.py:
                  a+b and b+a are one path), over the prompts both points solve: coverage without a ceiling

Plateau: the run's last checkpoint, and the run is said to have reached its plateau when its Pass@1 there is
within PLATEAU_RISE of the highest Pass@1 measured along the run and rose by less than PLATEAU_RISE from the
checkpoint at two thirds of the run. GRPO narrowed on this base when the Pass@32 interval lies wholly below 0
(`narrowed`); an interval wholly above 0 is `widened`, one containing 0 is `no_change_detected` (not "no change":
the record gives the interval's width). Lost prompts (some correct sample at the base, none at the plateau, on
one seed) are counted by family: `rare-only`, the prompts whose every solution (countdown.distinct_solutions)
lies in the base corpus' rare family (llm/tinymodel.py in_rare_family: an operator of rare_ops, a target above
rare_above), and `other`; the base's success rate is given per family too. On a task whose solutions are enumerated
with a planted strategy each (grid_paths, subset_sum: llm/tasks/solution_coverage.py), `rare-only` is a prompt whose
every solution uses the rare strategy (`prompt_family`).
"""

from __future__ import annotations

import numpy as np

PLATEAU_RISE = 0.01  # Pass@1 within 1 point of its highest, and rising less than 1 point over the last third
ENDPOINT_K = 32
FAMILIES = ("rare-only", "other")


def family_of(numbers: list[int], target: int, preset) -> str:
    """ "rare-only" when every distinct solution of the instance lies in the preset's rare family, else "other"."""
    from escov.llm.tasks.countdown import distinct_solutions
    from escov.llm.tinymodel import in_rare_family

    if preset is None:
        return "other"
    solutions = distinct_solutions(numbers, int(target))
    return "rare-only" if solutions and all(in_rare_family(int(target), s, preset) for s in solutions) else "other"


def prompt_family(task: str, meta: dict, model) -> str:
    """A prompt's family on a task: on a planted-strategy task (solution_coverage.COVERAGE_TASKS) "rare-only" when
    every enumerated solution uses the rare strategy; on Countdown, family_of with the base's corpus (its preset,
    read from the model's pretrain.json)."""
    from escov.llm.tasks.solution_coverage import COVERAGE_TASKS, enumerated
    from escov.paper_checks.base_info import base_preset

    if task in COVERAGE_TASKS:
        strategies = {strategy for _, strategy in enumerated(task, meta).values()}
        return "rare-only" if strategies == {"rare"} else "other"
    return family_of(meta["numbers"], meta["target"], base_preset(model))


def plateau(steps: list[int], pass1: list[float]) -> dict:
    """Whether the run reached its plateau at its last measured point (module docstring: PLATEAU_RISE)."""
    last = pass1[-1]
    third = next(i for i, s in enumerate(steps) if s >= 2 * steps[-1] / 3)
    rise = last - pass1[third]
    return {
        "step": steps[-1],
        "pass1": last,
        "highest": max(pass1),
        "rise_last_third": rise,
        "reached": bool(max(pass1) - last < PLATEAU_RISE and rise < PLATEAU_RISE),
    }


def _per_prompt(point: dict) -> tuple[np.ndarray, np.ndarray]:
    rows = point["sampled"]["per_problem"]
    return (
        np.array([r["correct"] for r in rows]),
        np.array([r["distinct_correct_answers"] for r in rows], dtype=float),
    )


def endpoints(pairs: list[tuple[dict, dict]], families: list[str]) -> dict:
    """The three endpoints (plateau - base per seed and prompt) from (base point, plateau point) per seed, on the
    same prompts, with the lost prompts, the base's success per family, and the base's success rate and distinct
    correct solutions on the lost (seed, prompt) pairs (solved at the base, not at the plateau) against the kept
    ones (solved at both): were the prompts lost the ones the base rarely solved, or solved one way?"""
    from escov.paper_checks.design import seeds_by_prompts
    from escov.theory.metrics import pass_at_k_counts

    ns = sorted({point["sampled"]["n"] for pair in pairs for point in pair})
    if len(ns) > 1:
        raise ValueError(f"the control's points were sampled {ns} times: its endpoints need one sample count")
    n = ns[0]
    base_c = np.stack([_per_prompt(b)[0] for b, _ in pairs])
    top_c = np.stack([_per_prompt(t)[0] for _, t in pairs])
    base_d = np.stack([_per_prompt(b)[1] for b, _ in pairs])
    top_d = np.stack([_per_prompt(t)[1] for _, t in pairs])
    both = (base_c > 0) & (top_c > 0)
    values = {
        f"pass@{ENDPOINT_K}": pass_at_k_counts(n, top_c, ENDPOINT_K) - pass_at_k_counts(n, base_c, ENDPOINT_K),
        "no_correct": (top_c == 0).astype(float) - (base_c == 0).astype(float),
    }
    out = {name: seeds_by_prompts(v, n).to_json() for name, v in values.items()}
    solved = both.all(axis=0)  # prompts every seed's base and plateau solve: one design for the distinct count
    out["distinct"] = (
        seeds_by_prompts((top_d - base_d)[:, solved], n).to_json()
        | {
            "prompts": int(solved.sum()),
            "base": float(base_d[:, solved].mean()),
            "plateau": float(top_d[:, solved].mean()),
        }
        if solved.sum() >= 2
        else {"prompts": int(solved.sum()), "reason": "fewer than 2 prompts solved"}
    )
    fam = np.array(families)
    lost = (base_c > 0) & (top_c == 0)
    out["families"] = {
        f: {
            "prompts": int((fam == f).sum()),
            "base_pass1": float((base_c[:, fam == f] / n).mean()) if (fam == f).any() else None,
            "base_pass32": float(pass_at_k_counts(n, base_c[:, fam == f], ENDPOINT_K).mean())
            if (fam == f).any()
            else None,
            "lost": int(lost[:, fam == f].sum()),
            "gained": int(((base_c == 0) & (top_c > 0))[:, fam == f].sum()),
        }
        for f in FAMILIES
    }
    kept = (base_c > 0) & (top_c > 0)
    out["lost_vs_kept"] = {name: _at_base(mask, base_c, base_d, n) for name, mask in (("lost", lost), ("kept", kept))}
    out["lost_prompts"] = sorted(
        {
            pid
            for s in range(len(pairs))
            for pid, gone in zip((r["id"] for r in pairs[s][0]["sampled"]["per_problem"]), lost[s])
            if gone
        }
    )
    return out


def _at_base(mask, base_c, base_d, n: int) -> dict:
    """What the base did on the (seed, prompt) pairs of a mask: how many, its mean success rate (Pass@1) and its
    mean number of distinct correct solutions (canonical forms) there."""
    if not mask.any():
        return {"pairs": 0, "base_pass1": None, "base_distinct": None}
    return {
        "pairs": int(mask.sum()),
        "base_pass1": float((base_c[mask] / n).mean()),
        "base_distinct": float(base_d[mask].mean()),
    }


def verdict(interval: dict) -> str:
    """narrowed / widened / no_change_detected from the Pass@32 interval (module docstring)."""
    if interval["hi"] < 0:
        return "narrowed"
    if interval["lo"] > 0:
        return "widened"
    return "no_change_detected"


def _pm(e: dict, scale: float = 100.0) -> str:
    if e["lo"] is None or e["hi"] is None:
        return f"{scale * e['mean']:+.2f} [no interval: {e['design']}]"
    return f"{scale * e['mean']:+.2f} [{scale * e['lo']:+.2f}, {scale * e['hi']:+.2f}]"


def render(record: dict) -> str:
    """The control's table: each run's curve, the endpoints, the families."""
    e = record["endpoints"]
    lines = [
        f"# Premise control: GRPO from {record['base']['name']} to its plateau",
        "",
        f"{len(record['seeds'])} seeds x {record['prompts']} {record['split']} prompts x {record['samples']} samples "
        f"at T = {record['temperature']}; GRPO {record['grpo']}, {record['steps']} steps.",
        "",
        "| run | step | Pass@1 | Pass@32 | no correct | entropy |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, points in record["curves"].items():
        for p in points:
            ent = "" if p["entropy"] is None else f"{p['entropy']:.3f}"
            lines.append(
                f"| {name} | {p['step']} | {p['pass1']:.3f} | {p['pass32']:.3f} | {p['no_correct']:.3f} | {ent} |"
            )
    reached = sum(p["reached"] for p in record["plateau"].values())
    lines += [
        "",
        f"Plateau reached (Pass@1 within {100 * PLATEAU_RISE:.0f} point of its highest and rising less over the "
        f"last third) on {reached} of {len(record['plateau'])} runs.",
        "",
        "| endpoint (plateau - base, points) | mean [95% interval] |",
        "| --- | --- |",
        f"| Pass@{ENDPOINT_K} | {_pm(e[f'pass@{ENDPOINT_K}'])} |",
        f"| no-correct share | {_pm(e['no_correct'])} |",
    ]
    d = e["distinct"]
    if "mean" in d:
        lines.append(
            f"| distinct correct solutions per solved prompt ({d['base']:.2f} -> {d['plateau']:.2f}, "
            f"{d['prompts']} prompts) | {_pm(d, 1.0)} |"
        )
    lines += [
        "",
        f"Verdict: **{record['verdict']}**.",
        "",
        "| family | prompts | base Pass@1 | base Pass@32 | lost (seed x prompt) | gained |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in e["families"].items():
        if f["prompts"]:
            lines.append(
                f"| {name} | {f['prompts']} | {f['base_pass1']:.3f} | {f['base_pass32']:.3f} | "
                f"{f['lost']} | {f['gained']} |"
            )
    split = e.get("lost_vs_kept")
    if split and split["lost"]["pairs"] and split["kept"]["pairs"]:
        lost, kept = split["lost"], split["kept"]
        lines += [
            "",
            f"At the base, the {lost['pairs']} lost seed x prompt pairs were solved by {100 * lost['base_pass1']:.1f}% "
            f"of samples with {lost['base_distinct']:.2f} distinct correct solutions; the {kept['pairs']} kept pairs "
            f"(solved at both points) by {100 * kept['base_pass1']:.1f}% with {kept['base_distinct']:.2f}.",
        ]
    return "\n".join(lines) + "\n"
