"""llm/witnesses.py's comparisons on records written here by hand: which history record trained a checkpoint (the last
one continued from a step below it; none for a checkpoint before the history's first), and the base evaluation's
settings against the settings the run started with (the history's records of step 0 alone)."""

import json

from escov.llm import rundir
from escov.llm.fingerprints import SHORT, settings_sha256
from escov.llm.witnesses import checkpoint_problems, inputs_problems, settings_of_step

A, B, C = {"seed": 1}, {"seed": 2}, {"seed": 3}


def test_the_settings_of_a_step_are_the_last_record_continued_from_below_it():
    history = [{"from_step": 0, "config": A}, {"from_step": 4, "config": B}, {"from_step": 6, "config": C}]
    assert [settings_of_step(history, s)["config"] for s in (1, 4, 5, 6, 7)] == [A, A, B, B, C]
    assert settings_of_step([{"from_step": 5, "config": B}], 3) is None


def test_a_checkpoint_older_than_every_history_record_is_not_compared(tmp_path):
    """The history starts at a resume from step 5 (older code kept none before): checkpoint step-2 has no record to
    be compared with, and step-6's stamp is compared with the resume's settings."""
    for step, config in ((2, C), (6, B)):
        folder = rundir.checkpoint_dir(tmp_path, step)
        folder.mkdir(parents=True)
        (folder / rundir.TRAINER_STATE).write_text(json.dumps({"settings_sha256": settings_sha256(config)}))
    assert checkpoint_problems(tmp_path, [{"from_step": 5, "config": B}]) == []
    problems = checkpoint_problems(tmp_path, [{"from_step": 5, "config": A}])
    assert len(problems) == 1 and "checkpoint step-6 was trained with settings sha256" in problems[0]


def test_the_base_evaluation_is_compared_with_the_settings_the_run_started_with(tmp_path):
    history = [{"from_step": 0, "config": A}, {"from_step": 3, "config": B}]
    made_with = lambda config: {"base_fingerprint": {"settings_sha256": settings_sha256(config)}}  # noqa: E731
    assert inputs_problems(tmp_path, None, history, made_with(A)) == []
    # the settings a resume continued with are not those the base evaluation was made with
    (problem,) = inputs_problems(tmp_path, None, history, made_with(B))
    assert problem == (
        f"{tmp_path / rundir.EVAL}: the base evaluation was made with settings sha256 {settings_sha256(B)[:SHORT]}, "
        f"not those {rundir.CONFIG_HISTORY} says the run started with ({settings_sha256(A)[:SHORT]}; edited by hand?)"
    )
    assert inputs_problems(tmp_path, None, history, None) == []
