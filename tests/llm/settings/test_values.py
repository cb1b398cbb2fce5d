"""Reading a table of settings (llm/settings/values.py) on a table defined here: values coerced to each field's
annotated type (a list to a tuple, an int to a float, one string to a one-entry list, "" to none), unknown keys
refused naming the known ones (the sections left out), and the range checks' refusals word for word."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from escov.llm.settings.values import _coerce, _known, _positive


@dataclass
class Table:
    count: int = 1
    share: float = 0.5
    names: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    section: str = ""  # read as a section of its own by the caller
    flag: bool = False


def test_values_take_their_fields_types():
    got = _known(
        Table,
        {"share": 1, "names": "m:f", "sizes": [1, 2], "weights": [1, 0.5], "section": "x"},
        "t.toml",
        ("section",),
    )
    assert got == {"share": 1.0, "names": ("m:f",), "sizes": (1, 2), "weights": (1.0, 0.5)}
    assert type(got["share"]) is float and [type(w) for w in got["weights"]] == [float, float]
    assert _coerce("names", "", "tuple[str, ...]") == ()  # an empty string: no entry


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("sizes", ["1"], "sizes must be an integer, got '1'"),
        ("sizes", 3, "sizes must be a list, got 3"),
        ("count", True, "count must be an integer, got True"),
        ("share", "0.5", "share must be a number, got '0.5'"),
        ("flag", 1, "flag must be true or false, got 1"),
        ("section", 3, "section must be a string, got 3"),
    ],
)
def test_a_value_of_another_type_is_named(key, value, message):
    with pytest.raises(ValueError) as err:
        _known(Table, {key: value}, "t.toml")
    assert str(err.value) == message


def test_an_unknown_key_names_the_known_ones_but_the_sections():
    with pytest.raises(ValueError) as err:
        _known(Table, {"cuont": 2}, "t.toml", ("section",))
    assert (
        str(err.value)
        == "t.toml: unknown setting 'cuont'; known settings: ['count', 'flag', 'names', 'share', 'sizes', 'weights']"
    )


@pytest.mark.parametrize("value", [0, -1.0, math.inf, math.nan, True, "1"])
def test_a_positive_setting_refuses_zero_negatives_non_finite_and_non_numbers(value):
    with pytest.raises(ValueError) as err:
        _positive("temperature", value)
    assert str(err.value) == f"temperature must be a finite number > 0, got {value!r}"


def test_a_field_of_a_type_no_table_uses_is_a_bug_named_by_its_type():
    with pytest.raises(TypeError) as err:
        _coerce("mapping", {}, "dict[str, int]")
    assert str(err.value) == "unsupported field type dict[str, int] for mapping"
