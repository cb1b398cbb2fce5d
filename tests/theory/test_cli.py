"""`python -m escov.theory`: the JSON list, the table, the plots, the exit code, and the checks' own logic."""

import json
import subprocess
import sys

import pytest

from escov.theory.checks import TOPICS, check_result
from escov.theory.checks.lemma1 import constant_fit
from escov.theory.cli import exit_code, format_table, main

REQUIRED = {"name", "predicted", "measured", "ratio", "holds"}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """One full run with --json and --plot (the expensive part of this file, done once)."""
    plot_dir = tmp_path_factory.mktemp("plots")
    proc = subprocess.run(
        [sys.executable, "-m", "escov.theory", "--json", "--plot", str(plot_dir), "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, plot_dir


def test_json_is_one_list_with_required_keys(full_run):
    proc, _ = full_run
    results = json.loads(proc.stdout)  # nothing else may be on stdout
    assert isinstance(results, list) and len(results) > 50
    for item in results:
        assert REQUIRED <= item.keys()
        assert item["name"].split("/")[0] in TOPICS and "/" in item["name"]
        assert isinstance(item["holds"], bool)
    assert {item["name"].split("/")[0] for item in results} == set(TOPICS)
    assert len({item["name"] for item in results}) == len(results)


def test_every_claimed_check_holds_and_exit_code_is_zero(full_run):
    proc, _ = full_run
    results = json.loads(proc.stdout)
    failed = [item["name"] for item in results if "regime" not in item and not item["holds"]]
    assert failed == []
    assert proc.returncode == 0
    # the large-s items are reported, marked as a regime, and show the approximation breaking
    large_s = [item for item in results if item["name"].startswith("lemma1/sigma/") and "regime" in item]
    assert large_s and min(item["ratio"] for item in large_s) < 0.5


def test_lemma1_constant_and_factor_are_measured(full_run):
    results = {item["name"]: item for item in json.loads(full_run[0].stdout)}
    assert results["lemma1/constant"]["measured"] == pytest.approx(0.5, abs=0.01)
    assert results["lemma1/N_factor"]["measured"] == pytest.approx(1.0, abs=0.05)


def test_plots_are_png_files(full_run):
    _, plot_dir = full_run
    for name in ("sigma_scaling.png", "n_scaling.png", "fisher_trace_scaling.png"):
        data = (plot_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_table_output_for_one_group(capsys):
    code = main(["--only", "metrics", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "metrics/pass_at_k_brute_force" in out and "claimed checks" in out


def test_exit_code_counts_failures_but_not_regime_items():
    ok = check_result("lemma2/a", 1.0, 1.0, True)
    regime_fail = check_result("lemma1/b", 1.0, 0.5, False, regime="large s")
    fail = check_result("dpi/c", 1.0, 2.0, False)
    assert exit_code([ok, regime_fail]) == 0
    assert exit_code([ok, fail]) == 1
    assert "FAILED: dpi/c" in format_table([ok, regime_fail, fail])


def test_check_names_must_start_with_a_topic():
    with pytest.raises(ValueError, match="name must start with"):
        check_result("lemma4/x", 1.0, 1.0, True)


def _fake_item(name, predicted, measured, s):
    return check_result(name, predicted, measured, True, stderr=0.001 * predicted, s=s)


def test_constant_check_reports_a_wrong_constant():
    # if E[JSpol] were sigma^2 (1 - 1/N) tr I (constant 1) the check must fail and say what it measured
    items = [_fake_item(f"lemma1/N/x/N={n}", 1.0, 2.0, 1e-3) for n in (2, 4, 8)]
    [result] = constant_fit(items)
    assert not result["holds"]
    assert result["measured"] == pytest.approx(1.0)
    assert "WRONG" in result["detail"]
    [good] = constant_fit([_fake_item(f"lemma1/N/x/N={n}", 1.0, 1.0, 1e-3) for n in (2, 4, 8)])
    assert good["holds"] and good["measured"] == pytest.approx(0.5)
