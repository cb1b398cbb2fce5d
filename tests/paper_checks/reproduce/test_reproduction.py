"""scripts/publish_results.sh: a finished reproduction's report copied into results/ with the header
a reader needs (command, commit, wall time, machine), simulate plot links rewritten, no checkpoints."""

import json
import subprocess
import sys
from pathlib import Path

from escov.paper_checks.reproduce.reproduction import git_commit, write_run_info

ROOT = Path(__file__).resolve().parents[3]


def test_publish_copies_the_report_with_its_header(tmp_path):
    out, dest = tmp_path / "out", tmp_path / "results"
    (out / "report").mkdir(parents=True)
    (out / "simulate").mkdir()
    (out / "runs" / "es-s0" / "checkpoints" / "step-5").mkdir(parents=True)
    (out / "runs" / "es-s0" / "checkpoints" / "step-5" / "model.safetensors").write_bytes(b"x")
    (out / "report" / "REPORT.md").write_text(
        "# Report\n![entropy](../simulate/entropy_collapse.png) ![f](frontier.png)\n"
    )
    (out / "report" / "report.json").write_text("{}")
    (out / "report" / "frontier.png").write_bytes(b"png")
    (out / "simulate" / "entropy_collapse.png").write_bytes(b"png")
    (out / "premise-control" / "runs").mkdir(parents=True)
    for name in ("control.json", "control.md", "control.png"):
        (out / "premise-control" / name).write_text(name)
    commit = git_commit()
    write_run_info(
        out / "report" / "run_info.json",
        "answer",
        2,
        125.0,
        "python -m escov.paper_checks reproduce --budget answer",
        commit,
    )
    info = json.loads((out / "report" / "run_info.json").read_text())
    assert info["commit"] == commit[0] and info["machine"]["cpu_count"] >= 1
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), str(out), str(dest)],
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    text = (dest / "REPORT.md").read_text()
    assert "`python -m escov.paper_checks reproduce --budget answer`" in text and commit[0] in text
    assert "2.1 min" in text and "CPU cores" in text
    assert "](simulate/entropy_collapse.png)" in text and (dest / "simulate" / "entropy_collapse.png").exists()
    assert (dest / "frontier.png").exists() and (dest / "report.json").exists()
    assert not list(dest.rglob("*.safetensors"))
    assert sorted(p.name for p in (dest / "premise-control").iterdir()) == ["control.json", "control.md", "control.png"]
    assert (dest / "premise-control" / "control.md").read_text() == "control.md"


def test_publish_refuses_an_unfinished_reproduction(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "REPORT.md").write_text("x")
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), str(tmp_path), str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "report.json missing" in res.stderr


def test_publish_beside_another_report_lists_both_bases(tmp_path):
    """The answer from two bases: the second report published first into a folder, the first beside it; the
    top report.json's "bases" holds both, each tagged with the report that measured it."""
    commit = git_commit()
    for name, model in (("diffuse", "default-base"), ("main", "paper-base")):
        out = tmp_path / name
        (out / "report").mkdir(parents=True)
        (out / "report" / "REPORT.md").write_text(f"# {name}\n")
        (out / "report" / "report.json").write_text(json.dumps({"bases": [{"model": model, "pass_at_k": {"1": 0.3}}]}))
        write_run_info(
            out / "report" / "run_info.json", "answer", 2, 60.0, "python -m escov.paper_checks reproduce", commit
        )
    run = lambda *args: subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), *args],
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    dest = tmp_path / "results"
    missing = run(str(tmp_path / "main"), str(dest), "diffuse")
    assert missing.returncode != 0 and "diffuse/report.json missing" in missing.stderr
    assert run(str(tmp_path / "diffuse"), str(dest / "diffuse")).returncode == 0
    res = run(str(tmp_path / "main"), str(dest), "diffuse")
    assert res.returncode == 0, res.stderr
    bases = json.loads((dest / "report.json").read_text())["bases"]
    assert [(b["model"], b["report"]) for b in bases] == [
        ("paper-base", "REPORT.md"),
        ("default-base", "diffuse/REPORT.md"),
    ]
