"""The fingerprint functions of llm/fingerprints.py, in process on files written here (no training): content,
weight and tensor hashes against sha256 computed by hand from their stated layouts, the settings hash's kept
settings, the code version of a git checkout made here, how each path setting is resolved and recorded
(take_inputs, manifest), and what a resume finds and refuses (check_inputs, check_settings_hash), each
refusal one line naming the file. tests/llm/test_run_fingerprints.py checks the same on real tiny runs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pytest
import torch

from escov.llm import fingerprints, rundir
from escov.llm.config import TrainConfig
from escov.llm.rundir import RunDirError


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_first_test_hashes_a_file(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert fingerprints.content_sha256(tmp_path / "f") == sha(b"abc")


# ----------------------------------------------------------------------------- hashes


def test_a_file_hashes_to_its_bytes_across_read_blocks(tmp_path):
    big = bytes(range(256)) * (5 * fingerprints.CHUNK // 512) + b"tail"  # 2.5 read blocks
    (tmp_path / "big.bin").write_bytes(big)
    assert fingerprints.content_sha256(tmp_path / "big.bin") == sha(big)
    assert fingerprints.content_sha256(str(tmp_path / "big.bin")) == sha(big)
    (tmp_path / "empty").write_bytes(b"")
    assert fingerprints.content_sha256(tmp_path / "empty") == sha(b"")


def test_a_folder_hashes_its_files_names_then_bytes_in_name_order(tmp_path):
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "nothing").mkdir()  # an empty folder adds nothing
    (folder / "b.txt").write_bytes(b"2")
    (folder / "a.txt").write_bytes(b"1")
    (folder / "sub" / "c.txt").write_bytes(b"3")
    by_hand = sha(b"a.txt\x001b.txt\x002sub/c.txt\x003")
    assert fingerprints.content_sha256(folder) == by_hand
    (folder / "a.txt").rename(folder / "d.txt")  # the same bytes under another name: another hash
    assert fingerprints.content_sha256(folder) == sha(b"b.txt\x002d.txt\x001sub/c.txt\x003")


def test_model_weights_are_the_safetensors_else_the_bin_files_in_name_order(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "b.bin").write_bytes(b"B")
    (model / "a.bin").write_bytes(b"A")
    assert fingerprints.weight_files(model) == [model / "a.bin", model / "b.bin"]
    assert fingerprints.weights_sha256(str(model)) == sha(b"a.bin\0Ab.bin\0B")
    (model / "z-2.safetensors").write_bytes(b"Z2")
    (model / "z-1.safetensors").write_bytes(b"Z1")
    assert fingerprints.weight_files(str(model)) == [model / "z-1.safetensors", model / "z-2.safetensors"]
    assert fingerprints.weights_sha256(model) == sha(b"z-1.safetensors\0Z1z-2.safetensors\0Z2")
    (model / "config.json").write_text('{"changed": true}')  # only the weight files count
    assert fingerprints.weights_sha256(model) == sha(b"z-1.safetensors\0Z1z-2.safetensors\0Z2")
    assert fingerprints.weights_sha256(tmp_path / "no-weights") == sha(b"")


def test_tensors_hash_name_dtype_shape_then_bytes_in_name_order():
    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = torch.tensor([7, -1], dtype=torch.int16)
    by_hand = sha(
        b"a.bias:torch.int16:(2,)\0"
        + np.array([7, -1], dtype="<i2").tobytes()
        + b"a.weight:torch.float32:(2, 3)\0"
        + np.arange(6, dtype="<f4").tobytes()
    )
    assert fingerprints.tensors_sha256({"a.weight": w, "a.bias": b}) == by_hand
    # a transposed view hashes as its own values laid out in order, not its storage's
    t = torch.arange(6, dtype=torch.float32).reshape(3, 2).t()
    assert fingerprints.tensors_sha256({"t": t}) == sha(
        b"t:torch.float32:(2, 3)\0" + np.arange(6, dtype="<f4").reshape(3, 2).T.copy().tobytes()
    )
    with_grad = torch.ones(2, requires_grad=True)
    assert fingerprints.tensors_sha256({"g": with_grad}) == fingerprints.tensors_sha256({"g": torch.ones(2)})
    # the same bytes under another dtype or shape are other weights
    assert fingerprints.tensors_sha256({"x": torch.zeros(4, dtype=torch.int32)}) != fingerprints.tensors_sha256(
        {"x": torch.zeros(4, dtype=torch.float32)}
    )
    assert fingerprints.tensors_sha256({"x": torch.zeros(2, 2)}) != fingerprints.tensors_sha256({"x": torch.zeros(4)})
    assert fingerprints.tensors_sha256({}) == sha(b"")


def test_the_settings_hash_is_of_the_sorted_json_of_the_kept_settings():
    kept = {"seed": 1, "es": {"sigma": 0.5, "alpha": 0.1}}
    left_out = {
        "out": "o",
        "device": "cuda",
        "model": "m",
        "data": "d",
        "test_data": "t",
        "reward_function": ["r:f"],
        "schedule": [{"phase": "es"}],
    }
    assert fingerprints.settings_sha256(kept | left_out) == sha(b'{"es": {"alpha": 0.1, "sigma": 0.5}, "seed": 1}')
    assert fingerprints.settings_sha256(
        {"es": {"alpha": 0.1, "sigma": 0.5}, "seed": 1}
    ) == fingerprints.settings_sha256(kept)  # the order of the keys does not count
    assert fingerprints.settings_sha256({"heldout": Path("x")}) == sha(b'{"heldout": "x"}')  # non-JSON values as text
    assert fingerprints.settings_sha256({}) == sha(b"{}")


# ----------------------------------------------------------------------------- the code version


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _checkout(root: Path) -> Path:
    """A git repository at root with one commit holding llm/fingerprints.py (as the source tree holds it)."""
    (root / "llm").mkdir(parents=True)
    (root / "llm" / "fingerprints.py").write_text("# the module\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return root


def test_the_code_version_is_the_commit_of_the_checkout_holding_the_module(tmp_path, monkeypatch):
    try:
        installed = version("escov")
    except PackageNotFoundError:
        installed = "unknown"
    root = _checkout(tmp_path / "repo")
    monkeypatch.setattr(fingerprints, "__file__", str(root / "llm" / "fingerprints.py"))
    head = git(root, "rev-parse", "HEAD").strip()
    assert fingerprints.code_version() == {"commit": head, "modified": False, "diff_sha256": None, "version": installed}
    (root / "notes.txt").write_text("untracked")  # an untracked file is no change of the code
    assert fingerprints.code_version()["modified"] is False
    (root / "llm" / "fingerprints.py").write_text("# the module, edited\n")
    diff = subprocess.run(["git", "-C", str(root), "diff", "HEAD", "--binary"], capture_output=True).stdout
    assert fingerprints.code_version() == {
        "commit": head,
        "modified": True,
        "diff_sha256": sha(diff),
        "version": installed,
    }


def test_staged_and_binary_changes_count_and_an_undecodable_diff_is_read(tmp_path, monkeypatch):
    root = _checkout(tmp_path / "repo")
    (root / "weights.bin").write_bytes(b"\0\1\2")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "binary")
    monkeypatch.setattr(fingerprints, "__file__", str(root / "llm" / "fingerprints.py"))
    (root / "llm" / "fingerprints.py").write_text("# staged\n")
    git(root, "add", "-A")  # a change staged for the next commit is a change of the code too
    staged = fingerprints.code_version()
    assert staged["modified"] is True and staged["diff_sha256"] is not None
    git(root, "reset", "-q", "--hard")
    hashes = set()
    for content in (b"\0\1\3", b"\0\1\4"):  # two other binary contents: two other differences
        (root / "weights.bin").write_bytes(content)
        hashes.add(fingerprints.code_version()["diff_sha256"])
    assert len(hashes) == 2 and None not in hashes
    git(root, "reset", "-q", "--hard")
    (root / "llm" / "fingerprints.py").write_bytes(b"# caf\xe9, not UTF-8\n")
    latin = fingerprints.code_version()
    assert latin["modified"] is True and len(latin["diff_sha256"]) == 64


def test_outside_an_installed_package_the_version_is_unknown(tmp_path, monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    (tmp_path / "plain" / "llm").mkdir(parents=True)
    monkeypatch.setattr(fingerprints, "__file__", str(tmp_path / "plain" / "llm" / "fingerprints.py"))
    code = fingerprints.code_version()
    assert code == {"commit": None, "modified": False, "diff_sha256": None, "version": "unknown"}
    assert fingerprints.describe_code(code) == "version unknown"


def test_no_commit_outside_a_checkout_of_the_source_tree(tmp_path, monkeypatch):
    try:
        installed = version("escov")
    except PackageNotFoundError:
        installed = "unknown"
    none = {"commit": None, "modified": False, "diff_sha256": None, "version": installed}
    # a repository without a commit yet
    (tmp_path / "new" / "llm").mkdir(parents=True)
    git(tmp_path / "new", "init", "-q")
    monkeypatch.setattr(fingerprints, "__file__", str(tmp_path / "new" / "llm" / "fingerprints.py"))
    assert fingerprints.code_version() == none
    # the source tree inside another repository (whose top level is not the source tree's): not its commit
    outer = _checkout(tmp_path / "outer")
    (outer / "inner" / "llm").mkdir(parents=True)
    (outer / "inner" / "llm" / "fingerprints.py").write_text("# the module\n")
    git(outer, "add", "-A")
    git(outer, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "second")
    monkeypatch.setattr(fingerprints, "__file__", str(outer / "inner" / "llm" / "fingerprints.py"))
    assert fingerprints.code_version() == none
    # no git repository at all
    (tmp_path / "plain" / "llm").mkdir(parents=True)
    monkeypatch.setattr(fingerprints, "__file__", str(tmp_path / "plain" / "llm" / "fingerprints.py"))
    assert fingerprints.code_version() == none


def test_the_code_is_described_by_its_commit_or_its_version():
    commit = "1a2b3c4d5e6f7a8b9c0d" * 2
    assert (
        fingerprints.describe_code({"commit": commit, "modified": False, "diff_sha256": None}) == "commit 1a2b3c4d5e6f"
    )
    assert (
        fingerprints.describe_code({"commit": commit, "modified": True, "diff_sha256": "abcdef0123456789"})
        == "commit 1a2b3c4d5e6f (modified, diff abcdef01)"
    )
    assert (
        fingerprints.describe_code({"commit": commit, "modified": True, "diff_sha256": None}) == "commit 1a2b3c4d5e6f"
    )
    assert fingerprints.describe_code({"commit": None, "modified": False, "version": "0.1.0"}) == "version 0.1.0"
    assert fingerprints.describe_code(None) == fingerprints.describe_code({}) == "unknown code"


# ----------------------------------------------------------------------------- the inputs


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A working folder holding a model, data files and reward sources (a file, a top-level module, a package),
    importable from here."""
    root = tmp_path / "project"
    (root / "model").mkdir(parents=True)
    (root / "model" / "model.safetensors").write_bytes(b"weights")
    (root / "model" / "config.json").write_text("{}")
    (root / "data").mkdir()
    (root / "data" / "train.jsonl").write_text('{"prompt": "1+1=", "answer": "2"}\n')
    (root / "data" / "test.jsonl").write_text('{"prompt": "2+2=", "answer": "4"}\n')
    (root / "rewards.py").write_text("def exact(prompts, completions, **kw):\n    return [1.0] * len(completions)\n")
    (root / "fp_top_rewards.py").write_text(
        "def top(prompts, completions, **kw):\n    return [0.0] * len(completions)\n"
    )
    (root / "fp_pkg").mkdir()
    (root / "fp_pkg" / "__init__.py").write_text("def init(prompts, completions, **kw):\n    return []\n")
    (root / "fp_pkg" / "sub.py").write_text("def inner(prompts, completions, **kw):\n    return []\n")
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in ("fp_top_rewards", "fp_pkg", "fp_pkg.sub"):
        sys.modules.pop(name, None)


def test_a_reward_functions_source_is_its_file_or_its_modules_file(project):
    assert fingerprints.reward_source("somewhere/else.py:f") == Path("somewhere/else.py")  # as given, even if missing
    assert fingerprints.reward_source("fp_top_rewards:top") == project / "fp_top_rewards.py"
    assert fingerprints.reward_source("fp_pkg.sub:inner") == project / "fp_pkg" / "sub.py"
    assert fingerprints.reward_source("fp_pkg:init") == project / "fp_pkg" / "__init__.py"
    assert fingerprints.reward_source("sys:exit") is None  # built in: no file
    for spec, module in (
        ("fp_no_such_module:f", "fp_no_such_module"),
        ("fp_no_such.pkg:f", "fp_no_such.pkg"),
        (":f", ""),
    ):
        with pytest.raises(ValueError) as err:
            fingerprints.reward_source(spec)
        assert str(err.value) == (
            f"reward_function {spec!r}: no module {module!r} on the Python path nor in the "
            "current folder (give 'path/to/file.py:function')"
        )


def cfg_of(**paths) -> TrainConfig:
    """Settings whose path settings are `paths` (the others empty)."""
    cfg = TrainConfig(model="m", out="run", task="prompts", data="d", reward_function="r:f")
    for name, value in ({"model": "", "data": "", "test_data": "", "reward_function": ()} | paths).items():
        setattr(cfg, name, value)
    return cfg


def test_each_path_setting_is_made_absolute_and_hashed_by_its_content(project):
    cfg = cfg_of(
        model="model",
        data="data/train.jsonl",
        test_data="data/test.jsonl",
        reward_function=("rewards.py:exact", "fp_top_rewards:top", "fp_pkg.sub:inner", "fp_pkg:init"),
    )
    inputs = fingerprints.take_inputs(cfg, "run")
    run = project / "run"

    def record(given, path, digest, **extra):
        return {"given": given, "path": str(path), "from_run": os.path.relpath(path, run), "sha256": digest} | extra

    init = project / "fp_pkg/__init__.py"  # a package's module brings in its package (imports: llm/reward_imports.py)
    package = {"fp_pkg": {"path": str(init), "from_run": os.path.relpath(init, run), "sha256": sha(init.read_bytes())}}

    assert inputs == {
        "model": record(
            "model", project / "model", sha(b"model.safetensors\0weights"), files={"config.json": sha(b"{}")}
        ),
        "data": record("data/train.jsonl", project / "data/train.jsonl", sha(b'{"prompt": "1+1=", "answer": "2"}\n')),
        "test_data": record(
            "data/test.jsonl", project / "data/test.jsonl", sha(b'{"prompt": "2+2=", "answer": "4"}\n')
        ),
        "reward_function[0]": record(
            "rewards.py:exact", project / "rewards.py", sha((project / "rewards.py").read_bytes()), imports={}
        ),
        "reward_function[1]": record(
            "fp_top_rewards:top",
            project / "fp_top_rewards.py",
            sha((project / "fp_top_rewards.py").read_bytes()),
            imports={},
        ),
        "reward_function[2]": record(
            "fp_pkg.sub:inner",
            project / "fp_pkg/sub.py",
            sha((project / "fp_pkg/sub.py").read_bytes()),
            imports=package,
        ),
        "reward_function[3]": record(
            "fp_pkg:init",
            project / "fp_pkg/__init__.py",
            sha((project / "fp_pkg/__init__.py").read_bytes()),
            imports={},
        ),
    }
    assert inputs["reward_function[0]"]["from_run"] == os.path.join("..", "rewards.py")
    # config.json's paths from now on: absolute; a file or a top-level module by its file, a package's module by name
    assert (cfg.model, cfg.data, cfg.test_data) == (
        str(project / "model"),
        str(project / "data/train.jsonl"),
        str(project / "data/test.jsonl"),
    )
    assert cfg.reward_function == (
        f"{project / 'rewards.py'}:exact",
        f"{project / 'fp_top_rewards.py'}:top",
        "fp_pkg.sub:inner",
        "fp_pkg:init",
    )


def test_inputs_that_cannot_be_found_are_recorded_as_given(project):
    cfg = cfg_of(
        model="no-model",
        data="",
        test_data="data/missing.jsonl",
        reward_function=("fp_no_such_module:f", "sys:exit", "missing.py:f"),
    )
    inputs = fingerprints.take_inputs(cfg, project / "run")
    unknown = {"path": None, "from_run": None, "sha256": None}
    assert inputs == {
        "model": {"given": "no-model"} | unknown,
        "test_data": {"given": "data/missing.jsonl"} | unknown,
        "reward_function[0]": {"given": "fp_no_such_module:f"} | unknown,
        "reward_function[1]": {"given": "sys:exit"} | unknown,
        "reward_function[2]": {"given": "missing.py:f"} | unknown,
    }
    assert (cfg.model, cfg.data, cfg.test_data) == ("no-model", "", "data/missing.jsonl")  # their loaders name them
    assert cfg.reward_function == ("fp_no_such_module:f", "sys:exit", "missing.py:f")


def test_the_manifest_holds_the_code_the_settings_hash_and_the_paths_as_first_typed(project):
    cfg = cfg_of(model="model", data="data/train.jsonl")
    inputs = fingerprints.take_inputs(cfg, project / "run")
    config = cfg.to_dict()
    made = fingerprints.manifest(cfg, inputs, config, {"data": "train.jsonl", "test_data": "t.jsonl"})
    assert made["code"] == fingerprints.code_version()
    assert made["settings_sha256"] == fingerprints.settings_sha256(config)
    assert made["inputs"]["data"]["given"] == "train.jsonl"  # the name typed when the run started
    assert made["inputs"]["model"]["given"] == "model" and "test_data" not in made["inputs"]
    assert fingerprints.manifest(cfg, inputs, config)["inputs"] is inputs


# ----------------------------------------------------------------------------- a resume


@pytest.fixture
def started(project):
    """A run directory project/run whose inputs were recorded from relative paths, and the settings it ran with."""
    cfg = cfg_of(
        model="model",
        data="data/train.jsonl",
        test_data="data/test.jsonl",
        reward_function=("rewards.py:exact", "fp_pkg.sub:inner"),
    )
    (project / "run").mkdir()
    inputs = fingerprints.take_inputs(cfg, project / "run")
    return project / "run", inputs


def resumed(root: Path | None = None, **paths) -> TrainConfig:
    """The settings as config.json gives them back to a resume (absolute paths into root, by default the working
    folder, where the run started), changed by `paths`."""
    root = root or Path.cwd()
    return cfg_of(
        **{
            "model": str(root / "model"),
            "data": str(root / "data/train.jsonl"),
            "test_data": str(root / "data/test.jsonl"),
            "reward_function": (f"{root / 'rewards.py'}:exact", "fp_pkg.sub:inner"),
        }
        | paths
    )


def test_a_resume_points_each_setting_at_its_input_where_it_is_now(started, tmp_path, monkeypatch):
    run, inputs = started
    cfg = resumed()
    fingerprints.check_inputs(run, cfg, inputs)
    root = run.parent
    assert (cfg.model, cfg.data, cfg.test_data) == (
        str(root / "model"),
        str(root / "data/train.jsonl"),
        str(root / "data/test.jsonl"),
    )
    assert cfg.reward_function == (f"{root / 'rewards.py'}:exact", "fp_pkg.sub:inner")
    # the project moved as a whole: each input is found at its place relative to the run directory
    moved = tmp_path / "moved"
    root.rename(moved)
    cfg = resumed(root)  # config.json still names the old places
    monkeypatch.syspath_prepend(str(moved))  # resumed from the moved project's folder: its fp_pkg is imported
    for name in ("fp_pkg", "fp_pkg.sub"):
        sys.modules.pop(name, None)
    fingerprints.check_inputs(moved / "run", cfg, inputs)
    assert (cfg.model, cfg.data, cfg.test_data) == (
        str(moved / "model"),
        str(moved / "data/train.jsonl"),
        str(moved / "data/test.jsonl"),
    )
    assert cfg.reward_function == (f"{moved / 'rewards.py'}:exact", "fp_pkg.sub:inner")
    # an input at its recorded absolute path is taken from there, also when a copy sits beside the run
    (moved / "data" / "train.jsonl").rename(moved / "data" / "kept.jsonl")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "train.jsonl").write_bytes((moved / "data" / "kept.jsonl").read_bytes())
    record = dict(inputs["data"], path=str(elsewhere / "data" / "train.jsonl"))
    cfg = resumed(reward_function=(), model="", test_data="")
    fingerprints.check_inputs(moved / "run", cfg, {"data": record})
    assert cfg.data == str(elsewhere / "data" / "train.jsonl")


def test_a_missing_input_is_named_with_both_places(started, tmp_path):
    run, inputs = started
    moved = tmp_path / "moved"
    run.parent.rename(moved)
    (moved / "data" / "test.jsonl").unlink()
    with pytest.raises(RunDirError) as err:
        fingerprints.check_inputs(moved / "run", resumed(), inputs)
    assert str(err.value) == (
        f"{moved / 'run' / 'inputs.json'}: test_data 'data/test.jsonl' is missing: not at "
        f"{run.parent / 'data/test.jsonl'} nor at {moved / 'data/test.jsonl'} (relative to "
        "the run directory); put it back to resume"
    )


@pytest.mark.parametrize(
    "name, path, what",
    [
        ("model", "model/model.safetensors", "base model weights"),
        ("data", "data/train.jsonl", "data file"),
        ("test_data", "data/test.jsonl", "test_data file"),
        ("reward_function[1]", "fp_pkg/sub.py", "reward function source"),
    ],
)
def test_a_changed_input_is_refused_with_both_hash_prefixes(started, name, path, what):
    run, inputs = started
    file = run.parent / path
    file.write_bytes(file.read_bytes() + b" ")
    now = fingerprints.weights_sha256(file.parent) if name == "model" else sha(file.read_bytes())
    with pytest.raises(RunDirError) as err:
        fingerprints.check_inputs(run, resumed(), inputs)
    where = file.parent if name == "model" else file
    assert str(err.value) == (
        f"{where}: {what} changed since the run started (sha256 {inputs[name]['sha256'][:12]} -> "
        f"{now[:12]}); a resumed run keeps its inputs (restore it, or start a new run)"
    )


def test_a_path_setting_set_or_cleared_since_the_start_is_refused(started):
    run, inputs = started
    config = run / "config.json"
    for cfg, message in [
        (resumed(test_data=""), "setting test_data is '' but the run ran with 'data/test.jsonl'"),
        (
            resumed(reward_function=("r:f",)),
            "setting reward_function is ('r:f',) but the run ran with ['rewards.py:exact', 'fp_pkg.sub:inner']",
        ),
    ]:
        with pytest.raises(RunDirError) as err:
            fingerprints.check_inputs(run, cfg, inputs)
        assert str(err.value) == (
            f"{config}: {message}; a resumed run keeps its inputs (restore it, or start a new run)"
        )
    without = {k: v for k, v in inputs.items() if k != "data"}
    with pytest.raises(RunDirError) as err:
        fingerprints.check_inputs(run, resumed(), without)
    assert str(err.value).startswith(
        f"{config}: setting data is {str(run.parent / 'data/train.jsonl')!r} but the run ran with 'none';"
    )


def test_a_reward_module_without_a_file_is_compared_by_name(project):
    run = project / "run"
    run.mkdir()
    inputs = fingerprints.take_inputs(cfg_of(model="", reward_function=("sys:exit",)), run)
    cfg = cfg_of(model="", reward_function=("sys:exit",))
    fingerprints.check_inputs(run, cfg, inputs)
    assert cfg.reward_function == ("sys:exit",)
    with pytest.raises(RunDirError) as err:
        fingerprints.check_inputs(run, cfg_of(model="", reward_function=("os:exit",)), inputs)
    assert str(err.value) == f"{run / 'config.json'}: reward_function is 'os:exit' but the run ran with 'sys:exit'"


def test_a_reward_file_in_a_folder_whose_name_holds_a_colon(project, tmp_path):
    (project / "a:b").mkdir()
    (project / "a:b" / "colon.py").write_text("def f(prompts, completions, **kw):\n    return []\n")
    assert fingerprints.reward_source("a:b/colon.py:f") == Path("a:b/colon.py")
    run = project / "run"
    run.mkdir()
    cfg = cfg_of(reward_function=("a:b/colon.py:f",))
    inputs = fingerprints.take_inputs(cfg, run)
    assert cfg.reward_function == (f"{project / 'a:b' / 'colon.py'}:f",)
    assert inputs["reward_function[0]"]["sha256"] == sha((project / "a:b" / "colon.py").read_bytes())
    moved = tmp_path / "moved"
    project.rename(moved)
    fingerprints.check_inputs(moved / "run", cfg, inputs)  # cfg: the old absolute path, as config.json holds it
    assert cfg.reward_function == (f"{moved / 'a:b' / 'colon.py'}:f",)


def test_a_reward_module_without_a_file_does_not_end_the_checks_of_the_next(project, tmp_path):
    run = project / "run"
    run.mkdir()
    cfg = cfg_of(reward_function=("sys:exit", "rewards.py:exact"))
    inputs = fingerprints.take_inputs(cfg, run)
    moved = tmp_path / "moved"
    project.rename(moved)
    fingerprints.check_inputs(moved / "run", cfg, inputs)
    assert cfg.reward_function == ("sys:exit", f"{moved / 'rewards.py'}:exact")
    (moved / "rewards.py").write_text("# changed\n")
    with pytest.raises(RunDirError, match=r"rewards.py: reward function source changed since the run started"):
        fingerprints.check_inputs(moved / "run", cfg, inputs)


def write_run(run: Path, config: dict, manifest: dict | None = None, history: bool = False) -> None:
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(config))
    if manifest is not None:
        (run / "inputs.json").write_text(json.dumps(manifest))
    if history:
        (run / "config_history.jsonl").write_text(json.dumps({"config": config, "changed": [], "from_step": 0}) + "\n")


def test_settings_edited_without_their_history_are_refused_unless_allowed(tmp_path):
    run = tmp_path / "run"
    config = {"seed": 0, "es": {"sigma": 0.05}}
    recorded = {"code": None, "settings_sha256": fingerprints.settings_sha256(config), "inputs": {}}
    write_run(run, config | {"out": "elsewhere"}, recorded)  # a free setting changed: the same hash
    assert fingerprints.check_settings_hash(run, allow_change=False) == recorded
    edited = {"seed": 0, "es": {"sigma": 0.07}}
    write_run(run, edited)
    with pytest.raises(RunDirError) as err:
        fingerprints.check_settings_hash(run, allow_change=False)
    assert str(err.value) == (
        f"{run / 'config.json'}: settings differ from those the run ran with (sha256 "
        f"{recorded['settings_sha256'][:12]} in inputs.json, now "
        f"{fingerprints.settings_sha256(edited)[:12]}) and config_history.jsonl, which names them, "
        "is missing; restore config.json, or pass --allow_config_change true to continue with "
        "the new settings"
    )
    assert fingerprints.check_settings_hash(run, allow_change=True) == recorded
    write_run(run, edited, history=True)  # the history names the change: compared there (rundir), not here
    assert fingerprints.check_settings_hash(run, allow_change=False) == recorded


def checkpoint(run: Path, step: int, state: str) -> None:
    folder = rundir.checkpoint_dir(run, step)
    folder.mkdir(parents=True)
    (folder / rundir.TRAINER_STATE).write_text(state)


def test_a_missing_manifest_is_refused_when_the_checkpoints_say_there_was_one(tmp_path, capsys):
    run = tmp_path / "run"
    write_run(run, {"seed": 0})
    assert fingerprints.check_settings_hash(run, allow_change=False) is None  # nothing trained: nothing to compare
    assert capsys.readouterr().err == ""
    (run / rundir.METRICS).write_text("")
    assert fingerprints.check_settings_hash(run, allow_change=False) is None
    note = (
        f"note: {run / 'inputs.json'} is missing (a run from before runs recorded their inputs): its code, data, "
        "reward and model cannot be compared with the run's; recorded from now on\n"
    )
    assert capsys.readouterr().err == note
    (run / rundir.METRICS).unlink()
    checkpoint(run, 1, json.dumps({"step": 1}))  # written before runs recorded their inputs
    assert fingerprints.check_settings_hash(run, allow_change=True) is None
    assert capsys.readouterr().err == note
    checkpoint(run, 2, "{damaged")  # the newest is damaged: resume_point sets it aside
    assert fingerprints.check_settings_hash(run, allow_change=False) is None
    assert capsys.readouterr().err == note
    checkpoint(run, 3, json.dumps({"step": 3, "settings_sha256": "0" * 64}))
    with pytest.raises(RunDirError) as err:
        fingerprints.check_settings_hash(run, allow_change=True)
    assert str(err.value) == (
        f"{run / 'inputs.json'}: missing, but checkpoint step-3 was written by a run that records "
        "its inputs there; restore it to resume (or start a new run)"
    )
    checkpoint(run, 4, json.dumps([]))  # not a record: no stamp
    assert fingerprints.check_settings_hash(run, allow_change=False) is None
