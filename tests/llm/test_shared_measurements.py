"""escov.llm.train's `shared` folder: runs from the same base with the same settings measure the base
evaluation and the step-0 probe once, and get what they would have measured themselves."""

import json

import pytest

from escov.llm.config import TrainConfig
from escov.llm.train import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    steps=2,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_prompts=1,
    probe_members=2,
    probe_samples=2,
    probe_center_samples=2,
    eval_problems=2,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(50.0,),
    es={"population_size": 4, "sigma": 0.02, "alpha": 0.01},
    grpo={"num_generations": 4, "learning_rate": 3e-3},
)


def _untimed(value):
    """value without its wall-time fields ("seconds"), which differ between any two measurements."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "seconds"}
    return [_untimed(v) for v in value] if isinstance(value, list) else value


def _run(model, out, algo, seed=0, shared=None):
    cfg = TrainConfig.from_dict(RUN | {"algo": algo, "model": str(model), "out": str(out), "seed": seed})
    train(cfg, show_progress=False, shared=shared)
    ev = json.loads((out / "eval.json").read_text())
    probe = json.loads((out / "probe.json").read_text())["measurements"]
    kept = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    return _untimed(
        [
            {k: ev[k] for k in ("base", "base_greedy")},
            next(m for m in probe if m["step"] == 0),
            [k for k in kept if k["step"] == 0 and k["source"].startswith("eval/")],
        ]
    )


def test_runs_of_one_base_share_step_zero_and_get_their_own_values(tiny_model_dir, tmp_path):
    shared = tmp_path / "shared"
    own_es = _run(tiny_model_dir, tmp_path / "own-es", "es")
    own_grpo = _run(tiny_model_dir, tmp_path / "own-grpo", "grpo")
    assert own_es == own_grpo  # the premise: step 0 does not depend on the algorithm
    assert _run(tiny_model_dir, tmp_path / "es", "es", shared=shared) == own_es
    stored = sorted(p.name.split("-")[0] for p in shared.iterdir())
    assert stored == ["base", "probe"]
    # the GRPO run reads what the ES run stored: a planted value shows through
    eval_file = next(shared.glob("base-eval-*.json"))
    planted = json.loads(eval_file.read_text())
    planted["base"]["pass_at_k"]["1"] = 0.123
    eval_file.write_text(json.dumps(planted))
    (ev, probe, kept) = _run(tiny_model_dir, tmp_path / "grpo", "grpo", shared=shared)
    assert ev["base"]["pass_at_k"]["1"] == 0.123 and probe == own_es[1]
    assert kept == own_es[2] and kept  # every run keeps the base's completions in its own completions.jsonl
    # another seed samples other completions: its own entries
    _run(tiny_model_dir, tmp_path / "es-s1", "es", seed=1, shared=shared)
    assert len(list(shared.iterdir())) == 4


def test_a_run_without_the_probe_measures_the_rest_alike(tiny_model_dir, tmp_path):
    """probe = false: no probe.json and no probe work; the evaluations are those of a probed run
    (the probe draws from its own seeds), and probe_every with probe = false is refused."""
    runs = {}
    for probe in (True, False):
        out = tmp_path / f"probe-{probe}"
        train(
            TrainConfig.from_dict(RUN | {"algo": "es", "model": str(tiny_model_dir), "out": str(out), "probe": probe}),
            show_progress=False,
        )
        runs[probe] = out
    assert (runs[True] / "probe.json").exists() and not (runs[False] / "probe.json").exists()
    evals = [_untimed(json.loads((runs[p] / "eval.json").read_text())) for p in (True, False)]
    fingerprints = [ev.pop("fingerprint") for ev in evals]  # the settings differ (probe), so their hashes do
    base_prints = [ev.pop("base_fingerprint") for ev in evals]  # the base evaluation's witness: its own run's settings
    assert base_prints[0]["settings_sha256"] != base_prints[1]["settings_sha256"]
    assert evals[0] == evals[1]
    assert fingerprints[0]["settings_sha256"] != fingerprints[1]["settings_sha256"]
    assert fingerprints[0]["final_weights_sha256"] == fingerprints[1]["final_weights_sha256"]
    with pytest.raises(ValueError, match="probe_every = 2 needs probe = true"):
        TrainConfig.from_dict(
            RUN | {"model": str(tiny_model_dir), "out": str(tmp_path / "x"), "probe": False, "probe_every": 2}
        )
