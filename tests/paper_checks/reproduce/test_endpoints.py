"""The answer's endpoint attachment (paper_checks/reproduce/endpoints.py attachment) on evaluation files written by
hand, against computations written here from the definitions: Pass@k = 1 - C(n - c, k) / C(n, k) averaged over the
(seed, prompt) cells, the crossing budget as the first grid k at which one mean curve lies strictly above the other,
and the solvability sets at k = n counted per seed pair and averaged; one case is also worked by hand."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from escov.llm.rundir import write_json
from escov.paper_checks.reproduce import endpoints

N, SEEDS, TEMPERATURES = 4, (0, 1), (0.6, 1.0)
PROMPTS = ["p0", "p1", "p2", "p3"]
GRID = [1, 2, 4]
LAST = {"grpo": 6, "es": 12}  # each run's last checkpoint; an earlier one is written beside it
# counts[model][T]: one row per seed (the base: one row), one column per prompt. At T = 0.6 the hand-worked case
# below; at T = 1 other counts, so that a temperature read for another fails.
COUNTS = {
    "base": {0.6: [[1, 1, 0, 0]], 1.0: [[3, 0, 1, 0]]},
    "grpo": {0.6: [[4, 0, 0, 0], [4, 0, 0, 0]], 1.0: [[4, 2, 0, 0], [3, 0, 0, 0]]},
    "es": {0.6: [[2, 1, 1, 0], [1, 1, 0, 1]], 1.0: [[1, 0, 2, 0], [0, 1, 1, 0]]},
}


def _write(out, cpu=lambda name, t: 1.5) -> None:
    for variant in ("grpo", "es"):
        for s in SEEDS:
            run = out / "runs" / f"{variant}-s{s}"
            for step in (LAST[variant] // 2, LAST[variant]):
                (run / "checkpoints" / f"step-{step}").mkdir(parents=True)
                (run / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text("{}")
    for t in TEMPERATURES:
        files = [("base", 0, COUNTS["base"][t][0])] + [
            (f"{v}-s{s}", LAST[v], COUNTS[v][t][i]) for v in ("grpo", "es") for i, s in enumerate(SEEDS)
        ]
        for name, step, correct in files:
            path = endpoints.endpoint_file(out, name, step, t)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, {"n": N, "prompts": PROMPTS, "correct": correct, "cpu_seconds": cpu(name, t)})


def _pass_at_k(rows, k: int) -> float:
    cells = [1.0 - comb(N - c, k) / comb(N, k) for row in rows for c in row]
    return sum(cells) / len(cells)


def _crossing(overtaking, overtaken):
    """The first grid k at which `overtaking`'s mean Pass@k is strictly above `overtaken`'s; None if none."""
    return next((k for k in GRID if _pass_at_k(overtaking, k) > _pass_at_k(overtaken, k)), None)


def _solvability(model_rows, reference_rows) -> dict:
    pairs = []
    for m in model_rows:
        for r in reference_rows:
            both = sum(a > 0 and b > 0 for a, b in zip(m, r))
            gained = sum(a > 0 and b == 0 for a, b in zip(m, r))
            lost = sum(a == 0 and b > 0 for a, b in zip(m, r))
            pairs.append({"preserved": both, "gained": gained, "lost": lost, "neither": len(m) - both - gained - lost})
    return {key: sum(p[key] for p in pairs) / len(pairs) for key in pairs[0]}


def test_the_hand_worked_case():
    """T = 0.6: GRPO solves one prompt always (Pass@1 = Pass@4 = 1/4); ES solves three per seed less often
    (Pass@1 = 7/32, Pass@2 = 5/12 > 1/4): ES overtakes GRPO at k = 2; the base (Pass@4 = 1/2 against GRPO's 1/4, equal
    at k = 2) overtakes GRPO at k = 4 and never ES (Pass@4 = 3/4)."""
    c = {name: rows[0.6] for name, rows in COUNTS.items()}
    assert _pass_at_k(c["grpo"], 1) == _pass_at_k(c["grpo"], 4) == 0.25
    assert _pass_at_k(c["es"], 1) == 7 / 32 and _pass_at_k(c["es"], 2) == pytest.approx(5 / 12)
    assert _pass_at_k(c["base"], 2) == 0.25 and _pass_at_k(c["base"], 4) == 0.5 and _pass_at_k(c["es"], 4) == 0.75
    assert (_crossing(c["es"], c["grpo"]), _crossing(c["base"], c["grpo"]), _crossing(c["base"], c["es"])) == (
        2,
        4,
        None,
    )


def test_the_attachment_is_each_endpoints_coverage_computed_from_its_files(tmp_path):
    out = tmp_path / "answer"
    _write(out, cpu=lambda name, t: {"base": 1.26, "grpo-s0": 2.0}.get(name, 4.0) * (10 if t == 1.0 else 1))
    rec = endpoints.attachment(out, SEEDS, TEMPERATURES, N)

    assert (rec["samples"], rec["temperatures"], rec["seeds"], rec["ks"], rec["prompts"]) == (
        N,
        list(TEMPERATURES),
        list(SEEDS),
        GRID,
        len(PROMPTS),
    )
    assert rec["steps"] == {
        "grpo_plateau": {f"grpo-s{s}": LAST["grpo"] for s in SEEDS},
        "es_end": {f"es-s{s}": LAST["es"] for s in SEEDS},
    }
    names = {"base": "base", "grpo_plateau": "grpo", "es_end": "es"}
    for t in TEMPERATURES:
        key = f"{t:g}"
        c = {name: COUNTS[v][t] for name, v in names.items()}
        for name in names:
            assert set(rec[name]) == {"0.6", "1"}
            for k in GRID:
                cell = rec[name][key][str(k)]
                assert cell["mean"] == pytest.approx(_pass_at_k(c[name], k)), (name, t, k)
                assert cell["lo"] <= cell["mean"] <= cell["hi"]
        for which, (overtaking, overtaken) in {
            "es_over_grpo": ("es_end", "grpo_plateau"),
            "base_over_grpo": ("base", "grpo_plateau"),
            "base_over_es": ("base", "es_end"),
        }.items():
            assert rec["crossing"][which][key]["k_star"] == _crossing(c[overtaking], c[overtaken]), (which, t)
        for which, (model, reference) in {
            "grpo_vs_base": ("grpo_plateau", "base"),
            "es_vs_base": ("es_end", "base"),
            "es_vs_grpo": ("es_end", "grpo_plateau"),
        }.items():
            expected = _solvability(c[model], c[reference])
            assert {k: rec["solvability"][which][key][k] for k in expected} == pytest.approx(expected), (which, t)
        assert rec["evaluation_seconds"][key] == {
            "evaluations": 5,
            "cpu": {0.6: 15.3, 1.0: 152.6}[t],  # 1.26 + 2 + 3 x 4 CPU seconds (x 10 at T = 1), to one decimal
        }
    # the hand-worked case read from the record: ES overtakes GRPO at 2, the base GRPO at 4, the base never ES
    assert [rec["crossing"][w]["0.6"]["k_star"] for w in ("es_over_grpo", "base_over_grpo", "base_over_es")] == [
        2,
        4,
        None,
    ]
    assert (
        rec["solvability"]["es_vs_grpo"]["0.6"]["gained"] == 2
        and rec["solvability"]["grpo_vs_base"]["0.6"]["lost"] == 1
    )


def test_the_crossings_and_sets_differ_between_the_temperatures_so_each_is_read_at_its_own():
    """The check above would pass with one temperature's figures copied to the other if the counts agreed there."""
    by_t = [
        (
            _crossing(COUNTS["es"][t], COUNTS["grpo"][t]),
            _crossing(COUNTS["base"][t], COUNTS["grpo"][t]),
            _solvability(COUNTS["es"][t], COUNTS["grpo"][t]),
            [_pass_at_k(COUNTS[v][t], 1) for v in COUNTS],
        )
        for t in TEMPERATURES
    ]
    assert by_t[0][0] != by_t[1][0] and by_t[0][1] != by_t[1][1] and by_t[0][2] != by_t[1][2]
    assert all(a != b for a, b in zip(by_t[0][3], by_t[1][3]))


def test_a_missing_evaluation_or_one_of_other_prompts_or_samples_is_refused_naming_the_file(tmp_path):
    from escov.llm.rundir import read_json

    out = tmp_path / "answer"
    _write(out)
    other = endpoints.endpoint_file(out, "es-s1", LAST["es"], 1.0)
    record = read_json(other)
    write_json(other, record | {"n": N + 1})
    with pytest.raises(ValueError, match=rf"^{other}: other prompts or samples than .*es-s0-step12-T1.json \(n = 4\)"):
        endpoints.attachment(out, SEEDS, TEMPERATURES, N)
    write_json(other, record | {"prompts": PROMPTS[::-1]})
    with pytest.raises(ValueError, match=rf"^{other}: other prompts or samples"):
        endpoints.attachment(out, SEEDS, TEMPERATURES, N)
    write_json(other, record)
    base = endpoints.endpoint_file(out, "base", 0, 1.0)  # the base answered other prompts than the runs
    kept = read_json(base)
    write_json(base, kept | {"prompts": ["p-other"] + PROMPTS[1:]})
    with pytest.raises(ValueError, match=rf"^{out / 'endpoints'}: model '.*' has no samples of prompt"):
        endpoints.attachment(out, SEEDS, TEMPERATURES, N)
    write_json(base, kept)
    other.unlink()
    with pytest.raises(ValueError, match=rf"^endpoint evaluations missing: {other}$"):
        endpoints.attachment(out, SEEDS, TEMPERATURES, N)
    base.unlink()
    with pytest.raises(ValueError, match=rf"^endpoint evaluations missing: {base}, {other}$"):
        endpoints.attachment(out, SEEDS, TEMPERATURES, N)


def test_the_endpoint_models_are_the_base_through_the_first_grpo_run_then_each_seeds_runs():
    assert endpoints.endpoint_models((3, 5)) == [
        ("base", "grpo-s3"),
        ("grpo-s3", "grpo-s3"),
        ("grpo-s5", "grpo-s5"),
        ("es-s3", "es-s3"),
        ("es-s5", "es-s5"),
    ]


def test_the_last_step_is_the_latest_checkpoint_and_a_run_without_one_is_named(tmp_path):
    _write(tmp_path)
    assert endpoints.last_step(tmp_path / "runs" / "es-s0") == LAST["es"]
    empty = tmp_path / "runs" / "untrained"
    empty.mkdir()
    with pytest.raises(ValueError, match=rf"^{empty}: no checkpoint to evaluate"):
        endpoints.last_step(empty)
    assert endpoints.endpoint_file(tmp_path, "es-s0", 12, 1.0) == tmp_path / "endpoints" / "es-s0-step12-T1.json"
    assert endpoints.endpoint_file(tmp_path, "base", 0, 0.6).name == "base-step0-T0.6.json"
    assert np.isclose(_pass_at_k([[N]], N), 1.0)


def test_an_endpoint_is_evaluated_in_seeded_chunks_of_its_runs_test_prompts_and_kept_while_its_weights_are(
    tmp_path, tiny_model_dir
):
    """evaluate_endpoint against llm.evaluate called here on the same chunks: chunk i of the run's test prompts
    (eval_set) is sampled with seed derive_seed(stream, step, "endpoint", T, i) mod 2^31, the stream being 0 for the
    base (whichever run's settings give its prompts) and the run's seed for a checkpoint; the file is kept while its
    settings and weights are unchanged, and measured again when n changes."""
    import shutil

    import torch

    from escov.llm.config import TrainConfig, load_config
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate
    from escov.llm.problem_sets import eval_set
    from escov.llm.rundir import read_json
    from escov.llm.seeds import derive_seed

    torch.set_num_threads(1)
    out = tmp_path / "answer"
    for algo, seed in (("grpo", 3), ("grpo", 5), ("es", 5)):
        run = out / "runs" / f"{algo}-s{seed}"
        run.mkdir(parents=True)
        cfg = TrainConfig(algo=algo, model=str(tiny_model_dir), seed=seed, eval_problems=5, max_completion_length=6)
        write_json(run / "config.json", cfg.to_dict())
    checkpoint = out / "runs" / "es-s5" / "checkpoints" / "step-7"
    shutil.copytree(tiny_model_dir, checkpoint)
    (checkpoint / "trainer_state.json").write_text("{}")
    from safetensors.torch import load_file, save_file

    weights = load_file(checkpoint / "model.safetensors")  # the checkpoint's own weights: not the base's
    first = sorted(weights)[0]
    weights[first] = weights[first] + 1e-3
    save_file(weights, checkpoint / "model.safetensors", metadata={"format": "pt"})

    def by_hand(run, model_dir, stream, step, t, n, chunk=2):
        cfg = load_config(run)
        problems = eval_set(cfg).problems
        engine = make_engine("hf", model_dir, seed=cfg.seed)
        seeds, correct, distinct = [], [], []
        for i in range(0, len(problems), chunk):
            seed = derive_seed(stream, step, "endpoint", f"{t:g}", i // chunk) % 2**31
            result = evaluate(
                engine,
                cfg.make_task(),
                problems[i : i + chunk],
                n=n,
                ks=[1],
                temperature=t,
                max_new_tokens=cfg.max_completion_length,
                seed=seed,
                progress=False,
            )
            seeds.append(seed)
            correct += [r["correct"] for r in result["per_problem"]]
            distinct.extend(r["distinct_correct_answers"] for r in result["per_problem"])
        return [p.id for p in problems], seeds, correct, distinct

    base = read_json(endpoints.evaluate_endpoint(out / "runs" / "grpo-s3", "base", 1.0, out, 3, 2))
    ids, seeds, correct, _ = by_hand(out / "runs" / "grpo-s3", tiny_model_dir, 0, 0, 1.0, 3)
    assert (base["prompts"], base["chunk_seeds"], base["correct"]) == (ids, seeds, correct)
    assert (base["model"], base["step"], base["n"], base["run"], len(seeds)) == ("base", 0, 3, "grpo-s3", 3)
    path = endpoints.endpoint_file(out, "base", 0, 1.0)
    assert not path.with_suffix(".partial.json").exists()
    # the same base through another seed's run: the same stream, the same samples
    path.unlink()
    again = read_json(endpoints.evaluate_endpoint(out / "runs" / "grpo-s5", "base", 1.0, out, 3, 2))
    assert (again["chunk_seeds"], again["correct"]) == (seeds, correct) and again["run"] == "grpo-s5"

    import time

    wall, cpu = time.perf_counter(), time.process_time()
    es = read_json(endpoints.evaluate_endpoint(out / "runs" / "es-s5", "es-s5", 0.6, out, 3, 2))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ids, seeds, correct, distinct = by_hand(out / "runs" / "es-s5", checkpoint, 5, 7, 0.6, 3)
    assert (es["step"], es["prompts"], es["chunk_seeds"], es["correct"]) == (7, ids, seeds, correct)
    assert (es["temperature"], es["distinct_correct_answers"]) == (0.6, distinct)
    assert all(es[k] >= 0 and es[k] == round(es[k], 1) for k in ("seconds", "cpu_seconds"))
    assert es["seconds"] <= wall + 0.05 and es["cpu_seconds"] <= cpu + 0.05  # the evaluation's own time, no more
    # an evaluation stopped after its first chunk continues there: the chunk kept (a marker here), the rest drawn
    path_es = endpoints.endpoint_file(out, "es-s5", 7, 0.6)
    marker = [{"id": es["prompts"][i], "correct": -1, "distinct_correct_answers": 0} for i in range(2)]
    kept = {k: es[k] for k in ("model", "step", "temperature", "n", "weights_sha256")}
    write_json(
        path_es.with_suffix(".partial.json"),
        kept | {"chunks": [{"seed": es["chunk_seeds"][0], "per_problem": marker}], "seconds": 1.0, "cpu_seconds": 2.0},
    )
    path_es.unlink()
    resumed = read_json(endpoints.evaluate_endpoint(out / "runs" / "es-s5", "es-s5", 0.6, out, 3, 2))
    assert resumed["correct"] == [-1, -1] + es["correct"][2:] and resumed["chunk_seeds"] == es["chunk_seeds"]
    assert resumed["cpu_seconds"] >= 2.0 and resumed["seconds"] >= 1.0  # the stopped part's time counted
    assert not path_es.with_suffix(".partial.json").exists()
    # a stopped part of another measurement (other samples) is not continued
    write_json(
        path_es.with_suffix(".partial.json"),
        kept
        | {
            "n": 2,
            "chunks": [{"seed": es["chunk_seeds"][0], "per_problem": marker}],
            "seconds": 0.0,
            "cpu_seconds": 0.0,
        },
    )
    path_es.unlink()
    assert (
        read_json(endpoints.evaluate_endpoint(out / "runs" / "es-s5", "es-s5", 0.6, out, 3, 2))["correct"]
        == es["correct"]
    )
    assert es["chunk_seeds"] != base["chunk_seeds"]
    # each file names the weights it measured: the base model's files, the checkpoint's
    from escov.llm.fingerprints import weights_sha256

    assert (base["weights_sha256"], es["weights_sha256"]) == (
        weights_sha256(tiny_model_dir),
        weights_sha256(checkpoint),
    )

    # kept while its settings and weights hold; measured again for another n
    stamp = dict(read_json(path)) | {"cpu_seconds": -1.0}
    write_json(path, stamp)
    assert endpoints.evaluate_endpoint(out / "runs" / "grpo-s3", "base", 1.0, out, 3, 2) == str(path)
    assert read_json(path)["cpu_seconds"] == -1.0
    endpoints.evaluate_endpoint(out / "runs" / "grpo-s3", "base", 1.0, out, 2, 2)
    assert read_json(path)["n"] == 2 and read_json(path)["cpu_seconds"] >= 0
    # and measured again when the weights it names are not the ones there now
    write_json(path, dict(read_json(path)) | {"cpu_seconds": -1.0, "weights_sha256": "0" * 64})
    endpoints.evaluate_endpoint(out / "runs" / "grpo-s3", "base", 1.0, out, 2, 2)
    assert read_json(path)["cpu_seconds"] >= 0 and read_json(path)["weights_sha256"] == weights_sha256(tiny_model_dir)


def test_a_runs_endpoint_loads_its_checkpoint_and_a_stopped_evaluation_keeps_its_chunks(
    tmp_path, tiny_model_dir, monkeypatch
):
    """A run's endpoint loads its last checkpoint, not the base: a checkpoint whose weights file is damaged stops it,
    naming the file. An evaluation stopped in its second chunk leaves the first in its .partial.json (its settings and
    seed), and the next call continues from there."""
    import shutil

    import torch

    from escov.llm import evaluate as evaluate_module
    from escov.llm.config import TrainConfig
    from escov.llm.rundir import read_json

    torch.set_num_threads(1)
    out = tmp_path / "answer"
    run = out / "runs" / "es-s5"
    run.mkdir(parents=True)
    cfg = TrainConfig(algo="es", model=str(tiny_model_dir), seed=5, eval_problems=5, max_completion_length=6)
    write_json(run / "config.json", cfg.to_dict())
    checkpoint = run / "checkpoints" / "step-7"
    shutil.copytree(tiny_model_dir, checkpoint)
    (checkpoint / "trainer_state.json").write_text("{}")
    (checkpoint / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ValueError, match="step-7/model.safetensors: damaged or truncated safetensors file"):
        endpoints.evaluate_endpoint(run, "es-s5", 0.6, out, 3, 2)

    real, seeds = evaluate_module.evaluate, []

    def stopped_in_the_second_chunk(*args, **kwargs):
        seeds.append(kwargs["seed"])
        if len(seeds) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "evaluate", stopped_in_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        endpoints.evaluate_endpoint(run, "base", 1.0, out, 3, 2)
    partial = endpoints.endpoint_file(out, "base", 0, 1.0).with_suffix(".partial.json")
    kept = read_json(partial)
    assert (kept["model"], kept["step"], kept["n"], [c["seed"] for c in kept["chunks"]]) == ("base", 0, 3, seeds[:1])
    assert len(kept["chunks"][0]["per_problem"]) == 2 and kept["cpu_seconds"] > 0
    monkeypatch.setattr(evaluate_module, "evaluate", real)
    whole = read_json(endpoints.evaluate_endpoint(run, "base", 1.0, out, 3, 2))
    assert whole["chunk_seeds"][:2] == seeds and len(whole["chunk_seeds"]) == 3 and not partial.exists()
