"""Every experiment runs at a reduced size, writes its plot and a JSON summary; verdict helpers work on data."""
import json

import numpy as np
import pytest

from simulate.cli import main
from simulate.experiments import EXPERIMENTS
from simulate.experiments.common import effect, value_at_level
from simulate.experiments.pareto import pareto_front

VERDICTS = {"reproduced", "not reproduced", "depends on task shape", "finding"}


def test_all_runs_every_experiment_and_writes_summary_and_plots(tmp_path, capsys):
    assert main(["all", "--scale", "0.04", "--seeds", "2", "--out", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["experiments"]) == set(EXPERIMENTS)
    for name, result in summary["experiments"].items():
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
        assert json.loads((tmp_path / f"{name}.json").read_text())["name"] == name
        assert result["claims"], name
        for c in result["claims"]:
            assert c["verdict"] in VERDICTS and c["why"] and c["claim"]
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


def test_effect_reads_the_sign_from_the_data():
    assert effect([1.0, 1.1, 0.9, 1.05]) == "yes"
    assert effect([-1.0, -1.1, -0.9, -1.05]) == "opposite"
    assert effect([1.0, -1.0, 0.5, -0.5]) == "none"
    assert effect([-1.0, -1.1, -0.9], expected_sign=-1) == "yes"


def test_value_at_level_interpolates_the_first_crossing():
    x = np.array([0.0, 0.2, 0.4, 0.3, 0.6])
    y = np.array([1.0, 2.0, 4.0, 0.0, 0.0])
    assert value_at_level(x, y, 0.3) == pytest.approx(3.0)
    assert np.isnan(value_at_level(x, y, 0.7))


def test_pareto_front_drops_dominated_points():
    pts = {"a": (0.5, 0.9), "b": (0.6, 0.8), "c": (0.4, 0.85), "d": (0.6, 0.8)}
    assert pareto_front(pts) == ["a", "b", "d"]
