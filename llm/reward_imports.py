"""The modules a reward function's source file brings in from outside the Python installation: part of a run's
identity (llm/fingerprints.py hashes each one), so that editing a helper the reward imports is refused on resume.

    imported_files(source, package) -> {module name: file}

Found by reading, not by running: every `import a.b` and `from a.b import c` statement anywhere in the file (inside
functions too) names the modules a, a.b and, when it is a module, a.b.c; a relative import (`from . import x`)
is taken from the package of the module it is in (`package`: the reward's own package, for a 'pkg.mod:function'
reward). Each name is looked up as Python would import it now, on sys.path, then in the current folder (where
llm/tasks/reward_function.py also looks), then in the reward file's own folder (which a reward file may put on
sys.path itself), without importing anything; a package counts with its __init__.py.
A reward named 'pkg.mod:function' brings in its packages (pkg/__init__.py). A module found is kept when its
file lies outside the Python installation (the standard library, site-packages, the user's site-packages) and is
not escov's (its version is the run's `code`), and the modules it imports are followed in turn. Not covered:
modules named only at run time (importlib.import_module with a computed name, __import__, exec), and files a
module reads (data files it opens).
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import site
import sys
import sysconfig
from pathlib import Path

MAX_MODULES = 500  # modules followed at most: a bound on the work, far above any reward's helpers


def _installation() -> list[Path]:
    """The folders of the Python installation: the standard library and the site-packages folders."""
    paths = sysconfig.get_paths()
    folders = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    folders += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    folders.append(site.getusersitepackages())
    return [Path(f).resolve() for f in folders if f]


def _outside(file: Path, excluded: list[Path]) -> bool:
    return not any(file == root or root in file.parents for root in excluded)


def _find(name: str, search: list[str]):
    """The spec of module `name` as an import would find it now (parents looked up first, nothing imported);
    None when it is not found, a built-in, the standard library's or escov's."""
    top = name.split(".")[0]
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()) or top == "escov":
        return None
    spec, path = None, search
    parts = name.split(".")
    for i in range(len(parts)):
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), path)
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and i + 1 < len(parts):
            return None
    return spec


def _names(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """The module names a file's import statements name (module: the file's dotted name, '' when it has none)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                parts = package.split(".") if package else []
                if not module or node.level - 1 > len(parts):
                    continue  # a relative import in a file loaded without its package: it cannot import
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            if base:
                names.append(base)
                names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def imported_files(source: str | Path, module: str = "") -> dict[str, Path]:
    """{dotted module name: its file} for every module `source` brings in from outside the Python installation
    and escov, followed through the modules they import (see the module docstring); module: the source's own
    dotted name ('pkg.mod' for a package reward, '' for a file given by its path)."""
    excluded = _installation()
    search = list(sys.path) + [os.getcwd(), str(Path(source).resolve().parent)]  # last: a folder the file adds itself
    found: dict[str, Path] = {}
    queue = [(Path(source), module, Path(source).name == "__init__.py")]
    seen = {module} if module else set()
    while queue and len(found) < MAX_MODULES:
        file, name, is_package = queue.pop()
        try:
            tree = ast.parse(file.read_bytes(), filename=str(file))
        except (OSError, SyntaxError, ValueError):
            continue  # unreadable or not Python: the task names it when it imports the module
        wanted = _names(tree, name, is_package)
        if name == module and "." in module:  # importing pkg.mod runs pkg/__init__.py first
            wanted.append(module.rpartition(".")[0])
        for full in wanted:  # a.b.c brings in a and a.b first
            parts = full.split(".")
            for i in range(1, len(parts) + 1):
                dotted = ".".join(parts[:i])
                if dotted in seen:
                    continue
                seen.add(dotted)
                spec = _find(dotted, search)
                if spec is None or not spec.origin or not Path(spec.origin).is_file():
                    continue  # not a module (an attribute of a.b), built in, or a namespace package's folder
                origin = Path(spec.origin).resolve()
                if not _outside(origin, excluded):
                    continue
                found[dotted] = origin
                if origin.suffix == ".py":
                    queue.append((origin, dotted, spec.submodule_search_locations is not None))
    return dict(sorted(found.items()))
