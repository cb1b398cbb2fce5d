"""Every experiment runs at a reduced size, writes its plot and a JSON summary; verdict helpers work on data."""

import contextlib
import io
import json
import re

import pytest

from escov.simulate.cli import main, run_all
from escov.simulate.experiments import EXPERIMENTS
from escov.simulate.experiments.common import VERDICTS, decided
from escov.simulate.experiments.pareto import pareto_front
from escov.theory.claims import BY_ID, CLAIMS
from escov.theory.claims import Test as ClaimTest
from escov.theory.decisions import DECISIONS, FAILS, HOLDS, IDENTITY, INCONCLUSIVE

PAPER_CHECKS_IDS = {
    ("entropy_collapse", "entropy_collapse"),
    ("entropy_collapse", "grpo_raises_pass1"),
    ("entropy_collapse", "es_passk_above_grpo"),
    ("entropy_collapse", "matched_passk_above_grpo"),
    ("passk_vs_base", "es_improves_over_base"),
    ("passk_vs_base", "grpo_passk_below_base"),
    ("drift_sparsity", "drift_ratio"),
    ("drift_sparsity", "update_sparsity"),
    ("drift_sparsity", "thresholded_pass1"),
    ("ablations", "population_size"),
    ("ablations", "zscore_essential"),
    ("ablations", "one_point_vs_two_point"),
    ("lemmas_along_training", "lemma1"),
    ("lemmas_along_training", "dpi"),
    ("lemmas_along_training", "lemma2"),
    ("lemmas_along_training", "lemma3"),
    ("lemmas_along_training", "prop1"),
}


@pytest.fixture(scope="module")
def every_experiment(tmp_path_factory):
    """`simulate all` at a reduced size, once for this file: (out folder, the summary as built, printed text)."""
    out = tmp_path_factory.mktemp("simulate")
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        built = run_all(2, out, 0.04, progress=False)
    return out, built, printed.getvalue()


def test_all_runs_every_experiment_and_writes_summary_and_plots(every_experiment):
    tmp_path, _, printed = every_experiment
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
    # every simulate reference of a claim names an existing entry
    assert {(c.simulate, c.id) for c in CLAIMS if c.simulate} <= found
    identities = {c["id"]: c["verdict"] for c in summary["experiments"]["lemmas_along_training"]["claims"]}
    assert identities["lemma2"] == identities["dpi"] == identities["lemma3"] == IDENTITY
    assert "[" in printed


def test_each_claims_entry_is_its_records_own_statement_test_and_paper(every_experiment):
    """simulate restates nothing: the entry of every claim with a simulate experiment holds the record's
    statement, paper and test objects (not copies), carries a decision in the shared words, and is
    written to summary.json as the record's test description."""
    out, built, _ = every_experiment
    written = json.loads((out / "summary.json").read_text())["experiments"]
    for record in (c for c in CLAIMS if c.simulate):
        (entry,) = [e for e in built["experiments"][record.simulate]["claims"] if e["id"] == record.id]
        assert entry["claim"] is record.statement and entry["paper"] is record.paper, record.id
        assert entry["test"] is record.simulate_test, record.id
        assert entry["verdict"] in DECISIONS, (record.id, entry["verdict"])
        (on_file,) = [e for e in written[record.simulate]["claims"] if e["id"] == record.id]
        assert on_file["test"] == record.simulate_test.describe() and on_file["claim"] == record.statement
    # the analogue's own test only where the bandit cannot apply the claim's (drift: the direction, not the paper's 40x)
    assert [c.id for c in CLAIMS if c.analogue is not None] == ["drift_ratio"]
    assert (
        BY_ID["drift_ratio"].simulate_test.kind == "directional"
        and BY_ID["lemma1"].simulate_test is BY_ID["lemma1"].test
    )
    # entries that are no paper's claim are findings or decisions, never a claim's id in another experiment
    ids = {c.id for c in CLAIMS}
    for name, result in built["experiments"].items():
        for e in result["claims"]:
            assert e["id"] not in ids or BY_ID[e["id"]].simulate == name, (name, e["id"])


def test_run_one_with_seeds_and_list(tmp_path, capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in EXPERIMENTS)
    assert (
        main(["run", "entropy_collapse", "--seeds", "2", "--scale", "0.05", "--out", str(tmp_path), "--no-progress"])
        == 0
    )
    result = json.loads((tmp_path / "entropy_collapse.json").read_text())
    assert result["settings"]["seeds"] == 2


def test_scale_sets_the_number_of_updates_and_no_progress_hides_the_bars(tmp_path, capsys):
    """--scale 0.03: 3 updates per run (100 x 0.03), recorded with the scale; the bars go to stderr unless
    --no-progress; --out is where the record is written."""
    for progress in (True, False):
        out = tmp_path / ("bars" if progress else "quiet")
        capsys.readouterr()
        assert (
            main(
                [
                    "run",
                    "entropy_collapse",
                    "--seeds",
                    "2",
                    "--scale",
                    "0.03",
                    "--out",
                    str(out),
                    *([] if progress else ["--no-progress"]),
                ]
            )
            == 0
        )
        result = json.loads((out / "entropy_collapse.json").read_text())
        assert result["scale"] == 0.03 and result["settings"]["steps"] == 3
        assert bool(re.search(r"(it/s|s/it)\]", capsys.readouterr().err)) == progress  # the rate of every tqdm bar


@pytest.mark.parametrize(
    "argv", [["run", "no_such_experiment"], ["run", "pareto", "--seeds", "1"], ["all", "--scale", "0"]]
)
def test_cli_rejects_bad_arguments(argv, tmp_path):
    with pytest.raises(SystemExit) as err:
        main(argv + ["--out", str(tmp_path)])
    assert err.value.code == 2


def test_verdicts_over_seeds_follow_the_shared_rules_on_both_sides():
    up, down = ClaimTest("directional"), ClaimTest("directional", sign=-1)
    assert decided(up, [1.0, 1.1, 0.9, 1.05])[0] == HOLDS
    assert decided(up, [-1.0, -1.1, -0.9, -1.05])[0] == FAILS
    assert decided(up, [1.0, -1.0, 0.5, -0.5])[0] == INCONCLUSIVE
    assert decided(down, [-1.0, -1.1, -0.9])[0] == HOLDS
    assert decided(ClaimTest("directional", threshold=0.1), [0.05, 0.06, 0.04])[0] == FAILS
    # a large but noisy loss is not "no loss": absence of evidence is inconclusive
    assert decided(ClaimTest("directional", threshold=-0.02), [-0.3, 0.1, -0.5, 0.05])[0] == INCONCLUSIVE
    keep = ClaimTest("equivalence", margin=0.02)
    assert decided(keep, [0.001, -0.002, 0.0, 0.001])[0] == HOLDS
    assert decided(keep, [0.1, 0.11, 0.09])[0] == FAILS
    assert decided(keep, [0.0, 0.2, -0.2, 0.05])[0] == INCONCLUSIVE  # zero mean, wide interval
    verdict, text = decided(keep, [0.1, 0.11, 0.09])
    assert text.endswith(f"over 3 seeds, margin +-0.02: {FAILS}") and text.startswith("+0.1000 [")


def test_pareto_front_drops_dominated_points():
    pts = {"a": (0.5, 0.9), "b": (0.6, 0.8), "c": (0.4, 0.85), "d": (0.6, 0.8)}
    assert pareto_front(pts) == ["a", "b", "d"]
