"""paper_checks on synthetic run directories built so that each claim must hold or must fail."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.cli import main as cli_main
from escov.paper_checks.evidence import variant
from escov.paper_checks.real_checks import REAL_CHECKS, diff_between, diff_vs_base
from escov.paper_checks.report import build_report, collect
from escov.paper_checks.rundir import Run, RunDirError, load_run
from escov.paper_checks.verdict import FAILS, HOLDS, IDENTITY, INCONCLUSIVE, MISSING, NOT_TESTABLE
from escov.theory.claims import BY_ID, CLAIMS

N_SAMPLES, N_PROBLEMS = 32, 40


def _eval(rng, p_per_problem, ks=(1, 16, 32), n: int = N_SAMPLES) -> dict:
    """An eval section with per-problem correct counts drawn from Binomial(n, p)."""
    counts = rng.binomial(n, p_per_problem)
    from escov.theory.metrics import pass_at_k_counts

    return {
        "n": n,
        "ks": list(ks),
        "pass_at_k": {str(k): float(pass_at_k_counts(n, counts, k).mean()) for k in ks},
        "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
    }


def make_run(
    root: Path,
    name: str,
    algo: str,
    seed: int,
    base_p,
    final_p,
    *,
    entropy=(1.0, 1.0),
    drift=1e-3,
    es: dict | None = None,
    task: str = "countdown",
    heldout_drop: float = 0.0,
    model: str = "base",
    tiny_share: float | None = None,
    thresholded_change: float | None = None,
    lemma1_ratio: float | None = None,
    entries: int = 1000,
    reward: float = 0.3,
    curve_p=None,
    s_measured: float = 0.01,
) -> Path:
    rng = np.random.default_rng(zlib.crc32(f"{name}-{seed}".encode()))
    run = root / name
    run.mkdir(parents=True)
    config = {
        "algo": algo,
        "model": model,
        "task": task,
        "seed": seed,
        "es": {
            "population_size": 8,
            "sigma": 1e-3,
            "alpha": 1e-3,
            "member_temperature": 0.0,
            "zscore": True,
            "antithetic": False,
            "null_control": False,
            "inplace_bf16": False,
        }
        | (es or {}),
    }
    (run / "config.json").write_text(json.dumps(config))
    steps = 10
    with open(run / "metrics.jsonl", "w") as fh:
        for s in range(steps):
            h = entropy[0] + (entropy[1] - entropy[0]) * s / (steps - 1)
            fh.write(
                json.dumps(
                    {
                        "step": s + 1,
                        "reward_mean": reward,
                        "pass_at_1": 0.3,
                        "entropy": h,
                        "es_update_norm": 1.0,
                        "drift_rel": drift * (s + 1) / steps,
                        "drift_layers": {"layer.0": drift},
                    }
                )
                + "\n"
            )
    heldout_base = np.full(N_PROBLEMS, 0.6)
    ev = {
        "base": _eval(rng, base_p),
        "final": _eval(rng, final_p),
        "heldout": {"base": _eval(rng, heldout_base), "final": _eval(rng, heldout_base - heldout_drop)},
        "update_analysis": {
            "entries": entries,
            "max_abs": 0.01,
            "kinds": {},
            "tau_scale": 1.0,
            "histogram": {"edges": [1e-4, 1e-3, 1e-2], "counts": [10, 5]},
            "share_nonzero_le_tau": {"0.0015": 0.3 if tiny_share is None else tiny_share},
        },
    }
    if thresholded_change is not None:
        ev["thresholded"] = [
            {
                "keep_percent": 22.0,
                "sparsity_percent": 78.0,
                "pass_at_1": ev["final"]["pass_at_k"]["1"] + thresholded_change,
            }
        ]
    (run / "eval.json").write_text(json.dumps(ev))
    if lemma1_ratio is not None:
        (run / "population.json").write_text(
            json.dumps(
                {
                    "measurements": [
                        {
                            "step": steps,
                            "sigma": 1e-3,
                            "members": 8,
                            "jspol": {"mean": 1e-4 * lemma1_ratio},
                            "lemma1_prediction": 1e-4,
                            "validity": {"measured": {"mean": s_measured}, "predicted": 0.01},
                            "lemma2": {"distinct_members_pass": [0.5, 0.6], "same_policy_pass": [0.45, 0.6]},
                        }
                    ]
                }
            )
        )
    if curve_p is not None:  # curve.json: per-step success probabilities -> binomial counts of 32 (llm/curve.py)
        points = []
        for t, p in enumerate(curve_p):
            sampled = _eval(rng, p) | {"mean_token_entropy": float(1.0 + rng.normal(0, 0.01)), "temperature": 0.6}
            points.append({"step": 5 * t, "sampled": sampled, "greedy": _eval(rng, p, ks=(1,), n=1)})
        (run / "curve.json").write_text(json.dumps({"points": points}))
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
        dirs.append(
            make_run(
                tmp_path, f"grpo{seed}", "grpo", seed, p_base, np.minimum(p_base + 0.3, 1), drift=1e-2, heldout_drop=0.4
            )
        )
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


def test_decide_applies_each_test_on_both_sides_and_in_between():
    up, down = BY_ID["es_improves_over_base"].test, BY_ID["grpo_passk_below_base"].test
    assert [
        up.decide(lo, hi) for lo, hi in ((0.01, 0.05), (-0.05, -0.01), (-0.01, 0.05), (0.0, 0.05), (-0.05, 0.0))
    ] == [HOLDS, FAILS, INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE]  # above, below, straddling, touching 0
    assert [down.decide(lo, hi) for lo, hi in ((-0.05, -0.01), (0.01, 0.05), (-0.01, 0.01))] == [
        HOLDS,
        FAILS,
        INCONCLUSIVE,
    ]
    keep = BY_ID["thresholded_pass1"].test  # |d| < 0.02
    assert [
        keep.decide(lo, hi) for lo, hi in ((-0.01, 0.01), (-0.03, 0.01), (0.02, 0.05), (-0.1, -0.02), (-0.05, 0.05))
    ] == [HOLDS, INCONCLUSIVE, FAILS, FAILS, INCONCLUSIVE]
    no_loss = BY_ID["no_forgetting"].test  # d > -0.02
    assert [no_loss.decide(lo, hi) for lo, hi in ((-0.01, 0.03), (-0.03, 0.01), (-0.06, -0.03))] == [
        HOLDS,
        INCONCLUSIVE,
        FAILS,
    ]
    drift = BY_ID["drift_ratio"].test  # the paper's 40.7-44.1x within a factor 2: (20.35, 88.2)
    assert [drift.decide(lo, hi) for lo, hi in ((35, 50), (5, 9), (100, 150), (10, 30), (30, 120))] == [
        HOLDS,
        FAILS,
        FAILS,
        INCONCLUSIVE,
        INCONCLUSIVE,
    ]
    assert BY_ID["lemma2"].test.decide(0.1, 0.2) == IDENTITY
    assert up.decide(float("-inf"), float("inf")) == INCONCLUSIVE  # one seed: no decision
    assert all(c.test.describe() for c in CLAIMS)


def _zero_effect_runs(tmp_path, p_base, seeds=(0, 1)) -> list[Path]:
    """Two seeds of every method with no effect anywhere: final = base, methods alike, entropy and drift
    changes that differ only by seed, ES's tiny-update share equal to its null's, and so on."""
    dirs = []
    for seed in seeds:
        wobble = 0.1 if seed % 2 else -0.1
        for name, algo, es in (
            ("es", "es", {}),
            ("grpo", "grpo", {}),
            ("es-grpo", "es-grpo", {}),
            ("grpo-es", "grpo-es", {}),
            ("rescaled", "es", {"zscore": False, "center_scale": 30.0}),
            ("twopoint", "es", {"antithetic": True}),
            ("null", "es", {"null_control": True}),
        ):
            # two-point at the claim's boundary: one-point exactly 2 points worse
            final = np.clip(p_base + 0.02, 0, 1) if name == "twopoint" else p_base
            # ES and GRPO follow the same path along training, measured every 2 points of Pass@1 (within
            # theory.matched's resolution): no difference at matched Pass@1
            curve = [np.clip(p_base + 0.02 * t, 0, 1) for t in range(11)] if name in ("es", "grpo") else None
            dirs.append(
                make_run(
                    tmp_path,
                    f"{name}{seed}",
                    algo,
                    seed,
                    p_base,
                    final,
                    es=es,
                    curve_p=curve,
                    entropy=(1.0, 1.0 + wobble),
                    drift=1e-3 * (10 ** (1 + seed)) if name == "es" else 1e-3,
                    heldout_drop=0.02,
                    tiny_share=0.3 + wobble / 10,
                    thresholded_change=wobble / 2,
                    lemma1_ratio=1.1 + wobble / 2,
                )
            )
        for model, size, gain in (("base", 1000, 0.02), ("other", 300, 0.02)):
            for n in (32,) if model == "base" else (8, 32):  # base at N = 8: the main ES runs
                dirs.append(
                    make_run(
                        tmp_path,
                        f"sweep-{model}-N{n}-s{seed}",
                        "es",
                        seed,
                        p_base,
                        p_base,
                        model=model,
                        es={"population_size": n},
                        entries=size,
                        reward=0.3 + (gain + wobble / 5) * (n == 32),
                    )
                )
    return dirs


def test_zero_effect_gives_inconclusive_for_every_real_check(tmp_path, p_base):
    """At no effect (or exactly at a claim's boundary), every real check that decides must say
    inconclusive, and an identity is labelled as one."""
    ev = collect(_zero_effect_runs(tmp_path, p_base))
    statuses = {cid: REAL_CHECKS[cid](ev) for cid in REAL_CHECKS}
    for cid, v in statuses.items():
        if cid == "lemma2":
            assert v.status == IDENTITY, v
        elif cid == "matched_no_correct":  # 32 samples: 1 - Pass@32, the same measurement, not a second result
            assert v.status == NOT_TESTABLE and "same measurement" in v.note, v
        else:
            assert v.status == INCONCLUSIVE, (cid, v.status, v.ours, v.note)
            assert v.test and v.design, cid
    assert "2 seeds x 40 prompts x 32 samples" in statuses["es_improves_over_base"].design
    assert "detectable at 80% power" in statuses["es_improves_over_base"].power


def test_report_command_writes_markdown_json_and_plots(tmp_path, p_base):
    dirs = [
        str(make_run(tmp_path, f"{a}{s}", a, s, p_base, np.minimum(p_base + 0.1, 1)))
        for a in ("es", "grpo")
        for s in (0, 1)
    ]
    out = tmp_path / "rep"
    assert cli_main(["report", *dirs, "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert {c["id"] for c in report["claims"]} >= {"es_improves_over_base", "lemma1", "drift_ratio"}
    assert (out / "passk_curves.png").stat().st_size > 1000 and (out / "entropy.png").exists()
    text = (out / "REPORT.md").read_text()
    assert "| claim | paper | test | theory | simulate | real runs | real design |" in text
    assert "design: 2 seeds x 40 prompts x 32 samples" in text and "detectable at 80% power" in text


def test_open_questions_use_the_main_es_runs_only(tmp_path, p_base):
    """es[bf16], es-grpo and grpo-es have 'es' in their names but are not ES's population measurements."""
    from escov.paper_checks.open_questions import lemma1_validity

    dirs = [
        make_run(tmp_path, "es0", "es", 0, p_base, p_base, lemma1_ratio=1.0),
        make_run(tmp_path, "esgrpo0", "es-grpo", 0, p_base, p_base, lemma1_ratio=3.0),
        make_run(tmp_path, "grpoes0", "grpo-es", 0, p_base, p_base, lemma1_ratio=3.0),
        make_run(tmp_path, "bf160", "es", 0, p_base, p_base, es={"inplace_bf16": True}, lemma1_ratio=3.0),
    ]
    rows = lemma1_validity(collect(dirs))["table"]
    assert [r["run"] for r in rows] == ["es0"]


def test_population_sweep_without_reward_signal_is_not_decided(tmp_path, p_base):
    """A model whose training reward is constant (e.g. 0 everywhere) cannot tell population sizes apart."""
    dirs = []
    for seed in (0, 1, 2):
        for model, size, rewards in (("base", 1000, (0.2, 0.6)), ("other", 300, (0.0, 0.0))):
            for n, r in zip((8, 32), rewards):
                dirs.append(
                    make_run(
                        tmp_path,
                        f"{model}-N{n}-s{seed}",
                        "es",
                        seed,
                        p_base,
                        p_base,
                        model=model,
                        es={"population_size": n},
                        entries=size,
                        reward=r + 0.01 * seed * (model == "base"),
                    )
                )
    v = REAL_CHECKS["population_size"](collect(dirs))
    assert v.status == INCONCLUSIVE and "300-parameter model" in v.note and "1,000-parameter" not in v.note


def test_runs_whose_untagged_es_settings_differ_are_not_pooled_in_one_row(tmp_path, p_base):
    """Two ES runs at sigma 1e-3 and one at sigma 1e-2 are all `es`; the row holds the two, and the
    third is named in the report's input problems (never averaged in silently)."""
    dirs = [make_run(tmp_path, f"es{seed}", "es", seed, p_base, p_base) for seed in range(2)]
    dirs.append(make_run(tmp_path, "es-wide", "es", 2, p_base, p_base, es={"sigma": 1e-2}))
    ev = collect(dirs)
    assert {variant(r.config) for r in ev.runs} == {"es"}
    assert [r.name for r in ev.by_variant("es")] == ["es0", "es1"]
    assert any("es-wide" in p and "sigma 0.01" in p and "row: 0.001" in p for p in ev.problems), ev.problems
    ev.by_variant("es")
    assert sum("es-wide" in p for p in ev.problems) == 1  # named once however often the row is read
    rescaled = [
        make_run(
            tmp_path / "r", f"r{seed}", "es", seed, p_base, p_base, es={"zscore": False, "center_scale": 2.0 + seed}
        )
        for seed in range(2)
    ]
    assert len(collect(rescaled).by_variant("es[no-zscore,rescaled]")) == 2  # center_scale differs by design


# ---------------------------------------------------------------------------- runs compared only on the same prompt ids

N = 4


def _run(seed: int, algo: str, base: list[int], final: list[int], ids=None) -> Run:
    ids = ids or [f"p{i}" for i in range(len(base))]

    def ev(counts):
        return {
            "n": N,
            "ks": [1],
            "pass_at_k": {"1": float(np.mean(counts)) / N},
            "per_problem": [{"id": i, "correct": c} for i, c in zip(ids, counts)],
        }

    return Run(
        path=Path(f"{algo}{seed}"), config={"algo": algo, "seed": seed}, eval={"base": ev(base), "final": ev(final)}
    )


def test_a_difference_over_runs_on_the_same_prompts_equals_its_value_by_hand():
    runs = [_run(0, "es", [0, 1, 2], [1, 1, 4]), _run(1, "es", [1, 1, 1], [2, 3, 1])]
    by_hand = np.mean([(1 - 0) / N, 0, (4 - 2) / N, 1 / N, 2 / N, 0])  # Pass@1 = correct / n, per seed and prompt
    assert diff_vs_base(runs, 1).mean == pytest.approx(by_hand)
    other = [_run(0, "grpo", [0, 0, 0], [0, 1, 0]), _run(1, "grpo", [0, 0, 0], [1, 1, 1])]
    by_hand = np.mean([(1 - 0) / N, (1 - 1) / N, (4 - 0) / N, (2 - 1) / N, (3 - 1) / N, (1 - 1) / N])  # finals, by seed
    assert diff_between(runs, other, 1).mean == pytest.approx(by_hand)
    assert diff_between(other, runs, 1).mean == pytest.approx(-by_hand)  # antisymmetric


def test_runs_evaluated_on_other_prompt_ids_are_never_compared():
    same = _run(0, "es", [0, 1, 2], [1, 1, 4])
    moved = _run(1, "es", [1, 1, 1], [2, 3, 1], ids=["p0", "p1", "q9"])
    assert diff_vs_base([same, moved], 1) is None
    assert diff_vs_base([moved, same], 1) is None
    grpo_moved = _run(0, "grpo", [0, 0, 0], [0, 1, 0], ids=["p0", "p1", "q9"])
    assert diff_between([same], [grpo_moved], 1) is None and diff_between([grpo_moved], [same], 1) is None
    mixed = _run(0, "es", [0, 1, 2], [1, 1, 4])
    mixed.eval["final"]["per_problem"][2]["id"] = "q9"  # final on other prompts than its own base
    assert diff_vs_base([mixed], 1) is None
