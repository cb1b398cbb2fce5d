"""What a run was made from (llm/fingerprints.py, inputs.json), on real tiny runs of the `prompts` task with
data files and a reward function file given by relative paths: the record itself (hashes computed here by
hand), a resume from another folder and of a moved project, a changed data file, reward source or base
model refused in one line naming the file and both hash prefixes, a change of code noted and recorded at
the step the run continues from, config.json edited after config_history.jsonl was deleted refused, a
fallback to an earlier checkpoint with an allowed change that retrains (and replaces) the later one, and
deleted side records named."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from escov.llm import fingerprints, rundir
from escov.llm.config import TrainConfig
from escov.llm.rundir import RunDirError
from escov.llm.train import resume, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    algo="es",
    task="prompts",
    data="data/train.jsonl",
    test_data="data/test.jsonl",
    reward_function="rewards.py:exact",
    steps=2,
    checkpoint_every=1,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=4,
    step_samples=2,
    probe=False,
    eval_problems=2,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(),
    completions_kept=2,
    report_to="tensorboard",
    grpo={"num_generations": 4},
    es={"population_size": 8, "sigma": 0.05, "alpha": 0.05, "member_samples": 2, "member_temperature": 1.0},
)
# shaped (a share for the completion's length): members' rewards differ, so ES's update is not zero
REWARDS = (
    "def exact(prompts, completions, answer, **kwargs):\n"
    "    return [float(c.strip() == a) + 0.01 * len(c) for c, a in zip(completions, answer)]\n"
)


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def project(tiny_model_dir, tmp_path_factory):
    """A finished two-step ES run in project/run, made from project/data/*.jsonl, project/rewards.py and a copy
    of the tiny model in project/model, all given relative to project/ (the working folder). Read-only."""
    import os

    root = tmp_path_factory.mktemp("project")
    shutil.copytree(tiny_model_dir, root / "model")
    (root / "data").mkdir()
    for name, rows in (("train", range(10)), ("test", range(10, 14))):
        records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in rows]
        (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "rewards.py").write_text(REWARDS)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        train(TrainConfig.from_dict(RUN | {"model": "model", "out": "run"}), show_progress=False)
    finally:
        os.chdir(cwd)
    return root


@pytest.fixture
def copy(project, tmp_path):
    """A copy of the project (its run, data, reward and model) elsewhere: its run's recorded absolute paths
    still point into the original project."""
    target = tmp_path / "copied"
    shutil.copytree(project, target)
    return target


def test_inputs_json_records_code_data_reward_and_model(project):
    run = project / "run"
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    config = json.loads((run / rundir.CONFIG).read_text())
    inputs = manifest["inputs"]
    assert set(inputs) == {"model", "data", "test_data", "reward_function[0]"}  # one record per reward function
    for name, given, path in (
        ("data", "data/train.jsonl", project / "data/train.jsonl"),
        ("test_data", "data/test.jsonl", project / "data/test.jsonl"),
        ("reward_function[0]", "rewards.py:exact", project / "rewards.py"),
    ):
        extra = {"imports": {}} if name.startswith("reward_function") else {}  # it imports no module of its own
        assert (
            inputs[name]
            == {
                "given": given,
                "path": str(path),
                "sha256": sha(path),
                "from_run": str(Path("..") / path.relative_to(project)),
            }
            | extra
        )
    assert config["data"] == str(project / "data/train.jsonl")  # config.json: absolute, usable from any folder
    assert config["reward_function"] == [f"{project / 'rewards.py'}:exact"]
    by_hand = hashlib.sha256(b"model.safetensors\0" + (project / "model/model.safetensors").read_bytes()).hexdigest()
    assert inputs["model"]["sha256"] == by_hand and inputs["model"]["given"] == "model"
    assert manifest["settings_sha256"] == fingerprints.settings_sha256(config)
    source = Path(fingerprints.__file__).parents[1]
    head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # the tests run from a git checkout: its commit
        assert manifest["code"]["commit"] == head.stdout.strip()
    ev = json.loads((run / rundir.EVAL).read_text())
    final = load_file(str(rundir.checkpoint_dir(run, 2) / rundir.WEIGHTS))
    assert ev["fingerprint"]["final_weights_sha256"] == fingerprints.tensors_sha256(final)
    assert ev["fingerprint"]["inputs"] == {n: r["sha256"] for n, r in inputs.items()}
    state = json.loads((rundir.checkpoint_dir(run, 1) / rundir.TRAINER_STATE).read_text())
    assert state["settings_sha256"] == manifest["settings_sha256"]
    from escov.paper_checks.rundir import load_run
    from escov.paper_checks.trust import eval_contradiction

    assert eval_contradiction(load_run(run)) is None  # a report trusts a real run's own evaluation


def test_settings_hash_ignores_only_free_and_path_settings():
    config = TrainConfig(model="m", out="o").to_dict()
    same = fingerprints.settings_sha256(config)
    assert fingerprints.settings_sha256(config | {"out": "elsewhere", "device": "cuda", "data": "x.jsonl"}) == same
    assert fingerprints.settings_sha256(config | {"seed": 1}) != same
    assert fingerprints.settings_sha256(config | {"es": config["es"] | {"sigma": 0.5}}) != same


def test_a_run_resumes_from_another_folder_and_a_moved_project_resumes(copy, tmp_path, monkeypatch):
    _repoint(copy / "run")  # the copy's own files, at their absolute paths
    monkeypatch.chdir(tmp_path)  # neither the project's folder nor the run's
    shutil.rmtree(copy / "run" / "checkpoints" / "step-2")
    resume(copy / "run", show_progress=False)
    assert len(rundir.read_steps(copy / "run")) == 2
    # the whole project moved, nothing left at its recorded absolute paths: each input found relative to the run
    moved = tmp_path / "moved"
    shutil.move(copy, moved)
    shutil.rmtree(moved / "run" / "checkpoints" / "step-2")
    resume(moved / "run", show_progress=False)
    config = json.loads((moved / "run" / rundir.CONFIG).read_text())
    assert config["data"] == str(moved / "data/train.jsonl")
    assert config["reward_function"] == [f"{moved / 'rewards.py'}:exact"]
    inputs = json.loads((moved / "run" / rundir.MANIFEST).read_text())["inputs"]
    assert inputs["data"]["given"] == "data/train.jsonl" and inputs["model"]["path"] == str(moved / "model")
    assert len(rundir.config_history(moved / "run")) == 1  # a moved input is no change of settings
    # the run moved without its data, which is gone from its place too: a one-line error naming the missing file
    alone = tmp_path / "alone"
    shutil.move(moved / "run", alone)
    shutil.move(moved / "data", tmp_path / "data-elsewhere")
    with pytest.raises(RunDirError) as err:
        resume(alone, show_progress=False)
    assert "data 'data/train.jsonl' is missing" in str(err.value) and str(moved / "data/train.jsonl") in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "name, edit",
    [
        ("data", lambda root: _edit(root / "data/train.jsonl", lambda text: text.replace("1+1=", "1+2="))),
        ("test_data", lambda root: _edit(root / "data/test.jsonl", lambda text: text[:-1] + " \n")),
        (
            "reward_function[0]",
            lambda root: (root / "rewards.py").write_text(REWARDS.replace("float(", "0.5 * float(")),
        ),
        ("model", lambda root: _scale_one_weight(root / "model/model.safetensors")),
    ],
)
def test_a_changed_input_is_refused_naming_the_file_and_both_hashes(copy, name, edit):
    run = copy / "run"
    record = json.loads((run / rundir.MANIFEST).read_text())["inputs"][name]
    path = copy / Path(record["from_run"]).relative_to("..")
    _repoint(run)  # the copy's recorded absolute paths point into the original project: the copy's files instead
    edit(copy)
    now = fingerprints.weights_sha256(path) if name == "model" else sha(path)
    assert now != record["sha256"]
    with pytest.raises(RunDirError) as err:
        resume(run, show_progress=False)
    message = str(err.value)
    assert message.startswith(str(path)) and f"{record['sha256'][:12]} -> {now[:12]}" in message and "\n" not in message
    assert (rundir.checkpoint_dir(run, 2)).exists()  # refused before anything was touched


def _edit(path: Path, change) -> None:
    path.write_text(change(path.read_text()))


def _scale_one_weight(path: Path) -> None:
    from safetensors.torch import save_file

    weights = load_file(str(path))
    name = sorted(weights)[0]
    weights[name] = weights[name] * 1.5
    save_file(weights, str(path), metadata={"format": "pt"})


def _repoint(run: Path) -> None:
    """inputs.json and config.json of a copied project pointed at the copy's own files."""
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    for record in manifest["inputs"].values():
        record["path"] = str((run / record["from_run"]).resolve())
    (run / rundir.MANIFEST).write_text(json.dumps(manifest))


def test_a_change_of_code_is_noted_and_recorded_at_the_resumed_step(copy, capsys):
    run = copy / "run"
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    manifest["code"] = {"commit": "0" * 40, "modified": False, "diff_sha256": None, "version": "0.0.1"}
    (run / rundir.MANIFEST).write_text(json.dumps(manifest))
    shutil.rmtree(rundir.checkpoint_dir(run, 2))
    resume(run, show_progress=False)
    err = capsys.readouterr().err
    assert "note: the run started with commit 000000000000 and continues from step 1" in err
    last = rundir.config_history(run)[-1]
    assert last["from_step"] == 1
    assert last["changed"][0]["setting"] == "code" and last["changed"][0]["was"] == "commit 000000000000"
    assert json.loads((run / rundir.MANIFEST).read_text())["code"] == fingerprints.code_version()
    from escov.paper_checks.rundir import load_run

    assert any("code" in p and "after step 1" in p for p in load_run(run).problems)  # the report names it


def test_editing_config_after_deleting_its_history_is_refused(copy):
    run = copy / "run"
    (run / rundir.CONFIG_HISTORY).unlink()
    config = json.loads((run / rundir.CONFIG).read_text())
    recorded = fingerprints.settings_sha256(config)
    config["es"]["sigma"] = 0.07
    (run / rundir.CONFIG).write_text(json.dumps(config))
    now = fingerprints.settings_sha256(config)
    with pytest.raises(RunDirError, match=f"sha256 {recorded[:12]} in inputs.json, now {now[:12]}"):
        resume(run, show_progress=False)
    (run / rundir.MANIFEST).unlink()  # and the manifest too: the checkpoints say the run had one
    with pytest.raises(RunDirError, match="inputs.json: missing, but checkpoint step-2 was written by a run that"):
        resume(run, show_progress=False)


def test_a_fallback_with_an_allowed_change_retrains_the_later_checkpoint_and_records_the_right_step(copy, capsys):
    run = copy / "run"
    before = load_file(str(rundir.checkpoint_dir(run, 2) / rundir.WEIGHTS))
    lines = (run / rundir.METRICS).read_text().splitlines()
    (run / rundir.METRICS).write_text(lines[0] + "\n")  # step 2's row lost: checkpoint step-2 is passed over
    config = json.loads((run / rundir.CONFIG).read_text())
    config["es"]["sigma"] = 0.1
    (run / rundir.CONFIG).write_text(json.dumps(config))
    resume(run, show_progress=False, allow_config_change=True)
    err = capsys.readouterr().err
    assert "checkpoint step-2 removed" in err
    last = rundir.config_history(run)[-1]
    assert last["from_step"] == 1 and last["changed"] == [{"setting": "es.sigma", "was": 0.05, "now": 0.1}]
    after = load_file(str(rundir.checkpoint_dir(run, 2) / rundir.WEIGHTS))
    assert any(not torch.equal(before[n], after[n]) for n in before)  # trained again, with the new sigma
    ev = json.loads((run / rundir.EVAL).read_text())
    assert ev["fingerprint"]["final_weights_sha256"] == fingerprints.tensors_sha256(after)  # eval.json measured it


def test_side_records_missing_on_resume_are_named(copy, capsys):
    run = copy / "run"
    (run / rundir.COMPLETIONS).unlink()
    shutil.rmtree(run / "tensorboard")
    shutil.rmtree(rundir.checkpoint_dir(run, 2))
    resume(run, show_progress=False)
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2
    assert str(run / rundir.COMPLETIONS) in warnings[0] and "steps 0-1 are lost" in warnings[0]
    assert str(run / "tensorboard") in warnings[1]
