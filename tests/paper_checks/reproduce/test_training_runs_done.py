"""Which runs of a reproduction are complete (paper_checks/reproduce/training_runs.py), on run folders written by hand
(3 checkpoints, eval.json and curve.json of evaluation records built here: deciding completeness reads nothing else)
and on one real tiny run (3 steps, a checkpoint at each) for the runs handed out: a run is complete when it holds its
final evaluation and,
with a curve to measure, a point at every step of the curve's layout (llm/curve.py layout: the base, `points`
checkpoints, then refinements where Pass@1 jumps by more than the resolution), each measured with the curve's samples,
temperature and split; the jobs are the runs not complete, and a run whose curve alone is missing only measures it."""

import json
import shutil

import pytest

from escov.llm import rundir
from escov.llm.config import TrainConfig, load_config
from escov.llm.train import train
from escov.paper_checks.reproduce.training_runs import (
    complete,
    curve_done,
    run_all,
    run_jobs_of,
    run_one,
    trained,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    algo="grpo",
    steps=3,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=1,
    step_samples=2,
    probe_every=0,
    eval_problems=2,
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
    out = tmp_path_factory.mktemp("training-runs") / "run"
    train(TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(out)}), show_progress=False)
    return out


@pytest.fixture
def copy_of(run, tmp_path):
    def make(name="run"):
        out = tmp_path / name
        shutil.copytree(run, out)
        (out / rundir.CURVE).unlink(missing_ok=True)
        return out

    return make


def _evaluation(n: int = 32, temperature: float = 0.6, pass1: float = 0.5) -> dict:
    """An evaluation record (llm/rundir Evaluation) of 2 prompts."""
    return {
        "task": "countdown3",
        "num_problems": 2,
        "n": n,
        "ks": [1, 16, 32],
        "temperature": temperature,
        "top_p": 1.0,
        "max_new_tokens": 6,
        "seed": 0,
        "pass_at_k": {"1": pass1, "16": pass1, "32": pass1},
        "maj_at_k": {},
        "mean_token_entropy": 1.0,
        "mean_response_tokens": 6.0,
        "truncated_fraction": 0.0,
        "solved_fraction": 0.5,
        "distinct_correct_answers": 1.0,
        "distinct_correct_texts": 1.0,
        "seconds": 1.0,
        "per_problem": [],
    }


@pytest.fixture
def written(tmp_path):
    """A run folder written by hand: checkpoints at steps 1, 2 and 3, eval.json's base and final evaluations, its
    settings (2 evaluation prompts)."""

    def make(name="run"):
        out = tmp_path / name
        for step in (1, 2, 3):
            (out / rundir.CHECKPOINTS / f"step-{step}").mkdir(parents=True)
            (out / rundir.CHECKPOINTS / f"step-{step}" / rundir.TRAINER_STATE).write_text("{}")
        evals = {label: _evaluation() for label in ("base", "final")}
        evals |= {f"{label}_greedy": _evaluation(1, 0.0) for label in ("base", "final")}
        (out / rundir.EVAL).write_text(json.dumps(evals))
        (out / rundir.CONFIG).write_text(json.dumps({"task": "countdown3", "eval_problems": 2}))
        return out

    return make


def _write_curve(run_dir, pass1: dict[int, float], **fields) -> None:
    """curve.json with a point at each step of pass1 (its sampled Pass@1 as given), measured at 32 samples and
    T = 0.6 unless `fields` say otherwise ("split": the point's split)."""
    split = fields.pop("split", None)
    points = []
    for step, p1 in pass1.items():
        point = {"step": step, "sampled": _evaluation(pass1=p1) | fields, "greedy": _evaluation(1, 0.0)}
        if split is not None:
            point["split"] = split
        points.append(point)
    (run_dir / rundir.CURVE).write_text(json.dumps({"points": points}))


def test_the_checkpoints_are_one_per_step(run, written):
    assert sorted(rundir.checkpoint_steps(run)[0]) == sorted(rundir.checkpoint_steps(written())[0]) == [1, 2, 3]


@pytest.mark.parametrize(
    "pass1, curve, done",
    [
        # points = 1: the base and the last checkpoint; equal Pass@1, nothing to refine
        ({0: 0.5, 3: 0.5}, {}, True),
        ({0: 0.5, 3: 0.53}, {}, True),  # a jump of 0.03, within the resolution 0.06
        ({0: 0.5}, {}, False),
        ({3: 0.5}, {}, False),
        ({0: 0.5, 1: 0.5, 2: 0.5}, {}, False),
        # a jump of 0.4 over steps 0..3: the checkpoint nearest the middle (1; 2 ties and is later) is measured next
        ({0: 0.2, 3: 0.6}, {}, False),
        ({0: 0.2, 2: 0.4, 3: 0.6}, {}, False),  # 2 is not where the refinement goes
        ({0: 0.2, 1: 0.4, 3: 0.6}, {}, False),  # 1..3 still jumps 0.2 with 2 inside
        ({0: 0.2, 1: 0.4, 2: 0.5, 3: 0.6}, {}, True),
        ({0: 0.2, 1: 0.25, 3: 0.3}, {}, True),  # 1..3 jumps 0.05
        # the curve's own layout settings
        ({0: 0.2, 3: 0.6}, {"resolution": 0.5}, True),
        ({0: 0.2, 3: 0.6}, {"resolution": 0.39}, False),
        ({0: 0.2, 3: 0.6}, {"max_points": 2}, True),
        ({0: 0.2, 3: 0.6}, {"max_points": 3}, False),
        ({0: 0.5, 3: 0.5}, {"points": 3}, False),
        ({0: 0.5, 1: 0.5, 2: 0.5, 3: 0.5}, {"points": 3}, True),
    ],
)
def test_a_curve_is_done_when_every_step_of_its_layout_is_measured(written, pass1, curve, done):
    run_dir = written()
    _write_curve(run_dir, pass1)
    assert curve_done(run_dir, CURVE | curve) is done
    assert complete(run_dir, CURVE | curve) is done


@pytest.mark.parametrize(
    "fields, curve",
    [
        ({"n": 33}, {}),  # points of another sample count
        ({"temperature": 1.0}, {}),
        ({}, {"samples": 64}),
        ({}, {"temperature": 0.7}),
        ({}, {"split": "validation"}),  # test points do not complete a validation curve
        ({"split": "validation"}, {}),  # nor validation points a test curve
        ({"split": "validation"}, {"split": "test"}),
        ({"split": "validation"}, {"split": "train"}),
        ({"num_problems": 3}, {}),  # points on another number of prompts than the run's 2
        ({}, {"n_problems": 3}),
    ],
)
def test_points_measured_otherwise_do_not_count(written, fields, curve):
    run_dir = written()
    _write_curve(run_dir, {0: 0.5, 3: 0.5}, **fields)
    assert not curve_done(run_dir, CURVE | curve)
    assert not complete(run_dir, CURVE | curve)
    assert complete(run_dir, None)  # without a curve to measure, the final evaluation is enough


@pytest.mark.parametrize("split", ["test", "validation", "train"])
def test_a_curve_of_a_split_is_done_by_that_splits_points(written, split):
    run_dir = written()
    _write_curve(run_dir, {0: 0.5, 3: 0.5}, **({} if split == "test" else {"split": split}))
    assert curve_done(run_dir, CURVE | {"split": split})
    assert curve_done(run_dir, CURVE) is (split == "test")  # a curve without a split is the test curve
    for other in {"test", "validation", "train"} - {split}:
        assert not curve_done(run_dir, CURVE | {"split": other})


def test_a_run_without_its_final_evaluation_is_not_trained(written):
    run_dir = written()
    _write_curve(run_dir, {0: 0.5, 3: 0.5})
    assert trained(run_dir) and complete(run_dir, CURVE)
    evals = json.loads((run_dir / rundir.EVAL).read_text())
    del evals["final"], evals["final_greedy"]
    (run_dir / rundir.EVAL).write_text(json.dumps(evals))
    assert not trained(run_dir) and not complete(run_dir, CURVE) and not complete(run_dir, None)
    (run_dir / rundir.EVAL).unlink()
    assert not trained(run_dir)
    (run_dir / rundir.EVAL).write_text("{not json")
    with pytest.raises(rundir.RunDirError, match="eval.json"):
        trained(run_dir)


def test_the_jobs_are_the_runs_not_complete_in_their_order(written, tmp_path):
    done = written("done")
    written("curve-missing")
    _write_curve(done, {0: 0.5, 3: 0.5})
    cfg = RUN | {"model": "m"}
    runs = {"fresh": cfg | {"seed": 1}, "done": cfg, "curve-missing": cfg | {"seed": 2}}
    jobs = run_jobs_of(runs, tmp_path, CURVE)
    assert [(j.name, j.stage, j.after) for j in jobs] == [
        ("fresh", "training runs", ()),
        ("curve-missing", "training runs", ()),
    ]
    assert [j.make() for j in jobs] == [
        (run_one, ("fresh", runs["fresh"], tmp_path / "fresh", CURVE, None)),
        (run_one, ("curve-missing", runs["curve-missing"], tmp_path / "curve-missing", CURVE, None)),
    ]
    shared = tmp_path / "shared"
    staged = run_jobs_of(runs, tmp_path, None, "sweep", ("base",), shared)
    assert [(j.name, j.stage, j.after) for j in staged] == [("fresh", "sweep", ("base",))]  # no curve: both trained
    assert staged[0].make() == (run_one, ("fresh", runs["fresh"], tmp_path / "fresh", None, shared))


def test_a_trained_run_missing_its_curve_only_measures_it(copy_of, tmp_path):
    run_dir = copy_of("r")
    before = json.loads((run_dir / rundir.EVAL).read_text())
    logged = []
    cfg = load_config(run_dir).to_dict()
    run_all({"r": cfg}, tmp_path, CURVE, 1, logged.append)
    assert logged[0] == "1 of 1 runs to do, 1 at a time" and logged[1].startswith("1/1 done: r ")
    assert json.loads((run_dir / rundir.EVAL).read_text()) == before  # not trained again
    points = rundir.read_curve(run_dir)
    assert [p["step"] for p in points][0] == 0 and points[-1]["step"] == 3
    assert points[0]["source"] == "eval.json base" and points[-1]["source"] == "eval.json final"
    assert curve_done(run_dir, CURVE)
    run_all({"r": cfg}, tmp_path, CURVE, 1, logged.append)  # complete: nothing to do, nothing logged
    assert len(logged) == 2


def test_the_curve_is_measured_with_the_settings_it_is_handed_not_the_curve_commands_defaults(copy_of, tmp_path):
    """A curve of 33 samples at T 1.0 on 1 prompt (llm/curve.py's defaults: 32 samples, the run's 0.6, its 2 prompts;
    the run's evaluations cannot be reused for it): every point of curve.json was measured so."""
    run_dir = copy_of("r")
    curve = {"points": 1, "samples": 33, "temperature": 1.0, "n_problems": 1}
    run_all({"r": load_config(run_dir).to_dict()}, tmp_path, curve, 1, lambda msg: None)
    points = rundir.read_curve(run_dir)
    assert points and {(p["sampled"]["n"], p["sampled"]["temperature"]) for p in points} == {(33, 1.0)}
    assert {p["sampled"]["num_problems"] for p in points} == {1}
    assert curve_done(run_dir, curve) and not curve_done(run_dir, CURVE)


def test_a_run_stopped_before_its_final_evaluation_is_resumed_to_the_same_end(copy_of, tmp_path):
    """config.json there and the final evaluation missing: the run is resumed (not started again, which an existing
    run directory refuses), and its final evaluation is the one the uninterrupted run made (the same seeds)."""
    run_dir = copy_of("r")
    evals = json.loads((run_dir / rundir.EVAL).read_text())
    stopped = {k: v for k, v in evals.items() if not k.startswith("final")}
    (run_dir / rundir.EVAL).write_text(json.dumps(stopped))
    assert run_one("r", load_config(run_dir).to_dict(), run_dir, None) == "r"
    again = rundir.read_eval(run_dir)
    assert again["final"]["per_problem"] == evals["final"]["per_problem"]
    assert again["final"]["pass_at_k"] == evals["final"]["pass_at_k"]


def test_a_fresh_run_is_trained_keeping_its_base_measurements_in_the_shared_folder(tiny_model_dir, tmp_path, capfd):
    """A run not started is trained from its settings (cfg's out is the run's folder), without progress bars (the
    pool's stage lines would be buried), and its base evaluation is kept in the shared folder for the other runs from
    that base (llm.train.train's `shared`)."""
    shared, run_dir = tmp_path / "shared", tmp_path / "fresh"
    cfg = RUN | {"model": str(tiny_model_dir), "out": str(tmp_path / "elsewhere"), "seed": 0}
    assert run_one("fresh", cfg, run_dir, None, shared) == "fresh"
    assert trained(run_dir) and not (tmp_path / "elsewhere").exists()
    assert any(p.is_file() for p in shared.rglob("*"))
    assert "grpo train" not in capfd.readouterr().err  # the training loop's bar (tqdm, desc "ALGO train")
