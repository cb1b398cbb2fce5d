"""The trust screen (paper_checks/trust.py) where its rules meet: a point taken from eval.json followed by measured
points, runs whose settings record no seed, a point lacking one field and contradicting another, and a partial copy of
a run given before the complete one, with the messages written out word for word. Runs built in memory as in
test_trust.py and test_trust_inputs.py."""

from escov.paper_checks import trust
from tests.paper_checks.test_trust import CONFIG, SEED, _eval_file, _point, _run, _seed
from tests.paper_checks.test_trust_inputs import _copy


def test_the_points_after_one_taken_from_eval_json_are_still_checked(tmp_path):
    ev = _eval_file(CONFIG)
    sourced = {"step": 0, "source": "eval.json base", "sampled": dict(ev["base"]), "greedy": dict(ev["base_greedy"])}
    later = _point(CONFIG, 50)
    assert trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[sourced, later])) is None
    later["sampled"]["seed"] = _seed(SEED, 40, "curve")
    assert trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[sourced, later])) == (
        f"step 50 sampled: seed is {_seed(SEED, 40, 'curve')} but the run's settings give {_seed(SEED, 50, 'curve')}"
    )


def test_a_run_whose_settings_record_no_seed_has_its_points_checked_on_their_length_alone(tmp_path):
    unseeded = {k: v for k, v in CONFIG.items() if k != "seed"}
    point = _point(CONFIG | {"seed": SEED + 7}, 50)  # any sampling seed: nothing to compare it with
    assert trust.curve_contradiction(_run(tmp_path, unseeded, curve=[point])) is None
    point["greedy"]["max_new_tokens"] = 16
    assert trust.curve_contradiction(_run(tmp_path, unseeded, curve=[point])) == (
        "step 50 greedy: max_new_tokens is 16 but the run's settings give 64"
    )


def test_the_field_named_is_the_one_that_contradicts_not_one_the_point_lacks(tmp_path):
    point = _point(CONFIG, 50)
    del point["sampled"]["seed"]  # written by older code: not compared
    assert trust.curve_contradiction(_run(tmp_path, curve=[point])) is None
    point["sampled"]["max_new_tokens"] = 32
    assert trust.curve_contradiction(_run(tmp_path, curve=[point])) == (
        "step 50 sampled: max_new_tokens is 32 but the run's settings give 64"
    )


def _moved(rows: int) -> dict:
    """A copy's parts: a final evaluation whose weights moved (drift > 0 in each metrics row) to weights w."""
    ev = {"base": {}, "final": {}, "fingerprint": {"final_weights_sha256": "ab" * 32}}
    return {"ev": ev, "metrics": [{"step": s, "drift_rel": 0.1} for s in range(1, rows + 1)]}


def test_a_partial_copy_given_first_gives_way_to_the_complete_one_and_its_weights_go_with_it(tmp_path):
    """The partial copy (1 metrics row) is left out naming what each copy holds; the complete one (2 rows) counts,
    its final weights now the ones another run's must differ from."""
    partial, full = _copy(tmp_path, "partial", None, **_moved(1)), _copy(tmp_path, "full", None, **_moved(2))
    other_settings = _copy(tmp_path, "other", None, **_moved(2))
    other_settings.config["seed"] = SEED + 1
    kept, excluded = trust.screen([partial, full, other_settings])
    assert kept == [full]
    assert excluded == [
        {
            "what": str(tmp_path / "partial"),
            "reason": f"the same settings, seed ({SEED}) and inputs as {tmp_path / 'full'}, which holds more of the "
            "run (a final evaluation, 2 metrics rows, 0 curve points, 0 probe measurements, here a final evaluation, "
            "1 metrics rows, 0 curve points, 0 probe measurements); counted once, as the more complete",
        },
        {
            "what": str(tmp_path / "other"),
            "reason": f"the same final weights (sha256 {'ab' * 6}) as {tmp_path / 'full'}; counted once",
        },
    ]


def test_what_a_copy_holds_is_said_with_or_without_its_final_evaluation(tmp_path):
    bare = _copy(tmp_path, "bare", None, ev={"base": {}}, metrics=[{"step": 1}], curve=[{"step": 0}])
    assert trust._held(bare) == "no final evaluation, 1 metrics rows, 1 curve points, 0 probe measurements"
    done = _copy(tmp_path, "done", None, ev={"final": {}}, probe={"measurements": [{}, {}]})
    assert trust._held(done) == "a final evaluation, 0 metrics rows, 0 curve points, 2 probe measurements"


def test_a_fingerprint_that_is_no_record_counts_as_none(tmp_path):
    """A damaged fingerprint (a string) tells nothing: for a run recording its inputs the evaluation is unfingerprinted;
    a damaged base_fingerprint is not compared."""
    from tests.paper_checks.test_trust_inputs import _fingerprinted_eval
    from tests.paper_checks.test_trust_inputs import _run as _recorded_run

    ev = _fingerprinted_eval() | {"fingerprint": "damaged"}
    assert trust.eval_contradiction(_recorded_run(tmp_path / "a", ev=ev)) == trust.UNFINGERPRINTED.format("inputs.json")
    ev = _fingerprinted_eval() | {"base_fingerprint": "damaged"}
    assert trust.eval_contradiction(_recorded_run(tmp_path / "b", ev=ev)) is None


def test_the_evaluation_field_named_is_the_one_that_contradicts_not_one_it_lacks(tmp_path):
    ev = _eval_file(CONFIG)
    del ev["final"]["n"]  # written by older code: not compared
    assert trust.eval_contradiction(_run(tmp_path, ev=ev)) is None
    ev["final"]["temperature"] = 1.0
    assert (
        trust.eval_contradiction(_run(tmp_path, ev=ev)) == "final: temperature is 1.0 but the run's settings give 0.7"
    )


def test_a_contradicting_curve_is_left_out_with_its_reason(tmp_path):
    point = _point(CONFIG, 50)
    point["sampled"]["max_new_tokens"] = 32
    run = _run(tmp_path, curve=[point])
    kept, excluded = trust.screen([run])
    assert kept == [run] and run.curve is None
    assert excluded == [
        {
            "what": str(tmp_path / "curve.json"),
            "reason": "step 50 sampled: max_new_tokens is 32 but the run's settings give 64; left out (not this "
            "run's curve)",
        }
    ]


def test_the_runs_after_one_left_out_for_its_final_weights_are_still_screened(tmp_path):
    first = _copy(tmp_path, "a", None, **_moved(2))
    same_weights = _copy(tmp_path, "b", None, **_moved(2))
    same_weights.config["seed"] = SEED + 1
    other = _copy(tmp_path, "c", None, **_moved(2))
    other.config["seed"] = SEED + 2
    other.eval["fingerprint"] = {"final_weights_sha256": "cd" * 32}
    kept, excluded = trust.screen([first, same_weights, other])
    assert kept == [first, other] and [e["what"] for e in excluded] == [str(tmp_path / "b")]


def test_a_damaged_settings_history_leaves_the_runs_config_as_its_settings(tmp_path):
    run = _run(tmp_path)
    (tmp_path / "config_history.jsonl").write_text("{not json\n")
    assert trust.settings_ran_with(run) == [CONFIG]


def _counted(n, rows, pass_at_k) -> dict:
    return {"n": n, "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(rows)], "pass_at_k": pass_at_k}


def test_counts_are_compared_only_where_there_are_counts_a_sample_size_and_a_written_pass_at_k_up_to_it():
    assert trust.count_mismatch(_counted(None, [2, 0], {"1": 0.9})) is None  # no sample size
    assert trust.count_mismatch(_counted(8, [], {"1": 0.9})) is None  # no counts
    assert trust.count_mismatch(_counted(8, ["2", 0], {"1": 0.9})) is None  # counts that are not integers
    # Pass@16 of 8 samples, a label that is no k, a value that is no number: not compared; Pass@1 = 2/16 is
    assert trust.count_mismatch(_counted(8, [2, 0], {"1": 0.125, "16": 0.5, "best": 0.5, "4": None})) is None
    assert trust.count_mismatch(_counted(8, [2, 0], {"1": 0.5, "16": 0.5})) == (
        "Pass@1 written 0.5, its per-problem counts give 0.125"
    )


def test_a_pass_at_k_within_the_tolerance_of_its_counts_is_accepted_at_the_boundary():
    """No sample correct: Pass@1 is exactly 0, so a written 1e-9 differs from it by exactly TOLERANCE."""
    assert trust.TOLERANCE == 1e-9
    assert trust.count_mismatch(_counted(8, [0, 0], {"1": 1e-9})) is None
    assert (
        trust.count_mismatch(_counted(8, [0, 0], {"1": 2e-9})) == "Pass@1 written 2e-09, its per-problem counts give 0"
    )


def test_a_pass_at_k_written_as_nan_or_infinity_contradicts_its_counts():
    """NaN compares false with everything: a written NaN would pass any tolerance test that only asks `> TOLERANCE`."""
    assert trust.count_mismatch(_counted(8, [2, 0], {"1": float("nan")})) == (
        "Pass@1 written nan, its per-problem counts give 0.125"
    )
    assert trust.count_mismatch(_counted(8, [2, 0], {"1": float("inf")})) == (
        "Pass@1 written inf, its per-problem counts give 0.125"
    )
