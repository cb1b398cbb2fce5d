"""Mutation testing, group by group: plant one small bug at a time (mutmut: a comparison flipped, a
constant changed, an argument dropped, ...) in the modules where a silent bug changes a published
verdict or reward, and run each group's own tests against it; a mutant no test fails on is a bug no
test notices. docs/mutation.md lists the survivors with a reason for each.

    python scripts/mutation.py                      # every group, one after the other
    python scripts/mutation.py graders noise        # some groups
    python scripts/mutation.py --retest graders     # only the mutants left uncaught (or timed out) last time
    python scripts/mutation.py --summary            # the per-module table of the last runs only
    python scripts/mutation.py report --only 'paper_checks.report.x_build_report__*'   # one function's mutants

Each group runs in its own work folder, mutants-work/GROUP/ (ignored by git): links to the sources and
tests, and a pyproject.toml whose [tool.mutmut] names the group's modules and its own test files. mutmut
first runs those tests once to learn which test reaches which function, then, for each mutant, only
the tests that reach its function, so a mutant of the run-directory reader is not tried against every
report test that happens to read a file. A group's results are kept between runs (mutmut re-tests only
what changed); delete its folder to start afresh. The run is a developer's tool, not part of CI.

The summary counts, per module: mutants, caught (a test failed, hung or crashed), named equivalent in
docs/mutation.md (on a line holding the word "equivalent"), not reached (no test of the group calls
the function in this process), not checked (a run stopped before it), and survivors left unexplained.
The score is caught / (mutants - equivalent - not reached - not checked). Exit status 1 while a
survivor is unexplained.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, packaged as tomli (a dependency there)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "mutants-work"
DOC = ROOT / "docs" / "mutation.md"
LEVELS = ("theory", "simulate", "llm", "paper_checks")  # imported as escov.LEVEL (pyproject.toml's package-dir)

# A group's test files come from the layout (tests/test_layout.py): each module's tests are the files beside it in
# tests/ named after it (tests/llm/es/test_noise.py for llm/es/noise.py; test_M.py or test_M_ASPECT.py), in the order of
# the modules. group -> (modules mutated, further test files the group runs after those, test files named after a
# module that the group leaves out). The first file's first test must fail quickly when every function of the modules
# raises (mutmut's forced-fail check runs the files in this order).
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "decisions": (
        ("theory/decisions.py", "theory/claims.py", "paper_checks/verdict.py", "paper_checks/design.py"),
        (),
        (),
    ),
    # the checks on runs built in memory first (real_checks/test_checks.py: no run directory, no report); the report
    # tests that assemble a whole report (plots, the simulate level) are left out below
    "real_checks": (
        tuple(
            f"paper_checks/real_checks/{m}.py" for m in ("decide", "needs", "passk", "at_matched", "per_run", "lemmas")
        ),
        (
            "tests/paper_checks/real_checks/test_checks.py",
            "tests/paper_checks/test_paper_checks_verdicts.py",
            "tests/paper_checks/test_report_rendering.py",
        ),
        (),
    ),
    "matched": (("paper_checks/matched.py", "theory/matched.py"), ("tests/simulate/experiments/test_matched.py",), ()),
    "graders": (("llm/tasks/rewards.py", "llm/tasks/countdown.py", "llm/tasks/safe_arith.py"), (), ()),
    # the math grader alone: its work budget (nodes, depth, symbols, exponents, value bits) came after the
    # graders group's run, which keeps its results for the modules above
    "grader": (("llm/tasks/math_grader.py",), (), ()),
    # users' own data files and the math datasets: loading, field mapping, split rules, errors naming file and
    # record; not test_own_data_cli.py (it trains, in fresh processes and in process) nor test_problem_sets.py
    # (generated problems: it reaches data_files only through TrainConfig's defaults, and one test trains)
    "data": (
        ("llm/tasks/data_files.py", "llm/tasks/math_data.py"),
        (
            "tests/llm/tasks/test_own_data.py",
            "tests/llm/test_own_data_settings.py",
            "tests/llm/tasks/test_countdown_files.py",
        ),
        (),
    ),
    "noise": (("llm/es/noise.py",), (), ()),
    # not the parity test against TRL's trainer nor the variants' tests (both were outside the group before its tests
    # came from the layout)
    "grpo": (
        ("llm/grpo.py", "llm/grpo_losses.py"),
        (),
        ("tests/llm/test_grpo_trl_parity.py", "tests/llm/test_grpo_variants.py"),
    ),
    # GRPO's coverage-keeping variants against hand computations (not the TRL parity: each mutant would build TRL; nor
    # test_grpo_variant_runs.py, whose runs train in process, about 10 tiny runs that every mutant reaching the variants
    # paid again: on 2026-12-06 most of its mutants timed out on the loaded machine before a test failed); with
    # test_grpo_loss.py, whose test_group_advantages states plain GRPO's advantages (group_advantages, in
    # llm/grpo_advantages.py since the variants came)
    "grpo_variants": (
        (
            "llm/grpo_advantages.py",
            "llm/grpo_covariance.py",
            "llm/grpo_entropy.py",
            "llm/grpo_exploration.py",
            "llm/grpo_objectives.py",
            "llm/grpo_variant_settings.py",
        ),
        ("tests/llm/test_grpo_coverage_variants.py", "tests/llm/test_grpo_loss.py"),
        (),
    ),
    # not test_rundir_integrity.py: its fixtures train runs in fresh processes, which every mutant would pay
    # again (20-30 s each); the reader and writer it checks end to end are tested in process by test_rundir_records.py
    "rundir": (
        (
            "llm/rundir/records.py",
            "llm/rundir/jsonio.py",
            "llm/rundir/disk.py",
            "llm/rundir/files.py",
            "llm/rundir/config_files.py",
            "llm/rundir/checkpoints.py",
            "llm/rundir/lock.py",
            "llm/rundir/integrity.py",
            "paper_checks/rundir.py",
        ),
        ("tests/llm/rundir/test_rundir_records.py", "tests/llm/test_hostile_inputs.py"),
        ("tests/llm/rundir/test_rundir_integrity.py",),
    ),
    # the ES update, the member weights and their restore: every test here runs the step in process
    "es": (
        ("llm/es/algorithm.py", "llm/es/center.py", "llm/es/plan.py"),
        ("tests/llm/es/test_batched_hf.py", "tests/llm/es/test_conformance.py"),
        (),
    ),
    # where a resumed run continues from; its in-process tests train tiny runs (the CLI's resume cases run in
    # fresh processes in test_rundir_integrity.py)
    "resume": (("llm/resume.py",), (), ()),
    # the premise's reading and the report's premise record (the runner of the control is its own group below)
    "premise": (
        (
            "paper_checks/premise_record.py",
            "paper_checks/premise.py",
            "paper_checks/premise_plateau.py",
            "paper_checks/registered.py",
        ),
        (),
        (),
    ),
    # the positive control's runner: its runs' settings, and control.json read back against the counts its runs
    # wrote (test_premise_control.py trains one tiny control in process, once per mutant session of run_control)
    "premise_control": (("paper_checks/reproduce/premise_control.py",), (), ()),
    # user reward functions under TRL's and verl's contracts: the in-process tests that call them (not the CLI
    # training runs of test_own_data_cli.py, nor test_own_data.py's `llm eval` in a fresh process)
    "contract": (
        ("llm/tasks/reward_function.py",),
        ("tests/llm/tasks/test_own_data.py", "tests/llm/test_own_data_settings.py"),
        (),
    ),
    # what a run was made from: the fingerprint functions on files written in process (not test_run_fingerprints.py:
    # it trains a run and resumes copies of it, which every mutant's session would pay again)
    "fingerprints": (("llm/fingerprints.py",), (), ()),
    # the numbers every level reads: Pass@k's unbiased estimator, Maj@k, entropies, the generalized Jensen-Shannon
    # divergences (JSpol, JSsucc) and their input checks
    "metrics": (("theory/metrics.py",), (), ()),
    # the Lemma 1 grid on the real model: each row's ratio and interval, the pooled ratio, the decision, the draws a
    # width needs, the summary's exponents (one small grid is measured on the tests' tiny model); the report's grid
    # section, whose numbers test_report_rendering.py computes by hand from rows written there
    "lemma_grid": (
        ("paper_checks/lemma_grid.py", "paper_checks/reproduce/lemma_grid_measurement.py"),
        ("tests/paper_checks/test_report_rendering.py", "tests/paper_checks/test_lemma_grid_publish.py"),
        (),
    ),
    # an evaluation's numbers: Pass@k, Maj@k, no-correct share, entropy and distinct answers per prompt from the
    # samples of a real engine (the `llm eval` command runs in fresh processes, which mutmut does not map)
    "evaluate": (("llm/evaluate.py",), ("tests/llm/test_evaluate_cli.py",), ()),
    # the report's assembly and its text; in process only (not test_report_eval_ks.py: its runs train in fresh
    # processes), and of the whole-report tests only a few, since each draws every plot (3-9 s) for every mutant
    "report": (
        ("paper_checks/report.py",),
        (
            "tests/paper_checks/test_lemma_grid_publish.py",
            "tests/paper_checks/test_registry.py",
            "tests/paper_checks/real_checks/test_entropy_collapse.py",
            "tests/llm/test_hostile_inputs.py",
        ),
        ("tests/paper_checks/test_report_eval_ks.py", "tests/paper_checks/test_report_messages.py"),
    ),
    # the report's trust screen: evaluations and curve points against their run's settings, one field at a time
    "trust": (("paper_checks/trust.py",), ("tests/paper_checks/test_report_trust.py",), ()),
    # the summary's decided parts, its text and its design numbers (the effect needed, the seeds needed), on reports
    # written in the tests; not test_summary.py, whose tests assemble whole reports (2-4 s each, 18 s a mutant)
    "summary": (("paper_checks/summary.py",), (), ("tests/paper_checks/test_summary.py",)),
    # curve layout, reuse of eval.json and splits (each test trains a tiny run in process)
    "curve": (("llm/curve.py",), (), ()),
    # which prompts each split holds, for generated and users' data, each against the task's own draw
    # (test_problem_sets_draws.py); not test_problem_sets.py: its pinned budgets' prompts take 20 s (the answer's
    # solution blocks) and its `llm eval` test trains a run, which every surviving mutant would pay
    "problem_sets": (("llm/problem_sets.py",), ("tests/test_selection_split.py",), ("tests/llm/test_problem_sets.py",)),
    # which member strategy runs from the settings, alone and in combination
    "member_options": (
        ("llm/member_options.py",),
        ("tests/llm/test_train_config.py", "tests/test_settings_coverage.py"),
        (),
    ),
    # the population measurements' estimators, standard errors and intervals (coverage and width)
    "lemma_measurements": (("llm/lemma_measurements.py",), ("tests/llm/test_lemma_measurement_intervals.py",), ()),
    "pilot": (("paper_checks/reproduce/pilot.py",), ("tests/paper_checks/reproduce/test_plan_and_pilot_runs.py",), ()),
    # the ES pilot's runs and its reading: crossings of GRPO's plateau, the choice, the cap, the control's refusals
    "es_pilot": (("paper_checks/reproduce/es_pilot.py",), (), ()),
    "sweep": (
        ("paper_checks/reproduce/step_sweep.py",),
        ("tests/paper_checks/reproduce/test_step_sweep_choice.py",),
        (),
    ),
    # which runs are complete (trained, their curve measured on the curve's split) and how they are handed out
    "training_runs": (("paper_checks/reproduce/training_runs.py",), ("tests/llm/test_curve_splits.py",), ()),
    # not test_budgets.py: its jobs test (26 s) reaches plan() and ran first for every mutant (about 2 a minute)
    "plan": (
        ("paper_checks/reproduce/plan.py",),
        ("tests/paper_checks/reproduce/test_plan_and_pilot_runs.py", "tests/paper_checks/test_not_run_in_budget.py"),
        (),
    ),
    # the GRPO clip statistics under epsilon_high
    "grpo_clip": (("llm/grpo.py",), ("tests/llm/test_grpo_clip_share.py", "tests/llm/test_grpo_loss.py"), ()),
    # the coverage analyzer (Pass@k to n, crossings, solvability sets, the readers of TRL's and verl's completions)
    "coverage": (
        tuple(f"paper_checks/coverage/{m}.py" for m in ("measure", "table", "scoring", "reader", "sources")),
        (
            "tests/paper_checks/coverage/test_coverage_calibration.py",
            "tests/paper_checks/coverage/test_coverage_readers.py",
            "tests/paper_checks/coverage/test_coverage_cli.py",
        ),
        (),
    ),
    # the answer's records beside the premise's: the random-z null, the attachments (Pass@k to 1024, the base
    # draws), one endpoint pooled across tasks
    "answer_records": (
        (
            "paper_checks/es_null.py",
            "paper_checks/premise_attachments.py",
            "paper_checks/pooled.py",
            "paper_checks/premise_pooled.py",
        ),
        ("tests/paper_checks/reproduce/test_rare_only.py",),  # premise_attachments' rare-only section
        (),
    ),
    # a run's settings: what each field accepts, its defaults, the combinations refused, where a value came from
    "settings": (
        tuple(
            f"llm/settings/{m}.py"
            for m in ("train_config", "es_config", "grpo_config", "population_config", "values", "user_data", "sources")
        ),
        # tests/llm/test_run_settings.py is left out: its evaluation fixture trains and evaluates a run (15 s), which
        # every train_config mutant paid again (3-4 mutants a minute on 2 jobs); its survivors are planted by hand
        # against it (docs/mutation.md)
        (
            "tests/llm/test_train_config.py",
            "tests/llm/test_own_data_settings.py",
            "tests/llm/test_member_options.py",
        ),
        (),
    ),
    # the report's readings of the runs beside the verdicts: which runs form a row, the code they trained with, the
    # open questions, users' own runs; the answer's endpoint attachment, base draws and fresh test prompts
    "readings": (
        (
            "paper_checks/evidence.py",
            "paper_checks/provenance.py",
            "paper_checks/open_questions.py",
            "paper_checks/own_runs.py",
            "paper_checks/reproduce/endpoints.py",
            "paper_checks/reproduce/base_draws.py",
            "paper_checks/reproduce/fresh_split.py",
        ),
        (),
        (),
    ),
    # the bandit analogues: ES and GRPO steps, their measurements, the experiments' statistics
    "simulate": (
        (
            "simulate/es.py",
            "simulate/grpo.py",
            "simulate/measure.py",
            "simulate/bandit.py",
            "simulate/experiments/common.py",
        ),
        (),
        (),
    ),
    # the counted tasks' answers: the base choice, the rare-only prompts at the endpoints
    "task_answers": (
        ("paper_checks/reproduce/planted_bases.py", "paper_checks/reproduce/rare_only.py"),
        (
            "tests/paper_checks/reproduce/test_planted_bases.py",
            "tests/paper_checks/reproduce/test_rare_only.py",
            "tests/paper_checks/reproduce/test_task_answers.py",
        ),
        (),
    ),
    # the theory level: the paper's lemmas and their closed forms, the toy policies they are checked on, the coverage
    # estimators (the named checks of theory/checks/ run in a fresh process, `python -m escov.theory`: hand-planted)
    "theory": (
        (
            "theory/lemmas.py",
            "theory/coverage.py",
            "theory/population.py",
            "theory/categorical.py",
            "theory/policy.py",
            "theory/grpo.py",
            "theory/autoregressive.py",
        ),
        (
            *(
                f"tests/theory/test_{m}.py"
                for m in (
                    "theory_lemma1",
                    "theory_closed_forms",
                    "claims",
                    "coverage_estimators",
                    "grpo",
                    "standardize",
                )
            ),
            "tests/theory/checks/test_checks_detect_wrong_formulas.py",  # the named checks, run in process
            "tests/paper_checks/coverage/test_measure.py",  # theory.coverage's crossing and cover read by the analyzer
            "tests/simulate/test_measure.py",  # the lemmas on the bandit's populations
        ),
        (),
    ),
    # the generated tasks whose solutions are counted: verifiers, enumerations, strategy classes, solution blocks
    "tasks": (
        (
            "llm/tasks/grid_paths.py",
            "llm/tasks/subset_sum.py",
            "llm/tasks/solution_coverage.py",
            "llm/tasks/solution_blocks.py",
        ),
        (),
        (),
    ),
}


def _layout():
    """tests/test_layout.py, where the naming rule of test files is defined (loaded from its file: tests/ is not
    on the path of a script)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("escov_test_layout", ROOT / "tests" / "test_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tests_of(module: str) -> list[str]:
    """The test files named after a module (LEVEL/.../NAME.py), beside it in tests/ (tests/test_layout.py's rule)."""
    path = ROOT / module
    folder = ROOT / "tests" / path.parent.relative_to(ROOT)
    named_after = _layout().named_after
    return [
        t.relative_to(ROOT).as_posix()
        for t in sorted(folder.glob("test_*.py"))
        if named_after(t, path.parent) == path.stem
    ]


def group_tests(group: str) -> tuple[str, ...]:
    """The group's test files: each module's (tests_of) but those it leaves out, then its further ones."""
    modules, further, left_out = GROUPS[group]
    named = [t for m in modules for t in tests_of(m) if t not in left_out]
    return tuple(dict.fromkeys(named + list(further)))


# Left out of mutation runs: the math grader's worker-replacement and cache-count tests, which do not hold under
# mutmut's instrumentation (the first two); the Countdown tests take 6-7 s each and
# reach every function of safe_arith and countdown through the problem generator, so every surviving mutant
# there ran them again (the direct properties of test_safe_arith.py and test_countdown.py test those
# functions). The math grader's load test and its evaluation test start fresh grading workers (and busy loops, or
# a model) in each mutant's session: their grades come from the worker processes, which mutmut does not map.
# The `llm eval` test of the contract and data groups scores in a fresh process (`python -m escov.llm eval`,
# 20-25 s), which mutmut does not map. The last four reach every real check on the way: three write whole reports
# (plots, the simulate level, the command line: 4-15 s each), one collects 20 run directories and runs every check
# on them (2 s), so each mutant of real_checks ran them again; they test the report's assembly and the checks at no
# effect, and paper_checks/real_checks/test_checks.py reads each check's values directly (0.3 s in all per function).
DESELECTED = (
    "tests/llm/tasks/test_math_grader.py::test_an_over_budget_answer_or_an_unparseable_gold_keeps_the_worker",
    "tests/llm/tasks/test_math_grader.py::test_each_sample_is_parsed_once",
    "tests/llm/tasks/test_math_grader.py::test_grades_are_the_same_on_an_idle_and_on_a_loaded_machine",
    "tests/llm/tasks/test_math_grader.py::test_evaluations_report_the_answers_that_reached_the_safety_net",
    "tests/llm/tasks/test_countdown.py::test_distinct_solutions_match_brute_force",
    "tests/llm/tasks/test_countdown.py::test_problems_are_deterministic_disjoint_and_multi_solution",
    "tests/llm/tasks/test_own_data.py::test_llm_eval_scores_a_verl_parquet_with_a_reward_function",
    "tests/paper_checks/test_report_rendering.py::test_the_report_takes_simulates_verdict_words_as_they_are",
    "tests/paper_checks/test_paper_checks_verdicts.py::test_report_command_writes_markdown_json_and_plots",
    "tests/paper_checks/test_paper_checks_verdicts.py::test_partial_and_damaged_runs_are_marked_not_crashed",
    "tests/paper_checks/test_paper_checks_verdicts.py::test_zero_effect_gives_inconclusive_for_every_real_check",
    # reads scripts/measure_bases.py beside tests/, which a group's folder does not hold (problem_sets: each split's
    # draw is tested in test_problem_sets_draws.py)
    "tests/test_selection_split.py::test_no_command_that_chooses_a_setting_reads_the_answers_test_prompts",
    # trains the sweep's runs (20-60 s), which every surviving mutant of the sweep's rule ran again; the rule's
    # functions are tested on curves written in test_step_sweep.py and test_step_sweep_choice.py
    "tests/paper_checks/reproduce/test_step_sweep.py::test_the_sweep_end_to_end_reads_only_training_split_curves",
    # start the analyzer in fresh processes, which fail mutmut's first (stats) run: its other tests call main in process
    "tests/paper_checks/coverage/test_coverage_cli.py::test_the_console_script_and_the_module_give_the_same_report",
    "tests/paper_checks/coverage/test_coverage_cli.py::test_reading_and_measuring_loads_no_torch",
)
# Modules a group's tests import late, on the way (the report's input screen, paper_checks/trust.py, imports
# llm.rollout, and so torch, for its seed rule): imported once in the fork server (pytest -p), not again in every
# mutant's session (about 10 s of CPU each, which mutmut's time limit, estimated from one session, does not expect).
PRELOAD = {"real_checks": ("escov.llm.rollout",)}
# Groups whose tests train a tiny run in a module fixture (10-20 s of CPU on a loaded machine): mutmut's time limit
# counts the tests' calls alone, not their fixtures' setup, so at the constant of 5 s a mutant whose only tests read
# that run counted as caught by a timeout before they ran (training_runs' first 4 mutants; every premise_control
# mutant the fixture reaches). Seconds.
TIMEOUT_CONSTANT = {"training_runs": 60.0, "curve": 60.0, "premise_control": 60.0}

CAUGHT = {"killed", "timeout", "segfault", "suspicious"}  # a test failed, hung or crashed: the bug is noticed
NOT_REACHED = "no tests"
NOT_CHECKED = "not checked"
RESULT = re.compile(r"^\s*([\w.]+?)\.(?:x_|xǁ)[^\s:]*__mutmut_\d+:\s*(.+?)\s*$")


def toml_list(items) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


def prepare(group: str) -> Path:
    """mutants-work/GROUP/: links to the sources and tests, and the group's pyproject.toml (the project's
    pytest settings and the group's [tool.mutmut])."""
    modules, tests = GROUPS[group][0], group_tests(group)
    work = WORK / group
    work.mkdir(parents=True, exist_ok=True)
    # the installed layout, escov/LEVEL/...: mutmut names a mutant by its file's path and runs it when the
    # function's module (escov.llm.grpo, as the tests import it) has that name; the levels are also copied
    # unmutated to the top (also_copy) for the tests that read the repository's files (test_claims.py)
    (work / "escov").mkdir(exist_ok=True)
    for link, target in [
        ("escov/__init__.py", "escov/__init__.py"),
        ("tests", "tests"),
        *((f"escov/{level}", level) for level in LEVELS),
        *((level, level) for level in LEVELS),
        ("results", "results"),
        # paper_checks/summary.py reads the published report beside the package (escov/results/ in this layout)
        ("escov/results", "results"),
    ]:
        if not (work / link).is_symlink():
            (work / link).symlink_to(ROOT / target)
    pytest_cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    cli_args = [arg for test in DESELECTED if test.split("::")[0] in tests for arg in ("--deselect", test)]
    cli_args += [arg for module in PRELOAD.get(group, ()) for arg in ("-p", module)]
    text = "\n".join(
        [
            "[tool.pytest.ini_options]",
            f"testpaths = {toml_list(pytest_cfg['testpaths'])}",
            # in mutmut's process (-p no:xdist): the suite's default of one worker per CPU (tests/conftest.py) would
            # run the tests where mutmut's trampolines cannot record them
            f'addopts = "{pytest_cfg["addopts"]} -p no:xdist"',
            f"markers = {toml_list(pytest_cfg['markers'])}",
            "",
            "[tool.mutmut]",
            f"source_paths = {toml_list(['escov/__init__.py', *(f'escov/{level}' for level in LEVELS)])}",
            # one fork server imports the tests once and forks a child per mutant: without it every mutant
            # pays the import of torch, scipy and transformers (about 6 s) before its tests run
            'process_isolation = "forkserver"',
            # a mutant that makes its tests run 4 times as long as they do unmutated counts as caught (a
            # timeout): mutmut's default factor of 15 spent most of a run's time on mutants that loop
            "timeout_multiplier = 4.0",
            # plus 5 s before the factor: mutmut's estimate counts the tests' calls only, not their session's setup
            # (each mutant's tests run in a session of their own: the first use of a transformers model class
            # imports it, 3-4 s), so at its 1 s a mutant whose tests load the tiny model timed out before they ran
            f"timeout_constant = {TIMEOUT_CONSTANT.get(group, 5.0)}",
            f"only_mutate = {toml_list(f'escov/{m}' for m in modules)}",
            # and results/, whose published report test_report_rendering.py reads beside the tests
            f"also_copy = {toml_list([*LEVELS, 'results', 'escov/results'])}",
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
            f"pytest_add_cli_args = {toml_list(cli_args)}",
            "",
        ]
    )
    cfg = work / "pyproject.toml"
    if not cfg.exists() or cfg.read_text() != text:
        cfg.write_text(text)
    return work


def test_model() -> Path:
    """The tests' tiny model (the "test" preset, pretrained as tests/conftest.py does), built once per version of
    the code that builds it (paper_checks.reproduce.reproduction.base_cache_key) from the unmutated sources. Each
    mutant's
    tests run in a pytest session of their own, where the fixture would pretrain it again (seconds) inside
    mutmut's time limit, which counts only the tests' calls: every such mutant would count as caught by a
    timeout before any test ran."""
    from escov.paper_checks.reproduce.bases import base_cache_key

    out = WORK / f"test-model-{base_cache_key('test')}"
    if not (out / "config.json").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "escov.llm",
                "pretrain",
                "--preset",
                "test",
                "--seed",
                "0",
                "--threads",
                "1",
                "--out",
                str(out),
                "--no-progress",
            ],
            cwd=ROOT,
            check=True,
        )
    return out


def run_group(group: str, jobs: int, retest: bool, only: tuple[str, ...] = ()) -> float:
    """mutmut run in the group's folder (niced); the seconds it took. Its output goes to run.log there.
    With retest, only the mutants of the last run that no test caught, or that timed out (on a loaded machine
    a slow test can look hung), are tried again (after tests were added). only: mutmut's names of the mutants to
    try, as in docs/mutation.md (a `*` spans any text), e.g. every mutant of one function on a fresh checkout;
    the group's other mutants then read "not checked"."""
    names = [name for name, status in results(group) if status not in CAUGHT or status == "timeout"] if retest else []
    if retest and not names:
        return 0.0
    names += [f"escov.{pattern.removeprefix('escov.')}" for pattern in only]
    work = prepare(group)
    # one thread per mutant: mutmut's timeout is a CPU-time limit, and torch's worker threads waiting for a
    # busy core spend CPU time, so on a loaded 2-core machine a multi-threaded test counted as hung
    env = dict(
        os.environ, PYTHONPATH=str(work), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", ESCOV_TEST_MODEL=str(test_model())
    )
    start = time.perf_counter()
    with open(work / "run.log", "w") as log:
        code = subprocess.call(
            ["nice", "-n", "10", sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names],
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    seconds = time.perf_counter() - start
    if code != 0:
        tail = (work / "run.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"mutmut failed in group {group} (exit {code}); its output is in {work / 'run.log'}\n{tail}")
    return seconds


def results(group: str) -> list[tuple[str, str]]:
    """(mutant name, status) of every mutant of the group's last run ([] before its first)."""
    work = WORK / group
    if not (work / "mutants").exists():
        return []
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(work)),
        check=True,
    ).stdout
    pairs = []
    for line in out.splitlines():
        if RESULT.match(line):
            name, status = line.split(":", 1)
            pairs.append((name.strip(), status.strip()))
    return pairs


# on a line of docs/mutation.md: a mutant's whole name, or after one a sibling by its number (`_81`) or a range of
# them (`_202` to `_204`), each of the last whole name's function
NAMED = re.compile(r"(?P<whole>[\w.]+\.(?:x_|xǁ)[^\s`|,]*__mutmut_\d+)|`_(?P<first>\d+)`(?: to `_(?P<last>\d+)`)?")


def named_mutants(line: str) -> set[str]:
    """The mutants a line names: whole names, and the short names after one (`_81`, `_202` to `_204`)."""
    names, function = set(), None
    for m in NAMED.finditer(line):
        if m["whole"]:
            names.add(m["whole"])
            function = m["whole"].rsplit("__mutmut_", 1)[0]
        elif function is not None:
            names.update(f"{function}__mutmut_{n}" for n in range(int(m["first"]), int(m["last"] or m["first"]) + 1))
    return names


def equivalent_names(doc: str) -> set[str]:
    """The mutants docs/mutation.md names on a line holding the word "equivalent"."""
    return {m for line in doc.splitlines() if "equivalent" in line.lower() for m in named_mutants(line)}


def summary(groups: list[str], doc: str) -> tuple[str, list[str]]:
    """The per-module table and the unexplained survivors (name: status)."""
    equivalent = equivalent_names(doc)
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    unexplained = []
    for group in groups:
        for full_name, status in results(group):
            name = full_name.removeprefix("escov.")  # docs/mutation.md names modules by their folder: llm.grpo
            row = table[RESULT.match(f"{name}: {status}").group(1)]
            row["mutants"] += 1
            if status in CAUGHT:
                row["caught"] += 1
            elif name in equivalent:
                row["equivalent"] += 1
            elif status == NOT_REACHED:
                row["not reached"] += 1
            elif status == NOT_CHECKED:
                row["not checked"] += 1
            else:
                row["left"] += 1
                unexplained.append(f"{name}: {status}")
    cols = ("mutants", "caught", "equivalent", "not reached", "not checked", "left")
    lines = ["| module | " + " | ".join(cols) + " | score |", "| --- " * (len(cols) + 2) + "|"]
    for module in sorted(table):
        r = table[module]
        scored = r["mutants"] - r["equivalent"] - r["not reached"] - r["not checked"]
        score = f"{100 * r['caught'] / scored:.1f}%" if scored else "-"
        lines.append(f"| {module} | " + " | ".join(str(r[c]) for c in cols) + f" | {score} |")
    return "\n".join(lines), unexplained


# the decorators mutmut (3.8.1) mutates through: it sets up its trampoline around a static or class method
MUTATED_DECORATORS = ("staticmethod", "classmethod")


def decorated(groups: list[str]) -> list[str]:
    """The groups' functions that mutmut (3.8.1) does not mutate, because they carry a decorator (a property, a cache,
    a context manager; MUTATED_DECORATORS alone are mutated): "module.function (@decorator)". No test of theirs is
    counted in the table."""
    import ast

    out = []
    for group in groups:
        for module in GROUPS[group][0]:
            tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
            out += [
                f"{module.removesuffix('.py').replace('/', '.')}.{node.name} "
                f"({', '.join('@' + ast.unparse(d) for d in node.decorator_list)})"
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.decorator_list
                and not (len(node.decorator_list) == 1 and ast.unparse(node.decorator_list[0]) in MUTATED_DECORATORS)
            ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP", help=f"groups to run (default: all): {', '.join(GROUPS)}")
    parser.add_argument("--summary", action="store_true", help="print the table of the last runs, run nothing")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument(
        "--retest",
        action="store_true",
        help="try again only the mutants the last run left uncaught or timed out (after adding tests)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="try only the mutants of this name as docs/mutation.md writes it (a * spans any text; "
        "repeatable), e.g. 'paper_checks.report.x__build__*'",
    )
    args = parser.parse_args(argv)
    unknown = [g for g in args.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group {unknown[0]!r}; the groups are {', '.join(GROUPS)}")
    groups = args.groups or list(GROUPS)
    if not args.summary:
        for group in groups:
            print(f"{group}: {', '.join(GROUPS[group][0])} against {len(group_tests(group))} test files", flush=True)
            seconds = run_group(group, args.jobs, args.retest, tuple(args.only))
            print(f"{group}: {seconds / 60:.1f} min", flush=True)
    table, unexplained = summary(list(GROUPS) if args.summary else groups, DOC.read_text(encoding="utf-8"))
    print(table)
    skipped = decorated(list(GROUPS) if args.summary else groups)
    if skipped:
        print(f"\nNot mutated (mutmut skips decorated functions), {len(skipped)}:")
        print("\n".join(f"  {d}" for d in skipped))
    if unexplained:
        print(f"\n{len(unexplained)} survivors neither caught nor named equivalent in docs/mutation.md:")
        print("\n".join(f"  {u}" for u in unexplained))
    return 1 if unexplained else 0


if __name__ == "__main__":
    raise SystemExit(main())
