"""The step sweep's choice (paper_checks/reproduce/step_sweep.py choose) between pairs of equal range: the pair whose
poorer side has more points wins, whatever its richer side holds; then the smaller step."""

from escov.paper_checks.reproduce.step_sweep import Setting, Trace, choose


def rising(name, n, entropy=None):
    pass1 = tuple(round(0.2 + 0.4 * i / (n - 1), 12) for i in range(n))
    return Trace(name, tuple(range(n)), pass1, tuple(entropy or [1.0] * n))


def test_equal_ranges_go_to_the_pair_whose_fewer_points_are_more():
    settings = {
        "g": Setting("grpo", {"learning_rate": 1e-4}, ""),
        "e-five": Setting("es", {"sigma": 0.01, "alpha": 0.005}, ""),
        "e-nine": Setting("es", {"sigma": 0.01, "alpha": 0.02}, ""),
    }
    traces = {
        "g": rising("g", 21, [2.0, 2.0] + [1.0] * 19),
        "e-five": rising("e-five", 5),
        "e-nine": rising("e-nine", 9),
    }
    chosen, pairs = choose(traces, settings)
    assert all(not p.missed and (p.lo, p.hi) == (0.2, 0.6) for p in pairs)
    # (g, e-five): 21 and 5 points; (g, e-nine): 21 and 9: the fewer points, 9 > 5, decide before the smaller alpha
    assert {(p.es, p.grpo_points, p.es_points) for p in pairs} == {("e-five", 21, 5), ("e-nine", 21, 9)}
    assert (chosen.grpo, chosen.es) == ("g", "e-nine")


def test_the_table_gives_each_curves_ends_and_fall_and_each_pairs_range_points_and_misses():
    """sweep.md, line by line: per setting its reason, base / highest / last Pass@1, the entropy maximum and where it
    falls (a tenth below the maximum, after it); per pair the range, the points inside it, what it missed."""
    from escov.paper_checks.reproduce.step_sweep import Pair, render

    settings = {
        "g": Setting("grpo", {"learning_rate": 1e-4}, "fast"),
        "e": Setting("es", {"sigma": 0.01, "alpha": 0.005}, "slow"),
    }
    traces = {
        "g": Trace("g", (0, 1, 2, 3), (0.1, 0.5, 0.45, 0.4), (2.0, 2.5, 2.3, 1.0)),  # 2.3 > 0.9 x 2.5: falls at 0.4
        "e": Trace("e", (0, 1, 2), (0.2, 0.25, 0.3), (1.0, 1.0, 1.0)),  # no maximum to fall from
    }
    pair = Pair("g", "e", 0.2, 0.3, 0, 3, 0.4, ("GRPO has 0 points in the range", "ES is slow"))
    chosen = Pair("g", "e", 0.2, 0.3, 5, 5, 0.25, ())
    head = [
        "| setting | reason | Pass@1 base | highest | last | entropy max | falls at Pass@1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| g | fast | 0.100 | 0.500 | 0.400 | 2.500 | 0.400 |",
        "| e | slow | 0.200 | 0.300 | 0.300 | 1.000 | - |",
        "",
        "| GRPO | ES | common Pass@1 range | GRPO points | ES points | missed |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    assert render(traces, settings, [pair], None).splitlines() == head + [
        "| g | e | 0.200-0.300 | 0 | 3 | GRPO has 0 points in the range; ES is slow |",
        "",
        "Chosen: none; no pair meets the rule (see 'missed').",
    ]
    assert render(traces, settings, [chosen], chosen) == "\n".join(
        head + ["| g | e | 0.200-0.300 | 5 | 5 | none |", "", "Chosen: g and e (common range 0.200-0.300)", ""]
    )


def test_the_widest_range_wins_over_a_narrower_one_higher_up_and_min_points_reaches_each_pair():
    """(g, e-low): common range 0.2-0.6, width 0.4; (g, e-high): 0.5-0.8, width 0.3 but higher: the wider is chosen.
    With 4 points each in the range, only min_points = 4 admits a pair."""
    settings = {
        "g": Setting("grpo", {"learning_rate": 1e-4}, ""),
        "e-low": Setting("es", {"sigma": 0.01, "alpha": 0.005}, ""),
        "e-high": Setting("es", {"sigma": 0.01, "alpha": 0.02}, ""),
    }
    fall = [2.0, 2.0] + [1.0] * 29
    g = Trace("g", tuple(range(31)), tuple(round(0.2 + 0.02 * i, 12) for i in range(31)), tuple(fall))
    low = Trace("e-low", tuple(range(9)), tuple(round(0.2 + 0.05 * i, 12) for i in range(9)), (1.0,) * 9)
    high = Trace("e-high", tuple(range(7)), tuple(round(0.5 + 0.05 * i, 12) for i in range(7)), (1.0,) * 7)
    chosen, pairs = choose({"g": g, "e-low": low, "e-high": high}, settings)
    assert {(p.es, p.lo, p.hi) for p in pairs} == {("e-low", 0.2, 0.6), ("e-high", 0.5, 0.8)}
    assert all(not p.missed for p in pairs) and (chosen.grpo, chosen.es) == ("g", "e-low")
    four = Trace("e-four", (0, 1, 2, 3), (0.2, 0.3, 0.4, 0.5), (1.0,) * 4)
    settings["e-four"] = Setting("es", {"sigma": 0.01, "alpha": 0.01}, "")
    assert choose({"g": g, "e-four": four}, settings)[0] is None
    chosen, _ = choose({"g": g, "e-four": four}, settings, min_points=4)
    assert (chosen.grpo, chosen.es, chosen.es_points) == ("g", "e-four", 4)


def test_each_sweep_run_is_the_budgets_shape_with_its_own_step_and_the_others_untouched(tmp_path):
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.step_sweep import EVAL_PROBLEMS, SWEEP_SEED, sweep_runs

    small = BUDGETS["small"]
    settings = {
        "g": Setting("grpo", {"learning_rate": 3e-5}, ""),
        "e": Setting("es", {"sigma": 0.02, "alpha": 0.01}, ""),
    }
    runs = sweep_runs(tmp_path / "base", 7, settings, small)
    shape = small.common | {"steps": 7, "probe_every": 0, "heldout_task": "", "eval_problems": EVAL_PROBLEMS}
    shape |= {"model": str(tmp_path / "base"), "seed": SWEEP_SEED, "task": small.task}
    assert runs == {
        "g": shape | {"algo": "grpo", "es": small.es, "grpo": small.grpo | {"learning_rate": 3e-5}},
        "e": shape | {"algo": "es", "es": small.es | {"sigma": 0.02, "alpha": 0.01}, "grpo": small.grpo},
    }
    assert small.common != BUDGETS["answer"].common and EVAL_PROBLEMS == 8
