"""The premise's registered endpoints read per task and pooled across tasks (paper_checks/premise_pooled.py), checked
against hand computations of the random-effects pool, the t test behind each member and Holm's step-down."""

import json
import math

import pytest
from scipy import stats

from escov.paper_checks.premise_pooled import POOLED_JSON, POOLED_MD, _agrees, _reading, pool_premise, render


def _interval(mean: float, se: float, df: float = 40.0) -> dict:
    half = stats.t.ppf(0.975, df) * se
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "se": se, "df": df}


def _record(a: float, e: float, d: float = 0.0, b: float | None = None, se: float = 0.01) -> dict:
    """A premise record with the fields its registered family is read from (premise_record.py)."""
    plateau = {"reading": "not_readable"}
    if b is not None:
        plateau = {"reading": "inconclusive", "difference": _interval(b, se), "fall": 0.04}
    return {
        "grpo_plateau_minus_base": {"pass@32": _interval(a, se), "verdict": "narrowed"},
        "es_at_grpo_plateau": plateau,
        "distinct_at_grpo_plateau": _interval(d, se),
        "es_minus_base_end": {"pass@32": _interval(e, se)},
    }


def test_equal_tasks_pool_to_their_mean_with_the_t_interval_on_tasks_minus_one_degrees():
    """Three tasks with the same (a) -0.05 and se 0.01: Q = 0, tau = 0, so the pool is -0.05 with se 0.01 / sqrt(3)
    (the factor max(1, q) = 1) and half-width t_{2, 0.975} x that = 4.303 x 0.005774 = 0.02484."""
    result = pool_premise({t: _record(-0.05, 0.0) for t in ("countdown", "grid_paths", "subset_sum")})
    a = result["pooled"]["grpo_plateau_minus_base"]
    se = 0.01 / math.sqrt(3)
    assert a["mean"] == pytest.approx(-0.05) and a["se"] == pytest.approx(se) and a["tau"] == 0.0 and a["df"] == 2
    assert a["hi"] == pytest.approx(-0.05 + stats.t.ppf(0.975, 2) * se) and a["hi"] == pytest.approx(-0.02516, abs=1e-5)
    assert a["reading"] == "claimed_side" and a["label"] == "(a)" and a["test"] == "one-sided < 0"
    assert a["tasks_agreeing"] == ["countdown", "grid_paths", "subset_sum"]  # each task's own interval is below 0
    assert result["premise_by_task"]["grid_paths"] == _record(-0.05, 0.0)  # each record as published


def test_tasks_that_disagree_give_the_spread_and_an_inconclusive_pool():
    """(e) at +0.05, -0.05, +0.04 with se 0.01 each: w = 1e4, ybar = 0.04 / 3, Q = 1e4 sum (y - ybar)^2 = 60.667,
    tau^2 = (Q - 2) / (3e4 - 1e4) = 0.0029333 (tau 0.05416), I^2 = (Q - 2) / Q = 0.967: the pool straddles 0 and
    two of three tasks lie on the pooled mean's side of it."""
    result = pool_premise({"t1": _record(-0.05, 0.05), "t2": _record(-0.05, -0.05), "t3": _record(-0.05, 0.04)})
    e = result["pooled"]["es_minus_base_end"]
    ybar = 0.04 / 3
    q = 1e4 * sum((y - ybar) ** 2 for y in (0.05, -0.05, 0.04))
    assert q == pytest.approx(60.6667, abs=1e-3)
    assert e["tau"] == pytest.approx(math.sqrt((q - 2) / 2e4)) and e["i2"] == pytest.approx((q - 2) / q)
    assert e["reading"] == "inconclusive" and e["test"] == "two-sided"
    assert e["mean"] > 0 and e["tasks_agreeing"] == ["t1", "t3"]
    assert e["by_task"] == pytest.approx({"t1": 0.05, "t2": -0.05, "t3": 0.04})
    mirrored = pool_premise({"t1": _record(-0.05, -0.05), "t2": _record(-0.05, 0.05), "t3": _record(-0.05, -0.04)})
    assert mirrored["pooled"]["es_minus_base_end"]["tasks_agreeing"] == ["t1", "t3"]  # the side of a mean below 0


def test_a_task_agrees_only_when_its_own_interval_lies_on_the_claimed_side():
    """(a) at -0.05 on two tasks and -0.01 with se 0.01 on a third: the third's interval [-0.030, +0.010] holds 0,
    so it does not count among the tasks that narrowed, though its mean is below 0."""
    result = pool_premise({"t1": _record(-0.05, 0.0), "t2": _record(-0.05, 0.0), "t3": _record(-0.01, 0.0)})
    assert result["pooled"]["grpo_plateau_minus_base"]["tasks_agreeing"] == ["t1", "t2"]


def test_b_prime_is_pooled_only_over_the_tasks_where_it_was_readable():
    """(b') is a member only where that task's validity condition held (registered.py): not readable on one task,
    it is pooled over the other two and that task is named; readable on one task only, nothing is pooled."""
    two = pool_premise({"t1": _record(-0.05, 0.0, b=0.02), "t2": _record(-0.05, 0.0, b=0.04), "t3": _record(-0.05, 0)})
    b = two["pooled"]["es_at_grpo_plateau"]
    assert b["tasks"] == ["t1", "t2"] and b["not_read"] == ["t3"] and b["mean"] == pytest.approx(0.03)
    assert b["test"] == "one-sided > 0" and b["df"] == 1
    one = pool_premise({"t1": _record(-0.05, 0.0, b=0.02), "t2": _record(-0.05, 0.0), "t3": _record(-0.05, 0.0)})
    assert "reason" in one["pooled"]["es_at_grpo_plateau"] and "holm" not in one["pooled"]["es_at_grpo_plateau"]
    unread = one["pooled"]["es_at_grpo_plateau"]  # the pool's fields are there, null, beside why
    assert all(unread[k] is None for k in ("mean", "lo", "hi", "se", "df", "tau", "i2"))
    assert one["pooled"]["es_at_grpo_plateau"]["not_read"] == ["t2", "t3"] and unread["tasks"] == ["t1"]
    assert unread["reason"] == "1 task(s): nothing to pool"
    assert "| (b') | " in "\n".join(render(one)) and "not read" in "\n".join(render(one))


def test_the_pooled_family_is_tested_with_holms_step_down():
    """Three readable members on 3 tasks, each pool's t on 2 degrees of freedom: (a) directional at twice its
    one-sided p, (d') and (e) two-sided; Holm: sorted p_(1) <= p_(2) <= p_(3), adjusted max_{j<=i} (3 - j + 1) p_(j)."""
    tasks = {"t1": _record(-0.05, 0.01, d=0.3), "t2": _record(-0.04, -0.005, d=0.1), "t3": _record(-0.06, 0.0, d=0.2)}
    pooled = pool_premise(tasks)["pooled"]
    p = {}
    for name, side in (("grpo_plateau_minus_base", -1), ("distinct_at_grpo_plateau", 0), ("es_minus_base_end", 0)):
        t = pooled[name]["mean"] / pooled[name]["se"]
        p[name] = 2 * stats.t.cdf(t, 2) if side < 0 else 2 * stats.t.sf(abs(t), 2)
    order = sorted(p, key=p.get)
    expected, running = {}, 0.0
    for i, name in enumerate(order):
        running = max(running, min(1.0, (3 - i) * p[name]))
        expected[name] = running
    for name in p:
        assert pooled[name]["holm"]["p"] == pytest.approx(p[name], rel=1e-9)
        assert pooled[name]["holm"]["p_adjusted"] == pytest.approx(expected[name], rel=1e-9)
        assert pooled[name]["holm"]["rejects"] == (expected[name] < 0.05)


def test_the_command_writes_the_pool_and_adds_it_to_a_published_report(tmp_path, capsys):
    from escov.paper_checks.cli import main

    paths = {}
    for task, a in (("countdown", -0.05), ("grid_paths", -0.03)):
        paths[task] = tmp_path / f"{task}.json"
        paths[task].write_text(json.dumps({"claims": [], "premise": _record(a, 0.0)}), encoding="utf-8")
    into = tmp_path / "report.json"
    into.write_text(json.dumps({"claims": [], "premise": _record(-0.05, 0.0)}), encoding="utf-8")
    specs = [f"{t}={p}" for t, p in paths.items()]
    assert main(["pool-tasks", *specs, "--out", str(tmp_path / "pool"), "--into", str(into)]) == 0
    written = json.loads((tmp_path / "pool" / POOLED_JSON).read_text())
    assert sorted(written["premise_by_task"]) == ["countdown", "grid_paths"]
    assert written["pooled"]["grpo_plateau_minus_base"]["mean"] == pytest.approx(-0.04)
    report = json.loads(into.read_text())
    assert report["pooled"] == written["pooled"] and report["claims"] == []  # the rest of the report kept
    assert "| (a) | " in (tmp_path / "pool" / POOLED_MD).read_text() and "POOLED.md" in capsys.readouterr().out


def test_pooling_into_a_report_adds_one_section_before_all_claims(tmp_path):
    from escov.paper_checks.premise_pooled import pool_tasks_command

    specs = []
    for task, a in (("countdown", -0.05), ("grid_paths", -0.03)):
        path = tmp_path / f"{task}.json"
        path.write_text(json.dumps({"premise": _record(a, 0.0)}), encoding="utf-8")
        specs.append(f"{task}={path}")
    into = tmp_path / "report" / "report.json"
    into.parent.mkdir()
    into.write_text(json.dumps({"claims": []}), encoding="utf-8")
    md = into.parent / "REPORT.md"
    md.write_text("# r\n\n## The premise\n\n- x\n\n## All claims\n\n| t |\n", encoding="utf-8")
    pool_tasks_command(specs, tmp_path / "pool", into)
    once = md.read_text(encoding="utf-8")
    assert once.index("- x") < once.index("## The premise on several tasks") < once.index("## All claims")
    pool_tasks_command(specs, tmp_path / "pool", into)
    assert md.read_text(encoding="utf-8") == once  # a second pool replaces the section
    table = (tmp_path / "pool" / POOLED_MD).read_text().splitlines()[1:]
    assert "\n".join(table) in once


@pytest.mark.parametrize(
    "spec, named",
    [("countdown", "is not TASK=REPORT_JSON"), ("x=MISSING", "MISSING"), ("x=NOPREMISE", "no premise record")],
)
def test_a_bad_task_argument_is_refused_in_one_line_naming_it(tmp_path, capsys, spec, named):
    from escov.paper_checks.cli import main

    (tmp_path / "NOPREMISE").write_text(json.dumps({"claims": []}), encoding="utf-8")
    spec = spec.replace("MISSING", str(tmp_path / "missing.json")).replace("NOPREMISE", str(tmp_path / "NOPREMISE"))
    named = named.replace("MISSING", "missing.json")
    assert main(["pool-tasks", spec, "--out", str(tmp_path / "pool")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and named in err and "\n" not in err
    assert not (tmp_path / "pool").exists()


def test_a_task_named_twice_is_refused(tmp_path):
    from escov.paper_checks.premise_pooled import pool_tasks_command

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"premise": _record(-0.05, 0.0)}), encoding="utf-8")
    with pytest.raises(ValueError, match="named twice"):
        pool_tasks_command([f"a={path}", f"a={path}"], tmp_path / "pool")


@pytest.mark.parametrize(
    "name, value, reading, agreeing",
    [
        ("grpo_plateau_minus_base", -0.05, "claimed_side", 3),  # (a) claims < 0: GRPO narrows on every task
        ("grpo_plateau_minus_base", 0.05, "other_side", 0),  # widens on every task: the other side, none agree
        ("es_at_grpo_plateau", 0.05, "claimed_side", 3),  # (b') claims > 0
        ("es_at_grpo_plateau", -0.05, "other_side", 0),
        ("es_minus_base_end", 0.05, "differs", 3),  # (e) two-sided: excludes 0 above
        ("es_minus_base_end", -0.05, "differs", 3),  # and below; tasks agree on the pooled mean's side
    ],
)
def test_each_member_is_read_on_the_side_its_test_claims(name, value, reading, agreeing):
    """Three equal tasks at +-0.05 with se 0.01: the pooled interval is value +- t_{2} 0.01 / sqrt(3) = +-0.0248, so it
    excludes 0; a directional member reads "claimed_side" on its claimed side and "other_side" on the other (where no
    task agrees, though every task's interval excludes 0), a two-sided one "differs" on either side."""
    a, e, b = -0.05, 0.0, None
    if name == "grpo_plateau_minus_base":
        a = value
    elif name == "es_minus_base_end":
        e = value
    else:
        b = value
    entry = pool_premise({t: _record(a, e, b=b) for t in ("t1", "t2", "t3")})["pooled"][name]
    assert entry["reading"] == reading and len(entry["tasks_agreeing"]) == agreeing


def test_a_pool_that_holds_zero_is_inconclusive_on_either_kind_of_test():
    """(a) and (e) at -0.005 on every task with se 0.01: the pool's interval [-0.0298, +0.0198] holds 0."""
    pooled = pool_premise({t: _record(-0.005, -0.005) for t in ("t1", "t2", "t3")})["pooled"]
    assert pooled["grpo_plateau_minus_base"]["reading"] == pooled["es_minus_base_end"]["reading"] == "inconclusive"
    assert pooled["grpo_plateau_minus_base"]["tasks_agreeing"] == pooled["es_minus_base_end"]["tasks_agreeing"] == []


def test_pooled_md_holds_each_task_the_pool_its_spread_the_tasks_agreeing_and_holm():
    """Three equal tasks: (a) -0.05 each (pool t = -0.05 / (0.01 / sqrt 3), p = 2 F_t2(t), Holm x3 as the smallest of
    three), (d') and (e) 0 (p = 1, adjusted 1); (b') read on no task: its row names why and no pool."""
    from escov.paper_checks.verdict import fmt_interval

    result = pool_premise({t: _record(-0.05, 0.0) for t in ("t1", "t2", "t3")})
    lines = render(result)
    assert lines[:2] == ["# The premise on several tasks", ""]
    assert lines[2].startswith("Tasks: t1, t2, t3. Each registered endpoint")
    assert lines[4] == "| endpoint | t1 | t2 | t3 | pooled | between-task sd | tasks agreeing | Holm |"
    assert lines[5] == "| --- | --- | --- | --- | --- | --- | --- | --- |"
    one = fmt_interval(-0.05, *(-0.05 + s * stats.t.ppf(0.975, 40) * 0.01 for s in (-1, 1)))
    se = 0.01 / math.sqrt(3)
    pool = fmt_interval(-0.05, *(-0.05 + s * stats.t.ppf(0.975, 2) * se for s in (-1, 1)))
    p_adj = 3 * 2 * stats.t.cdf(-0.05 / se, 2)
    tail = f"| {pool}: claimed_side | 0.00 pts (I^2 0%) | 3 of 3 | p adj {p_adj:.3g}, rejected |"
    assert f"| (a) | {one} | {one} | {one} {tail}" in lines
    b_row = next(line for line in lines if line.startswith("| (b') |"))
    assert b_row.startswith("| (b') | not read | not read | not read | ") and b_row.endswith(" | | | |")
    zero = fmt_interval(0.0, *(s * stats.t.ppf(0.975, 2) * se for s in (-1, 1)))
    e_row = next(line for line in lines if line.startswith("| (e) |"))
    assert f"| {zero}: inconclusive | 0.00 pts (I^2 0%) | 0 of 3 | p adj 1, not rejected |" in e_row
    assert lines[-1] == ""


def test_no_task_is_refused():
    with pytest.raises(ValueError, match="^pool-tasks: no task given$"):
        pool_premise({})


@pytest.mark.parametrize(
    "lo, hi, side, reading",
    [
        (0.0, 0.05, 0, "inconclusive"),  # two-sided: an interval touching 0 does not exclude it
        (-0.05, 0.0, 0, "inconclusive"),
        (0.0, 0.05, 1, "inconclusive"),  # directional: touching 0 lies on neither side
        (-0.05, 0.0, 1, "inconclusive"),
        (-0.05, 0.0, -1, "inconclusive"),
        (0.0, 0.05, -1, "inconclusive"),
    ],
)
def test_an_interval_that_touches_zero_is_read_as_inconclusive(lo, hi, side, reading):
    assert _reading({"lo": lo, "hi": hi}, side) == reading


def test_a_task_whose_interval_touches_zero_does_not_agree():
    for side, mean in ((1, 0.1), (-1, -0.1), (0, 0.1), (0, -0.1)):
        assert not _agrees({"lo": 0.0, "hi": 0.05}, side, mean) and not _agrees({"lo": -0.05, "hi": 0.0}, side, mean)


def test_pooled_md_states_the_method_and_each_rows_spread_in_points():
    """The methods sentence word for word, and a row's tau and I^2 from a hand-computed DerSimonian-Laird fit: two
    tasks at -0.02 and -0.08 with se 0.01 (weights w = 10^4): Q = sum w (y - mean)^2 = 2 x 10^4 x 0.03^2 = 18,
    C = sum w - sum w^2 / sum w = 2 x 10^4 - 10^4 = 10^4, tau^2 = (Q - 1) / C = 17 / 10^4, so tau = 0.04123 (4.12
    points) and I^2 = (Q - 1) / Q = 17 / 18."""
    result = pool_premise({"t1": _record(-0.02, 0.0), "t2": _record(-0.08, 0.0)})
    lines = render(result)
    assert lines[2] == (
        "Tasks: t1, t2. Each registered endpoint read on each task as that task's record reads it, then pooled "
        "(random effects: DerSimonian-Laird spread, Hartung-Knapp-Sidik-Jonkman interval with its factor kept at "
        "least 1, t on tasks - 1 degrees of freedom); Holm across the pooled endpoints."
    )
    assert lines[3] == ""
    a = result["pooled"]["grpo_plateau_minus_base"]
    assert a["tau"] == pytest.approx(math.sqrt(17 / 10000)) and a["i2"] == pytest.approx(17 / 18)
    row = next(line for line in lines if line.startswith("| (a) |"))
    assert "| 4.12 pts (I^2 94%) |" in row


def test_a_two_sided_pool_at_exactly_zero_counts_tasks_above_it():
    # the tie's convention: a pooled mean of exactly 0 takes the positive side
    above, below = {"lo": 0.01, "hi": 0.03}, {"lo": -0.03, "hi": -0.01}
    assert _agrees(above, 0, 0.0) and not _agrees(below, 0, 0.0)
    assert _agrees(below, 0, -1e-12) and not _agrees(above, 0, -1e-12)


@pytest.mark.parametrize(
    "spec, named",
    [("=REPORT", "is not TASK=REPORT_JSON"), ("countdown=", "is not TASK=REPORT_JSON"), ("x=BADJSON", "not JSON")],
)
def test_a_task_or_path_left_out_or_a_file_not_json_is_named(tmp_path, spec, named):
    from escov.paper_checks.premise_pooled import pool_tasks_command

    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    spec = spec.replace("BADJSON", str(tmp_path / "bad.json")).replace("REPORT", str(tmp_path / "r.json"))
    with pytest.raises(ValueError, match=named) as err:
        pool_tasks_command([spec], tmp_path / "pool")
    assert named != "not JSON" or str(tmp_path / "bad.json") in str(err.value)


def test_a_report_path_may_hold_an_equals_sign_and_the_pool_folder_may_be_new_and_nested(tmp_path):
    from escov.paper_checks.premise_pooled import pool_tasks_command

    folder = tmp_path / "a=b"
    folder.mkdir()
    for task, a in (("countdown", -0.05), ("grid_paths", -0.03)):
        (folder / f"{task}.json").write_text(json.dumps({"premise": _record(a, 0.0)}), encoding="utf-8")
    specs = [f"{t}={folder / f'{t}.json'}" for t in ("countdown", "grid_paths")]
    out = tmp_path / "new" / "pool"
    result = pool_tasks_command(specs, out)
    assert sorted(result["premise_by_task"]) == ["countdown", "grid_paths"]
    assert pool_tasks_command(specs, out) == result  # a second pool into the same folder
    assert json.loads((out / POOLED_JSON).read_text(encoding="utf-8")) == json.loads(json.dumps(result))


def test_distinct_solutions_are_written_as_counts_not_points():
    # (d') is a difference of distinct correct solutions per prompt: 0.5 +- t_40 x 0.01 per task, pooled 0.5 +-
    # t_1 x 0.01 / sqrt 2 = [0.410, 0.590]; never "+50.00 pts"
    result = pool_premise({"t1": _record(-0.05, 0.0, d=0.5), "t2": _record(-0.05, 0.0, d=0.5)})
    row = next(line for line in render(result) if line.startswith("| (d') |"))
    assert row.startswith("| (d') | +0.500 [+0.480, +0.520] | +0.500 [+0.480, +0.520] | +0.50 [+0.41, +0.59]: ")
    assert "pts" not in row and "| 0.00 (I^2 0%) |" in row
    a_row = next(line for line in render(result) if line.startswith("| (a) |"))
    assert "-5.00 pts [" in a_row and "| 0.00 pts (I^2 0%) |" in a_row


def test_the_pooled_section_goes_before_all_claims_or_at_the_end_replacing_only_itself(tmp_path):
    """Each REPORT.md written out here: the section's heading one level down, its lines as given; a second pool
    replaces the first up to the next heading, whatever follows; a section at the end is replaced to the end."""
    from escov.paper_checks.premise_pooled import _into_report_md

    md = tmp_path / "REPORT.md"
    md.write_text("# r\n\n## P\n\n- x\n\n## All claims\n\n| t |\n", encoding="utf-8")
    _into_report_md(md, ["# Pooled", "", "- a", "- b"])
    assert md.read_text(encoding="utf-8") == "# r\n\n## P\n\n- x\n\n## Pooled\n\n- a\n- b\n## All claims\n\n| t |\n"
    _into_report_md(md, ["# Pooled", "", "- c"])
    assert md.read_text(encoding="utf-8") == "# r\n\n## P\n\n- x\n\n## Pooled\n\n- c\n## All claims\n\n| t |\n"
    md.write_text("# r\n\n## Pooled\n\n- old\n\n## A\n\nx\n\n## B\n\ny\n", encoding="utf-8")
    _into_report_md(md, ["# Pooled", "", "- a"])
    assert md.read_text(encoding="utf-8") == "# r\n\n## A\n\nx\n\n## B\n\ny\n## Pooled\n\n- a\n"
    md.write_text("# r\n\n## A\n\nx\n\n## Pooled\n\n- old\n", encoding="utf-8")
    _into_report_md(md, ["# Pooled", "", "- a"])
    assert md.read_text(encoding="utf-8") == "# r\n\n## A\n\nx\n\n## Pooled\n\n- a\n"
