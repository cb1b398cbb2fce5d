"""replay.jsonl kept up to a resumed checkpoint (llm/replay_log.py keep_records): the updates of the steps up to it and
the phase starts before it; a phase starting at the resumed step writes its start again, so its old record goes; a
last line cut off by a kill is dropped when read."""

from __future__ import annotations

from escov.llm import replay_log


def _update(step: int) -> dict:
    return {
        "step": step,
        "noise_seed": 100 + step,
        "sigma": 0.02,
        "alpha": 0.01,
        "population_size": 4,
        "coefficients": [0.5, -0.25],
        "center_sha256": f"{step:064x}",
    }


def test_a_resume_keeps_the_updates_up_to_its_step_and_the_phase_starts_before_it(tmp_path):
    records = [
        {"start_step": 0, "center_sha256": "0" * 64},
        _update(1),
        _update(2),
        _update(3),
        {"start_step": 3, "center_sha256": "3" * 64},  # a second ES phase from checkpoint 3
        _update(4),
    ]
    for record in records:
        replay_log.append_record(tmp_path, record)
    assert replay_log.read_records(tmp_path) == records
    replay_log.keep_records(tmp_path, 3)  # resumed from checkpoint 3: the second phase starts again there
    assert replay_log.read_records(tmp_path) == records[:4]
    replay_log.keep_records(tmp_path, 2)
    assert replay_log.read_records(tmp_path) == records[:3]
    with open(tmp_path / replay_log.REPLAY, "a", encoding="utf-8") as fh:
        fh.write('{"step": 3, "noise_se')  # a kill cut the last line
    assert replay_log.read_records(tmp_path) == records[:3]
