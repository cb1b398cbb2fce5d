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
