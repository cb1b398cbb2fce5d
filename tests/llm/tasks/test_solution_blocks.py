"""Countdown's instances by their number of distinct solutions (llm/tasks/solution_blocks.py, `eval_solutions`),
checked against a brute force written here: every order, tree and operator over the numbers in exact fractions,
the hits told apart by their canonical form (safe_arith.canonical_form: what "distinct" means)."""

import itertools
from fractions import Fraction
from types import SimpleNamespace

import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import eval_set, split_set
from escov.llm.shared_measurements import BASE_EVAL_KEYS, PROBE_KEYS, measurement_key
from escov.llm.tasks import get_task
from escov.llm.tasks.base import split_of
from escov.llm.tasks.countdown import Countdown
from escov.llm.tasks.safe_arith import canonical_form
from escov.llm.tasks.solution_blocks import block_problems, block_size


def _expressions(numbers: tuple[int, ...]):
    """(text, value) of every fully parenthesised expression over the numbers in this order."""
    if len(numbers) == 1:
        yield str(numbers[0]), Fraction(numbers[0])
        return
    for cut in range(1, len(numbers)):
        for (lt, lv), (rt, rv) in itertools.product(_expressions(numbers[:cut]), _expressions(numbers[cut:])):
            yield f"({lt}+{rt})", lv + rv
            yield f"({lt}-{rt})", lv - rv
            yield f"({lt}*{rt})", lv * rv
            if rv:
                yield f"({lt}/{rt})", lv / rv


def _solutions_by_value(numbers) -> dict[Fraction, set[str]]:
    out: dict[Fraction, set[str]] = {}
    for order in set(itertools.permutations(numbers)):
        for text, value in _expressions(order):
            if value.denominator == 1 and value >= 1:
                out.setdefault(value, set()).add(canonical_form(text))
    return out


def _brute_count(numbers, target) -> int:
    return len(_solutions_by_value(numbers).get(Fraction(target), ()))


def _instance(p):
    return tuple(sorted(p.meta["numbers"])), p.meta["target"]


def _enumerated_block(max_number: int, max_target: int, split: str, k: int) -> set[tuple]:
    """Every 3-number instance of the split with exactly k solutions, by the brute force."""
    out = set()
    for numbers in itertools.combinations_with_replacement(range(1, max_number + 1), 3):
        if split_of(",".join(map(str, numbers))) == split:
            for value, forms in _solutions_by_value(numbers).items():
                if value <= max_target and len(forms) == k:
                    out.add((numbers, int(value)))
    return out


def test_the_brute_force_counts_what_it_should():
    assert _brute_count([1, 2, 3], 6) == 3  # 1+2+3, 1*2*3 and 2*3/1 (3*(2/1), 3/(1/2): the same form)
    assert _brute_count([2, 2, 2], 8) == 2  # 2*2*2 and (2+2)*2
    assert _brute_count([2, 2, 2], 7) == 0


def test_a_drawn_block_holds_instances_of_the_test_split_with_exactly_k_solutions():
    problems = block_problems(get_task("countdown3"), "test", 24, 0, 2)
    assert len({_instance(p) for p in problems}) == 24
    for p in problems:
        assert split_of(",".join(map(str, sorted(p.meta["numbers"])))) == "test"
        assert _brute_count(p.meta["numbers"], p.meta["target"]) == 2 == p.meta["n_solutions"]
    ones = block_problems(get_task("countdown3"), "validation", 8, 0, 1)
    assert [_brute_count(p.meta["numbers"], p.meta["target"]) for p in ones] == [1] * 8


def test_the_block_is_the_tasks_own_stream_with_min_solutions_lowered():
    lowered = Countdown(min_numbers=3, max_numbers=3, min_solutions=2).problems("test", 60, seed=0)
    kept = [p for p in lowered if p.meta["n_solutions"] == 2]
    assert len(kept) >= 24
    assert [p.id for p in block_problems(get_task("countdown3"), "test", 24, 0, 2)] == [p.id for p in kept[:24]]


def test_a_small_tasks_block_is_the_enumerated_one_and_asking_more_names_its_size():
    task = Countdown(min_numbers=3, max_numbers=3, max_number=12, max_target=30)
    truth = _enumerated_block(12, 30, "test", 2)
    assert len(truth) > 5 and block_size(task, "test", 2) == len(truth)
    drawn = block_problems(task, "test", len(truth), 0, 2)
    assert {_instance(p) for p in drawn} == truth
    with pytest.raises(ValueError) as err:
        block_problems(task, "test", len(truth) + 1, 0, 2)
    assert str(err.value) == (
        f"eval_solutions = 2: the test split holds {len(truth)} instances with exactly 2 distinct solutions and "
        f"{len(truth) + 1} were asked for (eval_problems or the curve's prompts): ask for {len(truth)} or fewer"
    )


@pytest.mark.slow
def test_countdown3_holds_368_test_and_386_validation_instances_with_exactly_two_solutions():
    """The lead's enumeration (every multiset of 3 numbers in 1..50, every target 1..100) against block_size, and
    the brute force here over the test split."""
    task = get_task("countdown3")
    assert block_size(task, "test", 2) == 368 == len(_enumerated_block(50, 100, "test", 2))
    assert block_size(task, "validation", 2) == 386


def test_eval_solutions_0_is_the_tasks_own_draw_and_k_moves_test_and_validation_only():
    plain = TrainConfig(task="countdown3", eval_problems=12)
    fresh = TrainConfig(task="countdown3", eval_problems=12, eval_solutions=2)
    task = Countdown(min_numbers=3, max_numbers=3)
    assert eval_set(plain).ids == [p.id for p in task.problems("test", 12, seed=0)]
    assert split_set(plain, "validation").ids == [p.id for p in task.problems("validation", 12, seed=0)]
    assert eval_set(fresh).ids == [p.id for p in block_problems(task, "test", 12, 0, 2)]
    assert split_set(fresh, "test").ids == eval_set(fresh).ids
    assert split_set(fresh, "validation").ids == [p.id for p in block_problems(task, "validation", 12, 0, 2)]
    assert not set(eval_set(fresh).ids) & set(eval_set(plain).ids)
    assert split_set(fresh, "train", 8).ids == split_set(plain, "train", 8).ids  # training-split curves unchanged


def test_a_task_that_cannot_honour_eval_solutions_refuses_it_in_one_line():
    for settings in ({"task": "arithmetic"}, {"task": "grid_paths"}, {"task": "countdown", "test_data": "t.json"}):
        with pytest.raises(ValueError) as err:
            TrainConfig(eval_solutions=2, **settings)
        assert "eval_solutions = 2 needs generated problems of task countdown or countdown3" in str(err.value)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="eval_solutions must be an integer >= 0"):
        TrainConfig(task="countdown3", eval_solutions=-1)
    with pytest.raises(ValueError, match=r"task 'arithmetic' cannot \(give eval_solutions = 0\)"):
        eval_set(TrainConfig(task="countdown3", eval_solutions=2), task=get_task("arithmetic"))


def test_shared_base_evaluations_are_keyed_by_eval_solutions_only_when_set(tmp_path):
    cfg = {"task": "countdown3", "model": str(tmp_path)}
    plain, fresh = TrainConfig(**cfg), TrainConfig(**cfg, eval_solutions=2)
    assert measurement_key(plain, BASE_EVAL_KEYS) != measurement_key(fresh, BASE_EVAL_KEYS)
    assert measurement_key(plain, PROBE_KEYS) == measurement_key(fresh, PROBE_KEYS)  # the probe is not moved


def test_train_solutions_draws_the_training_pool_from_the_block_and_0_keeps_the_tasks_own_pool():
    from escov.llm.problem_sets import train_pool

    task = Countdown(min_numbers=3, max_numbers=3)
    plain = TrainConfig(task="countdown3", train_pool=16, batch_size=8, seed=3)
    block = TrainConfig(task="countdown3", train_pool=16, batch_size=8, seed=3, train_solutions=2)
    assert [p.id for p in train_pool(plain, task)] == [p.id for p in task.problems("train", 16, seed=3)]
    drawn = train_pool(block, task)
    assert len({p.id for p in drawn}) == 16
    for p in drawn:  # every prompt a train-split instance with exactly two solutions, counted by brute force here
        numbers, target = _instance(p)
        assert split_of(",".join(map(str, sorted(numbers)))) == "train" and _brute_count(numbers, target) == 2
    assert [p.id for p in drawn] == [p.id for p in block_problems(task, "train", 16, 3, 2)]  # the run's seed draws it
    with pytest.raises(ValueError, match="train_solutions = 2 needs generated problems of task countdown"):
        TrainConfig(task="arithmetic", train_solutions=2)


def test_eval_skip_moves_the_test_prompts_past_the_first_m_and_leaves_validation_alone(tmp_path):
    """eval_skip = m: the test problems are the draw's m+1-th to m+n-th (the answer skips the prompts that runs
    choosing its settings evaluated at their end); validation, the key of shared base evaluations and the
    refusals read as stated."""
    task = Countdown(min_numbers=3, max_numbers=3)
    skipped = TrainConfig(task="countdown3", eval_problems=5, eval_solutions=2, eval_skip=3)
    drawn = [p.id for p in block_problems(task, "test", 8, 0, 2)]
    assert eval_set(skipped).ids == drawn[3:8]
    assert split_set(skipped, "test").ids == drawn[3:8]
    assert split_set(skipped, "validation").ids == [p.id for p in block_problems(task, "validation", 5, 0, 2)]
    plain = TrainConfig(task="countdown3", eval_problems=4, eval_skip=2)
    assert eval_set(plain).ids == [p.id for p in task.problems("test", 6, seed=0)][2:]
    cfg = {"task": "countdown3", "model": str(tmp_path), "eval_solutions": 2}
    assert measurement_key(TrainConfig(**cfg), BASE_EVAL_KEYS) != measurement_key(
        TrainConfig(**cfg, eval_skip=8), BASE_EVAL_KEYS
    )
    with pytest.raises(ValueError, match="eval_skip must be an integer >= 0"):
        TrainConfig(task="countdown3", eval_skip=-1)
    with pytest.raises(ValueError, match=r"eval_skip = 2 skips generated test problems.*\(give eval_skip = 0\)$"):
        TrainConfig(task="countdown", test_data="t.json", eval_skip=2)


@pytest.mark.parametrize("numbers", [(2, 3), (1, 2, 3), (2, 2, 5), (1, 3, 4, 6)])
def test_every_value_an_expression_of_the_numbers_takes_is_enumerated(numbers):
    """solution_blocks._values against every order, tree and operator over the numbers (the brute force above)."""
    from escov.llm.tasks.solution_blocks import _values

    brute = {value for order in set(itertools.permutations(numbers)) for _, value in _expressions(order)}
    assert _values(numbers) == brute


def test_a_block_counts_the_instances_whose_target_is_the_largest_allowed():
    """The largest target of the enumerated block taken as max_target: its instances are still in the block."""
    top = max(target for _, target in _enumerated_block(12, 30, "test", 2))
    task = Countdown(min_numbers=3, max_numbers=3, max_number=12, max_target=top)
    truth = _enumerated_block(12, top, "test", 2)
    assert any(target == top for _, target in truth) and block_size(task, "test", 2) == len(truth)


def test_a_block_asked_for_exactly_its_size_is_drawn_whole_once_its_size_is_counted(monkeypatch):
    """The exact size taken at the first draw (COUNT_AFTER_DISTINCT lowered to 1): asking for all of it is allowed."""
    from escov.llm.tasks import solution_blocks

    monkeypatch.setattr(solution_blocks, "COUNT_AFTER_DISTINCT", 1)
    task = Countdown(min_numbers=3, max_numbers=3, max_number=12, max_target=30)
    truth = _enumerated_block(12, 30, "test", 2)
    assert {_instance(p) for p in block_problems(task, "test", len(truth), 5, 2)} == truth


def test_a_block_is_drawn_from_generated_countdown_only_and_k_is_a_positive_integer():
    from escov.llm.tasks.solution_blocks import block_problems, block_size, countdown_of

    task = get_task("countdown3")
    assert countdown_of(task) is task
    wrapped = SimpleNamespace(task=task, name="countdown3")  # a reward function's task holds the one it scores
    assert countdown_of(wrapped) is task
    with pytest.raises(ValueError) as err:
        block_problems(get_task("subset_sum"), "test", 2, 0, 1)
    assert str(err.value) == (
        "eval_solutions draws generated Countdown instances by their solution count; task 'subset_sum' cannot "
        "(give eval_solutions = 0)"
    )
    for k in (0, 1.0, True):
        with pytest.raises(ValueError, match=rf"^eval_solutions must be an integer >= 1 here, got {k!r}$"):
            block_problems(task, "test", 2, 0, k)
    with pytest.raises(ValueError, match="^block sizes are enumerated for at most 3 numbers$"):
        block_size(get_task("countdown"), "test", 1)
    drawn = block_problems(task, "validation", 2, 0, 1)
    assert all(p.prompt and p.id.startswith("countdown") for p in drawn)


@pytest.mark.parametrize("style", ["instruct", "paper"])
def test_a_blocks_prompts_are_written_in_the_tasks_prompt_style(style):
    from escov.llm.tasks.countdown import format_prompt
    from escov.llm.tasks.solution_blocks import block_problems

    task = Countdown(3, 3, prompt_style=style)
    got = block_problems(task, "test", 4, 0, 2)
    assert [p.prompt for p in got] == [format_prompt(p.meta["numbers"], p.meta["target"], style) for p in got]
    assert all(p.prompt != format_prompt(p.meta["numbers"], p.meta["target"]) for p in got)


def test_a_draw_is_refused_only_after_its_repeats_in_a_row_not_its_repeats_in_all(monkeypatch):
    """The exhaustion rule counts repeats in a row (a new instance starts the count again): with the limit lowered
    to 40, a 4-number draw (never counted exactly) whose 30 one-solution instances come after more than 40 repeats
    in all, but never 40 in a row, is drawn; the instances are the stream's own, replayed here."""
    import random

    from escov.llm.tasks import solution_blocks
    from escov.llm.tasks.countdown import distinct_solutions

    monkeypatch.setattr(solution_blocks, "MAX_DRAWS_WITHOUT_NEW", 40)
    settings = {"min_numbers": 3, "max_numbers": 4, "max_number": 8, "max_target": 20}
    stream = Countdown(**settings, min_solutions=1)
    rng = random.Random("countdown/test/7")  # Countdown.problems' stream for split test, seed 7
    seen, wanted, repeats, in_a_row, longest = set(), [], 0, 0, 0
    while len(wanted) < 30:
        numbers, _, target = stream.sample_expression(rng, "test")
        key = (tuple(sorted(numbers)), target)
        if key in seen:
            repeats, in_a_row = repeats + 1, in_a_row + 1
            longest = max(longest, in_a_row)
            continue
        seen.add(key)
        in_a_row = 0
        if len(distinct_solutions(numbers, target)) == 1:  # the count itself: the brute-force tests above
            wanted.append(key)
    assert repeats > 40 > longest  # the case the rule tells apart
    drawn = block_problems(Countdown(**settings), "test", 30, 7, 1)
    assert [_instance(p) for p in drawn] == wanted
