"""`escov coverage` end to end on tables whose per-prompt success rates are known, read against the test's own
computations (exact rationals, set algebra, the k* definition written out again); and each bad input."""

import json
import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.coverage.cli import main

ROOT = Path(__file__).resolve().parents[3]


def write_table(path: Path, rates: dict, n: int, seed: int = 0) -> dict:
    """One row per sample (model, prompt_id, sample, correct), rows shuffled; returns the correct counts."""
    rng = np.random.default_rng(seed)
    rows, counts = [], {}
    for model, p in rates.items():
        flags = rng.random((len(p), n)) < p[:, None]
        counts[model] = flags.sum(axis=1)
        rows += [
            {"model": model, "prompt_id": f"q{i}", "sample": s, "correct": int(flags[i, s])}
            for i in range(len(p))
            for s in range(n)
        ]
    order = rng.permutation(len(rows))
    path.write_text("".join(json.dumps(rows[i]) + "\n" for i in order))
    return counts


def exact_pass_at_k(counts, n: int, k: int) -> float:
    return float(sum(1 - Fraction(math.comb(n - int(c), k), math.comb(n, k)) for c in counts) / len(counts))


def k_star(ks, model, reference, interpolate=False):
    """The documented definition, written out: the first grid k where the reference leads (or, interpolated,
    where the line on log2 k between it and the budget before crosses 0)."""
    for j, k in enumerate(ks):
        d = reference[j] - model[j]
        if d > 0:
            if not interpolate:
                return k
            if j == 0:
                return 1.0
            d0 = reference[j - 1] - model[j - 1]
            return 2 ** (math.log2(ks[j - 1]) + (math.log2(k) - math.log2(ks[j - 1])) * (-d0) / (d - d0))
    return None


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    """base, grpo (sharper on easy prompts, blind on hard ones: a crossing), es (better everywhere: none)."""
    rng = np.random.default_rng(7)
    p = rng.beta(0.5, 2.0, 120)
    hard = np.arange(120) % 3 == 0
    rates = {"base": p, "grpo": np.where(hard, 0.0, 1 - (1 - p) ** 3), "es": np.minimum(1.0, 1.5 * p + 0.05)}
    folder = tmp_path_factory.mktemp("known")
    n = 12  # not a power of two: the grid ends in 12
    counts = write_table(folder / "table.jsonl", rates, n)
    assert (
        main(
            [
                str(folder / "table.jsonl"),
                "--reference",
                "base",
                "--json",
                str(folder / "out.json"),
                "--plots",
                str(folder),
            ]
        )
        == 0
    )
    return rates, counts, n, json.loads((folder / "out.json").read_text()), folder


def test_pass_at_k_keys_values_and_intervals(known):
    rates, counts, n, out, _ = known
    ks = [1, 2, 4, 8, 12]
    assert out["ks"] == ks and out["n"] == n and out["reference"] == "base" and out["prompts"] == 120
    for model in ("base", "grpo", "es"):
        got = out["models"][model]["pass_at_k"]
        assert list(got) == [str(k) for k in ks]
        for k in ks:
            assert got[str(k)]["mean"] == pytest.approx(exact_pass_at_k(counts[model], n, k), abs=1e-9)
            truth = float(np.mean(1 - (1 - rates[model]) ** k))  # the prompts' own Pass@k, known
            assert got[str(k)]["lo"] <= truth <= got[str(k)]["hi"], (model, k)


def test_crossing_as_documented(known):
    rates, counts, n, out, _ = known
    ks = out["ks"]
    curves = {m: [exact_pass_at_k(counts[m], n, k) for k in ks] for m in counts}
    grpo = out["models"]["grpo"]["crossing"]
    assert grpo["k_star"] == k_star(ks, curves["grpo"], curves["base"]) and grpo["k_star"] in ks
    assert grpo["k_star_interpolated"] == pytest.approx(k_star(ks, curves["grpo"], curves["base"], True), rel=1e-9)
    assert grpo["k_star_interpolated"] <= grpo["k_star"]
    assert out["grpo"] == out["models"]["grpo"] and "base" not in out  # each compared model at the top level too
    assert grpo["lo"] <= grpo["k_star"] <= (grpo["hi"] if grpo["hi"] is not None else math.inf)
    es = out["models"]["es"]["crossing"]
    assert es["k_star"] is None and k_star(ks, curves["es"], curves["base"]) is None
    assert es["k_star_interpolated"] is None
    assert "crossing" not in out["models"]["base"]


def test_solvability_sets_at_k_equal_n(known):
    _, counts, _, out, _ = known
    for model in ("grpo", "es"):
        m, r = counts[model] > 0, counts["base"] > 0
        s = out["models"][model]["solvability"]
        assert (s["preserved"], s["gained"], s["lost"]) == (
            int((m & r).sum()),
            int((m & ~r).sum()),
            int((~m & r).sum()),
        )
    assert out["models"]["grpo"]["solvability"]["lost"] > 0  # the hard third is never solved by grpo


def test_plots_and_text(known, capsys):
    *_, folder = known
    assert (folder / "coverage_passk.png").stat().st_size > 10_000
    assert (folder / "coverage_solvability.png").stat().st_size > 5_000


def test_the_console_script_and_the_module_give_the_same_report(known, tmp_path):
    *_, folder = known
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = []
    for i, command in enumerate(
        (
            [sys.executable, "-m", "escov.paper_checks.console", "coverage"],
            [sys.executable, "-m", "escov.paper_checks", "coverage"],
        )
    ):
        out = tmp_path / f"out{i}.json"
        done = subprocess.run(
            command + [str(folder / "table.jsonl"), "--reference", "base", "--json", str(out)],
            env=env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert "grpo vs base: k* =" in done.stdout
        outs.append(json.loads(out.read_text()))
    assert outs[0]["models"] == outs[1]["models"] == json.loads((folder / "out.json").read_text())["models"]


# ----------------------------------------------------------------------------- bad input


def run_bad(tmp_path, capsys, lines: list[dict] | str, *flags) -> str:
    table = tmp_path / "bad.jsonl"
    table.write_text(lines if isinstance(lines, str) else "".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "out.json"
    out.write_text("previous report")
    assert main([str(table), "--json", str(out), *flags]) == 2
    assert out.read_text() == "previous report"  # nothing half-written, nothing replaced
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    return err


def good_rows(n=4, prompts=3, models=("base", "rl")):
    return [
        {"model": m, "prompt_id": f"q{i}", "sample": s, "correct": (i + s) % 2}
        for m in models
        for i in range(prompts)
        for s in range(n)
    ]


def test_missing_column(tmp_path, capsys):
    rows = [{k: v for k, v in r.items() if k != "correct"} for r in good_rows()]
    err = run_bad(tmp_path, capsys, rows)
    assert "bad.jsonl" in err and "'correct'" in err


def test_fewer_samples_than_k(tmp_path, capsys):
    err = run_bad(tmp_path, capsys, good_rows(n=4), "--k", "1", "8")
    assert "bad.jsonl" in err and "4 samples" in err and "k=8" in err


def test_mixed_sample_counts(tmp_path, capsys):
    rows = good_rows()
    del rows[5]  # base, prompt q1 loses its sample 1
    err = run_bad(tmp_path, capsys, rows)
    assert "mixed sample counts" in err and "'q1'" in err and "'base'" in err and "bad.jsonl line" in err


def test_non_binary_correct(tmp_path, capsys):
    rows = good_rows()
    rows[6]["correct"] = 0.5
    err = run_bad(tmp_path, capsys, rows)
    assert "bad.jsonl line 7, column 'correct': expected 0 or 1, got 0.5" in err
    rows[6]["correct"] = "yes"
    assert "line 7, column 'correct'" in run_bad(tmp_path, capsys, rows)


def test_duplicate_sample_ids(tmp_path, capsys):
    rows = good_rows()
    rows[3]["sample"] = 2  # base q0 now has samples 0, 1, 2, 2
    err = run_bad(tmp_path, capsys, rows)
    assert "bad.jsonl line 4, column 'sample': duplicate sample id" in err and "first at" in err


def test_unknown_reference_and_unequal_prompt_sets(tmp_path, capsys):
    assert "--reference 'base'" in run_bad(tmp_path, capsys, good_rows(models=("a", "b")))
    rows = [r for r in good_rows() if not (r["model"] == "rl" and r["prompt_id"] == "q2")]
    assert "has no samples of prompt 'q2'" in run_bad(tmp_path, capsys, rows)


def test_damaged_json_line(tmp_path, capsys):
    text = "".join(json.dumps(r) + "\n" for r in good_rows())
    err = run_bad(tmp_path, capsys, text + '{"model": "base", "prompt_id"\n')
    assert "bad.jsonl line 25: not JSON" in err


def test_reading_and_measuring_loads_no_torch(known, tmp_path):
    *_, folder = known
    code = (
        "import sys; from escov.paper_checks.coverage.cli import main; "
        f"assert main([{str(folder / 'table.jsonl')!r}, '--json', {str(tmp_path / 'o.json')!r}, "
        f"'--plots', {str(tmp_path)!r}]) == 0; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr


def test_several_seeds_average_within_prompts(tmp_path):
    """Two seeds of one model: Pass@k is the mean over seeds and prompts; solvability is averaged over the
    seed pairs (here one seed solves prompt q1 and the other does not: lost 0.5 on average)."""
    rows = []
    for seed, flags in ((0, {"q0": [1, 0], "q1": [1, 1]}), (1, {"q0": [0, 0], "q1": [1, 0]})):
        rows += [
            {"model": "rl", "seed": seed, "prompt_id": p, "sample": s, "correct": f}
            for p, fl in flags.items()
            for s, f in enumerate(fl)
        ]
    rows += [
        {"model": "base", "prompt_id": p, "sample": s, "correct": f}
        for p, fl in {"q0": [1, 0], "q1": [0, 0]}.items()
        for s, f in enumerate(fl)
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([str(tmp_path / "t.jsonl"), "--json", str(tmp_path / "o.json"), "--replicates", "200"]) == 0
    rl = json.loads((tmp_path / "o.json").read_text())["models"]["rl"]
    assert rl["seeds"] == [0, 1]
    assert rl["pass_at_k"]["1"]["mean"] == pytest.approx((0.5 + 1.0 + 0.0 + 0.5) / 4)
    assert rl["pass_at_k"]["2"]["mean"] == pytest.approx((1 + 1 + 0 + 1) / 4)
    # seed 0: solves q0, q1 (base: q0) -> preserved 1, gained 1; seed 1: solves q1 -> preserved 0, gained 1, lost 1
    assert rl["solvability"]["preserved"] == 0.5 and rl["solvability"]["gained"] == 1.0
    assert rl["solvability"]["lost"] == 0.5


@pytest.mark.parametrize(
    "flags, read, measured",
    [
        (["--tau", "0.3", "0.7"], {}, {"taus": (0.3, 0.7)}),
        (
            ["--replicates", "40", "--confidence", "0.8", "--bootstrap-seed", "3"],
            {},
            {"replicates": 40, "confidence": 0.8, "seed": 3},
        ),
        (["--reward-threshold", "0.5"], {"threshold": 0.5}, {}),
    ],
)
def test_each_flag_reaches_the_analysis_as_the_library_takes_it(tmp_path, flags, read, measured):
    """The command's report with a flag off its default is the library's with the same option (and another than the
    default's): rewards of 0, 0.5 and 1, so the threshold decides which count as correct."""
    from escov.llm.rundir import read_json, write_json
    from escov.paper_checks.coverage.measure import MeasureOptions, measure
    from escov.paper_checks.coverage.sources import ReadOptions, load

    rng = np.random.default_rng(4)
    rows = [
        {
            "model": model,
            "prompt_id": f"q{i}",
            "sample": s,
            "reward": float(rng.choice([0.0, 0.5, 1.0], p=[0.6, 0.2, 0.2])),
        }
        for model in ("base", "grpo")
        for i in range(30)
        for s in range(8)
    ]
    table = tmp_path / "t.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def library(read_options: dict, measure_options: dict) -> dict:
        report = measure(load([str(table)], ReadOptions(**read_options)), MeasureOptions("base", **measure_options))
        write_json(tmp_path / "lib.json", report)
        return read_json(tmp_path / "lib.json")

    assert main([str(table), "--json", str(tmp_path / "cli.json"), *flags]) == 0
    got = read_json(tmp_path / "cli.json")
    assert got == library(read, measured)
    assert got != library({}, {})


def test_fewer_than_one_bootstrap_replicate_is_refused(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    write_table(path, {"base": np.array([0.5, 0.2])}, 4)
    assert main([str(path), "--replicates", "0"]) == 2
    assert "error: --replicates must be >= 1 and --confidence in (0, 1)" in capsys.readouterr().err


def test_the_task_reward_convention_and_the_reward_functions_weights_reach_the_scoring(tmp_path):
    """Countdown 2 3 4 -> 10 scored by the command as by the library: es-at-scale's convention gives a tagged wrong
    answer 0.05 (correct at threshold 0.05, wrong under escov's reward), and two reward functions weighted 1 and 0
    count the first alone."""
    from escov.llm.rundir import read_json
    from escov.paper_checks.coverage.sources import ReadOptions, load

    completions = ("7", "2+3+4", "<answer>2+3+4</answer>", "<think></think><answer>2*3+4</answer>")
    rows = [{"prompt_id": "c", "numbers": [2, 3, 4], "target": 10, "completion": c} for c in completions]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def solved(flags: list[str]) -> list:
        assert main([str(path), "--reference", "model", "--json", str(tmp_path / "o.json"), *flags]) == 0
        return read_json(tmp_path / "o.json")["models"]["model"]["pass_at_k"]["1"]["mean"]

    task = ["--task", "countdown", "--reward-threshold", "0.05"]
    convention = {"prompt_style": "plain", "reward": "es-at-scale-countdown"}
    counted = load([str(path)], ReadOptions(task="countdown", threshold=0.05, task_kwargs=convention))
    assert counted.models["model"].counts[0, 0] == 2  # the tagged wrong answer (0.05) and the right one (1.06)
    assert solved([*task, "--reward", "es-at-scale-countdown"]) == pytest.approx(0.5)
    assert solved(task) == pytest.approx(0.25)  # escov's reward: the right answer alone
    (tmp_path / "r.py").write_text(
        "def one(prompts, completions, **kw):\n    return [1.0] * len(completions)\n"
        "def zero(prompts, completions, **kw):\n    return [0.0] * len(completions)\n"
    )
    functions = ["--reward-function", f"{tmp_path / 'r.py'}:zero", "--reward-function", f"{tmp_path / 'r.py'}:one"]
    assert solved([*functions, "--reward-threshold", "0.5", "--reward-weights", "1", "--reward-weights", "0"]) == 0.0
    assert solved([*functions, "--reward-threshold", "0.5"]) == pytest.approx(1.0)
