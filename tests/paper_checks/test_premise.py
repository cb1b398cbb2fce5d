"""The premise's positive control (paper_checks/premise.py): its endpoints against independent arithmetic, its
plateau and verdict rules on made-up curves, the prompt families against instances checked by hand. A real control
on the tiny model (validation prompts only, curve records that say so): tests/paper_checks/reproduce/
test_premise_control.py."""

import math

import pytest

from escov.paper_checks import premise

N = 128


def _point(step, counts, distinct):
    rows = [
        {"id": f"p{i}", "correct": c, "distinct_correct_answers": d} for i, (c, d) in enumerate(zip(counts, distinct))
    ]
    return {"step": step, "sampled": {"n": N, "per_problem": rows, "pass_at_k": {"1": sum(counts) / (N * len(counts))}}}


def _pass32(c):
    return 1 - math.comb(N - c, 32) / math.comb(N, 32)


def test_endpoints_are_plateau_minus_base_per_seed_and_prompt_and_lost_prompts_are_counted_by_family():
    base = [[128, 1, 0, 40], [64, 2, 0, 30]]
    top = [[128, 0, 0, 90], [128, 0, 5, 100]]
    d_base, d_top = [[3, 1, 0, 4], [2, 1, 0, 5]], [[1, 0, 0, 2], [1, 0, 1, 1]]
    pairs = [(_point(0, b, db), _point(300, t, dt)) for b, t, db, dt in zip(base, top, d_base, d_top)]
    out = premise.endpoints(pairs, ["other", "rare-only", "other", "other"])
    want = sum(_pass32(t) - _pass32(b) for bs, ts in zip(base, top) for b, t in zip(bs, ts)) / 8
    assert out["pass@32"]["mean"] == pytest.approx(want)
    assert out["no_correct"]["mean"] == pytest.approx((0 + 1 + 0 + 0 + 0 + 1 - 1 + 0) / 8)
    # prompts 0 and 3 are solved by both points on both seeds: distinct changes (1-3, 2-4, 1-2, 1-5)
    assert out["distinct"]["prompts"] == 2
    assert out["distinct"]["mean"] == pytest.approx((-2 - 2 - 1 - 4) / 4)
    assert out["distinct"]["base"] == pytest.approx((3 + 4 + 2 + 5) / 4)
    fam = out["families"]
    assert fam["rare-only"] == {
        "prompts": 1,
        "base_pass1": pytest.approx((1 + 2) / (2 * N)),
        "base_pass32": pytest.approx((_pass32(1) + _pass32(2)) / 2),
        "lost": 2,
        "gained": 0,
    }
    assert (fam["other"]["prompts"], fam["other"]["lost"], fam["other"]["gained"]) == (3, 0, 1)
    assert out["lost_prompts"] == ["p1"]
    # lost pairs: p1 on both seeds (base 1 and 2 correct, distinct 1 and 1); kept: p0 and p3 on both seeds
    assert out["lost_vs_kept"] == {
        "lost": {"pairs": 2, "base_pass1": pytest.approx(3 / (2 * N)), "base_distinct": pytest.approx(1.0)},
        "kept": {
            "pairs": 4,
            "base_pass1": pytest.approx((128 + 40 + 64 + 30) / (4 * N)),
            "base_distinct": pytest.approx((3 + 4 + 2 + 5) / 4),
        },
    }
    record = {"base": {"name": "b"}, "seeds": [0, 1], "prompts": 4, "split": "validation", "samples": N}
    record |= {"temperature": 0.6, "grpo": {}, "steps": 300, "curves": {}, "plateau": {}, "verdict": "narrowed"}
    text = premise.render(record | {"endpoints": out})
    assert "the 2 lost seed x prompt pairs were solved by 1.2% of samples with 1.00 distinct correct" in text
    assert "the 4 kept pairs (solved at both points) by 51.2% with 3.50." in text


@pytest.mark.parametrize(
    "pass1, reached",
    [
        ([0.30, 0.50, 0.60, 0.650, 0.655, 0.658, 0.660], True),  # flat over the last third
        ([0.30, 0.40, 0.45, 0.500, 0.550, 0.600, 0.650], False),  # still climbing
        ([0.30, 0.60, 0.70, 0.700, 0.680, 0.670, 0.650], False),  # fell back from its highest
    ],
)
def test_a_plateau_is_flat_over_the_last_third_and_near_the_highest_pass1(pass1, reached):
    steps = [0, 50, 100, 150, 200, 250, 300]
    got = premise.plateau(steps, pass1)
    assert got["reached"] is reached
    assert got["rise_last_third"] == pytest.approx(pass1[-1] - pass1[4])  # step 200 = 2/3 of 300


@pytest.mark.parametrize(
    "lo, hi, word", [(-0.05, -0.01, "narrowed"), (0.01, 0.03, "widened"), (-0.02, 0.01, "no_change_detected")]
)
def test_the_verdict_reads_the_pass32_interval(lo, hi, word):
    assert premise.verdict({"lo": lo, "hi": hi}) == word


def test_a_prompt_is_rare_only_when_every_solution_uses_a_rare_operator():
    from escov.llm.tinymodel import preset_with

    rare = preset_with("paper")  # rare_ops "/"
    # 6/(1+1) = 3 is the only way to 3 (checked by hand: 6-1-1 = 4, 6*1*1 = 6, 6-1 = 5 with 1 gives 4, 5, 6...)
    assert premise.family_of([1, 1, 6], 3, rare) == "rare-only"
    assert premise.family_of([1, 2, 6], 2, rare) == "rare-only"  # 6/(1+2) and 6/2-1 only
    assert premise.family_of([1, 2, 3], 6, rare) == "other"  # 1+2+3
    assert premise.family_of([1, 1, 6], 3, preset_with("default")) == "other"  # no rare family
    assert premise.family_of([1, 1, 6], 3, None) == "other"


@pytest.mark.parametrize("lo, hi, word", [(-0.05, 0.0, "no_change_detected"), (0.0, 0.05, "no_change_detected")])
def test_an_interval_that_touches_zero_is_no_change(lo, hi, word):
    assert premise.verdict({"lo": lo, "hi": hi}) == word


def test_the_controls_estimates_are_written_in_points_or_without_an_interval_naming_the_design():
    assert premise._pm({"mean": -0.0677, "lo": -0.1184, "hi": -0.017}) == "-6.77 [-11.84, -1.70]"
    assert premise._pm({"mean": 0.5, "lo": 0.25, "hi": 0.75}, 1.0) == "+0.50 [+0.25, +0.75]"
    for lo, hi in ((None, None), (-0.01, None), (None, 0.01)):  # either end missing: no interval
        assert premise._pm({"mean": 0.01, "lo": lo, "hi": hi, "design": "1 seeds"}) == "+1.00 [no interval: 1 seeds]"


def test_the_plateau_record_reads_the_last_third_from_the_last_step_and_its_rule_is_strict():
    # 2/3 of step 30 is step 20 (index 4); 2/3 of the step before (20) would be 15 (index 3)
    assert premise.plateau([0, 5, 10, 15, 20, 30], [0.0, 0.0, 0.0, 0.3, 0.5, 0.5]) == {
        "step": 30,
        "pass1": 0.5,
        "highest": 0.5,
        "rise_last_third": 0.0,
        "reached": True,
    }
    # exactly PLATEAU_RISE below the highest (0.01 - 0.0 is 0.01 in floating point): not reached
    assert premise.plateau([0, 1, 2], [0.0, premise.PLATEAU_RISE, 0.0])["reached"] is False
    # rising exactly PLATEAU_RISE over the last third (from step 3, 2/3 of 4): not reached
    got = premise.plateau([0, 3, 4], [0.0, 0.0, premise.PLATEAU_RISE])
    assert got["rise_last_third"] == premise.PLATEAU_RISE and got["reached"] is False


def test_endpoints_count_a_prompt_solved_once_and_leave_out_one_unsolved_at_the_base():
    # p1 is solved by exactly one sample at both points; p0 is unsolved at seed 0's base, p3 at seed 1's
    # p0 is gained on seed 0 with a single correct sample, p3 on seed 1 with four
    base, top = [[0, 1, 5, 10, 4], [2, 1, 6, 0, 4]], [[1, 1, 0, 20, 2], [2, 1, 0, 4, 2]]
    d_base, d_top = [[0, 1, 2, 3, 2], [1, 1, 2, 0, 3]], [[1, 1, 0, 1, 1], [1, 1, 0, 2, 1]]
    pairs = [(_point(0, b, db), _point(300, t, dt)) for b, t, db, dt in zip(base, top, d_base, d_top)]
    out = premise.endpoints(pairs, ["other"] * 5)
    # solved by both points on both seeds: p1 and p4 (distinct 1-1, 1-1, 1-2, 1-3)
    assert {k: out["distinct"][k] for k in ("prompts", "mean", "base", "plateau", "samples")} == {
        "prompts": 2,
        "mean": pytest.approx(-0.75),
        "base": pytest.approx(1.75),
        "plateau": pytest.approx(1.0),
        "samples": N,
    }
    assert out["pass@32"]["samples"] == out["no_correct"]["samples"] == N
    assert out["no_correct"]["mean"] == pytest.approx((-1 + 1 + 1 - 1) / 10)
    assert out["families"]["rare-only"] == {
        "prompts": 0,
        "base_pass1": None,
        "base_pass32": None,
        "lost": 0,
        "gained": 0,
    }
    assert out["families"]["other"] | {"base_pass1": 0, "base_pass32": 0} == {
        "prompts": 5,
        "base_pass1": 0,
        "base_pass32": 0,
        "lost": 2,
        "gained": 2,
    }
    # fewer than two prompts solved throughout: no interval, the reason says so
    one = [
        (_point(0, [0, 3], [0, 1]), _point(1, [0, 3], [0, 1])),
        (_point(0, [1, 3], [1, 1]), _point(1, [0, 3], [0, 1])),
    ]
    assert premise.endpoints(one, ["other", "other"])["distinct"] == {
        "prompts": 1,
        "reason": "fewer than 2 prompts solved",
    }


def test_a_target_above_rare_above_makes_every_solution_rare():
    from escov.llm.tinymodel import preset_with

    above = preset_with("paper", {"rare_ops": "", "rare_above": "20"})
    assert premise.family_of([4, 5, 1], 21, above) == "rare-only"  # 4*5+1
    assert premise.family_of([4, 5, 1], 19, above) == "other"  # 4*5-1


def test_control_md_reads_as_written():
    record = {
        "base": {"name": "b"},
        "seeds": [300, 301],
        "prompts": 4,
        "split": "validation",
        "samples": 8,
        "temperature": 0.6,
        "grpo": {"learning_rate": 1e-4},
        "steps": 2,
        "verdict": "narrowed",
        "curves": {
            "grpo-s300": [
                {"step": 0, "pass1": 0.25, "pass32": 0.75, "no_correct": 0.25, "entropy": 0.2},
                {"step": 2, "pass1": 0.5, "pass32": 0.5, "no_correct": 0.5, "entropy": None},
            ]
        },
        "plateau": {"grpo-s300": {"reached": True}, "grpo-s301": {"reached": False}},
        "endpoints": {
            "pass@32": {"mean": -0.25, "lo": -0.5, "hi": -0.125},
            "no_correct": {"mean": 0.25, "lo": None, "hi": None, "design": "2 seeds"},
            "distinct": {"mean": -1.0, "lo": -1.5, "hi": -0.5, "base": 2.0, "plateau": 1.0, "prompts": 3},
            "families": {
                "rare-only": {"prompts": 0},
                "other": {"prompts": 4, "base_pass1": 0.25, "base_pass32": 0.75, "lost": 1, "gained": 0},
            },
        },
    }
    assert (
        premise.render(record)
        == "\n".join(
            [
                "# Premise control: GRPO from b to its plateau",
                "",
                "2 seeds x 4 validation prompts x 8 samples at T = 0.6; GRPO {'learning_rate': 0.0001}, 2 steps.",
                "",
                "| run | step | Pass@1 | Pass@32 | no correct | entropy |",
                "| --- | --- | --- | --- | --- | --- |",
                "| grpo-s300 | 0 | 0.250 | 0.750 | 0.250 | 0.200 |",
                "| grpo-s300 | 2 | 0.500 | 0.500 | 0.500 |  |",
                "",
                "Plateau reached (Pass@1 within 1 point of its highest and rising less over the last third) "
                "on 1 of 2 runs.",
                "",
                "| endpoint (plateau - base, points) | mean [95% interval] |",
                "| --- | --- |",
                "| Pass@32 | -25.00 [-50.00, -12.50] |",
                "| no-correct share | +25.00 [no interval: 2 seeds] |",
                "| distinct correct solutions per solved prompt (2.00 -> 1.00, 3 prompts) | -1.00 [-1.50, -0.50] |",
                "",
                "Verdict: **narrowed**.",
                "",
                "| family | prompts | base Pass@1 | base Pass@32 | lost (seed x prompt) | gained |",
                "| --- | --- | --- | --- | --- | --- |",
                "| other | 4 | 0.250 | 0.750 | 1 | 0 |",
            ]
        )
        + "\n"
    )
    no_distinct = record | {
        "endpoints": record["endpoints"] | {"distinct": {"prompts": 1, "reason": "fewer than 2 prompts solved"}}
    }
    assert "distinct correct" not in premise.render(no_distinct)


def test_a_planted_tasks_prompt_is_rare_only_when_every_solution_uses_the_rare_strategy():
    # grid: from S the only shortest paths go down first (the cell right of S is blocked); the family is read from
    # the enumerated solutions whatever the model (None: no pretrain.json)
    assert premise.prompt_family("grid_paths", {"grid": "S#.|...|..G"}, None) == "rare-only"  # DDRR, DRDR, ...
    assert premise.prompt_family("grid_paths", {"grid": "S..|...|..G"}, None) == "other"  # RRDD too
    assert premise.prompt_family("grid_paths", {"grid": "S..|#..|..G"}, None) == "other"  # only R first
    # subset sum: 18 from {5, 6, 7, 8, 9} only as 5 + 6 + 7 (18 - 9 = 9 is no sum of the others)
    assert premise.prompt_family("subset_sum", {"numbers": [5, 6, 7, 8, 9], "target": 18}, None) == "rare-only"
    assert premise.prompt_family("subset_sum", {"numbers": [5, 6, 7, 8, 9], "target": 17}, None) == "other"  # 9+8


def test_endpoints_refuse_points_of_different_sample_counts():
    """Pass@32 of a base at n samples against a plateau at another n is no difference of one estimator."""
    base, top = _point(0, [1, 2], [1, 1]), _point(300, [2, 2], [1, 1])
    other = {**top, "sampled": {**top["sampled"], "n": N // 2}}
    with pytest.raises(ValueError) as err:
        premise.endpoints([(base, top), (base, other)], ["a", "a"])
    assert (
        str(err.value) == f"the control's points were sampled {[N // 2, N]} times: its endpoints need one sample count"
    )
