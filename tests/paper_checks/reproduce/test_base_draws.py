"""The base-draws attachment (paper_checks/reproduce/base_draws.py) read from control records written by hand: one
entry per draw in the budget's order, the answer's own control first and marked, each entry's fields copied from its
record, Pass@32's endpoint as its interval, and the count of controls that narrowed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from escov.llm.rundir import write_json
from escov.paper_checks.reproduce import base_draws
from escov.paper_checks.reproduce.answer_arms import AnswerArms


def _control(seed: int, verdict: str, mean: float, learning_rate: float = 1e-5) -> dict:
    """A control.json with the fields the attachment reads; its two endpoints differ, so reading the wrong one shows."""
    return {
        "base": {"seed": seed, "preset": "paper"},
        "grpo": {"learning_rate": learning_rate},
        "seeds": [0, 1],
        "steps": 30,
        "prompts": 64,
        "samples": 40,
        "verdict": verdict,
        "endpoints": {
            "pass@32": {"mean": mean, "lo": mean - 1.0, "hi": mean + 1.0, "n": 2},
            "no_correct": {"mean": -mean, "lo": -mean - 2.0, "hi": -mean + 2.0},
        },
    }


VERDICTS = {1: ("narrowed", -9.0), 2: ("no_change_detected", -1.5), 3: ("widened", 4.0)}


def _put(path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)


def _write(out, arms: AnswerArms, main: bool) -> None:
    for seed in arms.draw_seeds:
        _put(base_draws.draw_dir(out, seed) / "control" / base_draws.CONTROL_JSON, _control(seed, *VERDICTS[seed]))
    if arms.lr_control is not None:
        path = base_draws.lr_dir(out, arms.lr_control) / "control" / base_draws.CONTROL_JSON
        _put(path, _control(0, "narrowed", -6.0, arms.lr_control))
    if main:
        _put(out / "premise-control" / "control.json", _control(0, "narrowed", -12.0))


@pytest.mark.parametrize("main", [True, False])
def test_each_draw_is_read_from_its_control_in_order_and_the_narrowed_are_counted(tmp_path, main):
    arms = AnswerArms(draw_seeds=(1, 2, 3), lr_control=3e-5)
    _write(tmp_path, arms, main)
    record = base_draws.attachment(tmp_path, SimpleNamespace(arms=arms), tmp_path / "premise-control" / "control.json")
    labels = ["seed 0"] * main + ["seed 1", "seed 2", "seed 3", "lr 3e-05"]
    assert [d["draw"] for d in record["draws"]] == labels
    assert [d.get("answer_base", False) for d in record["draws"]] == [True] * main + [False] * 4
    expected = [("narrowed", -12.0)] * main + [VERDICTS[s] for s in (1, 2, 3)] + [("narrowed", -6.0)]
    for entry, (verdict, mean) in zip(record["draws"], expected):
        assert entry["verdict"] == verdict
        assert entry["pass32_plateau_minus_base"] == {"mean": mean, "lo": mean - 1.0, "hi": mean + 1.0}
        assert (entry["seeds"], entry["steps"], entry["prompts"], entry["samples"]) == ([0, 1], 30, 64, 40)
    assert [d["base"]["seed"] for d in record["draws"]] == [0] * main + [1, 2, 3, 0]
    assert record["draws"][-1]["grpo"] == {"learning_rate": 3e-5}
    assert (record["narrowed"], record["of"]) == (2 + main, 4 + main)


def test_without_a_step_size_control_only_the_draws_are_read(tmp_path):
    arms = AnswerArms(draw_seeds=(2,), lr_control=None)
    _write(tmp_path, arms, main=False)
    record = base_draws.attachment(tmp_path, SimpleNamespace(arms=arms), tmp_path / "none.json")
    assert [d["draw"] for d in record["draws"]] == ["seed 2"] and (record["narrowed"], record["of"]) == (0, 1)


def test_a_missing_control_is_named(tmp_path):
    arms = AnswerArms(draw_seeds=(1, 2), lr_control=3e-5)
    _write(tmp_path, arms, main=True)
    gone = [
        base_draws.draw_dir(tmp_path, 2) / "control" / "control.json",
        base_draws.lr_dir(tmp_path, 3e-5) / "control" / "control.json",
    ]
    for path in gone:
        path.unlink()
    with pytest.raises(ValueError, match=f"^base-draw controls missing: {gone[0]}, {gone[1]}$"):
        base_draws.attachment(tmp_path, SimpleNamespace(arms=arms), tmp_path / "premise-control" / "control.json")
    assert base_draws.lr_dir(tmp_path, 3e-5).name == "lr-3e-05" and base_draws.draw_dir(tmp_path, 4).name == "seed-4"
