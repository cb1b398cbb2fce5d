"""Where a run continues from (llm/resume.py), in process on the tiny model: a run stopped after a checkpoint
and resumed writes the same metrics rows and final weights as the run that never stopped, for ES, GRPO (its
optimizer state restored inside the phase) and ES->GRPO; a damaged or out-of-range newest checkpoint is set
aside and named, the previous one used; a checkpoint whose earlier metrics rows are lost is passed over, and
with none before the gap the resume is refused in one line; stray folders are named and ignored."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from escov.llm import rundir, schedules
from escov.llm.config import TrainConfig
from escov.llm.rundir import RunDirError
from escov.llm.train import resume, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    steps=2,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=1,
    step_samples=2,
    probe=False,
    probe_every=0,
    eval_problems=3,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(),
    task="countdown3",
    format_reward=0.5,
    es={"population_size": 4, "sigma": 0.05, "alpha": 0.05},
    grpo={"num_generations": 4, "learning_rate": 3e-2},
    switch_step=1,
)
TIMING = {"step_seconds", "tokens_per_s", "wall_seconds", "es_weight_share"}


def rows(run):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rundir.read_steps(run)]


def final_weights(run):
    steps, _ = rundir.checkpoint_steps(run)
    return load_file(str(rundir.checkpoint_dir(run, steps[0]) / "model.safetensors"))


def same_run(a, b):
    assert rows(a) == rows(b)
    wa, wb = final_weights(a), final_weights(b)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    ea, eb = (json.loads((r / rundir.EVAL).read_text())["final"]["per_problem"] for r in (a, b))
    assert ea == eb


# algo -> (GRPO-step budget, the step a run is stopped after): ES 8 steps, stopped after 3; GRPO 4 steps, stopped
# after 2, inside its phase (the optimizer state must be restored); ES->GRPO 4 ES steps then 3 GRPO steps, stopped
# after 6, inside the GRPO phase that started at step 4
PLANS = {"es": (2, 3), "grpo": (4, 2), "es-grpo": (4, 6)}


@pytest.fixture(scope="module")
def finished(tiny_model_dir, tmp_path_factory):
    """algo -> a finished run directory (the reference that never stopped)."""
    root = tmp_path_factory.mktemp("finished")
    return {
        algo: train(
            TrainConfig.from_dict(
                RUN | {"algo": algo, "steps": steps, "model": str(tiny_model_dir), "out": str(root / algo)}
            ),
            show_progress=False,
        )
        for algo, (steps, _) in PLANS.items()
    }


def stopped_after(reference, step, where):
    """A copy of the finished run as a run killed right after step `step`'s checkpoint looks."""
    run = where / "run"
    shutil.copytree(reference, run)
    for later in rundir.checkpoint_steps(run)[0]:
        if later > step:
            shutil.rmtree(rundir.checkpoint_dir(run, later))
    lines = (run / rundir.METRICS).read_text().splitlines()[:step]
    (run / rundir.METRICS).write_text("".join(line + "\n" for line in lines))
    ev = json.loads((run / rundir.EVAL).read_text())
    (run / rundir.EVAL).write_text(json.dumps({k: v for k, v in ev.items() if k.startswith("base")}))
    (run / "run.lock").unlink(missing_ok=True)
    return run


@pytest.mark.parametrize("algo", ["es", "grpo", "es-grpo"])
def test_a_resumed_run_is_the_run_that_never_stopped(finished, tmp_path, algo):
    phases = json.loads((finished[algo] / rundir.CONFIG).read_text())["schedule"]
    assert len(rundir.read_steps(finished[algo])) == {"es": 8, "grpo": 4, "es-grpo": 7}[algo], phases
    # a reward signal (the format reward): with none, GRPO's optimizer state would not change what a step does
    assert len({r["reward_mean"] for r in rows(finished[algo])}) > 1
    run = stopped_after(finished[algo], PLANS[algo][1], tmp_path)
    resume(run, show_progress=False)
    same_run(finished[algo], run)
    assert not [p.name for p in (run / rundir.CHECKPOINTS).iterdir() if p.name.endswith(".damaged")]


def test_resuming_a_finished_run_trains_nothing_and_sets_nothing_aside(finished, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished["grpo"], run)
    (run / "run.lock").unlink(missing_ok=True)
    resume(run, show_progress=False)
    assert "set aside" not in capsys.readouterr().err
    assert not [p for p in (run / rundir.CHECKPOINTS).iterdir() if p.name.endswith(".damaged")]
    same_run(finished["grpo"], run)


def test_a_damaged_newest_checkpoint_is_set_aside_and_the_previous_used(finished, tmp_path, capsys):
    run = stopped_after(finished["es"], 3, tmp_path)
    (rundir.checkpoint_dir(run, 3) / "model.safetensors").write_bytes(b"not a tensor file")
    kept = (run / rundir.METRICS).read_text().splitlines()[:2]
    resume(run, show_progress=False)
    # continued from step 2, not started over: the rows of steps 1-2 are the ones it had, wall times included
    assert (run / rundir.METRICS).read_text().splitlines()[:2] == kept
    err = capsys.readouterr().err
    assert "checkpoint" in err and "step-3" in err and "failed to load" in err and "trying the previous one" in err
    assert (run / rundir.CHECKPOINTS / "step-3.damaged").is_dir()
    same_run(finished["es"], run)


def test_a_checkpoint_beyond_the_runs_steps_is_set_aside(finished, tmp_path, capsys):
    run = stopped_after(finished["es"], 2, tmp_path)
    total = len(rundir.read_steps(finished["es"]))
    shutil.copytree(rundir.checkpoint_dir(run, 2), rundir.checkpoint_dir(run, total + 5))
    resume(run, show_progress=False)
    assert f"step {total + 5} is beyond the run's {total} steps" in capsys.readouterr().err
    same_run(finished["es"], run)


def test_a_checkpoint_whose_earlier_rows_are_lost_is_passed_over(finished, tmp_path, capsys):
    run = stopped_after(finished["es"], 3, tmp_path)
    lines = (run / rundir.METRICS).read_text().splitlines()
    (run / rundir.METRICS).write_text(lines[0] + "\n" + lines[2] + "\n")  # the row of step 2 lost
    resume(run, show_progress=False)
    err = capsys.readouterr().err
    assert "lacks rows up to checkpoint step-3" in err and "lacks rows up to checkpoint step-2" in err
    assert err.count("); trying the previous checkpoint") == 2
    same_run(finished["es"], run)  # resumed from step 1: steps 2 and 3 trained again, exactly


def test_with_no_checkpoint_before_the_lost_rows_the_resume_is_refused(finished, tmp_path):
    run = stopped_after(finished["es"], 2, tmp_path)
    lines = (run / rundir.METRICS).read_text().splitlines()
    (run / rundir.METRICS).write_text(lines[1] + "\n")  # the row of step 1 lost
    before = (run / rundir.METRICS).read_text()
    with pytest.raises(
        RunDirError,
        match=r"metrics.jsonl: .*, and no checkpoint precedes them; resuming would leave "
        r"the run without those rows \(start the run again in a new directory\)",
    ):
        resume(run, show_progress=False)
    assert (run / rundir.METRICS).read_text() == before


def test_a_folder_that_is_not_a_checkpoint_is_named_and_ignored(finished, tmp_path, capsys):
    run = stopped_after(finished["grpo"], 2, tmp_path)
    (run / rundir.CHECKPOINTS / "notes").mkdir()
    resume(run, show_progress=False)
    assert "notes is not a checkpoint (checkpoints/step-N); ignored" in capsys.readouterr().err
    same_run(finished["grpo"], run)


def test_a_finished_run_whose_last_row_was_lost_trains_that_step_again(finished, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished["es"], run)
    (run / "run.lock").unlink(missing_ok=True)
    lines = (run / rundir.METRICS).read_text().splitlines()
    (run / rundir.METRICS).write_text("".join(line + "\n" for line in lines[:-1]))
    resume(run, show_progress=False)
    assert f"lacks rows up to checkpoint step-{len(lines)}" in capsys.readouterr().err
    same_run(finished["es"], run)


# ES->GRPO layouts: ES population -> (the GRPO phase's first step, the step the run is stopped after). With 4
# members an ES step costs a quarter of a GRPO step (2 N against 8 G at G = 4), so the ES phase's one step of
# budget is 4 ES steps; with 16 members it is one, and the GRPO phase starts at step 1.
SWITCHES = {4: (4, 6), 16: (1, 2)}


@pytest.mark.parametrize("beta", [0.001, 0.0])
@pytest.mark.parametrize("population", sorted(SWITCHES))
def test_a_grpo_phase_needs_its_reference_checkpoint_only_with_a_kl_penalty(
    tiny_model_dir, tmp_path, capsys, beta, population
):
    """ES->GRPO stopped inside its GRPO phase with the phase's reference checkpoint (its first step's) damaged:
    with a KL penalty (beta > 0) every checkpoint from the phase's start on is passed over for one before it
    (exact again; before a one-step ES phase that is the start); without one the reference is not needed and
    the newest checkpoint is used."""
    start, stop = SWITCHES[population]
    cfg = TrainConfig.from_dict(
        RUN
        | {
            "algo": "es-grpo",
            "steps": 4,
            "grpo": RUN["grpo"] | {"beta": beta},
            "es": RUN["es"] | {"population_size": population},
            "model": str(tiny_model_dir),
            "out": str(tmp_path / "ref"),
        }
    )
    assert [p.start for p in schedules.plan(cfg)] == [0, start]
    reference = train(cfg, show_progress=False)
    (tmp_path / "stopped").mkdir()
    run = stopped_after(reference, stop, tmp_path / "stopped")
    (rundir.checkpoint_dir(run, start) / "model.safetensors").write_bytes(b"damaged")
    resume(run, show_progress=False)
    damaged = sorted(p.name for p in (run / rundir.CHECKPOINTS).iterdir() if p.name.endswith(".damaged"))
    expected = [f"step-{s}.damaged" for s in range(start, stop + 1)] if beta > 0 else []
    assert damaged == expected, capsys.readouterr().err
    same_run(reference, run)


def test_a_schedule_stopped_at_its_switch_resumes_there(finished, tmp_path, capsys):
    """ES->GRPO stopped right after the checkpoint of its switch (step 4): the GRPO phase has not started, so no
    optimizer state is needed there; the run continues from step 4, exactly."""
    run = stopped_after(finished["es-grpo"], 4, tmp_path)
    resume(run, show_progress=False)
    assert "set aside" not in capsys.readouterr().err
    same_run(finished["es-grpo"], run)
