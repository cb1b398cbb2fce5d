"""Hostile and damaged input to `llm` and `paper_checks`: every case gives a one-line error naming the
file (and the field or record) and a non-zero exit, or is named and skipped where partial runs are
expected, never a traceback, never partial output, never a NaN or infinity in a JSON file, never
code run from model output or from a file. Kill-and-resume at every point of a run and the fallback
past a damaged checkpoint are in test_train_run.py."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from escov.llm import rundir
from escov.llm.cli import main as llm_main
from escov.llm.rollout import NonFiniteError
from escov.llm.rundir import RunDirError
from escov.llm.tasks import get_task
from escov.paper_checks.cli import main as paper_checks_main
from escov.theory.metrics import pass_at_k_counts
from tests.llm.tasks_for_tests import CountdownScoredBy

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def cli(main, args, capsys) -> tuple[int, str]:
    """(exit code, stderr) of a command-line entry point run in this process."""
    try:
        code = main(args)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def assert_one_line_error(err: str, *names: str) -> None:
    """The error is one message line (argparse may put its usage line before it) naming every name."""
    assert "Traceback" not in err, err
    lines = [l for l in err.strip().splitlines() if not l.startswith("usage:") and not l.startswith(" ")]
    assert len(lines) == 1 and "error" in lines[0], err
    for name in names:
        assert name in lines[0], (name, err)


def copy_model(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


EVAL_ARGS = ["--task", "countdown", "--n", "2", "--k", "1", "--num-problems", "2", "--no-progress"]


# ----------------------------------------------------------------------------- damaged model directories


@pytest.mark.parametrize(
    "damage, file",
    [
        ("truncated", "model.safetensors"),
        ("garbage", "model.safetensors"),
        ("garbage", "config.json"),
        ("non-utf8", "config.json"),
        ("list", "config.json"),
        ("garbage", "tokenizer_config.json"),
        ("garbage", "generation_config.json"),
    ],
)
def test_damaged_model_directory_is_a_one_line_error_naming_the_file(tiny_model_dir, tmp_path, capsys, damage, file):
    model = copy_model(tiny_model_dir, tmp_path / "model")
    path = model / file
    data = path.read_bytes()
    path.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "garbage": b"\x00{not json at all",
            "non-utf8": b'{"model_type": "llama\xff\xfe"}',
            "list": b"[]",
        }[damage]
    )
    out = tmp_path / "out"
    code, err = cli(llm_main, ["eval", "--model", str(model), *EVAL_ARGS, "--out", str(out)], capsys)
    assert code == 2
    assert_one_line_error(err, str(path))
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-new-tokens", "0"], "max_new_tokens must be an integer >= 1, got 0"),
        (["--temperature", "-1"], "temperature must be a finite number >= 0, got -1.0"),
        (["--temperature", "inf"], "temperature must be a finite number >= 0"),
        (["--top-p", "2"], "top_p must lie in (0, 1], got 2.0"),
        (["--top-p", "0"], "top_p must lie in (0, 1], got 0.0"),
    ],
)
def test_eval_sampling_settings_are_checked_before_the_model_loads(tmp_path, capsys, flags, message):
    """The model directory does not exist: the error about the setting comes first."""
    code, err = cli(llm_main, ["eval", "--model", str(tmp_path / "no-model"), *EVAL_ARGS, *flags], capsys)
    assert code == 2
    assert_one_line_error(err, message)


def test_eval_out_pointing_at_a_file_fails_before_the_model_loads(tmp_path, capsys):
    (tmp_path / "taken").write_text("keep")
    code, err = cli(
        llm_main, ["eval", "--model", str(tmp_path / "no-model"), *EVAL_ARGS, "--out", str(tmp_path / "taken")], capsys
    )
    assert code == 2
    assert_one_line_error(err, "taken is a file")
    assert (tmp_path / "taken").read_text() == "keep"


@pytest.mark.parametrize("prompts", [[""], ["3,7,25->46:", ""]])
def test_empty_prompts_are_an_error_alone_or_batched_with_others(tiny_model_dir, prompts):
    from escov.llm.engines.hf import HFEngine

    engine = HFEngine(tiny_model_dir)
    assert engine.prompt_token_ids("3,7,25->46:")  # a real prompt has tokens: the failure is the empty one
    with pytest.raises(ValueError, match="encodes to no tokens"):
        engine.generate(prompts, n=2, temperature=1.0, max_new_tokens=4, seed=0)


# ----------------------------------------------------------------------------- damaged training inputs

TOML = 'algo = "es"\nsteps = 2\n'


@pytest.mark.parametrize(
    "text, message",
    [
        (TOML + "steps = \n", "not valid TOML"),
        (TOML.encode() + b"# \xff\xfe\n", "not UTF-8"),
        ('steps = "two"\n', "steps must be an integer"),
        ("[es]\nsigma = -1.0\n", "es.sigma must be a finite number > 0"),
        ("es = 3\n", "es must be a table"),
    ],
)
def test_bad_train_config_file_is_an_error_naming_it(tiny_model_dir, tmp_path, capsys, text, message):
    config = tmp_path / "bad.toml"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, err = cli(
        llm_main,
        ["train", "--config", str(config), "--model", str(tiny_model_dir), "--out", str(tmp_path / "run")],
        capsys,
    )
    assert code == 2
    assert_one_line_error(err, str(config), message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[]", "expected a JSON object of settings, got list"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"steps": NaN}', "NaN"),
        (b'{"algo": "es", "stepz": 3}', "unknown setting 'stepz'"),
    ],
)
def test_damaged_run_config_on_resume_is_an_error_naming_it(tmp_path, capsys, content, message):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_bytes(content)
    code, err = cli(llm_main, ["train", "--resume", str(run)], capsys)
    assert code == 2
    assert_one_line_error(err, str(run / "config.json"), message)
    assert sorted(p.name for p in run.iterdir()) == ["config.json"]


# ----------------------------------------------------------------------------- checkpoints


@pytest.fixture
def checkpoint(tiny_model_dir, tmp_path):
    """A real checkpoint (step 4, inside a GRPO phase: with an AdamW state) of the tiny model."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(input_ids=torch.tensor([[1, 2, 3]])).logits.sum().backward()
    optimizer.step()
    weights = {n: p.detach() for n, p in model.named_parameters()}
    path = rundir.save_checkpoint(
        tmp_path / "run", tiny_model_dir, 4, weights, {"elapsed": 1.0}, optimizer.state_dict()
    )
    shapes = {n: p.shape for n, p in model.named_parameters()}
    return path, shapes, weights


def test_a_sound_checkpoint_loads_back_exactly(checkpoint):
    path, shapes, weights = checkpoint
    loaded, state, opt = rundir.load_checkpoint(path, shapes, with_optimizer=True)
    assert state == {"elapsed": 1.0, "step": 4} and set(opt) == {"state", "param_groups"} and opt["state"]
    assert all(torch.equal(loaded[n], weights[n]) for n in shapes)


class RunsCode:
    """A pickle that would run code when loaded without weights_only."""

    def __reduce__(self):
        return (os.system, ("touch PWNED",))


@pytest.mark.parametrize(
    "file, damage, message",
    [
        ("model.safetensors", "truncate", "not a readable safetensors file"),
        ("model.safetensors", "garbage", "not a readable safetensors file"),
        ("model.safetensors", "nan", "holds non-finite values"),
        ("model.safetensors", "shape", "has shape"),
        ("optimizer.pt", "garbage", "not a torch optimizer state"),
        ("optimizer.pt", "tensor", "not a torch optimizer state dict"),
        ("optimizer.pt", "code", "not a torch optimizer state"),
        ("optimizer.pt", "missing", "missing"),
        ("trainer_state.json", "garbage", "not valid JSON"),
        ("trainer_state.json", "step", "does not match the folder name"),
        ("trainer_state.json", "shape", "lacks the field 'elapsed'"),
    ],
)
def test_a_damaged_checkpoint_fails_to_load_naming_the_file(checkpoint, tmp_path, monkeypatch, file, damage, message):
    from safetensors.torch import save_file

    path, shapes, weights = checkpoint
    target = path / file
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[:-7])
    elif damage == "garbage":
        target.write_bytes(b"\x00\x01 not this kind of file")
    elif damage == "nan":
        save_file(
            {
                n: (w.clone().fill_(float("nan")) if i == 0 else w.contiguous())
                for i, (n, w) in enumerate(weights.items())
            },
            str(target),
        )
    elif damage == "shape" and file == "model.safetensors":
        save_file({n: w[..., :1].contiguous() for n, w in weights.items()}, str(target))
    elif damage == "tensor":
        torch.save(torch.zeros(3), target)
    elif damage == "code":
        target.write_bytes(pickle.dumps(RunsCode()))
    elif damage == "missing":
        target.unlink()
    elif damage == "step":
        target.write_text(json.dumps({"step": 5, "elapsed": 1.0}))
    elif damage == "shape":
        target.write_text(json.dumps({"step": 4}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunDirError, match=message) as err:
        rundir.load_checkpoint(path, shapes, with_optimizer=True)
    assert str(target) in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "PWNED").exists()  # nothing in a checkpoint is executed


def test_checkpoint_listing_ignores_stray_and_incomplete_folders(checkpoint):
    path, _, _ = checkpoint
    root = path.parent
    for name in ("step-abc", "step-7.damaged", "notes"):
        (root / name).mkdir()
    (root / "step-9").mkdir()  # no trainer_state.json: a copy cut short, never renamed into place
    (root / ".tmp-step-10").mkdir()
    steps, other = rundir.checkpoint_steps(root.parent)
    assert steps == [4]
    assert sorted(p.name for p in other) == ["notes", "step-7.damaged", "step-abc"]


# ----------------------------------------------------------------------------- run-directory records

ROW = {
    "step": 1,
    "phase": "es",
    "reward_mean": 0.5,
    "center_reward_mean": 0.4,
    "pass_at_1": 0.1,
    "no_correct_share": 0.5,
    "entropy": 1.2,
    "drift_rel": 1e-3,
    "drift_layers": {"layer.0": 1e-3},
    "step_seconds": 1.0,
    "tokens_per_s": 9.0,
    "wall_seconds": 2.0,
}


@pytest.mark.parametrize(
    "field, value",
    [("entropy", float("nan")), ("drift_layers", {"layer.0": float("inf")}), ("es_rewards", [0.1, float("-inf")])],
)
def test_non_finite_values_never_reach_metrics_jsonl(tmp_path, field, value):
    rundir.append_step(tmp_path, ROW)
    before = (tmp_path / "metrics.jsonl").read_text()
    with pytest.raises(NonFiniteError, match=f"metrics.jsonl: step 2: field {field}"):
        rundir.append_step(tmp_path, ROW | {"step": 2, field: value})
    assert (tmp_path / "metrics.jsonl").read_text() == before


def test_non_finite_values_never_reach_eval_json_and_a_bad_record_is_refused(tmp_path):
    with pytest.raises(NonFiniteError, match=r"eval.json: field update_analysis.x"):
        rundir.write_eval(tmp_path, {"update_analysis": {"x": float("nan")}})
    with pytest.raises(RunDirError, match="base: Evaluation lacks the field"):
        rundir.write_eval(tmp_path, {"base": {"task": "countdown"}})
    assert not (tmp_path / "eval.json").exists()


def test_metrics_reader_drops_a_cut_off_last_line_and_names_a_damaged_one(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW | {"step": 2}) + "\n" + '{"step": 3, "rew')
    assert [r["step"] for r in rundir.read_steps(tmp_path)] == [1, 2]
    path.write_text(json.dumps(ROW) + "\n[1, 2]\n" + json.dumps(ROW | {"step": 3}) + "\n")
    with pytest.raises(RunDirError, match=f"{path}: line 2: expected a JSON object"):
        rundir.read_steps(tmp_path)
    path.write_text(json.dumps(ROW | {"entropy": "high"}) + "\n")
    with pytest.raises(RunDirError, match="line 1: field 'entropy' must be float"):
        rundir.read_steps(tmp_path)
    path.write_bytes(b'{"step": 1}\n\xff\n')
    problems = []
    assert rundir.read_steps(tmp_path, problems) == [] and "not UTF-8" in problems[0]
    path.write_text(json.dumps(ROW).replace("1.2", "NaN") + "\n")
    with pytest.raises(RunDirError, match="line 1: not a JSON record"):
        rundir.read_steps(tmp_path)


def test_appended_metrics_rows_read_back_equal_one_line_each(tmp_path):
    """append_step then read_steps is the identity, and metrics.jsonl is exactly one JSON line per row."""
    rows = [ROW | {"step": s, "es_rewards": [0.25 * s, -1.0]} for s in (1, 2, 3)]
    for row in rows:
        rundir.append_step(tmp_path, row)
    assert rundir.read_steps(tmp_path) == rows
    text = (tmp_path / "metrics.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n") and [json.loads(line) for line in text.split("\n")[:-1]] == rows


def test_a_bad_row_or_eval_record_names_its_file_and_step(tmp_path):
    incomplete = {k: v for k, v in ROW.items() if k != "entropy"} | {"step": 7}
    with pytest.raises(RunDirError) as err:
        rundir.append_step(tmp_path, incomplete)
    assert str(err.value) == f"{tmp_path / 'metrics.jsonl'}: step 7: StepMetrics lacks the field 'entropy'"
    with pytest.raises(RunDirError) as err:
        rundir.write_eval(tmp_path, {"base": {"task": "countdown"}})
    assert str(err.value).startswith(f"{tmp_path / 'eval.json'}: base: Evaluation lacks the field")
    assert not (tmp_path / "metrics.jsonl").exists() and not (tmp_path / "eval.json").exists()


def test_a_metrics_file_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    (tmp_path / "metrics.jsonl").mkdir()  # opening it for appending fails with an OSError, as a full disk does
    with pytest.raises(RunDirError) as err:
        rundir.append_step(tmp_path, ROW)
    assert str(err.value).startswith(f"{tmp_path / 'metrics.jsonl'}: cannot be written (") and "\n" not in str(
        err.value
    )


def test_checkpoint_steps_are_newest_first_by_number_and_none_without_a_folder(tmp_path):
    assert rundir.checkpoint_steps(tmp_path) == ([], [])  # no checkpoints/ folder yet
    for step in (2, 10, 9, 100):
        (tmp_path / "checkpoints" / f"step-{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text("{}")
    assert rundir.checkpoint_steps(tmp_path) == ([100, 10, 9, 2], [])  # numbers, not names ("step-9" > "step-10")


# ----------------------------------------------------------------------------- non-finite rewards


@pytest.mark.parametrize("reward", [1e308, float("nan")])
def test_rewards_that_overflow_or_are_nan_stop_es_with_a_clear_error(tiny_model_dir, reward):
    """1e308 per completion is finite, but the mean of a member's two samples overflows to inf: without
    a check, z would be 0 (a silent zero update). NaN is stopped by the verifier check already."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.es import ESConfig, make_es

    engine = HFEngine(tiny_model_dir)
    names = [n for n, _ in engine.model.named_parameters()]
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    before = {n: t.clone() for n, t in master.items()}
    task = CountdownScoredBy("huge", lambda completion: reward)
    es = make_es(
        ESConfig(population_size=2, sigma=1e-2, alpha=1e-2, member_temperature=1.0, member_samples=2),
        engine,
        task,
        names,
        master,
        max_new_tokens=4,
        seed=0,
    )
    with np.errstate(over="ignore"):
        with pytest.raises(NonFiniteError, match="step 3: (member mean rewards overflow|reward is not finite)"):
            es.step(task.problems("train", 2, seed=0), step=3)
    assert es.state_is_intact() and all(torch.equal(master[n], before[n]) for n in names)  # the center is not updated


def test_finite_rewards_whose_spread_overflows_are_an_error_not_a_zero_update(tiny_model_dir):
    from escov.llm.engines.hf import HFEngine
    from escov.llm.es import ESConfig, make_es

    engine = HFEngine(tiny_model_dir)
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    es = make_es(
        ESConfig(population_size=2), engine, get_task("countdown"), list(master), master, max_new_tokens=4, seed=0
    )
    assert np.all(np.isfinite(es.fitness(np.array([1.0, 0.0]), step=0)))
    with pytest.raises(NonFiniteError, match="step 0: member mean rewards overflow"):
        es.fitness(np.array([1e308, -1e308]), step=0)


# ----------------------------------------------------------------------------- hostile model output

HOSTILE = [
    "__import__('os').system('touch PWNED')",
    "9**9**9**9",
    "(" * 5000 + "1" + ")" * 5000,
    "1/0",
    "1/(5-5)",
    "9" * 10_000,
    "1e308*1e308",
    "lambda: 1",
    "[1] * 10**9",
    "\x00\x01\x02",
    "5+5+3\n" * 4000,
    "((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))",
    "<answer>open('/etc/passwd')</answer>",
]


def test_hostile_countdown_completions_score_zero_fast_and_run_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = get_task("countdown")
    problem = task.problems("test", 1, seed=0)[0]
    worst = 0.0
    for text in HOSTILE:
        t0 = time.perf_counter()
        assert task.score(problem, text) == 0.0, text[:40]
        worst = max(worst, time.perf_counter() - t0)
    assert not (tmp_path / "PWNED").exists()
    print(f"slowest hostile completion: {worst * 1e3:.3f} ms")  # a benchmark figure, not an assertion


# ----------------------------------------------------------------------------- paper_checks report


def _synthetic_run(root: Path, name: str, algo: str, seed: int, ks=(1, 16)) -> Path:
    """A small complete-enough run directory (per-problem counts drawn at random)."""
    rng = np.random.default_rng(seed + 10 * len(name))
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(
        json.dumps(
            {
                "algo": algo,
                "model": "base",
                "task": "countdown",
                "seed": seed,
                "es": {"population_size": 8, "sigma": 1e-3, "alpha": 1e-3},
            }
        )
    )
    (run / "metrics.jsonl").write_text(
        "".join(json.dumps(ROW | {"step": s + 1, "phase": algo}) + "\n" for s in range(4))
    )

    def evaluation():
        counts = rng.binomial(32, 0.3, 20)  # Pass@k as these counts give it: a report checks that they agree
        return {
            "n": 32,
            "ks": list(ks),
            "pass_at_k": {str(k): float(pass_at_k_counts(32, counts, k).mean()) for k in ks},
            "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
        }

    (run / "eval.json").write_text(json.dumps({"base": evaluation(), "final": evaluation()}))
    return run


def test_report_over_runs_whose_eval_ks_lack_32_is_written_with_missing_data(tmp_path, capsys):
    runs = [str(_synthetic_run(tmp_path, f"{a}{s}", a, s)) for a in ("es", "grpo") for s in (0, 1)]
    code, err = cli(paper_checks_main, ["report", *runs, "--out", str(tmp_path / "rep")], capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    assert real["grpo_passk_below_base"]["status"] == "missing data"  # needs Pass@32, which these runs lack
    assert report["non_finite"] == [] or all(isinstance(p, str) for p in report["non_finite"])


def test_report_names_wrong_shaped_files_and_still_reports_the_rest(tmp_path, capsys):
    runs = [_synthetic_run(tmp_path, f"{a}{s}", a, s, ks=(1, 16, 32)) for a in ("es", "grpo") for s in (0, 1)]
    (runs[0] / "eval.json").write_text("[]")
    (runs[1] / "eval.json").write_text('{"final": {"pass_at_k": [1]}}')
    (runs[2] / "metrics.jsonl").write_text('"a row"\n' + json.dumps(ROW) + "\n")
    (runs[3] / "population.json").write_bytes(b"\xff")
    code, err = cli(paper_checks_main, ["report", *map(str, runs), "--out", str(tmp_path / "rep")], capsys)
    assert code == 0, err
    problems = json.loads((tmp_path / "rep" / "report.json").read_text())["input_problems"]
    for expected in (
        f"{runs[0] / 'eval.json'}: expected a JSON object",
        f"{runs[1] / 'eval.json'}: final: field 'pass_at_k'",
        f"{runs[2] / 'metrics.jsonl'}: line 1",
        f"{runs[3] / 'population.json'}: not UTF-8",
    ):
        assert any(p.startswith(expected) for p in problems), (expected, problems)


def test_report_with_zero_usable_runs_is_an_error_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "config.json").write_text("[]")
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps({"algo": "es", "task": "countdown"}))
    code, err = cli(
        paper_checks_main,
        [
            "report",
            str(tmp_path / "list"),
            str(tmp_path / "bare"),
            str(tmp_path / "nope"),
            "--out",
            str(tmp_path / "rep"),
        ],
        capsys,
    )
    assert code == 2
    assert_one_line_error(err, "no usable run directory", str(tmp_path / "list" / "config.json"))
    assert not (tmp_path / "rep").exists()


def test_report_out_pointing_at_a_file_is_an_error_and_leaves_it(tmp_path, capsys):
    run = _synthetic_run(tmp_path, "es0", "es", 0)
    (tmp_path / "taken").write_text("keep")
    code, err = cli(paper_checks_main, ["report", str(run), "--out", str(tmp_path / "taken")], capsys)
    assert code == 2
    assert_one_line_error(err, "taken is a file")
    assert (tmp_path / "taken").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["es0", "taken"]  # no PNG written beside it


@pytest.mark.parametrize(
    "flag, content, message",
    [
        ("--theory", "{}", "expected the JSON list"),
        ("--theory", '[{"name": 1}]', "item 0 is not a theory check"),
        ("--simulate", "[1]", "expected a list of experiment summaries"),
        ("--simulate", '{"x": {"claims": 3}}', "experiment 'x'"),
        ("--lemma-grid", '[{"sigma": 1}]', "row 0 is not a grid row"),
        ("--lemma-grid", "{", "not valid JSON"),
        ("--theory", None, "cannot be read"),
    ],
)
def test_report_with_a_malformed_side_file_is_an_error_naming_it(tmp_path, capsys, flag, content, message):
    run = _synthetic_run(tmp_path, "es0", "es", 0)
    side = tmp_path / "side.json"
    if content is not None:
        side.write_text(content)
    code, err = cli(paper_checks_main, ["report", str(run), "--out", str(tmp_path / "rep"), flag, str(side)], capsys)
    assert code == 2
    assert_one_line_error(err, str(side), message)
    assert not (tmp_path / "rep").exists()


def test_a_report_that_fails_midway_leaves_no_partial_output(tmp_path, monkeypatch):
    """The plots are drawn, then a later step fails: nothing of the report reaches out."""
    from escov.paper_checks import report as report_module

    runs = [_synthetic_run(tmp_path, f"{a}{s}", a, s, ks=(1, 16, 32)) for a in ("es", "grpo") for s in (0, 1)]

    def render_fails(report, *rest):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report_module, "render_markdown", render_fails)
    with pytest.raises(RuntimeError, match="disk full"):
        report_module.build_report(runs, tmp_path / "rep")
    assert not (tmp_path / "rep").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["es0", "es1", "grpo0", "grpo1"]  # no temporary folder left


def test_report_json_holds_null_for_non_finite_values_and_lists_them():
    from escov.paper_checks.finite import without_non_finite

    data, found = without_non_finite(
        {"a": [1.0, float("nan")], "b": {"c": np.float32("inf"), "d": np.float64(2.5)}, "e": "x"}
    )
    assert data == {"a": [1.0, None], "b": {"c": None, "d": 2.5}, "e": "x"}
    assert found == ["a[1]", "b.c"]
    json.dumps(data, allow_nan=False)


def test_a_lemma_grid_row_with_nan_is_read_nulled_and_printed_as_n_a(tmp_path, capsys):
    row = {
        "sigma": 1e-3,
        "members": 4,
        "measured": 1e-4,
        "predicted": 1e-4,
        "ratio": 1.0,
        "ratio_ci": [0.9, 1.1],
        "s_measured": 0.01,
        "ratios": [0.9, 1.1],
    }
    grid = [
        row,
        row | {"sigma": 2e-3, "measured": float("nan"), "ratio": float("nan")},
        row | {"sigma": 4e-3, "measured": 1.6e-3},
    ]
    (tmp_path / "grid.json").write_text(json.dumps(grid))  # json writes NaN as the bare word NaN
    run = _synthetic_run(tmp_path, "es0", "es", 0)
    code, err = cli(
        paper_checks_main,
        ["report", str(run), "--out", str(tmp_path / "rep"), "--lemma-grid", str(tmp_path / "grid.json")],
        capsys,
    )
    assert code == 0, err
    text = (tmp_path / "rep" / "report.json").read_text()
    assert "NaN" not in text and json.loads(text)["non_finite"] == ["lemma_grid[1].measured", "lemma_grid[1].ratio"]
    assert "| 0.002 | 4 | 1 | n/a |" in (tmp_path / "rep" / "REPORT.md").read_text()
