"""The device of a run (llm/device.py): parsing, resolution, the resume rule, and a real run on an
explicit "cpu" that records it and refuses a resume on CUDA that this machine lacks (or on another kind).

On a machine without CUDA (the CPU CI) every CUDA request must fail with a one-line error; the
CUDA side itself runs in the tests marked `gpu` (tests/llm/test_gpu.py)."""

import json

import pytest
import torch

from escov.llm.cli import main as llm_main
from escov.llm.config import TrainConfig
from escov.llm.device import check_device_spec, check_resume_device, device_kind, resolve_device, resume_device
from escov.llm.es.noise import PopulationNoise, noise

pytestmark = pytest.mark.usefixtures("one_torch_thread")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the errors of a machine without CUDA")


@pytest.mark.parametrize("spec", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_valid_specs_pass_the_syntax_check(spec):
    assert check_device_spec(spec) == spec


@pytest.mark.parametrize("spec", ["gpu", "CUDA", "cuda:", "cuda:-1", "cuda:a", "cpu:0", "", None, 0, "mps"])
def test_bad_specs_are_one_line_errors_naming_the_flag(spec):
    with pytest.raises(ValueError, match=r"^--device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        check_device_spec(spec, "--device")


def test_cpu_resolves_to_cpu_and_auto_follows_cuda_availability():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda:0" if torch.cuda.is_available() else "cpu")


@no_cuda
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_cuda_is_a_clear_error(spec):
    with pytest.raises(ValueError, match=r"CUDA is not available on this machine.*use 'cpu' or 'auto'"):
        resolve_device(spec, "--device")


def test_resume_refuses_a_change_of_device_kind_unless_allowed():
    assert device_kind("cpu") == "cpu" and device_kind("cuda:1") == "cuda"
    with pytest.raises(ValueError, match="started on 'cpu' and would resume on 'cuda:0'.*--allow_device_change true"):
        check_resume_device("cpu", "cuda:0", False, "run")
    with pytest.raises(ValueError, match="started on 'cuda:1' and would resume on 'cpu'"):
        check_resume_device("cuda:1", "cpu", False, "run")
    check_resume_device("cpu", "cuda:0", True, "run")  # allowed
    check_resume_device("cuda:0", "cuda:1", False, "run")  # same kind: the same generator streams


@no_cuda
def test_resume_of_a_cuda_run_on_this_machine_needs_permission_and_then_continues_on_the_cpu():
    with pytest.raises(ValueError, match="started on 'cuda:0' and would resume on 'cpu'"):
        resume_device("cuda:0", None, False, "run")
    assert resume_device("cuda:0", None, True, "run") == "cpu"
    assert resume_device("auto", None, False, "run") == "cpu"  # a config written before runs recorded a device
    assert resume_device("cpu", "cpu", False, "run") == "cpu"
    # a device asked for by name is resolved, not replaced: CUDA asked for on this machine is refused
    with pytest.raises(ValueError, match="device 'cuda': CUDA is not available on this machine"):
        resume_device("cuda:0", "cuda", True, "run")


def test_train_config_checks_the_device_setting():
    assert TrainConfig().device == "auto"
    assert TrainConfig(device="cuda:1").device == "cuda:1"  # syntax only: resolved when the run starts
    with pytest.raises(ValueError, match="device must be"):
        TrainConfig(device="gpu")
    for bad in (0, 1.5, "0.5", True):
        with pytest.raises(ValueError, match=r"gpu_memory_utilization must lie in \(0, 1\]"):
            TrainConfig(gpu_memory_utilization=bad)
    assert TrainConfig(gpu_memory_utilization=0.4).gpu_memory_utilization == 0.4


def test_noise_on_an_explicit_cpu_device_is_the_default_stream_bit_for_bit():
    shape = torch.Size([3, 70])
    default = noise(11, 2, "model.layers.0.mlp.up_proj.weight", shape, chunk=64)
    explicit = noise(11, 2, "model.layers.0.mlp.up_proj.weight", shape, chunk=64, device="cpu")
    assert default.std() > 0.5 and torch.equal(default, explicit)
    pop = PopulationNoise(rank=0, chunk=64, keep_bytes=1 << 20, device="cpu")
    coef = torch.tensor([0.5, -1.0, 2.0]).numpy()
    expected = sum(float(c) * noise(5, d, "w", shape, chunk=64) for d, c in enumerate(coef))
    assert pop.combined(5, "w", shape, coef).device.type == "cpu"
    assert torch.allclose(pop.combined(5, "w", shape, coef), expected, atol=1e-6)


def _refused(capsys, *args) -> str:
    """The one-line error of `python -m escov.llm ARGS` refused with exit code 2, run in this process (the same
    main; a refusal happens before anything is loaded, so a fresh process would only pay torch's import again)."""
    with pytest.raises(SystemExit) as exit_:
        llm_main(list(args))
    assert exit_.value.code == 2
    return capsys.readouterr().err


SMALL_RUN = [
    "--algo",
    "es",
    "--steps",
    "1",
    "--batch_size",
    "2",
    "--train_pool",
    "4",
    "--threads",
    "1",
    "--max_completion_length",
    "4",
    "--step_samples",
    "1",
    "--probe_prompts",
    "1",
    "--probe_members",
    "2",
    "--probe_samples",
    "2",
    "--probe_center_samples",
    "2",
    "--eval_problems",
    "2",
    "--eval_samples",
    "2",
    "--eval_ks",
    "1",
    "--heldout_task",
    "",
    "--threshold_keep",
    "50",
    "--es.population_size",
    "4",
    "--es.sigma",
    "0.02",
    "--es.alpha",
    "0.01",
]


@no_cuda
def test_a_run_records_its_resolved_device_and_a_resume_on_cuda_is_refused(tiny_model_dir, tmp_path, capsys):
    run = tmp_path / "run"
    # the runs train in this process (their --threads 1 is the module's one torch thread, set back after it)
    assert (
        llm_main(
            [
                "train",
                *SMALL_RUN,
                "--model",
                str(tiny_model_dir),
                "--out",
                str(run),
                "--device",
                "auto",
                "--no-progress",
            ]
        )
        == 0
    )
    config = json.loads((run / "config.json").read_text())
    assert config["device"] == "cpu"  # "auto" resolved on this machine
    assert "CUDA is not available on this machine" in _refused(
        capsys, "train", "--resume", str(run), "--device", "cuda"
    )
    config["device"] = "cuda:0"  # as if the run had started on a GPU machine
    (run / "config.json").write_text(json.dumps(config))
    assert "started on 'cuda:0' and would resume on 'cpu'" in _refused(capsys, "train", "--resume", str(run))
    assert (
        llm_main(
            [
                "train",
                "--resume",
                str(run),
                "--allow_device_change",
                "true",
                "--re_evaluate",  # finished: evaluate again
                "--no-progress",
            ]
        )
        == 0
    )
    assert json.loads((run / "config.json").read_text())["device"] == "cpu"
    assert "only applies with --resume" in _refused(
        capsys,
        "train",
        *SMALL_RUN,
        "--model",
        str(tiny_model_dir),
        "--out",
        str(tmp_path / "b"),
        "--allow_device_change",
        "true",
    )
    assert not (tmp_path / "b").exists()


@no_cuda
def test_eval_and_pretrain_refuse_cuda_on_this_machine_with_one_line_errors(tiny_model_dir, tmp_path, capsys):
    flags = [
        "--model",
        str(tiny_model_dir),
        "--task",
        "countdown",
        "--n",
        "2",
        "--k",
        "1",
        "--num-problems",
        "2",
        "--no-progress",
        "--out",
        str(tmp_path / "ev"),
    ]
    assert "--device 'cuda': CUDA is not available" in _refused(capsys, "eval", *flags, "--device", "cuda")
    assert "--device 'cuda:0': CUDA is not available" in _refused(
        capsys, "pretrain", "--preset", "test", "--out", str(tmp_path / "m"), "--device", "cuda:0"
    )
    assert not (tmp_path / "ev").exists() and not (tmp_path / "m").exists()
    assert llm_main(["eval", *flags, "--device", "cpu"]) == 0  # in this process: the eval sets no torch threads
    assert json.loads((tmp_path / "ev" / "eval.json").read_text())["device"] == "cpu"


def test_ray_actors_reserve_one_gpu_each_on_a_cuda_run_and_none_on_the_cpu():
    es = {"population_size": 4}
    cuda = TrainConfig.from_dict({"device": "cuda:0", "workers": 2, "es": es}).distributed()
    cpu = TrainConfig.from_dict({"device": "cpu", "workers": 2, "es": es}).distributed()
    assert cuda.gpus_per_worker == 1.0 and cpu.gpus_per_worker == 0.0
