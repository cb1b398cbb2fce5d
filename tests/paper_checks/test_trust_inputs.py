"""The trust screen's provenance checks (paper_checks/trust.py), one field at a time: fingerprints against the run's
inputs.json and settings history, curve points' fingerprints and base weights, and which copy of a run is counted.
Runs are built in memory with the files the screen reads (inputs.json, config_history.jsonl) written here; every
evaluation and point is made to agree with the settings in all else (tests/paper_checks/test_trust.py's builders)."""

import json

import pytest

from escov.llm.fingerprints import settings_sha256
from escov.paper_checks import trust
from escov.paper_checks.rundir import Run
from tests.paper_checks.test_trust import CONFIG, _eval_file, _point

INPUTS = {"model": "aa" * 32, "data": "bb" * 32}


def _run(path, config=CONFIG, *, inputs=INPUTS, history=(), ev=None, curve=None, metrics=(), probe=None) -> Run:
    path.mkdir(parents=True, exist_ok=True)
    if inputs is not None:
        manifest = {"code": "c", "settings_sha256": settings_sha256(config)}
        manifest["inputs"] = {name: {"sha256": digest} for name, digest in inputs.items()}
        (path / "inputs.json").write_text(json.dumps(manifest))
    if history:
        lines = [{"config": c, "changed": [], "from_step": 10 * i} for i, c in enumerate(history)]
        (path / "config_history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return Run(path=path, config=dict(config), eval=ev, curve=curve, metrics=list(metrics), probe=probe)


def _fingerprinted_eval(config=CONFIG, inputs=INPUTS) -> dict:
    ev = _eval_file(config)
    ev["fingerprint"] = {"settings_sha256": settings_sha256(config), "inputs": dict(inputs)}
    return ev


def _fingerprinted_point(config, step, settings=None, weights=INPUTS["model"]) -> dict:
    point = _point(config, step)
    point["fingerprint"] = {"settings_sha256": settings_sha256(settings or config), "weights_sha256": weights}
    return point


def test_an_evaluation_of_the_runs_inputs_and_settings_is_accepted(tmp_path):
    assert trust.eval_contradiction(_run(tmp_path, ev=_fingerprinted_eval())) is None


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_an_evaluation_made_from_another_input_is_refused_naming_that_input(tmp_path, name):
    ev = _fingerprinted_eval(inputs=INPUTS | {name: "cc" * 32})
    why = trust.eval_contradiction(_run(tmp_path, ev=ev))
    assert why == (f"made from another {name} (sha256 {'cc' * 6}) than the run's inputs.json ({INPUTS[name][:12]})")
    # a run that records no inputs (from before inputs.json) has nothing to compare them with
    assert trust.eval_contradiction(_run(tmp_path / "old", inputs=None, ev=ev)) is None


def test_an_evaluation_without_a_fingerprint_counts_only_for_a_run_that_records_no_inputs(tmp_path):
    ev = _eval_file(CONFIG)
    del ev["fingerprint"]
    why = trust.eval_contradiction(_run(tmp_path / "new", ev=ev))
    assert why == trust.UNFINGERPRINTED.format("inputs.json")
    ev["fingerprint"] = {"inputs": INPUTS}  # a fingerprint without its settings hash tells nothing either
    assert trust.eval_contradiction(_run(tmp_path / "new", ev=ev)) == trust.UNFINGERPRINTED.format("inputs.json")
    del ev["fingerprint"]
    assert trust.eval_contradiction(_run(tmp_path / "old", inputs=None, ev=ev)) is None


def test_the_base_evaluations_fingerprint_is_checked_like_the_final_ones(tmp_path):
    earlier = CONFIG | {"eval_samples": 16}
    ev = _fingerprinted_eval()
    ev["base_fingerprint"] = {"settings_sha256": settings_sha256(earlier), "inputs": INPUTS}
    why = trust.eval_contradiction(_run(tmp_path / "fresh", ev=ev))
    assert why is not None and why.startswith("base evaluation made with other settings")
    # a resumed run that started with those settings: its base evaluation is its own (its parts evaluated then)
    ev["base"] = _eval_file(earlier)["base"]
    ev["base_greedy"] = _eval_file(earlier)["base_greedy"]
    assert trust.eval_contradiction(_run(tmp_path / "resumed", history=[earlier, CONFIG], ev=ev)) is None
    ev["base_fingerprint"] = {"settings_sha256": settings_sha256(CONFIG), "inputs": INPUTS | {"data": "dd" * 32}}
    why = trust.eval_contradiction(
        _run(tmp_path / "fresh", ev=_fingerprinted_eval() | {"base_fingerprint": ev["base_fingerprint"]})
    )
    assert why is not None and why.startswith("base evaluation made from another data")


def test_a_curve_of_the_runs_settings_and_base_weights_is_accepted(tmp_path):
    curve = [_fingerprinted_point(CONFIG, 0), _fingerprinted_point(CONFIG, 50, weights="ee" * 32)]
    assert trust.curve_contradiction(_run(tmp_path, curve=curve)) is None


def test_a_curve_point_without_a_fingerprint_counts_only_for_a_run_that_records_no_inputs(tmp_path):
    curve = [_fingerprinted_point(CONFIG, 0), _point(CONFIG, 50)]
    why = trust.curve_contradiction(_run(tmp_path / "new", curve=curve))
    assert why == "step 50: " + trust.UNFINGERPRINTED.format("inputs.json") + " (llm curve measures it again)"
    assert trust.curve_contradiction(_run(tmp_path / "old", inputs=None, curve=[_point(CONFIG, 50)])) is None


def test_a_curve_points_settings_must_be_some_the_run_ran_with(tmp_path):
    earlier = CONFIG | {"eval_temperature": 1.0}  # a setting the points' own fields do not show
    curve = [_fingerprinted_point(CONFIG, 0, settings=earlier), _fingerprinted_point(CONFIG, 50)]
    why = trust.curve_contradiction(_run(tmp_path / "fresh", curve=curve))
    assert why is not None and why.startswith("step 0: measured with other settings")
    assert trust.curve_contradiction(_run(tmp_path / "resumed", history=[earlier, CONFIG], curve=curve)) is None


def test_the_base_point_must_measure_the_runs_base_weights(tmp_path):
    curve = [_fingerprinted_point(CONFIG, 0, weights="ee" * 32)]
    why = trust.curve_contradiction(_run(tmp_path, curve=curve))
    assert why == (
        f"step 0: measured other weights (sha256 {'ee' * 6}) than the run's base model in inputs.json "
        f"({INPUTS['model'][:12]})"
    )
    # a run whose inputs.json records no model hash: nothing to compare the base point with
    assert trust.curve_contradiction(_run(tmp_path / "nomodel", inputs={"data": "bb" * 32}, curve=curve)) is None


def _copy(tmp_path, name, inputs=INPUTS, **parts) -> Run:
    return _run(tmp_path / name, inputs=inputs, **parts)


def test_a_rerun_is_one_run_only_when_its_inputs_are_the_same(tmp_path):
    first, same = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    other = _copy(tmp_path, "c", inputs=INPUTS | {"data": "cc" * 32})
    kept, excluded = trust.screen([first, same, other])
    assert kept == [first, other] and [e["what"] for e in excluded] == [str(tmp_path / "b")]
    # runs without inputs.json: their input paths in config.json tell them apart
    old = [_run(tmp_path / n, CONFIG | {"data": path}, inputs=None) for n, path in (("d", "x.json"), ("e", "y.json"))]
    kept, excluded = trust.screen(old)
    assert kept == old and excluded == []
    old.append(_run(tmp_path / "f", CONFIG | {"data": "x.json"}, inputs=None))
    assert trust.screen(old)[1][0]["what"] == str(tmp_path / "f")


@pytest.mark.parametrize(
    "more",
    [
        {"ev": {"base": {}, "final": {}}},
        {"metrics": [{"step": 1}, {"step": 2}]},
        {"curve": [{"step": 0}, {"step": 50}]},
        {"probe": {"measurements": [{}, {}]}},
    ],
    ids=["final evaluation", "metrics rows", "curve points", "probe measurements"],
)
@pytest.mark.parametrize("fuller_first", [True, False])
def test_of_two_copies_the_one_holding_more_of_the_run_counts_whatever_the_order(tmp_path, more, fuller_first):
    """Each part of completeness alone: the copy with more of it is kept, given first or second; the other is named."""
    less = {"ev": {"base": {}}, "metrics": [{"step": 1}], "curve": [{"step": 0}], "probe": {"measurements": [{}]}}
    full, partial = _copy(tmp_path, "full", None, **(less | more)), _copy(tmp_path, "partial", None, **less)
    kept, excluded = trust.screen([full, partial] if fuller_first else [partial, full])
    assert kept == [full] and [e["what"] for e in excluded] == [str(tmp_path / "partial")]
    # two equal copies: the first given counts
    twin = _copy(tmp_path, "twin", None, **less)
    assert trust.screen([twin, partial])[0] == [twin]
