"""paper_checks/reproduce/run_info.py's reading of an earlier run_info.json: its list of invocations as it is (an
empty one too), one invocation rebuilt from a record written before invocations were kept, nothing from a file that
is no JSON object."""

import json

from escov.paper_checks.reproduce.run_info import earlier_invocations


def test_earlier_invocations_of_each_kind_of_record(tmp_path):
    path = tmp_path / "run_info.json"
    path.write_text(json.dumps({"invocations": [], "command": "c", "wall_seconds": 3.0}))
    assert earlier_invocations(path) == []
    path.write_text(json.dumps({"invocations": [{"command": "a"}]}))
    assert earlier_invocations(path) == [{"command": "a"}]
    old = {"command": "c", "budget": "small", "jobs": 2, "commit": "abc", "uncommitted_changes": False}
    path.write_text(json.dumps(old | {"wall_seconds": 3.0, "finished_utc": "t", "stages": {"s": {"wall": 1.0}}}))
    assert earlier_invocations(path) == [
        old
        | {
            "wall_seconds": 3.0,
            "started_utc": None,
            "finished_utc": "t",
            "stages": {"s": {"wall": 1.0}},
            "machine": None,
        }
    ]
    path.write_text("[1, 2]")
    assert earlier_invocations(path) == []
    path.write_text("{not json")
    assert earlier_invocations(path) == []
    assert earlier_invocations(tmp_path / "absent.json") == []
