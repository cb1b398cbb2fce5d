"""Everything a report is built from: real runs grouped by variant, theory checks, simulate summaries.

A run's variant is derived from its saved config, so a report never depends on directory names:
`es`, `grpo`, `es-grpo`, `grpo-es`, and ES variants with tags, e.g. `es[sampled]` (member rollouts
sampled at a temperature), `es[no-zscore]` (centered rewards at the same alpha), `es[no-zscore,rescaled]`
(centered, alpha rescaled to the z-scored update norm), `es[two-point]`, `es[null]` (random z), `es[bf16]`
(the paper code's in-place bf16 perturbation), `es[rank-4]` (low-rank noise), and the label a run gives itself
(`es.tag`, e.g. `es[small-sigma]`). Evaluating the population in one batched generate or on Ray workers gives the
same run, so it is no tag. The population-size sweep is told apart by the model and N, which are kept beside the
variant.

ES settings that carry no tag (sigma, alpha, member_samples, ...) must agree within a row: runs of one
variant whose untagged settings differ are never pooled. The row keeps the largest group of runs
with equal settings, and every run left out is named in the report's input problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from escov.llm.rundir import read_json
from escov.paper_checks.rundir import Run
from escov.theory.decisions import DECISIONS, FINDING
from escov.theory.metrics import pass_at_k_counts

ES_TAGS = (
    ("member_temperature", lambda v: v > 0, "sampled"),
    ("zscore", lambda v: not v, "no-zscore"),
    ("center_scale", lambda v: v != 1.0, "rescaled"),
    ("antithetic", bool, "two-point"),
    ("null_control", bool, "null"),
    ("inplace_bf16", bool, "bf16"),
)


# ES settings that may differ between the runs of one row by design: tagged above, the population size
# (the sweep, kept beside the variant), and center_scale (the rescaled variant sets it per seed)
POOLED_ES_SETTINGS = {key for key, _, _ in ES_TAGS} | {"population_size"}


def untagged_settings(config: dict) -> tuple:
    """The ES settings of a run that carry no tag, as (name, value) pairs: equal within one report row."""
    es = config.get("es", {}) if "es" in str(config.get("algo")) else {}
    return tuple(sorted((k, repr(v)) for k, v in es.items() if k not in POOLED_ES_SETTINGS))


def grpo_tags(grpo: dict) -> list[str]:
    """TRL's GRPO variants a run's [grpo] table sets (the paper's GRPO has none): the loss type when not grpo,
    dapo's upper clip, the reward scaling when not by group, masked truncation, a schedule, LoRA and its rank."""
    tags = [grpo["loss_type"]] if grpo.get("loss_type", "grpo") != "grpo" else []
    if grpo.get("epsilon_high"):
        tags.append(f"clip-high-{grpo['epsilon_high']:g}")
    if grpo.get("scale_rewards", "group") not in ("group", True):
        tags.append(f"scale-{grpo['scale_rewards']}")
    if grpo.get("mask_truncated_completions"):
        tags.append("mask-truncated")
    if grpo.get("lr_scheduler_type", "constant") != "constant":
        tags.append(grpo["lr_scheduler_type"])
    if grpo.get("use_peft"):
        tags.append(f"lora-r{grpo.get('lora_r', 16)}")
    return tags


def variant(config: dict) -> str:
    """The method a run config describes: algo plus the ES options and GRPO variants that change it."""
    algo = config.get("algo", "unknown")
    es = config.get("es", {})
    tags = [tag for key, test, tag in ES_TAGS if key in es and test(es[key])] if "es" in algo else []
    rank = config.get("population", {}).get("noise_rank", 0)
    if "es" in algo and rank:
        tags.append(f"rank-{rank}")
    if "es" in algo and es.get("tag"):  # the run's own label (llm/config.py ESConfig.tag)
        tags.append(es["tag"])
    if "grpo" in algo:
        tags += grpo_tags(config.get("grpo", {}))
    return f"{algo}[{','.join(tags)}]" if tags else algo


@dataclass
class Evidence:
    runs: list[Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    excluded: list[dict] = field(default_factory=list)  # {"what", "reason"}: left out (paper_checks/trust.py)
    theory: list[dict] | None = None
    simulate: dict[str, dict] | None = None
    lemma_grid: list[dict] | None = None  # rows of paper_checks.lemma_grid on the runs' base
    lemma_as_stated: dict | None = None  # paper_checks.lemma_as_stated's record on the runs' base

    def by_variant(self, name: str, *, sweep: bool = False) -> list[Run]:
        """Runs of one variant, sorted by seed. Unless sweep is set, only runs of the main model and,
        for ES, of the main population size (the population sweep adds runs beside them)."""
        model, n_main = self.main_model(), self.main_population()
        out = [r for r in self.runs if variant(r.config) == name]
        if not sweep:
            out = [
                r
                for r in out
                if r.config.get("model") == model
                and ("es" not in name or r.config.get("es", {}).get("population_size") == n_main)
            ]
        return sorted(self._one_setting(name, out), key=lambda r: (r.seed or 0, r.name))

    def _one_setting(self, name: str, runs: list[Run]) -> list[Run]:
        """The runs with the most common untagged ES settings; the others named in `problems`."""
        groups: dict[tuple, list[Run]] = {}
        for r in runs:
            groups.setdefault(untagged_settings(r.config), []).append(r)
        if len(groups) <= 1:
            return runs
        kept_key = max(groups, key=lambda k: (len(groups[k]), k))
        kept = dict(kept_key)
        for key, left in groups.items():
            if key == kept_key:
                continue
            differ = ", ".join(f"{k} {v} (row: {kept.get(k, 'unset')})" for k, v in key if kept.get(k) != v)
            differ += "".join(f", {k} unset (row: {v})" for k, v in kept_key if k not in dict(key))
            note = (
                f"{name}: runs {', '.join(sorted(r.name for r in left))} left out of the row: "
                f"untagged ES settings differ: {differ}"
            )
            if note not in self.problems:
                self.problems.append(note)
        return groups[kept_key]

    def common_ks(self, runs: list[Run], which: str = "final") -> list[str]:
        """The ks of Pass@k that every one of the runs' evaluations `which` holds (runs of different eval_ks are
        compared on these), ascending; each run that lacks a k some other run has is named in `problems`."""
        held = {r.name: set(eval_of(r, which)["pass_at_k"]) for r in runs if eval_of(r, which)}
        if not held:
            return []
        every = set.union(*held.values())
        for name, ks in sorted(held.items()):
            if ks != every:
                note = (
                    f"run {name} lacks Pass@k for k = {', '.join(sorted(every - ks, key=int))} in its {which} "
                    f"evaluation (its eval_ks differ): Pass@k across runs uses the ks they share"
                )
                if note not in self.problems:
                    self.problems.append(note)
        return sorted(set.intersection(*held.values()), key=int)

    def main_model(self) -> str | None:
        """The model most runs start from."""
        return _most_common([r.config.get("model") for r in self.runs])

    def main_population(self) -> int | None:
        """The ES population size most ES runs of the main model use."""
        model = self.main_model()
        return _most_common(
            [
                r.config.get("es", {}).get("population_size")
                for r in self.runs
                if r.config.get("model") == model and "es" in str(r.config.get("algo"))
            ]
        )


def _most_common(values: list):
    return max(set(values), key=values.count) if values else None


def per_problem_pass(ev: dict, k: int) -> np.ndarray:
    """Unbiased Pass@k of every evaluated problem, from the per-problem correct counts of an eval."""
    counts = np.array([p["correct"] for p in ev["per_problem"]])
    return pass_at_k_counts(int(ev["n"]), counts, k)


def eval_of(run: Run, which: str) -> dict | None:
    """run's eval.json section 'base' or 'final' (None when the run lacks it)."""
    return (run.eval or {}).get(which)


def heldout_of(run: Run, which: str) -> dict | None:
    return ((run.eval or {}).get("heldout") or {}).get(which)


def load_theory_json(path: Path) -> list[dict]:
    """The item list of `python -m escov.theory --json`; ValueError naming the file and item when malformed.
    (NaN there, an undefined statistic of that level, is read, and written as null in report.json.)"""
    data = read_json(Path(path), allow_non_finite=True)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected the JSON list printed by `python -m escov.theory --json`")
    for i, item in enumerate(data):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("holds"), bool)
        ):
            raise ValueError(
                f"{path}: item {i} is not a theory check (an object with a string 'name' and a boolean 'holds')"
            )
    return data


def load_simulate_summary(path: Path) -> dict[str, dict]:
    """summary.json of `python -m escov.simulate all`: {experiment name: summary}; ValueError naming the file
    and experiment when malformed (NaN read as for the theory file)."""
    data = read_json(Path(path), allow_non_finite=True)
    if isinstance(data, dict) and "experiments" in data:
        data = data["experiments"]
    if isinstance(data, list):
        if not all(isinstance(d, dict) and isinstance(d.get("name"), str) for d in data):
            raise ValueError(f"{path}: expected a list of experiment summaries, each with a 'name'")
        data = {d["name"]: d for d in data}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected the summary.json written by `python -m escov.simulate all`")
    for name, summary in data.items():
        claims = summary.get("claims", []) if isinstance(summary, dict) else None
        if not isinstance(claims, list) or not all(
            isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("claim", "verdict", "why")) for c in claims
        ):
            raise ValueError(
                f"{path}: experiment {name!r} is not a summary (its 'claims' need 'claim', 'verdict', 'why' strings)"
            )
        unknown = sorted({c["verdict"] for c in claims} - {*DECISIONS, FINDING})
        if unknown:
            raise ValueError(
                f"{path}: experiment {name!r} has verdicts {unknown}, not the words every level uses "
                f"({', '.join(DECISIONS)}, {FINDING}); rerun `python -m escov.simulate all`"
            )
    return data


LEMMA_GRID_FIELDS = {
    "sigma": (int, float),
    "members": int,
    "measured": (int, float),
    "predicted": (int, float),
    "ratio": (int, float),
    "ratio_ci": list,
    "ratios": list,
    "s_measured": (int, float),
}


def load_lemma_grid(path: Path) -> list[dict]:
    """lemma_grid.json written by `paper_checks reproduce`; ValueError naming the file and row when malformed
    (NaN read as for the theory file)."""
    data = read_json(Path(path), allow_non_finite=True)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected the JSON list of grid rows written by `paper_checks reproduce`")
    for i, row in enumerate(data):
        bad = [
            k
            for k, t in LEMMA_GRID_FIELDS.items()
            if not isinstance(row, dict) or not isinstance(row.get(k), t) or isinstance(row.get(k), bool)
        ]
        if bad or len(row["ratio_ci"]) != 2:
            raise ValueError(
                f"{path}: row {i} is not a grid row (fields {bad or ['ratio_ci']} missing or of the wrong type)"
            )
    return data
