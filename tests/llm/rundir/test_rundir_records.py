"""The run-directory writer's records, each read back and compared with what was written (the whole-run
tests of test_train_run.py and test_rundir_integrity.py run these in fresh processes): rows and records
kept through a step, probe and curve measurements replaced by step, the settings a run started with and
each change of them, the lock file's holder, a damaged checkpoint set aside."""

from __future__ import annotations

import json
import os
import re
import socket
from datetime import datetime, timezone

import pytest

from escov.llm import rundir
from escov.llm.rundir import RunDirError, integrity

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
EVALUATION = {
    "task": "countdown",
    "num_problems": 2,
    "n": 4,
    "ks": [1, 2],
    "temperature": 0.6,
    "top_p": 1.0,
    "max_new_tokens": 8,
    "seed": 0,
    "pass_at_k": {"1": 0.25, "2": 0.5},
    "maj_at_k": {"1": 0.25, "2": 0.25},
    "mean_token_entropy": 1.0,
    "mean_response_tokens": 5.0,
    "truncated_fraction": 0.0,
    "solved_fraction": 0.5,
    "distinct_correct_answers": 1.0,
    "distinct_correct_texts": 1.0,
    "seconds": 0.1,
    "per_problem": [],
}


def completion(step: int, source: str) -> dict:
    return {"step": step, "source": source, "prompt": "1,2,3->6:", "completion": "1+2+3", "reward": 1.0}


def probe(step: int, sigma: float = 0.01) -> dict:
    return {
        "step": step,
        "sigma": sigma,
        "members": 4,
        "jspol": {},
        "jssucc": {},
        "fisher_trace": {},
        "lemma1_prediction": 0.1,
        "validity": {},
        "lemma2": {},
        "per_prompt": [],
    }


def point(step: int, pass1: float = 0.25) -> dict:
    sampled = EVALUATION | {"pass_at_k": {"1": pass1, "2": 0.5}}
    return {"step": step, "sampled": sampled, "greedy": EVALUATION}


def no_temporary_files(run) -> bool:
    return not any(p.name.endswith(".tmp") for p in run.iterdir())


# ----------------------------------------------------------------------------- rows and records kept through a step


def test_keep_steps_keeps_the_rows_up_to_the_step_and_creates_nothing(tmp_path):
    rundir.keep_steps(tmp_path, 3)
    assert not (tmp_path / rundir.METRICS).exists()
    for step in range(1, 6):
        rundir.append_step(tmp_path, ROW | {"step": step})
    rundir.keep_steps(tmp_path, 3)
    assert [r["step"] for r in rundir.read_steps(tmp_path)] == [1, 2, 3] and no_temporary_files(tmp_path)
    assert rundir.read_steps(tmp_path) == [ROW | {"step": s} for s in (1, 2, 3)]


def test_completions_round_trip_and_are_kept_through_a_step_without_dropped_sources(tmp_path):
    records = [completion(s, src) for s in (0, 1, 2, 3) for src in ("eval/base", "train", "eval/final")]
    rundir.append_completions(tmp_path, records[:5])
    rundir.append_completions(tmp_path, records[5:])
    assert rundir.read_completions(tmp_path) == records
    rundir.keep_completions(tmp_path, 2, drop_sources=("eval/final",))
    assert rundir.read_completions(tmp_path) == [r for r in records if r["step"] <= 2 and r["source"] != "eval/final"]
    rundir.keep_completions(tmp_path, 1)
    assert [(r["step"], r["source"]) for r in rundir.read_completions(tmp_path)] == [
        (0, "eval/base"),
        (0, "train"),
        (1, "eval/base"),
        (1, "train"),
    ]
    assert no_temporary_files(tmp_path)
    bad = completion(7, "train") | {"reward": "high"}
    with pytest.raises(RunDirError) as err:
        rundir.append_completions(tmp_path, [completion(7, "train"), bad])
    assert str(err.value) == f"{tmp_path / 'completions.jsonl'}: step 7 train: field 'reward' must be float, got 'high'"
    assert len(rundir.read_completions(tmp_path)) == 4  # nothing of the refused batch was written
    rundir.keep_completions(tmp_path / "elsewhere", 1)  # no completions.jsonl: nothing to keep, no error


def test_probe_measurements_are_replaced_by_step_and_kept_through_a_step(tmp_path):
    rundir.record_probe(tmp_path, probe(2))
    rundir.record_probe(tmp_path, probe(1))
    rundir.record_probe(tmp_path, probe(2, sigma=0.02))  # the same step again: replaced
    measurements = rundir.read_probe(tmp_path)["measurements"]
    assert sorted((m["step"], m["sigma"]) for m in measurements) == [(1, 0.01), (2, 0.02)]
    rundir.keep_probe(tmp_path, 1)
    assert rundir.read_probe(tmp_path)["measurements"] == [probe(1)]
    with pytest.raises(RunDirError, match=r"probe.json: step 3: ProbeMeasurement lacks the field 'sigma'"):
        rundir.record_probe(tmp_path, {k: v for k, v in probe(3).items() if k != "sigma"})
    rundir.keep_probe(tmp_path / "none", 1)


def test_curve_points_are_kept_in_step_order_replaced_by_step_and_kept_by_layout(tmp_path):
    for step in (4, 0, 2):
        rundir.record_curve_point(tmp_path, point(step))
    rundir.record_curve_point(tmp_path, point(2, pass1=0.75))
    assert [(p["step"], p["sampled"]["pass_at_k"]["1"]) for p in rundir.read_curve(tmp_path)] == [
        (0, 0.25),
        (2, 0.75),
        (4, 0.25),
    ]
    stored = json.loads((tmp_path / "curve.json").read_text())["points"]
    assert [p["step"] for p in stored] == [0, 2, 4]
    rundir.keep_curve(tmp_path, [0, 4, 9])
    assert [p["step"] for p in rundir.read_curve(tmp_path)] == [0, 4]
    with pytest.raises(RunDirError, match=r"curve.json: step 5: CurvePoint lacks the field 'greedy'"):
        rundir.record_curve_point(tmp_path, {"step": 5, "sampled": EVALUATION})
    rundir.keep_curve(tmp_path / "none", [0])
    assert not (tmp_path / "none").exists()


def test_rows_missing_through_a_step_name_repeats_and_gaps(tmp_path):
    for step in (1, 2, 2, 4, 5):
        rundir.append_step(tmp_path, ROW | {"step": step})
    assert rundir.rows_missing_through(tmp_path, 1) is None
    assert rundir.rows_missing_through(tmp_path, 2) == "steps written more than once: 2"
    assert rundir.rows_missing_through(tmp_path, 4) == "steps written more than once: 2; steps missing: 3"
    assert rundir.rows_missing_through(tmp_path, 7) == "steps written more than once: 2; steps missing: 3, 6-7"


@pytest.mark.parametrize(
    "steps, text", [([1, 2, 3, 5], "1-3, 5"), ([7], "7"), ([], ""), ([2, 3, 9, 10, 11, 20], "2-3, 9-11, 20")]
)
def test_ranges_are_written_as_runs_of_consecutive_steps(steps, text):
    assert integrity._ranges(steps) == text


# ----------------------------------------------------------------------------- the settings a run started with


def test_settings_are_recorded_once_and_each_change_with_the_step_it_applies_from(tmp_path):
    config = {"algo": "es", "seed": 0, "es": {"sigma": 0.01, "alpha": 0.001}, "out": "a"}
    rundir.write_config(tmp_path, config)
    rundir.write_config(tmp_path, config)  # the same settings: nothing new recorded
    assert rundir.config_history(tmp_path) == [{"config": config, "changed": [], "from_step": 0}]
    assert rundir.read_config(tmp_path) == config
    for step in (2, 6, 4):
        (tmp_path / "checkpoints" / f"step-{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text("{}")
    changed = config | {"es": {"sigma": 0.02, "alpha": 0.001}}
    rundir.write_config(tmp_path, changed, from_step=4)  # the checkpoint the run continues from, not the newest
    assert rundir.config_history(tmp_path)[1] == {
        "config": changed,
        "from_step": 4,
        "changed": [{"setting": "es.sigma", "was": 0.01, "now": 0.02}],
    }
    assert no_temporary_files(tmp_path)


def test_a_resume_with_an_edited_setting_is_refused_naming_it_unless_allowed(tmp_path):
    config = {"algo": "es", "es": {"sigma": 0.01, "alpha": 0.001}, "out": "a", "device": "cpu"}
    assert rundir.check_settings_fixed(tmp_path, allow_change=False) == []  # no history: nothing to compare
    rundir.write_config(tmp_path, config)
    (tmp_path / "config.json").write_text(json.dumps(config | {"out": "b", "device": "cuda"}))  # free settings
    assert rundir.check_settings_fixed(tmp_path, allow_change=False) == []
    (tmp_path / "config.json").write_text(json.dumps(config | {"es": {"sigma": 0.02, "alpha": 0.001}}))
    with pytest.raises(RunDirError) as err:
        rundir.check_settings_fixed(tmp_path, allow_change=False)
    assert str(err.value) == (
        f"{tmp_path / 'config.json'}: setting es.sigma is 0.02 but the run ran with 0.01; a resumed "
        "run keeps its settings (restore it, or pass --allow_config_change true to continue with "
        "the new value, recorded in config_history.jsonl)"
    )
    (tmp_path / "config.json").write_text(json.dumps(config | {"algo": "grpo", "es": {"sigma": 0.02, "alpha": 0.001}}))
    with pytest.raises(RunDirError, match=r"setting algo is \"grpo\" but the run ran with \"es\" \(and 1 more\);"):
        rundir.check_settings_fixed(tmp_path, allow_change=False)
    assert rundir.check_settings_fixed(tmp_path, allow_change=True) == [
        ("algo", "es", "grpo"),
        ("es.sigma", 0.01, 0.02),
    ]


def test_nested_settings_flatten_to_dotted_names():
    assert rundir.flat_settings({"a": 1, "es": {"sigma": 0.1, "opt": {"x": [1]}}, "b": None}) == {
        "a": 1,
        "es.sigma": 0.1,
        "es.opt.x": [1],
        "b": None,
    }
    assert rundir.flat_settings({}) == {}


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "line 2: not a JSON record"),
        ('{"changed": []}', "line 2: expected a record with a 'config' object"),
        ("[1]", "line 2: expected a record with a 'config' object"),
        ('{"config": NaN}', "line 2: not a JSON record"),
    ],
)
def test_a_damaged_settings_history_names_its_line(tmp_path, line, message):
    (tmp_path / "config_history.jsonl").write_text(json.dumps({"config": {"a": 1}}) + "\n" + line + "\n")
    with pytest.raises(RunDirError) as err:
        rundir.config_history(tmp_path)
    assert str(err.value) == f"{tmp_path / 'config_history.jsonl'}: {message}"


# ------------------------------------------------------------------------- the lock file, an empty directory, set aside


def test_the_lock_files_holder_is_its_record_or_none(tmp_path):
    path = tmp_path / "run.lock"
    assert rundir.lock_holder(path) is None  # missing
    path.write_text("")
    assert rundir.lock_holder(path) is None  # empty (a lock released)
    path.write_text("[1, 2]")
    assert rundir.lock_holder(path) is None  # not a record
    path.write_text(json.dumps({"pid": 7, "host": "h", "since": "t"}))
    assert rundir.lock_holder(path) == {"pid": 7, "host": "h", "since": "t"}
    path.write_bytes(b"\xff\xfe")
    assert rundir.lock_holder(path) is None  # not text


def test_a_directory_is_empty_when_it_holds_only_its_lock(tmp_path):
    assert rundir.is_empty(tmp_path)
    (tmp_path / "run.lock").write_text("")
    assert rundir.is_empty(tmp_path)
    (tmp_path / "notes").write_text("x")
    assert not rundir.is_empty(tmp_path)


def test_a_damaged_checkpoint_is_set_aside_with_no_older_one(tmp_path):
    step = tmp_path / "checkpoints" / "step-2"
    step.mkdir(parents=True)
    (step / "weights").write_text("w")
    target = rundir.set_aside(step)
    assert target == tmp_path / "checkpoints" / "step-2.damaged" and (target / "weights").read_text() == "w"


def test_a_damaged_checkpoint_is_set_aside_replacing_an_older_one(tmp_path):
    step = tmp_path / "checkpoints" / "step-3"
    (tmp_path / "checkpoints" / "step-3.damaged").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step-3.damaged" / "old").write_text("old")
    step.mkdir()
    (step / "weights").write_text("new")
    target = rundir.set_aside(step)
    assert target == tmp_path / "checkpoints" / "step-3.damaged" and not step.exists()
    assert sorted(p.name for p in target.iterdir()) == ["weights"]
    assert rundir.checkpoint_steps(tmp_path) == ([], [target])


def test_a_second_writer_is_told_the_holders_pid_host_and_start_in_one_line(tmp_path):
    """The holder's record is its pid, host and start time (ISO 8601 with its UTC offset, within a minute of
    now); a second writer's one-line error names all three, or '?' for each when the record cannot be read."""
    first = rundir.WriterLock(tmp_path)
    first.acquire()
    try:
        holder = json.loads((tmp_path / rundir.LOCK).read_text())
        assert set(holder) == {"pid", "host", "since"}
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", holder["since"]), holder["since"]
        since = datetime.strptime(holder["since"], "%Y-%m-%dT%H:%M:%S%z")
        assert abs((datetime.now(timezone.utc) - since).total_seconds()) < 60
        with pytest.raises(rundir.RunDirBusy) as busy:
            rundir.WriterLock(tmp_path).acquire()
        assert str(busy.value) == (
            f"{tmp_path / rundir.LOCK}: the run directory is in use by pid {os.getpid()} on "
            f"{socket.gethostname()} (since {holder['since']}); one run writes a directory at a time"
        )
        (tmp_path / rundir.LOCK).write_text("")  # the holder's record lost; its flock still held
        with pytest.raises(rundir.RunDirBusy, match=r"in use by pid \? on \? \(since \?\); one run writes a directory"):
            rundir.WriterLock(tmp_path).acquire()
    finally:
        first.release()


def test_a_stale_lock_is_taken_over_returning_the_dead_holders_record(tmp_path):
    """A lock file left by a run that died (its record, no flock): the next writer takes it, gets the old
    record back (for the note it prints) and leaves exactly its own record in the file."""
    dead = {"pid": 999999, "host": "elsewhere", "since": "2026-01-01T00:00:00+0000", "padding": "x" * 200}
    (tmp_path / rundir.LOCK).write_text(json.dumps(dead))
    lock = rundir.WriterLock(tmp_path)
    try:
        assert lock.acquire() == dead
        mine = json.loads((tmp_path / rundir.LOCK).read_text())  # the longer old record wholly replaced
        assert mine["pid"] == os.getpid() and set(mine) == {"pid", "host", "since"}
    finally:
        lock.release()


def test_release_empties_the_lock_file_and_is_harmless_before_acquire_and_twice(tmp_path):
    lock = rundir.WriterLock(tmp_path)
    lock.release()  # never acquired: nothing to release
    lock.acquire()
    lock.release()
    assert (tmp_path / rundir.LOCK).read_bytes() == b""  # released cleanly: no holder's record left
    lock.release()
    again = rundir.WriterLock(tmp_path)
    assert again.acquire() is None
    again.release()


# -------------------------------------------------------------------------- what each writer names when it cannot write


def _full_disk_at(path) -> None:
    """path becomes a link to /dev/full, a device whose every write fails with ENOSPC (a full disk)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/full")


@pytest.mark.parametrize("writer", ["completions", "keep_steps", "keep_completions", "json"])
def test_each_writer_on_a_full_disk_is_a_one_line_error_naming_its_file_and_keeps_the_old_file(tmp_path, writer):
    """Appends (completions, settings history) and rewrites (metrics and completions kept through a step, via a
    temporary file) on a full disk: RunDirError naming the file written, and a rewritten file left as it was."""
    for step in (1, 2):
        rundir.append_step(tmp_path, ROW | {"step": step})
    rundir.append_completions(tmp_path, [completion(1, "train"), completion(2, "train")])
    before = {name: (tmp_path / name).read_text() for name in (rundir.METRICS, rundir.COMPLETIONS)}
    target, call = {
        "completions": (rundir.COMPLETIONS, lambda: rundir.append_completions(tmp_path, [completion(3, "train")])),
        "keep_steps": (rundir.METRICS, lambda: rundir.keep_steps(tmp_path, 1)),
        "keep_completions": (rundir.COMPLETIONS, lambda: rundir.keep_completions(tmp_path, 1)),
        "json": (rundir.METRICS, lambda: rundir.write_json(tmp_path / rundir.METRICS, {"a": 1})),
    }[writer]
    rewrite = writer.startswith("keep") or writer == "json"
    _full_disk_at(tmp_path / (target + ".tmp" if rewrite else target))
    with pytest.raises(RunDirError) as err:
        call()
    assert str(err.value) == f"{tmp_path / target}: cannot be written (No space left on device)"
    if rewrite:
        assert (tmp_path / target).read_text() == before[target]


def test_the_settings_history_that_cannot_be_written_is_a_one_line_error_naming_it(tmp_path):
    """(Not a full disk: the history is read before it is appended to, and /dev/full reads as endless zeros.)
    A run path that is a file, not a folder."""
    run = tmp_path / "plain"
    run.write_text("a file where the run directory should be")
    with pytest.raises(RunDirError) as err:
        rundir.record_settings(run, {"seed": 1})
    assert str(err.value) == f"{run / rundir.CONFIG_HISTORY}: cannot be written (Not a directory)"


def test_a_non_finite_value_is_refused_naming_the_file_and_record(tmp_path):
    from escov.theory.errors import NonFiniteError

    with pytest.raises(NonFiniteError) as err:
        rundir.append_completions(tmp_path, [completion(4, "train") | {"reward": float("nan")}])
    assert str(err.value) == (
        f"{tmp_path / rundir.COMPLETIONS}: step 4 train: field reward is nan; non-finite values are never written"
    )
    with pytest.raises(NonFiniteError) as err:
        rundir.record_settings(tmp_path, {"es": {"sigma": float("inf")}})
    assert str(err.value) == (
        f"{tmp_path / rundir.CONFIG_HISTORY}: field config.es.sigma is inf; non-finite values are never written"
    )
    assert not (tmp_path / rundir.COMPLETIONS).exists() and not (tmp_path / rundir.CONFIG_HISTORY).exists()


def test_damaged_completions_are_reported_and_skipped_when_a_reader_collects_problems(tmp_path):
    rundir.append_completions(tmp_path, [completion(1, "train")])
    with open(tmp_path / rundir.COMPLETIONS, "a") as fh:
        fh.write("not json\n")
    rundir.append_completions(tmp_path, [completion(2, "train")])
    problems: list[str] = []
    assert [r["step"] for r in rundir.read_completions(tmp_path, problems)] == [1, 2]
    assert problems == [f"{tmp_path / rundir.COMPLETIONS}: line 2: not a JSON record"]
    with pytest.raises(RunDirError, match="line 2: not a JSON record"):
        rundir.read_completions(tmp_path)


def test_the_first_settings_record_of_a_run_with_checkpoints_applies_from_step_0(tmp_path):
    """A run directory from before the settings history (checkpoints, no config_history.jsonl): its first
    record is the settings it started with, from step 0, not from its newest checkpoint."""
    (tmp_path / "checkpoints" / "step-5").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step-5" / rundir.TRAINER_STATE).write_text("{}")
    assert rundir.checkpoint_steps(tmp_path)[0] == [5]
    rundir.record_settings(tmp_path, {"seed": 1})
    assert rundir.config_history(tmp_path) == [{"config": {"seed": 1}, "changed": [], "from_step": 0}]


# ----------------------------------------------------------------- a checkpoint's weights and optimizer state read back


def _checkpoint(root, tensors: dict, optimizer=None, step: int = 2):
    """checkpoints/step-N written by hand: trainer state, the given tensors, optionally optimizer.pt."""
    import torch
    from safetensors.torch import save_file

    path = root / "checkpoints" / f"step-{step}"
    path.mkdir(parents=True)
    (path / rundir.TRAINER_STATE).write_text(json.dumps({"step": step, "elapsed": 1.5}))
    save_file(tensors, str(path / rundir.WEIGHTS))
    if optimizer is not None:
        torch.save(optimizer, path / rundir.OPTIMIZER)
    return path


def test_tied_output_weights_are_read_from_the_embedding_and_untied_ones_from_their_own(tmp_path):
    """A model that ties lm_head to the embedding stores the embedding once: lm_head.weight reads it. A model
    with its own lm_head reads its own, never the embedding."""
    import torch

    embed, head = torch.arange(6.0).reshape(3, 2), -torch.arange(6.0).reshape(3, 2)
    shapes = {"model.embed_tokens.weight": (3, 2), "lm_head.weight": (3, 2)}
    tied = _checkpoint(tmp_path / "tied", {"model.embed_tokens.weight": embed})
    weights, state, optimizer = rundir.load_checkpoint(tied, shapes, with_optimizer=False)
    assert torch.equal(weights["lm_head.weight"], embed) and torch.equal(weights["model.embed_tokens.weight"], embed)
    assert state == {"step": 2, "elapsed": 1.5} and optimizer is None
    untied = _checkpoint(tmp_path / "untied", {"model.embed_tokens.weight": embed, "lm_head.weight": head})
    weights, _, _ = rundir.load_checkpoint(untied, shapes, with_optimizer=False)
    assert torch.equal(weights["lm_head.weight"], head) and torch.equal(weights["model.embed_tokens.weight"], embed)
    lacking = _checkpoint(tmp_path / "lacking", {"lm_head.weight": head})
    with pytest.raises(RunDirError) as err:
        rundir.load_checkpoint(lacking, shapes, with_optimizer=False)
    assert str(err.value) == f"{lacking / rundir.WEIGHTS}: lacks the weight model.embed_tokens.weight"


def test_an_optimizer_state_is_a_dict_of_state_and_param_groups_else_named(tmp_path):
    import torch

    weight = {"w": torch.ones(2)}
    good = {"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]}
    path = _checkpoint(tmp_path / "good", weight, optimizer=good)
    assert rundir.load_checkpoint(path, {"w": (2,)}, with_optimizer=True)[2] == good
    wrong = _checkpoint(tmp_path / "wrong", weight, optimizer={"state": {}, "groups": []})
    with pytest.raises(RunDirError) as err:
        rundir.load_checkpoint(wrong, {"w": (2,)}, with_optimizer=True)
    assert str(err.value) == (
        f"{wrong / rundir.OPTIMIZER}: not a torch optimizer state dict (expected keys 'state' and 'param_groups')"
    )


def test_an_unreadable_optimizer_state_names_the_file_and_the_first_line_of_the_loaders_error(tmp_path):
    """The error torch.load raises on the same file (here, bytes that are no pickle), its type and the first
    120 characters of its first line, in one line."""
    import torch

    path = _checkpoint(tmp_path, {"w": torch.ones(2)})
    (path / rundir.OPTIMIZER).write_bytes(b"\x80\x02not a pickle at all" * 20)
    try:
        torch.load(path / rundir.OPTIMIZER, weights_only=True)
    except Exception as err:  # what the loader itself says
        cause = err
    first = str(cause).splitlines()[0]
    with pytest.raises(RunDirError) as err:
        rundir.load_checkpoint(path, {"w": (2,)}, with_optimizer=True)
    assert (
        str(err.value)
        == f"{path / rundir.OPTIMIZER}: not a torch optimizer state ({type(cause).__name__}: {first[:120]})"
    )
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------- the reader over a run directory written by hand

CONFIG = {"algo": "es", "task": "countdown", "seed": 3, "es": {"sigma": 0.01}, "schedule": {"total_steps": 3}}


def _finished(run, steps=(1, 2, 3), config=CONFIG, final=True):
    """A run directory as the trainer leaves it, written with the writer's own functions: settings, rows of
    `steps` in that order, and eval.json with base (and final) evaluations."""
    run.mkdir(parents=True, exist_ok=True)
    rundir.write_config(run, config)
    for step in steps:
        rundir.append_step(run, ROW | {"step": step})
    rundir.write_eval(run, {"base": EVALUATION} | ({"final": EVALUATION} if final else {}))
    return run


def test_a_whole_run_reads_back_with_no_problem(tmp_path):
    from escov.paper_checks.rundir import load_run

    run = load_run(_finished(tmp_path / "es-s3"))
    assert run.problems == [] and [r["step"] for r in run.metrics] == [1, 2, 3]
    assert (run.name, run.algo, run.task, run.seed) == ("es-s3", "es", "countdown", 3)
    assert run.eval == {"base": EVALUATION, "final": EVALUATION} and run.config == CONFIG
    assert run.probe is None and run.curve is None


@pytest.mark.parametrize(
    "steps, final, expected",
    [
        ((1, 2, 2, 3), True, ["steps written more than once: 2"]),
        ((1, 3), True, ["steps missing: 2"]),
        ((1, 2), True, ["steps missing: 3"]),  # finished: every step of the run is due
        ((1, 2), False, []),  # still training: rows so far
        ((2, 1, 3), True, ["steps out of order"]),
        ((1, 2, 3, 4), True, ["steps beyond the run's 3"]),
        ((1, 1, 2, 2, 5), True, ["steps written more than once: 1-2", "steps missing: 3", "steps beyond the run's 3"]),
    ],
)
def test_the_reader_names_repeated_missing_unordered_and_extra_steps(tmp_path, steps, final, expected):
    from escov.paper_checks.rundir import load_run

    run = load_run(_finished(tmp_path / "run", steps, final=final))
    assert run.problems == [f"{tmp_path / 'run' / rundir.METRICS}: {p}" for p in expected]


def test_the_reader_names_an_edited_config_settings_changed_mid_run_and_a_live_writer(tmp_path):
    import socket

    from escov.paper_checks.rundir import load_run

    run = _finished(tmp_path / "run")
    rundir.write_json(run / rundir.CONFIG, CONFIG | {"seed": 4})  # edited by hand: no history record
    (run / "checkpoints" / "step-2").mkdir(parents=True)
    (run / "checkpoints" / "step-2" / rundir.TRAINER_STATE).write_text("{}")  # complete: its state is written last
    rundir.record_settings(run, CONFIG | {"es": {"sigma": 0.02}, "out": "elsewhere"}, from_step=2)  # a recorded change
    lock = rundir.WriterLock(run)
    lock.acquire()
    try:
        problems = load_run(run).problems
    finally:
        lock.release()
    assert problems == [
        f"{run / rundir.CONFIG}: differs from the settings the run ran with (edited by hand?): "
        "es.sigma 0.02 -> 0.01, seed 3 -> 4",  # `out` may differ (a moved directory): not named
        f"{run / rundir.CONFIG_HISTORY}: settings changed mid-run after step 2: es.sigma 0.01 -> 0.02",
        f"{run / rundir.LOCK}: a run is still writing this directory (pid {os.getpid()} on {socket.gethostname()})",
    ]
    assert load_run(run).problems[-1].startswith(f"{run / rundir.CONFIG_HISTORY}")  # the lock released: no writer


def test_damaged_files_are_named_and_skipped_and_a_run_without_config_is_refused(tmp_path):
    from escov.paper_checks.rundir import load_run, load_runs

    run = _finished(tmp_path / "run")
    with open(run / rundir.METRICS, "a") as fh:
        fh.write("{not json\n")
    (run / rundir.EVAL).write_text("[")
    (run / rundir.CONFIG_HISTORY).write_text("nope\n")
    problems = load_run(run).problems
    assert f"{run / rundir.METRICS}: line 4: not a JSON record" in problems
    assert any(p.startswith(f"{run / rundir.EVAL}:") for p in problems)
    assert f"{run / rundir.CONFIG_HISTORY}: line 1: not a JSON record" in problems
    with pytest.raises(RunDirError) as err:
        load_run(tmp_path / "absent")
    assert str(err.value) == f"run directory {tmp_path / 'absent'} does not exist or is not a directory"
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDirError) as err:
        load_run(tmp_path / "empty")
    assert str(err.value).startswith(
        f"{tmp_path / 'empty' / rundir.CONFIG}: a run directory needs a readable config.json ("
    )
    runs, reported = load_runs([tmp_path / "empty", run])  # an unusable run first: the next is still read
    assert [r.name for r in runs] == ["run"] and reported[0].startswith(f"{tmp_path / 'empty' / rundir.CONFIG}")
    other = _finished(tmp_path / "math", config=CONFIG | {"task": "gsm8k"})
    with pytest.raises(RunDirError) as err:
        load_runs([run, other])
    assert (
        str(err.value) == "runs of different tasks cannot share one report: {'countdown': ['run'], 'gsm8k': ['math']}"
    )


def _base_model_dir(root):
    """A base model folder as a hub download leaves it: config and tokenizer files, sharded weights with their
    index, .bin files, a subfolder."""
    base = root / "base"
    (base / "extra").mkdir(parents=True)
    (base / "config.json").write_text(json.dumps({"model_type": "tiny", "torch_dtype": "bfloat16"}))
    (base / "tokenizer.json").write_text("{}")
    (base / "generation_config.json").write_text("{}")
    for junk in (
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "pytorch_model.bin",
        "training_args.bin",
    ):
        (base / junk).write_text("the base's, not the checkpoint's")
    return base


def test_a_checkpoint_holds_the_bases_config_and_tokenizer_files_and_its_own_weights_only(tmp_path):
    """Weights other than the checkpoint's own (the base's shards and their index, which from_pretrained
    would read instead, .bin files) are never copied, nor are folders; the config says float32."""
    import torch

    path = rundir.save_checkpoint(
        tmp_path / "run",
        _base_model_dir(tmp_path),
        4,
        {"w": torch.ones(2)},
        {"elapsed": 1.0},
        {"state": {}, "param_groups": []},
    )
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [
            "config.json",
            "tokenizer.json",
            "generation_config.json",
            rundir.WEIGHTS,
            rundir.TRAINER_STATE,
            rundir.OPTIMIZER,
        ]
    )
    assert json.loads((path / "config.json").read_text()) == {"model_type": "tiny", "torch_dtype": "float32"}
    weights, state, optimizer = rundir.load_checkpoint(path, {"w": (2,)}, with_optimizer=True)
    assert torch.equal(weights["w"], torch.ones(2)) and state == {"elapsed": 1.0, "step": 4}
    from safetensors import safe_open

    with safe_open(str(path / rundir.WEIGHTS), "pt") as fh:
        assert fh.metadata() == {"format": "pt"}  # what transformers' loader requires of a safetensors file
    newer = _base_model_dir(tmp_path / "newer")  # transformers >= 4.56 writes "dtype"
    (newer / "config.json").write_text(json.dumps({"model_type": "tiny", "dtype": "bfloat16"}))
    path = rundir.save_checkpoint(tmp_path / "run2", newer, 1, {"w": torch.ones(2)}, {"elapsed": 0.0}, None)
    assert json.loads((path / "config.json").read_text()) == {"model_type": "tiny", "dtype": "float32"}
    with pytest.raises(RunDirError) as err:
        rundir.save_checkpoint(tmp_path / "run3", newer, 1, {"w": torch.ones(2)}, {}, None)
    assert str(err.value) == (
        f"{tmp_path / 'run3' / 'checkpoints' / '.tmp-step-1' / rundir.TRAINER_STATE}: "
        "TrainerState lacks the field 'elapsed'"
    )


def test_a_checkpoint_replaces_the_temporary_folder_a_crashed_save_left(tmp_path):
    import torch

    leftover = tmp_path / "run" / "checkpoints" / ".tmp-step-4"
    leftover.mkdir(parents=True)
    (leftover / "model.safetensors").write_text("half written")
    path = rundir.save_checkpoint(
        tmp_path / "run", _base_model_dir(tmp_path), 4, {"w": torch.ones(2)}, {"elapsed": 1.0}, None
    )
    assert not leftover.exists() and rundir.load_checkpoint(path, {"w": (2,)}, with_optimizer=False)[1]["step"] == 4


def test_a_checkpoint_that_cannot_be_written_names_its_folder(tmp_path):
    import torch

    blocker = tmp_path / "run" / "checkpoints" / ".tmp-step-4"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the temporary folder goes")
    with pytest.raises(RunDirError) as err:
        rundir.save_checkpoint(
            tmp_path / "run", _base_model_dir(tmp_path), 4, {"w": torch.ones(2)}, {"elapsed": 1.0}, None
        )
    assert str(err.value) == f"{blocker}: cannot be written (File exists)"


def test_setting_changes_name_settings_on_one_side_only_and_skip_the_schedule_the_trainer_derives():
    """A setting added or dropped counts as changed (its missing side None); `schedule.*` is what the trainer
    derives from the other settings (llm/schedules.py), not a setting, and is never compared; `ignore` skips names."""
    recorded = {"seed": 1, "es": {"sigma": 0.01}, "schedule": {"total_steps": 3}}
    current = {"seed": 1, "es": {"sigma": 0.01, "alpha": 0.005}, "schedule": {"total_steps": 5}, "out": "b"}
    assert rundir.setting_changes(recorded, current) == [("es.alpha", None, 0.005), ("out", None, "b")]
    assert rundir.setting_changes(current, recorded, ignore=("out",)) == [("es.alpha", 0.005, None)]


def test_a_checkpoint_missing_a_weight_other_than_the_output_layer_is_named_even_with_an_embedding_stored(tmp_path):
    """Only lm_head.weight may be read from the embedding (a tied output layer); any other missing weight is
    an error, though a tensor of its shape is stored under another name."""
    import torch

    path = _checkpoint(tmp_path, {"model.embed_tokens.weight": torch.ones(3, 2)})
    with pytest.raises(RunDirError) as err:
        rundir.load_checkpoint(
            path, {"model.embed_tokens.weight": (3, 2), "model.norm.weight": (3, 2)}, with_optimizer=False
        )
    assert str(err.value) == f"{path / rundir.WEIGHTS}: lacks the weight model.norm.weight"


def test_a_checkpoint_replaces_an_incomplete_folder_of_its_step(tmp_path):
    """A step-N folder without its trainer state is not a checkpoint (a folder copied in by hand, say): saving
    step N replaces it."""
    import torch

    stale = tmp_path / "run" / "checkpoints" / "step-4"
    stale.mkdir(parents=True)
    (stale / "notes.txt").write_text("not a checkpoint")
    path = rundir.save_checkpoint(
        tmp_path / "run", _base_model_dir(tmp_path), 4, {"w": torch.ones(2)}, {"elapsed": 1.0}, None
    )
    assert path == stale and not (path / "notes.txt").exists() and (path / rundir.TRAINER_STATE).exists()


@pytest.mark.parametrize(
    "part, record, message",
    [
        ("heldout", {"final": EVALUATION | {"n": "four"}}, "heldout.final: field 'n' must be int, got 'four'"),
        (
            "heldout",
            {"final": {k: v for k, v in EVALUATION.items() if k != "seed"}},
            "heldout.final: Evaluation lacks the field 'seed'",
        ),
        (
            "thresholded",
            [{"keep_percent": 50.0, "sparsity_percent": 50.0, "pass_at_1": 0.1}, {"keep_percent": 50.0}],
            "thresholded[1]: Thresholded lacks the field 'sparsity_percent'",
        ),
        (
            "thresholded",
            [{"keep_percent": "half", "sparsity_percent": 50.0, "pass_at_1": 0.1}],
            "thresholded[0]: field 'keep_percent' must be float, got 'half'",
        ),
    ],
)
def test_an_eval_files_heldout_and_thresholded_records_are_checked_naming_the_record(tmp_path, part, record, message):
    """A reader that asks for complete records (no problems list) gets a RunDirError naming the file and the
    record; a reader that collects problems gets it reported, and incomplete records pass (older runs)."""
    (tmp_path / rundir.EVAL).write_text(json.dumps({"base": EVALUATION, part: record}))
    with pytest.raises(RunDirError) as err:
        rundir.read_eval(tmp_path)
    assert str(err.value) == f"{tmp_path / rundir.EVAL}: {message}"
    problems: list[str] = []
    rundir.read_eval(tmp_path, problems)
    assert problems == ([] if "lacks" in message else [f"{tmp_path / rundir.EVAL}: {message}"])


def test_an_eval_file_whose_evaluation_lacks_a_field_is_refused_unless_problems_are_collected(tmp_path):
    incomplete = {k: v for k, v in EVALUATION.items() if k != "seconds"}
    (tmp_path / rundir.EVAL).write_text(json.dumps({"final": incomplete}))
    with pytest.raises(RunDirError, match="final: Evaluation lacks the field 'seconds'"):
        rundir.read_eval(tmp_path)
    assert rundir.read_eval(tmp_path, []) == {"final": incomplete}


def test_the_reader_reads_probe_and_curve_and_reports_their_damage_without_raising(tmp_path):
    from escov.paper_checks.rundir import load_run

    run = _finished(tmp_path / "run")
    point = {"step": 2, "sampled": EVALUATION, "greedy": EVALUATION | {"n": 1}}
    rundir.record_curve_point(run, point)
    rundir.record_probe(run, probe(2))
    loaded = load_run(run)
    assert loaded.curve == [point] and loaded.probe == {"measurements": [probe(2)]} and loaded.problems == []
    (run / rundir.PROBE).write_text("{")
    (run / rundir.CURVE).write_text(json.dumps({"points": [point, {"step": "three"}]}))
    loaded = load_run(run)
    assert loaded.probe is None and loaded.curve == [point]
    assert loaded.problems[0].startswith(f"{run / rundir.PROBE}: not valid JSON")
    assert loaded.problems[1] == f"{run / rundir.CURVE}: points[1]: field 'step' must be int, got 'three'"


def test_an_older_runs_population_json_is_its_probe_unless_probe_json_exists(tmp_path):
    legacy = {"measurements": [probe(1)]}
    (tmp_path / rundir.LEGACY_PROBE).write_text(json.dumps(legacy))
    assert rundir.probe_path(tmp_path) == tmp_path / rundir.LEGACY_PROBE and rundir.read_probe(tmp_path) == legacy
    (tmp_path / rundir.PROBE).write_text(json.dumps({"measurements": [probe(2)]}))
    assert rundir.probe_path(tmp_path) == tmp_path / rundir.PROBE
    assert rundir.probe_path(tmp_path / "elsewhere") == tmp_path / "elsewhere" / rundir.PROBE  # neither: the new name


def test_the_reader_names_every_setting_changed_mid_run_and_an_unreadable_writers_record(tmp_path):
    from escov.paper_checks.rundir import load_run

    run = _finished(tmp_path / "run", config=CONFIG | {"schedule": "not a table"})  # a hand-edited schedule: no total
    rundir.record_settings(run, CONFIG | {"schedule": "not a table", "seed": 4, "es": {"sigma": 0.02}})
    lock = rundir.WriterLock(run)
    lock.acquire()
    (run / rundir.LOCK).write_text("")  # the writer's record lost; its flock still held
    try:
        problems = load_run(run).problems
    finally:
        lock.release()
    assert problems[-2].endswith("settings changed mid-run after step 0: es.sigma 0.01 -> 0.02, seed 3 -> 4")
    assert problems[-1] == f"{run / rundir.LOCK}: a run is still writing this directory (pid ? on ?)"


def test_step_problems_of_no_rows_and_of_rows_from_step_2():
    assert rundir.step_problems([]) == [] and rundir.step_problems([], through=2) == ["steps missing: 1-2"]
    assert rundir.step_problems([2, 3]) == ["steps missing: 1"]


@pytest.mark.parametrize(
    "reader, name, key",
    [(rundir.read_probe, rundir.PROBE, "measurements"), (rundir.read_curve, rundir.CURVE, "points")],
)
def test_a_record_list_file_is_checked_record_by_record_complete_only_without_a_problems_list(
    tmp_path, reader, name, key
):
    path = tmp_path / name
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(RunDirError) as err:
        reader(tmp_path)
    assert str(err.value) == f'{path}: expected {{"{key}": [...]}}'
    problems: list[str] = []
    assert reader(tmp_path, problems) is None and problems == [f'{path}: expected {{"{key}": [...]}}']
    path.write_text(json.dumps({key: [{"step": 1}]}))  # a record lacking fields: an older run's, say
    with pytest.raises(RunDirError) as err:
        reader(tmp_path)
    assert str(err.value).startswith(f"{path}: {key}[0]: ") and "lacks the field" in str(err.value)
    problems = []
    kept = reader(tmp_path, problems)
    assert problems == [] and (kept == [{"step": 1}] if key == "points" else kept == {key: [{"step": 1}]})
    path.write_text(json.dumps({key: [{"step": "one"}]}))
    problems = []
    reader(tmp_path, problems)
    assert problems == [f"{path}: {key}[0]: field 'step' must be int, got 'one'"]


def test_metrics_rows_blank_lines_a_cut_off_last_line_missing_fields_and_a_missing_file(tmp_path):
    """A blank line is skipped and the rows after it read; a last line without its newline (a write cut off
    by a kill) is dropped and reported; a row lacking a field is refused unless problems are collected (older
    runs); a missing file is no rows, reported as missing when problems are collected."""
    problems: list[str] = []
    assert rundir.read_steps(tmp_path) == [] and rundir.read_steps(tmp_path, problems) == []
    assert problems == [f"{tmp_path / rundir.METRICS}: missing"]
    path = tmp_path / rundir.METRICS
    path.write_text(json.dumps(ROW) + "\n\n" + json.dumps(ROW | {"step": 2}) + "\n" + '{"step": 3, "pha')
    problems = []
    assert [r["step"] for r in rundir.read_steps(tmp_path, problems)] == [1, 2]
    assert problems == [f"{path}: last line cut off; that row is skipped"]
    assert [r["step"] for r in rundir.read_steps(tmp_path)] == [1, 2]
    partial = {k: v for k, v in ROW.items() if k != "entropy"}
    path.write_text(json.dumps(partial) + "\n")
    with pytest.raises(RunDirError, match=r"line 1: StepMetrics lacks the field 'entropy'"):
        rundir.read_steps(tmp_path)
    assert rundir.read_steps(tmp_path, []) == [partial]


def test_a_record_that_is_not_an_object_and_a_non_finite_top_level_value_are_named():
    from escov.theory.errors import NonFiniteError

    with pytest.raises(RunDirError) as err:
        rundir.check_record(rundir.StepMetrics, [1, 2], "metrics.jsonl: line 4")
    assert str(err.value) == "metrics.jsonl: line 4: expected a JSON object (StepMetrics), got list"
    with pytest.raises(NonFiniteError) as err:
        rundir.dumps(float("inf"), "eval.json")
    assert str(err.value) == "eval.json: field (top level) is inf; non-finite values are never written"


def test_a_bool_is_no_number_a_missing_config_and_a_missing_eval_file_are_named(tmp_path):
    with pytest.raises(RunDirError) as err:
        rundir.check_record(rundir.StepMetrics, ROW | {"step": True}, "row")
    assert str(err.value) == "row: field 'step' must be int, got True"  # json's true is not a step number
    with pytest.raises(RunDirError) as err:
        rundir.read_config(tmp_path)
    assert str(err.value) == f"{tmp_path / rundir.CONFIG}: missing (not a run directory)"
    problems: list[str] = []
    assert rundir.read_eval(tmp_path) is None and rundir.read_eval(tmp_path, problems) is None
    assert problems == [f"{tmp_path / rundir.EVAL}: missing"]


def test_the_lock_as_a_context_leaves_nothing_in_an_empty_directory_and_notes_a_dead_holder(tmp_path, capsys):
    """`with WriterLock(run)` (how llm train holds its directory): a run that wrote nothing leaves no lock file;
    one that wrote keeps it, emptied; a dead holder's record is noted on stderr in one line and taken over."""
    with rundir.WriterLock(tmp_path / ".") as lock:
        assert lock.fd is not None and rundir.in_use(tmp_path)["pid"] == os.getpid()
    assert not (tmp_path / rundir.LOCK).exists() and rundir.in_use(tmp_path) is None
    with rundir.WriterLock(tmp_path):
        (tmp_path / rundir.LOCK).unlink()  # removed by hand while held: leaving is still quiet
    dead = {"pid": 999999, "host": "elsewhere", "since": "2026-01-01T00:00:00+0000"}
    (tmp_path / rundir.LOCK).write_text(json.dumps(dead))
    with rundir.WriterLock(tmp_path):
        (tmp_path / "metrics.jsonl").write_text("")
    assert (tmp_path / rundir.LOCK).read_bytes() == b""
    assert capsys.readouterr().err == (
        f"note: {tmp_path / rundir.LOCK} was left by pid 999999 on elsewhere, which no "
        "longer holds it (a crashed run); taken over\n"
    )
