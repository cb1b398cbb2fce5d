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
