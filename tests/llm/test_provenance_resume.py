"""Everything a run reads is part of its identity, and `--resume` refuses what changed (llm/fingerprints.py,
llm/reward_imports.py), on a real tiny ES run whose reward file imports a helper module from the working folder
and whose second reward is named by a package path: the helper's, the package module's and the base model's
other files' hashes recorded (computed here by hand); an edited helper, a resume from a folder holding another
package of that name, an edited base config.json, an added chat template, each refused in one line naming the
file. Each was resumed silently before."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

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
    reward_function=("rewards.py:exact", "provpkg.mod:brevity"),
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
    completions_kept=0,
    es={"population_size": 8, "sigma": 0.05, "alpha": 0.05, "member_samples": 2, "member_temperature": 1.0},
)
REWARDS = (
    "import json\n\nfrom provhelper import score\n\n\n"
    "def exact(prompts, completions, answer, **kwargs):\n"
    "    return [score(c, a) for c, a in zip(completions, answer)]\n"
)
HELPER = "def score(completion, answer):\n    return float(completion.strip() == answer) + 0.01 * len(completion)\n"
PACKAGE = {
    "__init__.py": "from . import weights\n",
    "weights.py": "SHARE = 0.01\n",
    "mod.py": (
        "from .weights import SHARE\n\n\ndef brevity(prompts, completions, **kwargs):\n"
        "    return [-SHARE * len(c) for c in completions]\n"
    ),
}
MODULES = ("provhelper", "provpkg", "provpkg.mod", "provpkg.weights")


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _write_project(root: Path, model_dir: Path) -> None:
    shutil.copytree(model_dir, root / "model")
    (root / "data").mkdir()
    for name, rows in (("train", range(10)), ("test", range(10, 14))):
        records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in rows]
        (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "rewards.py").write_text(REWARDS)
    (root / "provhelper.py").write_text(HELPER)
    (root / "provpkg").mkdir()
    for name, text in PACKAGE.items():
        (root / "provpkg" / name).write_text(text)


def _forget_modules() -> None:
    """A fresh process has imported none of the project's modules (the next import finds them anew)."""
    for name in MODULES:
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def project(tiny_model_dir, tmp_path_factory):
    """A finished two-step ES run in project/run, started from project/ as the working folder (on the Python
    path, as `python -m` puts it). Read-only."""
    root = tmp_path_factory.mktemp("project")
    _write_project(root, tiny_model_dir)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.syspath_prepend(str(root))
        train(TrainConfig.from_dict(RUN | {"model": "model", "out": "run"}), show_progress=False)
        _forget_modules()
    return root


@pytest.fixture
def copy(project, tmp_path, monkeypatch):
    """A copy of the project, the working folder (on the Python path) of the test, its inputs.json pointed at its
    own files (the recorded absolute paths are the original project's)."""
    target = tmp_path / "copied"
    shutil.copytree(project, target)
    manifest = json.loads((target / "run" / rundir.MANIFEST).read_text())
    for record in manifest["inputs"].values():
        record["path"] = str((target / "run" / record["from_run"]).resolve())
    (target / "run" / rundir.MANIFEST).write_text(json.dumps(manifest))
    monkeypatch.chdir(target)
    monkeypatch.syspath_prepend(str(target))
    yield target
    _forget_modules()


def test_inputs_json_records_the_rewards_imported_modules_and_the_base_models_other_files(project):
    inputs = json.loads((project / "run" / rundir.MANIFEST).read_text())["inputs"]
    helper = project / "provhelper.py"
    assert inputs["reward_function[0]"]["imports"] == {  # json: the standard library's, not recorded
        "provhelper": {"path": str(helper), "from_run": "../provhelper.py", "sha256": sha(helper)}
    }
    package = inputs["reward_function[1]"]
    assert package["path"] == str(project / "provpkg/mod.py") and package["sha256"] == sha(project / "provpkg/mod.py")
    assert {m: r["sha256"] for m, r in package["imports"].items()} == {
        "provpkg": sha(project / "provpkg/__init__.py"),
        "provpkg.weights": sha(project / "provpkg/weights.py"),
    }
    read = sorted(f.name for f in (project / "model").iterdir() if not f.name.endswith(".safetensors"))
    assert "config.json" in read and "tokenizer_config.json" in read
    assert inputs["model"]["files"] == {name: sha(project / "model" / name) for name in read}


def test_an_edited_helper_module_of_the_reward_is_refused_on_resume(copy):
    helper = copy / "provhelper.py"
    was = sha(helper)
    helper.write_text(HELPER.replace("0.01", "0.02"))
    with pytest.raises(RunDirError) as err:
        resume(copy / "run", show_progress=False)
    message = str(err.value)
    assert message.startswith(
        f"{helper}: module provhelper, imported by reward_function[0] (rewards.py), changed "
        f"since the run started (sha256 {was[:12]} -> {sha(helper)[:12]})"
    )
    assert "\n" not in message


def test_a_module_of_the_rewards_package_edited_is_refused_on_resume(copy):
    (copy / "provpkg" / "weights.py").write_text("SHARE = 0.5\n")
    with pytest.raises(RunDirError, match=r"weights.py: module provpkg.weights, imported by reward_function\[1\]"):
        resume(copy / "run", show_progress=False)


def test_a_package_reward_resumed_from_a_folder_holding_another_package_is_refused(copy, tmp_path, monkeypatch):
    """The run's working folder is copied/; resumed from elsewhere/, which holds another provpkg (the import by
    name finds it first): refused, naming both files, not trained with the other code."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(copy / "provpkg", elsewhere / "provpkg")
    (elsewhere / "provpkg" / "mod.py").write_text(PACKAGE["mod.py"].replace("-SHARE", "SHARE"))
    shutil.copy(copy / "provhelper.py", elsewhere)
    monkeypatch.chdir(elsewhere)
    monkeypatch.syspath_prepend(str(elsewhere))
    _forget_modules()
    with pytest.raises(RunDirError) as err:
        resume(copy / "run", show_progress=False)
    message = str(err.value)
    assert message.startswith(
        f"{elsewhere / 'provpkg/mod.py'}: reward_function[1] 'provpkg.mod:brevity' now "
        f"imports this file, not the one the run used ({copy / 'provpkg/mod.py'}"
    )
    assert "\n" not in message
    assert rundir.checkpoint_dir(copy / "run", 2).exists() and len(rundir.config_history(copy / "run")) == 1


@pytest.mark.parametrize(
    "name, edit",
    [
        ("config.json", lambda model: _edit_json(model / "config.json", lambda c: c | {"rope_theta": 5000.0})),
        ("chat_template.jinja", lambda model: (model / "chat_template.jinja").write_text("{{ messages[0].content }}")),
        (
            "tokenizer_config.json",
            lambda model: _edit_json(
                model / "tokenizer_config.json", lambda c: c | {"chat_template": "{{ messages }}"}
            ),
        ),
    ],
)
def test_an_edited_base_config_or_an_added_chat_template_is_refused_on_resume(copy, name, edit):
    model = copy / "model"
    edit(model)
    with pytest.raises(RunDirError) as err:
        resume(copy / "run", show_progress=False)
    change = "added" if name == "chat_template.jinja" else "changed (sha256 "
    assert str(err.value).startswith(f"{model / name}: base model file {change}") and "\n" not in str(err.value)


def _edit_json(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


# ----------------------------------------------------------------------------- records against their witnesses


def test_config_and_its_history_edited_together_are_refused_on_resume(copy):
    """A different sigma written into config.json and into config_history.jsonl's record alike: the checkpoints
    were trained with the recorded settings (their trainer_state.json says so)."""
    run = copy / "run"
    _edit_json(run / rundir.CONFIG, lambda c: c | {"es": c["es"] | {"sigma": 0.07}})
    [record] = rundir.config_history(run)
    record["config"]["es"]["sigma"] = 0.07
    (run / rundir.CONFIG_HISTORY).write_text(json.dumps(record) + "\n")
    with pytest.raises(RunDirError) as err:
        resume(run, show_progress=False)
    state = rundir.checkpoint_dir(run, 1) / rundir.TRAINER_STATE
    assert str(err.value).startswith(f"{state}: checkpoint step-1 was trained with settings sha256 ")
    assert "config.json and config_history.jsonl edited by hand?" in str(err.value) and "\n" not in str(err.value)


def test_a_data_file_changed_with_its_new_hash_written_into_inputs_json_is_refused(copy):
    run = copy / "run"
    data = copy / "data/train.jsonl"
    was = sha(data)
    data.write_text(data.read_text().replace("1+1=", "1+2="))
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    manifest["inputs"]["data"]["sha256"] = sha(data)
    (run / rundir.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(RunDirError) as err:
        resume(run, show_progress=False)
    assert str(err.value) == (
        f"{run / rundir.MANIFEST}: data has sha256 {sha(data)[:12]}, but the base evaluation "
        f"(eval.json base_fingerprint) was made from {was[:12]} (inputs.json edited by hand?)"
    )


def test_llm_curve_refuses_a_changed_input_as_a_resume_does(copy):
    from escov.llm.curve import evaluate_curve

    data = copy / "data/test.jsonl"
    was = sha(data)
    data.write_text(data.read_text().replace("11+1=", "11+2="))
    with pytest.raises(RunDirError) as err:
        evaluate_curve(copy / "run", points=1, samples=32, n_problems=2)
    assert str(err.value).startswith(f"{data}: test_data file changed since the run started (sha256 {was[:12]} -> ")
    assert not (copy / "run" / rundir.CURVE).exists()  # nothing measured


def test_a_resume_drops_the_curve_points_after_the_step_it_continues_from(copy):
    """Metrics rows after step 1 lost: the resume continues from checkpoint step-1 with another sigma and trains the
    later steps again; curve.json's point of the last step measured the old weights and goes."""
    from escov.llm.curve import evaluate_curve

    run = copy / "run"
    evaluate_curve(run, points=2, samples=32, n_problems=2)
    last = rundir.checkpoint_steps(run)[0][0]
    assert [p["step"] for p in rundir.read_curve(run)] == [0, 1, last]
    old = rundir.read_curve(run)[2]["fingerprint"]["weights_sha256"]
    assert old == fingerprints.weights_sha256(rundir.checkpoint_dir(run, last))  # the weights it measured
    (run / rundir.METRICS).write_text((run / rundir.METRICS).read_text().splitlines()[0] + "\n")
    _edit_json(run / rundir.CONFIG, lambda c: c | {"es": c["es"] | {"sigma": 0.1}})
    resume(run, show_progress=False, allow_config_change=True)
    assert [p["step"] for p in rundir.read_curve(run)] == [0, 1]
    points = evaluate_curve(run, points=2, samples=32, n_problems=2)  # measured again, on the new weights
    assert points[2]["fingerprint"]["weights_sha256"] == fingerprints.weights_sha256(rundir.checkpoint_dir(run, last))
    assert points[2]["fingerprint"]["weights_sha256"] != old
