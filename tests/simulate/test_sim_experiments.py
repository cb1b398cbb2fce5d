"""Every experiment runs at a reduced size, writes its plot and a JSON summary; verdict helpers work on data."""
import json

import numpy as np
import pytest

from escov.simulate.cli import main
from escov.simulate.experiments import EXPERIMENTS
from escov.simulate.experiments.common import VERDICTS, decided
from escov.simulate.experiments.pareto import pareto_front
from escov.theory.claims import Test
from escov.theory.decisions import FAILS, HOLDS, IDENTITY, INCONCLUSIVE

PAPER_CHECKS_IDS = {("entropy_collapse", "entropy_collapse"), ("entropy_collapse", "grpo_raises_pass1"),
                    ("entropy_collapse", "es_passk_above_grpo"), ("entropy_collapse", "matched_passk_above_grpo"),
                    ("passk_vs_base", "es_improves_over_base"),
                    ("passk_vs_base", "grpo_passk_below_base"), ("drift_sparsity", "drift_ratio"),
                    ("drift_sparsity", "update_sparsity"), ("drift_sparsity", "thresholded_pass1"),
                    ("ablations", "population_size"), ("ablations", "zscore_essential"),
                    ("ablations", "one_point_vs_two_point"), ("lemmas_along_training", "lemma1"),
                    ("lemmas_along_training", "dpi"), ("lemmas_along_training", "lemma2"),
                    ("lemmas_along_training", "lemma3"), ("lemmas_along_training", "prop1")}


def test_all_runs_every_experiment_and_writes_summary_and_plots(tmp_path, capsys):
    assert main(["all", "--scale", "0.04", "--seeds", "2", "--out", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["experiments"]) == set(EXPERIMENTS)
    for name, result in summary["experiments"].items():
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
        assert json.loads((tmp_path / f"{name}.json").read_text())["name"] == name
        assert result["claims"], name
        for c in result["claims"]:
            assert c["verdict"] in VERDICTS and c["why"] and c["claim"] and c["id"]
        assert len({c["id"] for c in result["claims"]}) == len(result["claims"]), name  # ids are unique
    found = {(name, c["id"]) for name, result in summary["experiments"].items() for c in result["claims"]}
    assert PAPER_CHECKS_IDS <= found
    from escov.theory.claims import CLAIMS  # every simulate reference of a claim names an existing entry
    assert {(c.simulate, c.id) for c in CLAIMS if c.simulate} <= found
    identities = {c["id"]: c["verdict"] for c in summary["experiments"]["lemmas_along_training"]["claims"]}
    assert identities["lemma2"] == identities["dpi"] == identities["lemma3"] == IDENTITY
    assert "[" in capsys.readouterr().out


def test_run_one_with_seeds_and_list(tmp_path, capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in EXPERIMENTS)
    assert main(["run", "entropy_collapse", "--seeds", "2", "--scale", "0.05", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    result = json.loads((tmp_path / "entropy_collapse.json").read_text())
    assert result["settings"]["seeds"] == 2


@pytest.mark.parametrize("argv", [["run", "no_such_experiment"], ["run", "pareto", "--seeds", "1"],
                                  ["all", "--scale", "0"]])
def test_cli_rejects_bad_arguments(argv, tmp_path):
    with pytest.raises(SystemExit) as err:
        main(argv + ["--out", str(tmp_path)])
    assert err.value.code == 2


def test_verdicts_over_seeds_follow_the_shared_rules_on_both_sides():
    up, down = Test("directional"), Test("directional", sign=-1)
    assert decided(up, [1.0, 1.1, 0.9, 1.05])[0] == HOLDS
    assert decided(up, [-1.0, -1.1, -0.9, -1.05])[0] == FAILS
    assert decided(up, [1.0, -1.0, 0.5, -0.5])[0] == INCONCLUSIVE
    assert decided(down, [-1.0, -1.1, -0.9])[0] == HOLDS
    assert decided(Test("directional", threshold=0.1), [0.05, 0.06, 0.04])[0] == FAILS
    # a large but noisy loss is not "no loss": absence of evidence is inconclusive
    assert decided(Test("directional", threshold=-0.02), [-0.3, 0.1, -0.5, 0.05])[0] == INCONCLUSIVE
    keep = Test("equivalence", margin=0.02)
    assert decided(keep, [0.001, -0.002, 0.0, 0.001])[0] == HOLDS
    assert decided(keep, [0.1, 0.11, 0.09])[0] == FAILS
    assert decided(keep, [0.0, 0.2, -0.2, 0.05])[0] == INCONCLUSIVE  # zero mean, wide interval
    verdict, text = decided(keep, [0.1, 0.11, 0.09])
    assert text.endswith(f"over 3 seeds, margin +-0.02: {FAILS}") and text.startswith("+0.1000 [")


def test_pareto_front_drops_dominated_points():
    pts = {"a": (0.5, 0.9), "b": (0.6, 0.8), "c": (0.4, 0.85), "d": (0.6, 0.8)}
    assert pareto_front(pts) == ["a", "b", "d"]
