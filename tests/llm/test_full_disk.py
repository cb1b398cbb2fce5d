"""A full disk during a checkpoint write: one line naming the checkpoint, the space it needs and the
space free, before anything is written when the disk has too little, and no half-written folder left.
The disk is a real 1 MB tmpfs (mounting needs root: the test is skipped where mounting is refused)."""

import subprocess

import pytest
import torch

from escov.llm import rundir
from escov.llm.rundir import RunDirError, checkpoint_bytes, save_checkpoint, writing


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 1 MB tmpfs here (needs root): {done.stderr.strip()[:120]}")
    yield disk
    subprocess.run(["umount", str(disk)], check=False)


def test_a_checkpoint_larger_than_the_free_space_is_refused_naming_it_and_the_space(small_disk, tiny_model_dir):
    weights = {"w": torch.zeros(512, 1024)}  # 2 MB of fp32
    needed = checkpoint_bytes(tiny_model_dir, weights, None)
    assert 2 * 2**20 < needed < 2 * 2**20 + 2**20
    with pytest.raises(RunDirError) as err:
        save_checkpoint(small_disk / "run", tiny_model_dir, 3, weights, {"elapsed": 1.0}, None)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{small_disk / 'run' / 'checkpoints' / '.tmp-step-3'}: cannot be written: it needs")
    assert f"it needs {needed / 2**20:.1f} MB free" in message and "which has 1.0 MB" in message
    assert not (small_disk / "run" / "checkpoints" / ".tmp-step-3").exists()
    small = {"w": torch.zeros(16, 16)}  # fits: written as usual
    path = save_checkpoint(small_disk / "run", tiny_model_dir, 3, small, {"elapsed": 1.0}, None)
    assert (path / rundir.WEIGHTS).is_file() and (path / rundir.TRAINER_STATE).is_file()


def test_a_write_that_fills_the_disk_names_the_file_and_the_space(small_disk):
    """The disk has room when the write starts, then another writer fills it: safetensors raises its own
    error type on ENOSPC, and the write, which knows the bytes it needs, ends in a RunDirError naming the
    file and the space."""
    from safetensors.torch import save_file

    target = small_disk / "w.safetensors"
    needed = 128 * 1024 * 4 + 2**12  # 512 KB of fp32 and a header
    with pytest.raises(RunDirError) as err:
        with writing(target, needed=needed):
            (small_disk / "filler").write_bytes(b"\0" * (700 * 1024))
            save_file({"w": torch.zeros(128, 1024)}, str(target))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{target}: cannot be written (SafetensorError); it needs 0.5 MB free")
    with pytest.raises(ValueError, match="not a full disk"):  # other errors of a write that fits stay what they are
        with writing(small_disk / "x", needed=1):
            raise ValueError("not a full disk")
