"""Reading a table of settings: unknown keys refused (naming the known ones), values checked against the
field's annotated type, renamed settings read under their new name, and the range checks every table uses."""
from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

# settings renamed so that a name says one thing (old name -> new name); config files and run
# directories written with the old name still read
RENAMED = {"population_every": "probe_every"}  # the Lemma 1 probe, not the ES population


def _renamed(data: dict, source: str) -> dict:
    """data with renamed settings under their new names (both given: an error naming them)."""
    for old, new in RENAMED.items():
        if old in data:
            if new in data:
                raise ValueError(f"{source}: {old!r} is the old name of {new!r}; give only {new!r}")
            data = {(new if k == old else k): v for k, v in data.items()}
    return data


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")


def _int_at_least(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


def _table(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a table of settings, got {value!r}")
    return value


def _known(cls, data: dict, source: str, sections: tuple[str, ...] = ()) -> dict:
    """The entries of data that are fields of cls (sections excluded), with types coerced; unknown -> error."""
    names = {f.name: f for f in fields(cls)}
    out = {}
    for key, value in data.items():
        if key in sections:
            continue
        if key not in names:
            known = sorted(n for n in names if n not in sections)
            raise ValueError(f"{source}: unknown setting {key!r}; known settings: {known}")
        out[key] = _coerce(key, value, names[key].type)
    return out


def _coerce(key: str, value: Any, typ: str) -> Any:
    """Check a value against the field's annotated type (annotations are strings here)."""
    if typ.startswith("tuple"):
        inner = "int" if "int" in typ else "str" if "str" in typ else "float"
        if inner == "str" and isinstance(value, str):  # one entry given alone: reward_function = "m:f"
            value = [value] if value else []
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be a list, got {value!r}")
        return tuple(_coerce(key, v, inner) for v in value)
    if typ == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if typ == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key} must be an integer, got {value!r}")
        return value
    if typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{key} must be a number, got {value!r}")
        return float(value)
    if typ == "str":
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a string, got {value!r}")
        return value
    raise TypeError(f"unsupported field type {typ} for {key}")
