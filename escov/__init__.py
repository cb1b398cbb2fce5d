"""escov: Evolution Strategies vs GRPO on LLM reasoning coverage, checked in theory, simulation and real runs.

One installed name with four levels, each a folder of the repository mapped here by pyproject.toml:
`escov.theory` (exact lemmas), `escov.simulate` (bandit analogues), `escov.llm` (real ES and GRPO
training) and `escov.paper_checks` (verdicts). Lower levels never import higher ones.
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:
    __version__ = version("escov")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# In a source checkout the levels are folders beside this one (the wheel puts them inside it): look
# for them there too, so that the checkout imported first (PYTHONPATH, or the current folder) is the
# one whose levels are used, installed or not.
_checkout = Path(__file__).resolve().parent.parent
if not (Path(__file__).parent / "llm").is_dir() and (_checkout / "pyproject.toml").is_file():
    __path__.append(str(_checkout))
