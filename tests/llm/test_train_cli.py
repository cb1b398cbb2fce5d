"""The `llm train` command as a user meets it: --help from the settings' own descriptions (without
torch), TRL's names, the names eval and curve share with train, the start line and the summary,
progress switches, output-path errors, and clean stops on SIGINT / SIGTERM that resume exactly."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from escov.llm import schedules, settings_help
from escov.llm.cli import main as llm_main
from escov.llm.cli import progress_enabled
from escov.llm.config import TrainConfig, config_from_args
from escov.llm.settings_help import add_train_arguments
from escov.llm.train_cli import start_line
from tests.llm.test_train_run import _cfg, _cli, _flags, _outputs, _run, _same

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _parse(argv):
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_train_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def _python(code: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


# ----------------------------------------------------------------------------- --help


def test_every_setting_has_a_description():
    rows = settings_help.settings()
    assert len(rows) > 60 and {"steps", "es.sigma", "grpo.beta", "population.batched"} <= {name for name, *_ in rows}
    assert [name for name, _, description, _ in rows if not description.strip()] == []


def test_help_shows_each_description_and_default_without_importing_torch():
    done = _python(
        "import sys\nfrom escov.llm.cli import main\ntry:\n    main(['train', '--help'])\nexcept SystemExit as e:\n"
        "    print('EXIT', e.code)\nprint('TORCH', 'torch' in sys.modules)"
    )
    text = " ".join(done.stdout.split())  # argparse wraps lines
    assert "EXIT 0" in text and "TORCH False" in text, done.stderr[-2000:]
    for name, f, description, _ in settings_help.settings():
        assert f"--{name} " in text, name
    assert "--es.sigma FLOAT perturbation scale (default: 0.0015)" in text
    assert "--eval_ks INTS k of Pass@k and Maj@k in the evaluations (each <= eval_samples) (default: 1,16,32)" in text
    assert "--steps is a budget counted in GRPO steps" in text  # and what it gives ES
    assert "--learning_rate (--grpo.learning_rate)" in text


@pytest.mark.parametrize(
    "command, flags",
    [
        ("eval", ("--model", "--eval_samples", "--reward_function", "--device")),
        ("curve", ("run_dir", "--points", "--split", "--max_points")),
    ],
)
def test_eval_and_curve_help_answer_without_importing_torch(command, flags):
    """As `llm train --help`: the parser is built and printed before anything imports torch (seconds saved)."""
    done = _python(
        f"import sys\nfrom escov.llm.cli import main\ntry:\n    main([{command!r}, '--help'])\n"
        "except SystemExit as e:\n    print('EXIT', e.code)\nprint('TORCH', 'torch' in sys.modules)"
    )
    text = " ".join(done.stdout.split())
    assert "EXIT 0" in text and "TORCH False" in text, done.stderr[-2000:]
    assert all(flag in text for flag in flags), text[:2000]


def test_settings_table_has_one_row_per_setting_with_its_default():
    lines = settings_help.settings_table().splitlines()
    assert len(lines) == 2 + len(settings_help.settings())
    assert "| `es.sigma` | `0.0015` | perturbation scale |" in lines
    assert "| `eval_ks` | `1,16,32` |" in next(line for line in lines if "`eval_ks`" in line)


# ----------------------------------------------------------------------------- TRL's names


def test_trl_names_set_our_settings():
    cfg = _parse(
        [
            "--model_name_or_path",
            "m",
            "--output_dir",
            "o",
            "--learning_rate",
            "1e-4",
            "--max_steps",
            "7",
            "--save_steps",
            "3",
            "--num_generations",
            "4",
            "--beta",
            "0.0",
            "--epsilon",
            "0.3",
            "--vllm_gpu_memory_utilization",
            "0.5",
            "--algo",
            "grpo",
        ]
    )
    assert (
        cfg.model,
        cfg.out,
        cfg.grpo.learning_rate,
        cfg.steps,
        cfg.checkpoint_every,
        cfg.grpo.num_generations,
        cfg.grpo.beta,
        cfg.grpo.epsilon,
        cfg.gpu_memory_utilization,
    ) == ("m", "o", 1e-4, 7, 3, 4, 0.0, 0.3, 0.5)
    with pytest.raises(ValueError, match="grpo.learning_rate must be a finite number > 0"):  # still validated
        _parse(["--model", "m", "--out", "o", "--learning_rate", "-1"])


@pytest.mark.parametrize(
    "argv, hint",
    [
        (["--per_device_train_batch_size", "8"], "--batch_size counts prompts per step"),
        (["--logging_steps", "5"], "every step is logged"),
        (["--use_vllm"], "--engine vllm"),
        (["--sigma", "0.1"], "did you mean --es.sigma?"),
        (["--es.sgma", "0.1"], "did you mean --es.sigma?"),
        (["--grpo.learning_rat", "0.1"], "did you mean --grpo.learning_rate?"),
    ],
)
def test_unknown_flags_point_to_ours(argv, hint, capsys):
    with pytest.raises(SystemExit) as exit_info:
        llm_main(["train", "--model", "m", "--out", "o", *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and hint in err, err


def test_eval_and_curve_use_train_names_and_keep_the_old_spellings():
    from escov.llm import curve, evaluate

    shared = {
        "eval": (
            "max_completion_length",
            "prompt_style",
            "data_split",
            "eval_samples",
            "eval_ks",
            "eval_problems",
            "eval_temperature",
            "model",
            "task",
            "data",
            "test_data",
            "data_fields",
            "reward",
            "reward_function",
            "engine",
            "dtype",
            "seed",
            "out",
            "device",
        ),
        "curve": ("eval_samples", "eval_problems", "eval_temperature"),
    }
    train_flags = {name for name, *_ in settings_help.settings()}
    for module, names in ((evaluate, shared["eval"]), (curve, shared["curve"])):
        parser = argparse.ArgumentParser()
        module.add_arguments(parser)
        flags = {s for a in parser._actions for s in a.option_strings}
        assert all(f"--{n}" in flags and n in train_flags for n in names), sorted(
            f"--{n}" for n in names if f"--{n}" not in flags
        )
        assert {"--no-progress", "--no_progress"} <= flags
    parser = argparse.ArgumentParser()
    evaluate.add_arguments(parser)
    base = ["--model", "m", "--task", "countdown"]
    new = parser.parse_args(
        base
        + [
            "--max_completion_length",
            "7",
            "--prompt_style",
            "instruct",
            "--eval_samples",
            "4",
            "--eval_ks",
            "1,4",
            "--data_split",
            "paper",
            "--eval_problems",
            "3",
            "--top_p",
            "0.9",
        ]
    )
    old = parser.parse_args(
        base
        + [
            "--max-new-tokens",
            "7",
            "--prompt-style",
            "instruct",
            "--n",
            "4",
            "--k",
            "1,4",
            "--data-split",
            "paper",
            "--num-problems",
            "3",
            "--top-p",
            "0.9",
        ]
    )
    assert new == old and new.max_new_tokens == 7 and new.prompt_style == "instruct"
    # what eval shares with train has train's defaults: with a run's flags it evaluates the run's test problems
    defaults, train_defaults = parser.parse_args(["--model", "m"]), TrainConfig()
    assert all(getattr(defaults, name) == getattr(train_defaults, name) for name in evaluate.TASK_SETTINGS + ("seed",))


# ----------------------------------------------------------------------------- the start line and --steps


@pytest.mark.parametrize(
    "algo, population, generations, expected",
    [
        ("es", 8, 8, "ES 16 iterations (1-16)"),  # ES step = 2 N = 16 P L per prompt, GRPO step = 8 G = 64: 4 per step
        ("es", 32, 8, "ES 4 iterations (1-4)"),  # N = 4 G: one per GRPO step
        ("grpo", 8, 8, "GRPO 4 steps (1-4)"),
        ("es-grpo", 8, 8, "ES 8 iterations (1-8) then GRPO 2 steps (9-10)"),
    ],
)
def test_start_line_says_how_many_iterations_the_budget_gives(algo, population, generations, expected):
    cfg = TrainConfig(algo=algo, model="m", out="runs/x", steps=4, switch_step=2 if "-" in algo else 0, device="cpu")
    cfg.es.population_size, cfg.grpo.num_generations = population, generations
    line = start_line(cfg, resolve=False)
    assert expected in line and "budget 4 GRPO steps (flops)" in line, line
    assert f"llm train: {algo} on countdown, model m;" in line and line.endswith("device cpu; output runs/x")
    assert sum(p.steps for p in schedules.plan(cfg)) == int(expected.split()[1]) + (2 if "-" in algo else 0)


def test_progress_switches(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress_enabled(False) and not progress_enabled(True)
    for value, enabled in (("1", False), ("true", False), ("0", True), ("", True)):
        monkeypatch.setenv("TQDM_DISABLE", value)
        assert progress_enabled(False) is enabled, value


# ----------------------------------------------------------------------------- output paths


def test_out_naming_a_file_is_a_one_line_error(tmp_path, capsys):
    path = tmp_path / "a_file"
    path.write_text("x")
    for out in (path, path / "run"):
        with pytest.raises(SystemExit) as exit_info:
            llm_main(["train", "--model", str(tmp_path), "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert exit_info.value.code == 2 and err[-1].endswith(f"--out {out}: {path} is a file, not a directory"), err


def test_a_run_that_fails_before_training_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "new" / "run"
    with pytest.raises(SystemExit) as exit_info:
        llm_main(["train", "--model", str(tmp_path / "no_model"), "--out", str(out)])
    assert exit_info.value.code == 2 and "no_model" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()  # a folder the user made is left in place
    with pytest.raises(SystemExit):
        llm_main(["train", "--model", str(tmp_path / "no_model"), "--out", str(tmp_path / "mine")])
    assert (tmp_path / "mine").is_dir()


# ----------------------------------------------------------------------------- whole runs


@pytest.fixture(scope="module")
def finished_es_run(tiny_model_dir, tmp_path_factory):
    """An uninterrupted tiny ES run through the command, with progress bars off by TQDM_DISABLE: its folder,
    stdout, stderr, and its outputs (_outputs) as the run wrote them, before a test evaluates it again."""
    run = tmp_path_factory.mktemp("cli") / "ref"
    proc = _cli(
        *_flags(_cfg(tiny_model_dir, run, "es")),
        env_extra={"TQDM_DISABLE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return run, out, err, _outputs(run)


@pytest.fixture(scope="module")
def uninterrupted(finished_es_run, tiny_model_dir, tmp_path_factory):
    """The outputs of an uninterrupted run of an algorithm with the module's settings, made once (ES: the
    module's finished run, not a second one)."""
    made = {"es": finished_es_run[3]}

    def outputs(algo):
        if algo not in made:
            run = tmp_path_factory.mktemp("ref") / algo
            _run(_cfg(tiny_model_dir, run, algo))
            made[algo] = _outputs(run)
        return made[algo]

    return outputs


def test_start_line_and_summary_of_a_real_run(finished_es_run):
    run, out, err, _ = finished_es_run
    lines = out.splitlines()
    assert lines[0] == (
        f"llm train: es on countdown, model {json.loads((run / 'config.json').read_text())['model']}; "
        f"budget 6 GRPO steps (flops) = ES 6 iterations (1-6); device cpu; output {run}"
    )
    ev = json.loads((run / "eval.json").read_text())
    assert f"finished: {run}" in lines
    assert f"Pass@1 {ev['base']['pass_at_k']['1']:.3f} -> {ev['final']['pass_at_k']['1']:.3f}" in out
    files = sorted(p.name for p in run.iterdir() if p.is_file())
    assert f"  wrote {', '.join(files)}" in lines and {"eval.json", "curves.png", "drift_hist.png"} <= set(files)
    assert f"  3 checkpoints in {run / 'checkpoints'}: step-2, step-4, step-6" in lines
    assert "it/s" not in err and "%|" not in err  # TQDM_DISABLE=1: no progress bars


def test_resuming_a_finished_run_does_nothing_unless_asked(finished_es_run, capsys):
    run = finished_es_run[0]
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()}
    assert llm_main(["train", "--resume", str(run)]) == 0  # in this process: a finished run is only read
    said = capsys.readouterr().out
    assert f"{run} is finished" in said and "--re_evaluate" in said
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file()} == before
    again = subprocess.run(
        [sys.executable, "-m", "escov.llm", "train", "--resume", str(run), "--re_evaluate", "--no-progress"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert (run / "eval.json").stat().st_mtime_ns > before[run / "eval.json"] and "%|" not in again.stderr


def test_a_run_stopped_by_a_non_finite_weight_exits_1_with_one_line(tiny_model_dir, tmp_path, capsys):
    run = tmp_path / "inf"
    code = llm_main(["train", *_flags(_cfg(tiny_model_dir, run, "es", es={"alpha": 1e39})), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "is not finite after the ES update; last good checkpoint: " in errors[0]
    assert errors[0].endswith(str(run / "checkpoints" / "step-0"))
    assert f"finished: {run}" not in out


def test_the_summary_and_the_resume_hint_read_the_runs_files(finished_es_run, tmp_path):
    """Base and final Pass@k, the ES iterations whose members all scored the same (and only those), the checkpoints
    (the middle ones elided past four), and the newest checkpoint in the resume hint: from a copy of a finished run
    whose files were edited to known values."""
    from escov.llm.train_cli import resume_hint, summary

    run = tmp_path / "run"
    shutil.copytree(finished_es_run[0], run)
    ev = json.loads((run / "eval.json").read_text())
    ev["base"]["pass_at_k"] = {k: 0.125 for k in ev["base"]["pass_at_k"]}
    ev["final"]["pass_at_k"] = {k: 0.5 for k in ev["final"]["pass_at_k"]}
    (run / "eval.json").write_text(json.dumps(ev))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    es_rows = [r for r in rows if r["phase"] == "es"]
    for i, r in enumerate(es_rows):
        r["es_zero_update"] = i in (1, 4)  # two of them; the others False, not missing
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for step in (8, 10, 12):
        shutil.copytree(run / "checkpoints" / "step-6", run / "checkpoints" / f"step-{step}")
    text = summary(run)
    assert "Pass@1 0.125 -> 0.500" in text
    assert f"  ES: 2 of {len(es_rows)} iterations had all members' rewards equal: a zero update" in text.splitlines()
    assert f"  6 checkpoints in {run / 'checkpoints'}: step-2, step-4, ..., step-12" in text.splitlines()
    hint = resume_hint(run, "stopped by SIGINT after step 12")
    assert hint == (
        f"stopped by SIGINT after step 12; last checkpoint {run / 'checkpoints' / 'step-12'}; "
        f"resume with: python -m escov.llm train --resume {run}"
    )
    never = resume_hint(tmp_path / "never", "stopped by SIGINT")
    assert never.endswith("nothing was kept (run the same command again)")


@pytest.mark.parametrize("algo", ["es", "grpo", "es-grpo", "grpo-es"])
def test_a_runs_total_steps_count_every_phase(algo):
    """The last checkpoint of a finished run is at the end of its last phase: the phases' steps added up."""
    from escov.llm.train_cli import total_steps

    cfg = TrainConfig(algo=algo, model="m", out="o", steps=10, switch_step=4 if "-" in algo else 0)
    phases = schedules.plan(cfg)
    assert total_steps(cfg) == sum(p.steps for p in phases) and len(phases) == (2 if "-" in algo else 1)


def test_a_run_missing_any_part_of_its_final_stage_is_not_finished(finished_es_run, tmp_path):
    """is_finished: the last checkpoint, the thresholded evaluation that closes eval.json, every metrics row, and both
    plots; each taken away alone from a copy of a finished run leaves it unfinished (a resume then completes it)."""
    from escov.llm.train_cli import is_finished

    def without(damage) -> bool:
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(finished_es_run[0], copy)
        damage(copy)
        return is_finished(copy)

    def drop_thresholded(run):
        ev = json.loads((run / "eval.json").read_text())
        del ev["thresholded"]
        (run / "eval.json").write_text(json.dumps(ev))

    def drop_a_row(run):
        rows = (run / "metrics.jsonl").read_text().splitlines()
        (run / "metrics.jsonl").write_text("\n".join(rows[:2] + rows[3:]) + "\n")

    assert without(lambda run: None)
    assert not without(drop_thresholded)
    assert not without(drop_a_row)
    assert not without(lambda run: (run / "curves.png").unlink())
    assert not without(lambda run: (run / "drift_hist.png").unlink())
    assert not without(lambda run: shutil.rmtree(run / "checkpoints" / "step-6"))


@pytest.mark.parametrize(
    "algo, signum", [("es", signal.SIGINT), pytest.param("grpo", signal.SIGTERM, marks=pytest.mark.slow)]
)
def test_a_signal_stops_cleanly_and_the_resumed_run_matches_an_uninterrupted_one(
    tiny_model_dir, tmp_path, algo, signum, uninterrupted
):
    run = tmp_path / "stopped"
    proc = _cli(*_flags(_cfg(tiny_model_dir, run, algo)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = run / "checkpoints" / "step-2" / "trainer_state.json"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the signal"
    os.kill(proc.pid, signum)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signum, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"stopped by {signal.Signals(signum).name} after step ") and last.endswith(
        f"resume with: python -m escov.llm train --resume {run}"
    ), last
    assert not (run / "checkpoints" / "step-6").exists() and "final" not in json.loads((run / "eval.json").read_text())
    resumed = _cli("--resume", str(run), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, resumed_err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, resumed_err[-2000:]
    expected = uninterrupted(algo)
    assert expected[0][-1]["drift_rel"] > 0, "a run that never moves the weights would test nothing"
    _same(expected, _outputs(run))


def test_curve_command_writes_its_plot(finished_es_run, capsys):
    run = finished_es_run[0]
    assert (
        llm_main(["curve", str(run), "--points", "1", "--eval_samples", "32", "--eval_problems", "2", "--no-progress"])
        == 0
    )
    assert (run / "curve.png").stat().st_size > 1000
    assert f"wrote {run / 'curve.json'} and {run / 'curve.png'}" in capsys.readouterr().out
