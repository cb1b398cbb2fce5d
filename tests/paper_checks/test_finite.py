"""paper_checks/finite.py: every NaN and infinity, in dicts, lists, tuples and numpy arrays, replaced by None and
listed by its path; numpy scalars become Python numbers."""

import json
import math

import numpy as np

from escov.paper_checks.finite import without_non_finite


def test_non_finite_values_are_nulled_and_named_by_path_at_any_depth():
    data = {
        "a": 1.0,
        "b": [0.5, math.nan, {"c": (math.inf, 2)}],
        "d": np.array([1.0, -np.inf, 3.0]),
        "e": np.float64(0.25),
        "f": np.int64(3),
        "g": "nan",
    }
    clean, found = without_non_finite(data, "root")
    assert clean == {"a": 1.0, "b": [0.5, None, {"c": [None, 2]}], "d": [1.0, None, 3.0], "e": 0.25, "f": 3, "g": "nan"}
    assert found == ["root.b[1]", "root.b[2].c[0]", "root.d[1]"]
    assert type(clean["e"]) is float and type(clean["f"]) is int
    json.dumps(clean, allow_nan=False)


def test_a_non_finite_value_alone_is_named_the_top_level():
    assert without_non_finite(math.nan) == (None, ["(top level)"])
    assert without_non_finite(np.float32("inf")) == (None, ["(top level)"])
    assert without_non_finite([math.nan]) == ([None], ["[0]"])
