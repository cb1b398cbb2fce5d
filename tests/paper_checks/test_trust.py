"""The report's trust screen (paper_checks/trust.py) field by field: an evaluation or a curve point that agrees with
its run's settings in every field but one is refused, and the refusal names that field; a resumed run's earlier
settings (config_history.jsonl) are settings it ran with. The seeds are derived here from their definition
(blake2b of "seed/label" mod 2^31), the Pass@k from binomials by hand."""

import hashlib
import json
import math
from pathlib import Path

import pytest

from escov.llm.fingerprints import settings_sha256
from escov.paper_checks import trust
from escov.paper_checks.rundir import Run

SEED = 3
CONFIG = {
    "algo": "es",
    "task": "countdown",
    "seed": SEED,
    "eval_samples": 8,
    "eval_temperature": 0.7,
    "eval_ks": [1, 4],
    "max_completion_length": 64,
}
COUNTS = [2, 0]  # of 8 samples, two prompts: Pass@1 = (2/8 + 0) / 2, Pass@4 = (1 - C(6,4)/C(8,4)) / 2
PASS = {"1": 0.125, "4": (1 - math.comb(6, 4) / math.comb(8, 4)) / 2}
PARTS = ("base", "final", "base_greedy", "final_greedy", "heldout.base", "heldout.final")


def _seed(*parts) -> int:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "little") & ((1 << 63) - 1)) % 2**31


def _evaluation(config: dict, part: str) -> dict:
    greedy = part.endswith("_greedy")
    label = "heldout" if part.startswith("heldout") else "eval"
    n = 1 if greedy else config["eval_samples"]
    counts = [min(c, n) for c in COUNTS]
    ks = [1] if greedy else config["eval_ks"]
    return {
        "n": n,
        "temperature": 0.0 if greedy else config["eval_temperature"],
        "ks": list(ks),
        "max_new_tokens": config["max_completion_length"],
        "seed": _seed(config["seed"], label),
        "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
        "pass_at_k": {"1": sum(counts) / (n * len(counts))} if greedy else _pass(n, counts, ks),
    }


def _pass(n: int, counts: list[int], ks) -> dict:
    """Pass@k by the binomial formula, mean over prompts (PASS at n = 8)."""
    return {str(k): sum(1 - math.comb(n - c, k) / math.comb(n, k) for c in counts) / len(counts) for k in ks}


def _eval_file(config: dict) -> dict:
    ev = {p: _evaluation(config, p) for p in PARTS if "." not in p}
    ev["heldout"] = {p.split(".")[1]: _evaluation(config, p) for p in PARTS if "." in p}
    ev["fingerprint"] = {"settings_sha256": settings_sha256(config)}
    return ev


def _run(path: Path, config: dict = CONFIG, history: list[dict] = (), ev=None, curve=None) -> Run:
    path.mkdir(parents=True, exist_ok=True)
    if history:
        lines = [{"config": c, "changed": [], "from_step": 10 * i} for i, c in enumerate(history)]
        (path / "config_history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return Run(path=path, config=dict(config), eval=ev, curve=curve)


def _part(ev: dict, part: str) -> dict:
    return ev["heldout"][part.split(".")[1]] if "." in part else ev[part]


def test_an_evaluation_made_as_the_settings_say_is_accepted(tmp_path):
    assert _pass(8, COUNTS, [1, 4]) == pytest.approx(PASS)
    assert trust.eval_contradiction(_run(tmp_path, ev=_eval_file(CONFIG))) is None


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize(
    "field, other", [("n", 16), ("temperature", 1.0), ("ks", [1, 8]), ("max_new_tokens", 32), ("seed", "other label")]
)
def test_an_evaluation_off_its_settings_in_one_field_is_refused_naming_it(tmp_path, part, field, other):
    ev = _eval_file(CONFIG)
    evaluation = _part(ev, part)
    if field == "seed":  # the other split's seed: a held-out evaluation sampled with the test one's, or the reverse
        other = _seed(SEED, "eval" if part.startswith("heldout") else "heldout")
    elif part.endswith("_greedy") and field == "n":
        other = CONFIG["eval_samples"]  # a greedy evaluation holds one sample
    elif part.endswith("_greedy") and field == "temperature":
        other = CONFIG["eval_temperature"]
    elif part.endswith("_greedy") and field == "ks":
        other = CONFIG["eval_ks"]
    evaluation[field] = other
    why = trust.eval_contradiction(_run(tmp_path, ev=ev))
    assert why is not None and why.startswith(f"{part}: {field} is {other!r}")


def test_counts_that_do_not_give_the_pass_at_k_written_are_refused(tmp_path):
    ev = _eval_file(CONFIG)
    ev["final"]["pass_at_k"]["4"] = PASS["4"] + 1e-6
    assert trust.eval_contradiction(_run(tmp_path, ev=ev)).startswith("final: Pass@4 written")
    ev = _eval_file(CONFIG)
    ev["base"]["per_problem"][1]["correct"] = 9  # more correct than samples
    assert trust.eval_contradiction(_run(tmp_path, ev=ev)) == "base: per-problem counts outside 0..8"


@pytest.mark.parametrize(
    "field, value",
    [("eval_samples", 16), ("eval_temperature", 1.0), ("eval_ks", [1, 8]), ("max_completion_length", 32)],
)
def test_a_resumed_runs_earlier_settings_are_settings_it_ran_with(tmp_path, field, value):
    """Evaluations and the fingerprint made under the settings a run started with (config_history.jsonl's first
    record) are its own; under settings it never had, one field apart, they are not."""
    earlier = CONFIG | {field: value}
    ev = _eval_file(earlier)
    assert trust.eval_contradiction(_run(tmp_path / "resumed", history=[earlier, CONFIG], ev=ev)) is None
    why = trust.eval_contradiction(_run(tmp_path / "fresh", ev=_eval_file(earlier)))
    assert why is not None and why.startswith("made with other settings")
    ev = _eval_file(earlier)
    del ev["fingerprint"]  # an older eval.json: its evaluations alone must contradict
    why = trust.eval_contradiction(_run(tmp_path / "fresh", ev=ev))
    assert why is not None and why.startswith("base: ")


def test_a_fingerprint_of_settings_one_field_apart_is_refused(tmp_path):
    for field, value in (("seed", SEED + 1), ("algo", "grpo"), ("eval_ks", [1, 2])):
        ev = _eval_file(CONFIG)
        ev["fingerprint"]["settings_sha256"] = settings_sha256(CONFIG | {field: value})
        assert trust.eval_contradiction(_run(tmp_path, ev=ev)).startswith("made with other settings"), field


def _point(config: dict, step: int) -> dict:
    def kind(n):
        counts = [min(c, n) for c in COUNTS]
        return {
            "n": n,
            "seed": _seed(config["seed"], step, "curve"),
            "max_new_tokens": config["max_completion_length"],
            "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
            "pass_at_k": {"1": sum(counts) / (n * len(counts))},
        }

    return {"step": step, "sampled": kind(8), "greedy": kind(1)}


@pytest.mark.parametrize("kind", ["sampled", "greedy"])
def test_a_curve_point_off_its_settings_in_one_field_is_refused_naming_it(tmp_path, kind):
    curve = [_point(CONFIG, 0), _point(CONFIG, 50)]
    assert trust.curve_contradiction(_run(tmp_path, curve=curve)) is None
    for field, value in (
        ("seed", _seed(SEED, 0, "curve")),
        ("seed", _seed(SEED + 1, 50, "curve")),
        ("max_new_tokens", 32),
    ):
        curve = [_point(CONFIG, 0), _point(CONFIG, 50)]
        curve[1][kind][field] = value  # step 50 with step 0's seed, another run's seed, another length
        why = trust.curve_contradiction(_run(tmp_path, curve=curve))
        assert why is not None and why.startswith(f"step 50 {kind}: {field} is {value!r}")
    curve = [_point(CONFIG, 0), _point(CONFIG, 50)]
    curve[1][kind]["pass_at_k"]["1"] += 0.01
    assert trust.curve_contradiction(_run(tmp_path, curve=curve)).startswith(f"step 50 {kind}: Pass@1 written")


def test_a_resumed_runs_curve_may_hold_points_of_its_earlier_completion_length(tmp_path):
    earlier = CONFIG | {"max_completion_length": 32}
    curve = [_point(earlier, 0), _point(CONFIG, 50)]
    assert trust.curve_contradiction(_run(tmp_path / "resumed", history=[earlier, CONFIG], curve=curve)) is None
    assert trust.curve_contradiction(_run(tmp_path / "fresh", curve=curve)).startswith("step 0 sampled: max_new_tokens")


def test_a_curve_point_taken_from_eval_json_must_be_that_evaluation_sampled_and_greedy(tmp_path):
    ev = _eval_file(CONFIG)
    point = {"step": 0, "source": "eval.json base", "sampled": dict(ev["base"]), "greedy": dict(ev["base_greedy"])}
    assert trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[point])) is None
    for kind, field, value in (
        ("sampled", "seed", 1),
        ("greedy", "seed", 1),
        ("sampled", "per_problem", [{"id": "p0", "correct": 1}]),
        ("greedy", "per_problem", [{"id": "p0", "correct": 1}]),
    ):
        bad = point | {kind: point[kind] | {field: value}}
        why = trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[bad]))
        assert (
            why == f"step 0 {kind}: its source is eval.json {'base' if kind == 'sampled' else 'base_greedy'}, "
            "which it is not"
        )
    final = point | {"source": "eval.json final"}  # the base's evaluation named as the final one
    ev["final"]["seed"] += 1
    assert trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[final])).startswith("step 0 sampled: its source")
    assert (
        trust.curve_contradiction(_run(tmp_path, ev=ev, curve=[point | {"source": "x"}]))
        == "step 0: unknown source 'x'"
    )


def test_screen_drops_the_contradicting_file_and_keeps_the_run(tmp_path):
    ev = _eval_file(CONFIG)
    ev["heldout"]["final"]["temperature"] = 1.0
    good = _run(tmp_path / "a", CONFIG | {"seed": 5}, ev=_eval_file(CONFIG | {"seed": 5}))
    bad = _run(tmp_path / "b", ev=ev, curve=[_point(CONFIG | {"max_completion_length": 8}, 0)])
    kept, excluded = trust.screen([good, bad])
    assert kept == [good, bad] and good.eval is not None and bad.eval is None and bad.curve is None
    assert [e["what"] for e in excluded] == [str(tmp_path / "b" / "eval.json"), str(tmp_path / "b" / "curve.json")]
