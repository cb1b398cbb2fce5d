"""Your own runs compared: runs grouped by their settings, and, for runs on your data and rewards, each group's
rewards and Pass@k base -> final (the `paper_checks report` section "Your runs").

Groups. Two runs are seeds of one group exactly when every setting that changes what is trained or measured is
equal (config.json flattened to `grpo.loss_type`, `es.sigma`, `reward_function`, ...): the seed and the settings
that only change where, how fast or how often a run computes or logs (RUN_LOCAL) may differ. A group is named
by its method (evidence.variant: the algorithm with its ES and GRPO tags, `grpo[dapo,lora-r16]`) and, where two
groups share a method, by the settings that tell them apart (`es (es.sigma=0.001)`). Runs of different groups are
never pooled as seeds.

The comparison, per group with base and final evaluations: each reward function's mean (eval.json
rewards/<name>/mean) base -> final, the change's interval over seeds (Student t, S - 1 df; eval.json keeps only
the mean per run); Pass@k under the runs' own rule of correctness (eval.json `correct`) base -> final, the
change's interval over seeds and the shared test prompts (design.seeds_by_prompts on the per-prompt Pass@k).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from escov.paper_checks.design import seeds_by_prompts
from escov.paper_checks.evidence import eval_of, per_problem_pass, variant
from escov.paper_checks.rundir import Run
from escov.theory.decisions import over_seeds

# settings that change where, how fast or how often a run computes or logs, not what it trains or measures
RUN_LOCAL = {
    "seed",
    "out",
    "device",
    "threads",
    "engine",
    "report_to",
    "completions_kept",
    "completions_every",
    "checkpoint_every",
    "checkpoint_dense",
    "workers",
    "ray_address",
    "gpu_memory_utilization",
    "population.batched",
    "population.max_rows",
    "population.lowrank_layout",
    "population.keep_noise_mb",
    "population.members",
    "grpo.micro_batch_size",
    "grpo.gradient_checkpointing",
    "schedule",
}
# settings the method's name (evidence.variant) already states
IN_VARIANT = {
    "algo",
    "grpo.loss_type",
    "grpo.epsilon_high",
    "grpo.scale_rewards",
    "grpo.mask_truncated_completions",
    "grpo.use_peft",
    "grpo.lora_r",
    "grpo.lr_scheduler_type",
    "es.member_temperature",
    "es.zscore",
    "es.center_scale",
    "es.antithetic",
    "es.null_control",
    "es.inplace_bf16",
    "population.noise_rank",
    "es.tag",
}


def flat_settings(config: dict) -> dict:
    """config.json as {dotted name: value} without RUN_LOCAL; lists as tuples (hashable)."""
    out = {}
    for key, value in config.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for sub, v in items:
            name = key if sub is None else f"{key}.{sub}"
            if name not in RUN_LOCAL and key not in RUN_LOCAL:
                out[name] = tuple(v) if isinstance(v, list) else v
    return out


@dataclass
class Group:
    name: str
    method: str
    settings: dict  # the settings that tell this group from the others of its method
    runs: list[Run] = field(default_factory=list)

    @property
    def seeds(self) -> list:
        return sorted(r.seed for r in self.runs)


def group_runs(runs: list[Run]) -> list[Group]:
    """The runs grouped by equal settings (flat_settings), each group named (see the module docstring)."""
    by_key: dict[tuple, list[Run]] = {}
    for run in runs:
        by_key.setdefault(tuple(sorted(flat_settings(run.config).items(), key=lambda kv: kv[0])), []).append(run)
    keys = list(by_key)
    groups = []
    for key in keys:
        method = variant(by_key[key][0].config)
        settings = dict(key)
        siblings = [dict(k) for k in keys if k != key and variant(by_key[k][0].config) == method]
        differing = sorted(
            {
                name
                for other in siblings
                for name in set(settings) | set(other)
                if settings.get(name) != other.get(name) and name not in IN_VARIANT
            }
        )
        shown = {name: settings.get(name) for name in differing}
        label = ", ".join(f"{n}={_short(v)}" for n, v in shown.items())
        groups.append(Group(f"{method} ({label})" if label else method, method, shown, by_key[key]))
    return sorted(groups, key=lambda g: g.name)


def _short(value) -> str:
    text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def is_own_run(config: dict) -> bool:
    """A run on the user's data or rewards: task "prompts", reward functions, or data files."""
    return (
        config.get("task") == "prompts"
        or bool(config.get("reward_function"))
        or bool(config.get("data"))
        or bool(config.get("test_data"))
    )


def _change(values_base: list[float], values_final: list[float]) -> dict:
    return over_seeds(np.asarray(values_final) - np.asarray(values_base))


def compare_group(group: Group) -> dict | None:
    """The group's rewards and Pass@k base -> final (None when no run has both evaluations)."""
    runs = [r for r in group.runs if eval_of(r, "base") and eval_of(r, "final")]
    if not runs:
        return None
    base, final = [eval_of(r, "base") for r in runs], [eval_of(r, "final") for r in runs]
    out = {
        "group": group.name,
        "seeds": sorted(r.seed for r in runs),
        "correct": final[0].get("correct", "reward >= 1"),
        "rewards": {},
        "pass_at_k": {},
    }
    for name in final[0].get("rewards", {}):
        pairs = [
            (b.get("rewards", {}).get(name, {}).get("mean"), f["rewards"].get(name, {}).get("mean"))
            for b, f in zip(base, final)
        ]
        pairs = [(b, f) for b, f in pairs if b is not None and f is not None]
        if pairs:
            bs, fs = zip(*pairs)
            out["rewards"][name] = {"base": float(np.mean(bs)), "final": float(np.mean(fs)), "change": _change(bs, fs)}
    ks = [k for k in final[0]["pass_at_k"] if all(k in e["pass_at_k"] for e in base + final)]
    same_prompts = len({tuple(p["id"] for p in e.get("per_problem", [])) for e in base + final}) == 1
    for k in ks:
        entry = {
            "base": float(np.mean([b["pass_at_k"][k] for b in base])),
            "final": float(np.mean([f["pass_at_k"][k] for f in final])),
        }
        prompts = len(final[0].get("per_problem", []))
        if same_prompts and prompts >= 2:
            diffs = np.stack([per_problem_pass(f, int(k)) - per_problem_pass(b, int(k)) for b, f in zip(base, final)])
            entry["change"] = seeds_by_prompts(diffs, int(final[0]["n"])).to_json()
        else:
            entry["change"] = _change([b["pass_at_k"][k] for b in base], [f["pass_at_k"][k] for f in final])
        out["pass_at_k"][k] = entry
    return out


def own_runs_section(runs: list[Run], show=str) -> dict:
    """report.json's "own_runs": the groups (name, settings that tell it apart, seeds, run paths as `show` writes
    them) and the comparison of each group that has base and final evaluations."""
    groups = group_runs(runs)
    return {
        "groups": [
            {
                "name": g.name,
                "method": g.method,
                "settings": {k: _short(v) for k, v in g.settings.items()},
                "seeds": g.seeds,
                "runs": [show(r.path) for r in g.runs],
            }
            for g in groups
        ],
        "comparison": [c for c in (compare_group(g) for g in groups) if c is not None],
    }


def _interval(change: dict) -> str:
    lo, hi = change.get("lo"), change.get("hi")
    if lo is None or hi is None or not np.isfinite(lo) or not np.isfinite(hi):
        return "n/a (one seed)"
    return f"[{lo:+.3f}, {hi:+.3f}]"


def render(section: dict) -> list[str]:
    """REPORT.md's "Your runs" section."""
    lines = [
        "## Your runs",
        "",
        "Runs are grouped by their settings: the runs of a group differ only by seed (and by "
        "where or how fast they ran); runs of different groups are never pooled.",
        "",
        "| group | seeds | runs |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{g['name']}` | {', '.join(map(str, g['seeds']))} | {len(g['runs'])} |" for g in section["groups"]]
    lines.append("")
    for c in section["comparison"]:
        lines += [
            f"### `{c['group']}`: base -> final ({len(c['seeds'])} seed{'s' * (len(c['seeds']) != 1)}; "
            f"correct: {c['correct']})",
            "",
            "| measure | base | final | change [95%] |",
            "| --- | --- | --- | --- |",
        ]
        for name, r in c["rewards"].items():
            lines.append(
                f"| reward `{name}` (mean) | {r['base']:.3f} | {r['final']:.3f} | "
                f"{r['change']['mean']:+.3f} {_interval(r['change'])} |"
            )
        for k, p in c["pass_at_k"].items():
            lines.append(
                f"| Pass@{k} | {p['base']:.3f} | {p['final']:.3f} | {p['change']['mean']:+.3f} "
                f"{_interval(p['change'])} |"
            )
        lines.append("")
    return lines
