"""paper_checks on synthetic run directories built so that each claim must hold or must fail."""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from paper_checks.cli import main as cli_main
from paper_checks.evidence import variant
from paper_checks.real_checks import REAL_CHECKS
from paper_checks.report import build_report, collect
from paper_checks.rundir import RunDirError, load_run
from paper_checks.verdict import FAILS, HOLDS, MISSING, bootstrap_mean, bootstrap_two_sample

N_SAMPLES, N_PROBLEMS = 32, 40


def _eval(rng, p_per_problem, ks=(1, 16, 32)) -> dict:
    """An eval section with per-problem correct counts drawn from Binomial(32, p)."""
    counts = rng.binomial(N_SAMPLES, p_per_problem)
    from theory.metrics import pass_at_k_counts
    return {"n": N_SAMPLES, "ks": list(ks), "pass_at_k": {str(k): float(pass_at_k_counts(N_SAMPLES, counts, k).mean()) for k in ks},
            "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)]}


def make_run(root: Path, name: str, algo: str, seed: int, base_p, final_p, *, entropy=(1.0, 1.0), drift=1e-3,
             es: dict | None = None, task: str = "countdown", heldout_drop: float = 0.0) -> Path:
    rng = np.random.default_rng(zlib.crc32(f"{name}-{seed}".encode()))
    run = root / name
    run.mkdir(parents=True)
    config = {"algo": algo, "model": "base", "task": task, "seed": seed,
              "es": {"population_size": 8, "sigma": 1e-3, "alpha": 1e-3, "member_temperature": 0.0, "zscore": True,
                     "antithetic": False, "null_control": False, "inplace_bf16": False} | (es or {})}
    (run / "config.json").write_text(json.dumps(config))
    steps = 10
    with open(run / "metrics.jsonl", "w") as fh:
        for s in range(steps):
            h = entropy[0] + (entropy[1] - entropy[0]) * s / (steps - 1)
            fh.write(json.dumps({"step": s + 1, "reward_mean": 0.3, "pass_at_1": 0.3, "entropy": h,
                                 "drift_rel": drift * (s + 1) / steps, "drift_layers": {"layer.0": drift}}) + "\n")
    heldout_base = np.full(N_PROBLEMS, 0.6)
    (run / "eval.json").write_text(json.dumps({
        "base": _eval(rng, base_p), "final": _eval(rng, final_p),
        "heldout": {"base": _eval(rng, heldout_base), "final": _eval(rng, heldout_base - heldout_drop)}}))
    return run


@pytest.fixture
def p_base():
    return np.random.default_rng(0).uniform(0.02, 0.5, N_PROBLEMS)


def test_variant_names_follow_the_es_options():
    assert variant({"algo": "es", "es": {"member_temperature": 0.0}}) == "es"
    assert variant({"algo": "es", "es": {"member_temperature": 0.7, "null_control": True}}) == "es[sampled,null]"
    assert variant({"algo": "grpo", "es": {"null_control": True}}) == "grpo"
    assert variant({"algo": "es", "es": {}, "population": {"noise_rank": 4, "batched": True}}) == "es[rank-4]"
    assert variant({"algo": "es", "es": {}, "population": {"noise_rank": 0, "batched": True}, "workers": 2}) == "es"


def test_claims_hold_when_the_runs_show_them(tmp_path, p_base):
    dirs = []
    for seed in range(3):
        # ES: every prompt up a lot; GRPO: common prompts up, rare prompts collapse to zero
        dirs.append(make_run(tmp_path, f"es{seed}", "es", seed, p_base, np.minimum(p_base + 0.25, 1), drift=4e-2))
        grpo_final = np.where(p_base > 0.2, np.minimum(p_base + 0.45, 1), 0.0)
        dirs.append(make_run(tmp_path, f"grpo{seed}", "grpo", seed, p_base, grpo_final, entropy=(1.0, 0.3), drift=1e-3))
    ev = collect(dirs)
    assert REAL_CHECKS["es_improves_over_base"](ev).status == HOLDS
    assert REAL_CHECKS["grpo_raises_pass1"](ev).status == HOLDS
    assert REAL_CHECKS["grpo_passk_below_base"](ev).status == HOLDS
    assert REAL_CHECKS["es_passk_above_grpo"](ev).status == HOLDS
    assert REAL_CHECKS["entropy_collapse"](ev).status == HOLDS
    drift = REAL_CHECKS["drift_ratio"](ev)
    assert drift.status == HOLDS and 30 < drift.evidence["es"][0] / drift.evidence["grpo"][0] < 50


def test_claims_fail_when_the_runs_contradict_them(tmp_path, p_base):
    dirs = []
    for seed in range(3):
        # ES makes things worse everywhere; GRPO lifts every prompt and keeps its entropy
        dirs.append(make_run(tmp_path, f"es{seed}", "es", seed, p_base, p_base * 0.3, entropy=(1.0, 0.2)))
        dirs.append(make_run(tmp_path, f"grpo{seed}", "grpo", seed, p_base, np.minimum(p_base + 0.3, 1), drift=1e-2,
                             heldout_drop=0.4))
    ev = collect(dirs)
    assert REAL_CHECKS["es_improves_over_base"](ev).status == FAILS
    assert REAL_CHECKS["grpo_passk_below_base"](ev).status == FAILS
    assert REAL_CHECKS["es_passk_above_grpo"](ev).status == FAILS
    assert REAL_CHECKS["entropy_collapse"](ev).status == FAILS
    assert REAL_CHECKS["drift_ratio"](ev).status == FAILS  # ES drift 1e-3 < GRPO 1e-2
    assert REAL_CHECKS["no_forgetting"](ev).status == FAILS  # GRPO loses 40 points on the held-out task


def test_partial_and_damaged_runs_are_marked_not_crashed(tmp_path, p_base):
    good = make_run(tmp_path, "es0", "es", 0, p_base, p_base)
    cut = make_run(tmp_path, "grpo0", "grpo", 0, p_base, p_base)
    with open(cut / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 11, "reward_me')  # a kill mid-line
    (cut / "eval.json").unlink()
    run = load_run(cut)
    assert len(run.metrics) == 10
    assert any("last line cut off" in p for p in run.problems)
    assert any("eval.json: missing" in p for p in run.problems)
    report = build_report([good, cut], tmp_path / "report")
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    assert real["es_passk_above_grpo"]["status"] == MISSING
    assert real["grpo_passk_below_base"]["status"] == MISSING
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert "last line cut off" in text and "missing data" in text


def test_bad_inputs_name_the_file(tmp_path, p_base):
    with pytest.raises(RunDirError, match="does not exist"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError, match="config.json"):
        load_run(tmp_path / "empty")
    a = make_run(tmp_path, "a", "es", 0, p_base, p_base)
    b = make_run(tmp_path, "b", "grpo", 0, p_base, p_base, task="gsm8k")
    with pytest.raises(RunDirError, match="different tasks"):
        collect([a, b])
    assert cli_main(["report", str(a), str(b), "--out", str(tmp_path / "r")]) == 2


def test_bootstrap_interval_covers_the_mean_at_the_nominal_rate():
    """Coverage of the 95% interval of a mean of N(mu, 1) prompts, against the known mu."""
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(200):
        mean, lo, hi = bootstrap_mean([rng.normal(0.3, 1.0, 60)], n_boot=400)
        covered += lo <= 0.3 <= hi
    assert 0.88 <= covered / 200 <= 0.99
    d, lo, hi = bootstrap_two_sample([1.0, 1.1, 0.9], [0.0, 0.1, -0.1])
    assert d == pytest.approx(1.0) and 0.7 < lo < 1.0 < hi < 1.3


def test_report_command_writes_markdown_json_and_plots(tmp_path, p_base):
    dirs = [str(make_run(tmp_path, f"{a}{s}", a, s, p_base, np.minimum(p_base + 0.1, 1))) for a in ("es", "grpo") for s in (0, 1)]
    out = tmp_path / "rep"
    assert cli_main(["report", *dirs, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert {c["id"] for c in report["claims"]} >= {"es_improves_over_base", "lemma1", "drift_ratio"}
    assert (out / "passk_curves.png").stat().st_size > 1000 and (out / "entropy.png").exists()
    assert "| claim | paper | theory | simulate | real runs |" in (out / "REPORT.md").read_text()
