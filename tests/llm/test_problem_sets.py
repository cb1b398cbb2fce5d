"""llm/problem_sets.py: one definition of a run's test problems. The budgets' test problems are pinned (a change
to them is a change to every published number), and `llm eval` with a run's flags evaluates the run's own
test problems, whatever the seed."""

import hashlib
import json
from pathlib import Path

import pytest

from escov.llm.cli import main as llm_main
from escov.llm.config import TrainConfig
from escov.llm.problem_sets import eval_set, heldout_set, probe_problems
from escov.llm.tasks import get_task
from escov.llm.tasks.solution_blocks import block_problems
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import plan

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _digest(ids) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


# sha256 of the newline-joined test problem ids every run of a budget is evaluated on, the held-out ones and the
# probe's: the task's test split drawn with seed 0 (held-out get_task(heldout_task).problems("test", n, seed=0),
# probe task.problems("test", n, seed=1)). Computed once from the split rule that halved the held-out tenth into
# validation and test (llm/tasks/base.py split_of); results/ published before it used the earlier test prompts
# (docs/answer-budget.md, "Every answer run").
PUBLISHED = {  # budget: (task, eval_problems, test ids, first id, held-out ids, probe ids)
    "answer": (
        "countdown3",
        128,
        "4aa64005c9de531a7a66432ee764bda103aedc0e7699f1089465d3d9a1ff8878",
        "countdown/43,6,37=1",
        "bdd2ddaabbbdefe60786a0d26968fbe1d72547f9c00dc9a6b618dddb847bace4",
        "8a2489bb19b4278b01b9abb9e287f582f7ac169723fc532531f5d7619588ccfa",
    ),
    "answer-diffuse": (
        "countdown3",
        64,
        "b2a96a113aac63e35e90c7c5c6e8fbacc4cc6114ef73f78d45cd4d7f34773b9e",
        "countdown/43,6,37=1",
        "bdd2ddaabbbdefe60786a0d26968fbe1d72547f9c00dc9a6b618dddb847bace4",
        "8a2489bb19b4278b01b9abb9e287f582f7ac169723fc532531f5d7619588ccfa",
    ),
    "full": (
        "countdown",
        200,
        "51bec0833230b687eb02cb9edfa14709889cf035ffa9d38741372dd467c9ec5f",
        "countdown/1,3,50=53",
        "cab41a25c2f08b0498bef28dc274791549ddcc737da180799c8fe77daeb362f7",
        "f3e4ff2400e6b08a8746691fdefc17147b2d83e64af1626d5ff7afa5b5477ab3",
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name == "full" else name for name in sorted(PUBLISHED)]
)  # full: the same rule on 200 4-number problems
def test_the_published_budgets_keep_their_test_problems(name):
    """Every run of the budget gets, from eval_set, the test problems the task's test split gives for seed 0
    (the rule, spelled here), and those are the ids pinned above (the population sweep's runs, which
    evaluate only SWEEP_EVAL's 8 problems and no held-out task, the first 8 of them)."""
    task_name, n, test_digest, first, heldout_digest, probe_digest = PUBLISHED[name]
    runs = {k: TrainConfig.from_dict(v | {"out": "o"}) for k, v in plan(BUDGETS[name], Path("m"), None).items()}
    old_rule = [p.id for p in get_task(task_name).problems("test", n, seed=0)]
    assert _digest(old_rule) == test_digest and old_rule[0] == first and len(set(old_rule)) == n
    k = BUDGETS[name].common.get("eval_solutions", 0)  # the answer's fresh block (solution_blocks.py): its own rule
    skip = BUDGETS[name].common.get("eval_skip", 0)  # past the selection runs' own final evaluations
    want = [p.id for p in block_problems(get_task(task_name), "test", skip + n, 0, k)][skip:] if k else old_rule
    for run_name, cfg in runs.items():
        test = eval_set(cfg)
        assert cfg.task == task_name and test.ids == want[: cfg.eval_problems], run_name
        assert cfg.eval_problems == (8 if run_name.startswith("sweep-") else n), run_name
        if not run_name.startswith("sweep-"):
            assert _digest(heldout_set(cfg).ids) == heldout_digest, run_name
        assert _digest(p.id for p in probe_problems(cfg, test.task)) == probe_digest, run_name
    assert len([r for r in runs if not r.startswith("sweep-")]) >= 8


def test_the_quick_looks_test_problems_are_the_ordinary_ones_the_paper_regime_answer_read_first():
    """The quick look (budget small) reads the task's ordinary test prompts (no block kept for the answer): each of
    its runs is evaluated on the first eval_problems of the paper-regime answer's test problems."""
    answer_runs = plan(BUDGETS["answer-paper-regime"], Path("m"), None)
    answer = eval_set(TrainConfig.from_dict(next(iter(answer_runs.values())) | {"out": "o"}))
    fresh_runs = plan(BUDGETS["answer"], Path("m"), None)
    fresh = eval_set(TrainConfig.from_dict(next(iter(fresh_runs.values())) | {"out": "o"}))
    assert fresh.ids and not set(fresh.ids) & set(answer.ids)  # the answer's fresh block is not the quick look's
    for run_name, settings in plan(BUDGETS["small"], Path("m"), None).items():
        cfg = TrainConfig.from_dict(settings | {"out": "o"})
        test = eval_set(cfg)
        assert cfg.task == "countdown3" and 0 < cfg.eval_problems < len(answer.ids), run_name
        assert test.ids == answer.ids[: cfg.eval_problems], run_name


def test_the_seed_does_not_choose_the_test_problems_and_the_count_takes_the_first():
    ids = {seed: eval_set(TrainConfig(task="countdown3", eval_problems=16, seed=seed)).ids for seed in (0, 3)}
    assert ids[0] == ids[3] and len(set(ids[0])) == 16
    assert eval_set(TrainConfig(task="countdown3", eval_problems=16), n_problems=5).ids == ids[0][:5]
    assert heldout_set(TrainConfig(heldout_task="")) is None


def test_llm_eval_with_a_runs_flags_evaluates_the_runs_test_problems(tiny_model_dir, tmp_path, capsys):
    """A run trained with seed 3 and `llm eval` of its checkpoint with the same task flags: the same problem
    ids in both eval.json files (the old `llm eval` drew its problems with --seed, so seed 3 gave others)."""
    shared = ["--task", "countdown3", "--seed", "3", "--eval_problems", "5", "--prompt_style", "plain"]
    run = tmp_path / "run"
    code = llm_main(
        [
            "train",
            *shared,
            "--model",
            str(tiny_model_dir),
            "--out",
            str(run),
            "--algo",
            "grpo",
            "--steps",
            "1",
            "--batch_size",
            "2",
            "--train_pool",
            "4",
            "--threads",
            "1",
            "--max_completion_length",
            "4",
            "--probe",
            "false",
            "--eval_samples",
            "2",
            "--eval_ks",
            "1",
            "--heldout_task",
            "",
            "--threshold_keep",
            "50",
            "--grpo.num_generations",
            "2",
            "--no-progress",
        ]
    )
    assert code == 0
    run_ids = [p["id"] for p in json.loads((run / "eval.json").read_text())["final"]["per_problem"]]
    code = llm_main(
        [
            "eval",
            *shared,
            "--model",
            str(run / "checkpoints" / "step-1"),
            "--n",
            "2",
            "--k",
            "1",
            "--max_completion_length",
            "4",
            "--out",
            str(tmp_path / "ev"),
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    eval_ids = [p["id"] for p in json.loads((tmp_path / "ev" / "eval.json").read_text())["per_problem"]]
    assert eval_ids == run_ids == eval_set(TrainConfig(task="countdown3", eval_problems=5)).ids
    assert eval_ids != [p.id for p in get_task("countdown3").problems("test", 5, seed=3)]
