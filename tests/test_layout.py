"""The package layout DESIGN.md states: one installed name, `escov`, whose levels import downward only
(theory <- simulate <- llm <- paper_checks) and always by their full name (`escov.llm`, never a bare
`llm`, which is another PyPI package's name), and the ES package has no import cycle, counting imports inside functions (which
hide a cycle from the interpreter) and leaving out those under TYPE_CHECKING (which never run)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("theory", "simulate", "llm", "paper_checks")


def _module(path: Path) -> str:
    """The installed name of a file under a level's folder: llm/es/noise.py -> escov.llm.es.noise."""
    parts = ("escov",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules a file imports anywhere, except under `if TYPE_CHECKING:`."""
    tree, package = ast.parse(path.read_text()), _module(path).rsplit(".", 1)[0]
    if path.name == "__init__.py":
        package = _module(path)
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING" for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def _files(package: str) -> list[Path]:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no Python files under {package}/"
    return files


def test_levels_import_downward_only():
    for i, level in enumerate(LEVELS):
        above = LEVELS[i + 1:]
        for path in _files(level):
            wrong = sorted(m for m in _imports(path) if m.split(".")[:2] in [["escov", a] for a in above])
            assert not wrong, f"{path.relative_to(ROOT)} imports {wrong} from a level above {level}"


def test_no_file_imports_a_level_by_its_bare_name():
    """`import llm` would find another installed package (or this checkout only when run from its root)."""
    files = [p for d in (*LEVELS, "escov", "tests", "scripts", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100
    for path in files:
        bare = sorted(m for m in _imports(path) if m.split(".")[0] in LEVELS)
        assert not bare, f"{path.relative_to(ROOT)} imports {bare}: write escov.{bare[0]}"


def test_es_package_has_no_import_cycle():
    modules = {_module(p): p for p in _files("llm/es")}
    assert len(modules) >= 8  # the algorithm, noise, the strategies, options and the factory
    graph = {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}
    graph = {m: deps - {"escov.llm.es"} for m, deps in graph.items()}  # the package's __init__ only re-exports
    done, path = set(), []

    def visit(m):
        if m in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(m):] + [m]))
        if m in done:
            return
        path.append(m)
        for dep in sorted(graph[m]):
            visit(dep)
        path.pop()
        done.add(m)

    for m in sorted(graph):
        if m != "escov.llm.es":
            visit(m)
