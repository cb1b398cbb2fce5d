"""Is the premise a property of one recipe? The answer's base pretrained again with other seeds, each read by the
premise's positive control, and the control on the answer's base with GRPO at another step (issue 49).

    out/base-draws/seed-S/base/          the answer's base recipe (its preset and `--set` settings) pretrained with
                                         seed S (`python -m escov.llm pretrain --preset paper --set ... --seed S`;
                                         bases.obtain_base: built once in the bases' cache, copied here)
    out/base-draws/seed-S/control/       the premise control on it (premise_control.run_control: validation prompts,
                                         its seeds, steps and samples), control.json its record
    out/base-draws/lr-LR/control/        the premise control on the answer's base with GRPO's learning rate LR
    out/base_draws.json                  the attachment (report.json's premise record: base_draws)

The attachment holds one entry per draw (the answer's own base, seed 0, read from its control, first when it is
measured) and one for the step-size control, each with its base record, the control's registered verdict
(paper_checks/premise.py: narrowed when the plateau - base Pass@32 interval lies wholly below 0) and that interval.
"""

from __future__ import annotations

from pathlib import Path

DRAWS_DIR = "base-draws"
ATTACHMENT = "base_draws.json"
CONTROL_JSON = "control.json"


def draw_dir(out: Path, seed: int) -> Path:
    return Path(out) / DRAWS_DIR / f"seed-{seed}"


def lr_dir(out: Path, learning_rate: float) -> Path:
    return Path(out) / DRAWS_DIR / f"lr-{learning_rate:g}"


def run_draw_control(base: Path, out: Path, budget, learning_rate: float | None = None) -> str:
    """The premise control on `base` into out (the budget's control sizes, budget.arms.control), its runs one after
    another in this worker on one thread; learning_rate: GRPO's step instead of the control's."""
    import torch

    from escov.paper_checks.reproduce.premise_control import run_control

    torch.set_num_threads(1)
    grpo = None if learning_rate is None else {"learning_rate": learning_rate}
    run_control(base, out, budget, jobs=1, grpo=grpo, log=lambda msg: None, **dict(budget.arms.control))
    return str(out / CONTROL_JSON)


def _entry(label: str, control: dict) -> dict:
    pass32 = control["endpoints"]["pass@32"]
    return {
        "draw": label,
        "base": control["base"],
        "grpo": control["grpo"],
        "seeds": control["seeds"],
        "steps": control["steps"],
        "prompts": control["prompts"],
        "samples": control["samples"],
        "verdict": control["verdict"],
        "pass32_plateau_minus_base": {k: pass32.get(k) for k in ("mean", "lo", "hi")},
    }


def attachment(out: Path, budget, main_control: Path) -> dict:
    """The attachment (module docstring) from the controls' records; ValueError naming a missing one."""
    from escov.llm.rundir import read_json

    arms, entries = budget.arms, []
    wanted = [(f"seed {s}", draw_dir(out, s) / "control" / CONTROL_JSON) for s in arms.draw_seeds]
    if arms.lr_control is not None:
        wanted.append((f"lr {arms.lr_control:g}", lr_dir(out, arms.lr_control) / "control" / CONTROL_JSON))
    missing = [str(path) for _, path in wanted if not path.is_file()]
    if missing:
        raise ValueError(f"base-draw controls missing: {', '.join(missing)}")
    if Path(main_control).is_file():
        entries.append(_entry("seed 0", read_json(main_control)) | {"answer_base": True})
    entries += [_entry(label, read_json(path)) for label, path in wanted]
    return {"draws": entries, "narrowed": sum(e["verdict"] == "narrowed" for e in entries), "of": len(entries)}
