"""Curve reuse and "done" across every split (llm/curve.py, paper_checks/reproduce/training_runs.py curve_done): a run
whose own evaluations were made exactly as the curve measures (prompts, samples, temperature, Pass@k, length) lends
them to its TEST curve only; a validation or train curve is measured on its own split's prompts (never a test prompt),
and a curve complete on one split is not complete on another. The `llm curve` command line runs in this process."""

import pytest

from escov.llm import rundir
from escov.llm.cli import main
from escov.llm.config import TrainConfig, load_config
from escov.llm.curve import evaluate_curve
from escov.llm.problem_sets import split_set
from escov.llm.rollout import derive_seed
from escov.llm.train import train
from escov.paper_checks.reproduce.training_runs import curve_done

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    algo="grpo",
    steps=2,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_every=0,
    eval_problems=3,
    eval_samples=32,
    eval_ks=(1, 16, 32),
    eval_temperature=0.6,
    heldout_task="",
    threshold_keep=(),
    task="countdown3",
    grpo={"num_generations": 4, "learning_rate": 3e-2},
)
CURVE = {"points": 1, "samples": 32, "temperature": 0.6}


@pytest.fixture(scope="module")
def run(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("curve-splits") / "run"
    train(TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(out)}), show_progress=False)
    return out


def test_every_split_is_measured_on_its_own_prompts_and_only_the_test_curve_reuses_eval_json(run, capsys):
    cfg = load_config(run)
    ids = {s: set(split_set(cfg, s, 3).ids) for s in ("test", "validation", "train")}
    assert not ids["test"] & (ids["validation"] | ids["train"]) and not ids["validation"] & ids["train"]
    for split in ("test", "validation", "train"):
        assert not curve_done(run, CURVE | {"split": split}), split  # eval.json's points are not in curve.json yet
    for split in ("validation", "train"):
        points = evaluate_curve(run, n_problems=3, split=split, **CURVE)
        assert [p["step"] for p in points] == [0, 2]
        for p in points:
            assert "source" not in p and p["split"] == split
            assert {r["id"] for r in p["sampled"]["per_problem"]} == ids[split]
            assert p["sampled"]["seed"] == derive_seed(0, p["step"], "curve") % 2**31
        assert curve_done(run, CURVE | {"split": split})
        assert not curve_done(run, CURVE | {"split": "test"}) and not curve_done(run, CURVE)
    assert not curve_done(run, CURVE | {"split": "validation", "samples": 33})
    # the test curve, through the command line: both points are the run's own evaluations
    assert (
        main(
            [
                "curve",
                str(run),
                "--points",
                "1",
                "--samples",
                "32",
                "--temperature",
                "0.6",
                "--problems",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "step     2" in capsys.readouterr().out
    evals = rundir.read_eval(run)
    test_points = [p for p in rundir.read_curve(run) if "split" not in p]
    assert [(p["step"], p["source"]) for p in test_points] == [(0, "eval.json base"), (2, "eval.json final")]
    assert [p["sampled"]["per_problem"] for p in test_points] == [
        evals["base"]["per_problem"],
        evals["final"]["per_problem"],
    ]
    assert all({r["id"] for r in p["sampled"]["per_problem"]} == ids["test"] for p in test_points)
    assert curve_done(run, CURVE) and curve_done(run, CURVE | {"split": "test"})
    # curve.json holds one point per step: the test points replaced the others, which are no longer complete
    assert [p.get("split", "test") for p in rundir.read_curve(run)] == ["test", "test"]
    for split in ("validation", "train"):
        assert not curve_done(run, CURVE | {"split": split})


def test_the_curve_command_line_takes_its_split(run, capsys):
    assert (
        main(
            [
                "curve",
                str(run),
                "--points",
                "1",
                "--samples",
                "32",
                "--temperature",
                "0.6",
                "--problems",
                "3",
                "--split",
                "validation",
                "--no-progress",
            ]
        )
        == 0
    )
    validation = [p for p in rundir.read_curve(run) if p.get("split") == "validation"]
    assert len(validation) == 2 and all("source" not in p for p in validation)
    assert curve_done(run, CURVE | {"split": "validation"}) and not curve_done(run, CURVE)
