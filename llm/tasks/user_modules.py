"""Where a user's module is found: one rule for importing it and for hashing its source.

A reward function is named 'module:function' or 'file.py:function' (llm/tasks/reward_function.py imports
it; llm/fingerprints.py hashes its source file into inputs.json). Both ask this module, so that the file
that runs is the file that is recorded:

    'file.py'   that file (relative to the current folder)
    'module'    looked up on the Python path, then in the current folder

`python -m escov.llm` puts the current folder on the Python path; the `escov` console script does not.
The second look makes both find (and hash) the same my_rewards.py in the current folder. A module found
on the Python path is taken from there even when the current folder holds one of the same name.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


def _find_spec(module_name: str):
    """importlib's spec of the module on the Python path as it is now (None: not there, nor its package)."""
    try:
        return importlib.util.find_spec(module_name)
    except ModuleNotFoundError:  # a package above the module is missing
        return None


@contextmanager
def lookup_path(module_name: str):
    """The Python path the user's module is looked up on: as it is when the module is found there, else with
    the current folder in front of it (for the duration of the block)."""
    here = os.getcwd()
    if here in sys.path or not module_name or _find_spec(module_name) is not None:
        yield
        return
    sys.path.insert(0, here)
    try:
        yield
    finally:
        sys.path.remove(here)


def import_module(module_name: str) -> ModuleType:
    """The user's module, imported from where lookup_path finds it (ModuleNotFoundError when nowhere)."""
    with lookup_path(module_name):
        return importlib.import_module(module_name)


def source_file(module: str) -> Path | None:
    """The file a user's module runs from: 'file.py' itself (as given, even when missing), else the module's
    file where lookup_path finds it (None when it has no file, e.g. a built-in). ValueError naming the module
    when it is found nowhere."""
    if module.endswith(".py"):
        return Path(module)
    with lookup_path(module):
        try:
            found = _find_spec(module)
        except (ImportError, ValueError):  # an empty name; a package that fails to import
            found = None
    if found is None:
        raise ValueError(f"no module {module!r} on the Python path nor in the current folder")
    return Path(found.origin) if found.origin and Path(found.origin).is_file() else None
