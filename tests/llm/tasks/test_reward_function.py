"""TRL's reward contract on a verl-style parquet: one call per batch with lists (prompts, completions,
completion_ids, trainer_state, every column), several functions with reward_weights, None = does not
apply, numpy arrays and callables, verl's compute_score adapted, and errors that name the function,
the data row and the completion with the user's own traceback lines. Totals are checked against
values computed by hand from TRL's rule (sum of w_j r_j over the functions that apply). Then the contract call
by call: the arguments of text and chat prompts, the frames and cuts of error messages, each refusal of a
returned value, a path, a weight or a callable as its full message, and what the scored task keeps of its task."""

import math
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from escov.llm.engines import make_engine
from escov.llm.reward_stats import reward_stats
from escov.llm.rollout import rollout
from escov.llm.tasks import get_task
from escov.llm.tasks.reward_function import RewardFunctionError, RewardFunctions

ROWS = [
    {
        "data_source": "add" if i % 2 else "sub",
        "prompt": [{"role": "user", "content": f"{i}+{i % 7}="}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(i + i % 7)},
        "extra_info": {"index": i},
    }
    for i in range(48)
]

REWARDS = '''
import numpy as np
CALLS = []

def accuracy(prompts, completions, reward_model, **kwargs):
    CALLS.append(("accuracy", prompts, completions, reward_model, kwargs))
    return [1.0 if c[0]["content"].strip() == rm["ground_truth"] else 0.0 for c, rm in zip(completions, reward_model)]

def digits(prompts, completions, data_source, **kwargs):
    """A shaped reward for 'add' rows only (None: does not apply), returned as a numpy array."""
    CALLS.append(("digits", prompts, completions, data_source, kwargs))
    texts = [c[0]["content"] for c in completions]
    return np.array([None if s == "sub" else len(t) for t, s in zip(texts, data_source)], dtype=object)

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    CALLS.append(("compute_score", data_source, solution_str, ground_truth, extra_info))
    return {"score": 1.0 if solution_str.strip() == ground_truth else 0.25, "acc": 0}

def fails_on_row_7(prompts, completions, extra_info, **kwargs):
    out = []
    for info in extra_info:
        out.append(lookup(info))
    return out

def lookup(info):
    return {0: 0.0}[info["index"] if info["index"] == 7 else 0]
'''


@pytest.fixture
def verl_parquet(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet")
    return tmp_path / "train.parquet"


@pytest.fixture
def user_rewards(tmp_path, monkeypatch):
    (tmp_path / "user_rewards.py").write_text(REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield sys.modules.setdefault("user_rewards", __import__("user_rewards"))
    sys.modules.pop("user_rewards", None)


def by_index(task, indices):
    problems = {p.id: p for p in task.problems("test", len(ROWS), seed=0)}
    return [problems[f"prompts/test/{i}"] for i in indices]


def test_two_weighted_functions_none_entries_and_numpy_arrays_give_trls_total(verl_parquet, user_rewards):
    task = get_task(
        "prompts",
        test_data=verl_parquet,
        reward_function=["user_rewards:accuracy", "user_rewards:digits"],
        reward_weights=[1.0, 0.5],
    )
    problems = by_index(task, [1, 1, 2, 3])  # 1, 3: "add"; 2: "sub" (digits does not apply)
    completions = ["2", "22", "4", "6"]  # row 1's truth is "2", row 2's "4", row 3's "6"
    scores = task.score_batch(problems, completions, [[5], [5, 5], [6], [7]], step=3)
    assert scores.parts["accuracy"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert scores.parts["digits"][[0, 1, 3]].tolist() == [1.0, 2.0, 1.0] and math.isnan(scores.parts["digits"][2])
    assert scores.total.tolist() == [1.0 + 0.5 * 1, 0.0 + 0.5 * 2, 1.0, 1.0 + 0.5 * 1]  # None left out of the sum
    assert task.reward_names == ["accuracy", "digits"]
    ((name, prompts, given, reward_model, kwargs),) = [c for c in user_rewards.CALLS if c[0] == "accuracy"]
    assert prompts == [ROWS[1]["prompt"], ROWS[1]["prompt"], ROWS[2]["prompt"], ROWS[3]["prompt"]]
    assert given == [[{"role": "assistant", "content": c}] for c in completions]
    assert reward_model == [ROWS[i]["reward_model"] for i in (1, 1, 2, 3)]
    assert kwargs["completion_ids"] == [[5], [5, 5], [6], [7]] and kwargs["trainer_state"].global_step == 3
    assert kwargs["data_source"] == ["add", "add", "sub", "add"] and kwargs["extra_info"][0] == {"index": 1}
    # a completion no function applies to gets 0 (TRL's nansum)
    only_digits = get_task("prompts", test_data=verl_parquet, reward_function="user_rewards:digits")
    assert only_digits.score_batch(by_index(only_digits, [2]), ["44"]).total.tolist() == [0.0]


def test_each_function_is_called_once_per_batch_of_sampled_completions(verl_parquet, user_rewards, tiny_model_dir):
    task = get_task(
        "prompts",
        test_data=verl_parquet,
        reward_function=["user_rewards:accuracy", "user_rewards:digits"],
        reward_weights=[1.0, 0.5],
    )
    problems = by_index(task, [0, 1, 2])
    with make_engine("hf", tiny_model_dir, dtype=torch.float32, seed=0) as engine:
        out = rollout(engine, task, problems, n=4, temperature=1.0, max_new_tokens=6, seed=1, step=2)
    calls = user_rewards.CALLS
    assert [c[0] for c in calls] == ["accuracy", "digits"]  # one call each for 3 prompts x 4 samples
    assert len(calls[0][2]) == 12 and calls[0][1] == [ROWS[i]["prompt"] for i in (0, 1, 2) for _ in range(4)]
    assert calls[0][4]["completion_ids"] == [c.token_ids for row in out.completions for c in row]
    assert calls[0][4]["trainer_state"].global_step == 2
    expected = [
        [
            float(c.text.strip() == ROWS[i]["reward_model"]["ground_truth"])
            + (0.5 * len(c.text) if ROWS[i]["data_source"] == "add" else 0.0)
            for c in row
        ]
        for i, row in zip((0, 1, 2), out.completions)
    ]
    assert out.rewards.tolist() == expected
    assert out.parts["accuracy"].shape == (3, 4) and np.isnan(out.parts["digits"][0]).all()


def test_verls_compute_score_is_called_per_completion_with_the_verl_columns(verl_parquet, user_rewards):
    task = get_task("prompts", test_data=verl_parquet, reward_function="user_rewards:compute_score")
    scores = task.score_batch(by_index(task, [4, 5]), [" 8 ", "0"])
    assert scores.total.tolist() == [1.0, 0.25] and list(scores.parts) == ["compute_score"]
    assert user_rewards.CALLS == [
        ("compute_score", "sub", " 8 ", "8", {"index": 4}),
        ("compute_score", "add", "0", "10", {"index": 5}),
    ]


def test_callables_are_taken_in_the_python_api(verl_parquet):
    def length(prompts, completions, **kwargs):
        return np.array([float(len(c[0]["content"])) for c in completions])

    task = get_task("prompts", test_data=verl_parquet, reward_function=[length, length], reward_weights=[2.0, 1.0])
    assert task.reward_names == ["length_0", "length_1"]
    assert task.score_batch(by_index(task, [0]), ["abc"]).total.tolist() == [9.0]


def test_a_raising_reward_names_itself_the_row_and_the_completion_with_its_own_traceback(verl_parquet, user_rewards):
    task = get_task("prompts", test_data=verl_parquet, reward_function="user_rewards:fails_on_row_7")
    with pytest.raises(RewardFunctionError) as err:
        task.score_batch(by_index(task, [5, 6, 7, 8]), ["a", "b", "the completion", "d"])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "reward_function 'user_rewards:fails_on_row_7' raised KeyError: 7 on data row prompts/test/7"
    )
    assert "completion 'the completion'" in message
    assert 'user_rewards.py", line 26, in lookup' in message and "line 22, in fails_on_row_7" in message
    assert "reward_function.py" not in message  # escov's own frames are left out
    as_verl = get_task(
        "prompts",
        test_data=verl_parquet,
        reward_function=lambda data_source, solution_str, ground_truth, extra_info: 1 / 0,
    )
    with pytest.raises(
        RewardFunctionError,
        match=r"'<lambda>' raised ZeroDivisionError: division by zero on data row "
        r"prompts/test/3, completion 'x'",
    ):
        as_verl.score_batch(by_index(as_verl, [3]), ["x"])


def test_weights_must_match_the_functions():
    with pytest.raises(ValueError, match=r"one number per reward function: 2 functions, got 1 weights \[1.0\]"):
        RewardFunctions(["m:f", "m:g"], [1.0])
    with pytest.raises(ValueError, match="reward_weights are given without a reward_function"):
        get_task("countdown", reward_weights=[1.0])
    with pytest.raises(ValueError, match="reward_weights must be finite numbers"):
        RewardFunctions(["m:f"], [float("nan")])


def test_a_module_is_found_in_the_current_folder_and_a_missing_one_hints_at_a_file(tmp_path, monkeypatch, verl_parquet):
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "here_rewards.py").write_text(
        "def one(prompts, completions, **kw):\n    return [1.0] * len(completions)\n"
    )
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(folder))])
    try:
        task = get_task("prompts", test_data=verl_parquet, reward_function="here_rewards:one")
        assert task.score_batch(by_index(task, [0]), ["x"]).total.tolist() == [1.0]
    finally:
        sys.modules.pop("here_rewards", None)
    with pytest.raises(ValueError, match=r"cannot import 'elsewhere'.*give 'path/to/elsewhere.py:one'"):
        get_task("prompts", test_data=verl_parquet, reward_function="elsewhere:one")


def test_reward_statistics_by_hand():
    from escov.llm.tasks.base import Problem

    problems = [
        Problem("a", "p", {"columns": {"data_source": "x"}}),
        Problem("b", "q", {"columns": {"data_source": "y"}}),
    ]
    rewards = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 1.0]])
    parts = {"f": np.array([[1.0, np.nan, 1.0], [np.nan, np.nan, np.nan]])}
    correct = np.array([[True, True, True], [False, True, True]])  # total >= 1, by hand
    stats = reward_stats(rewards, parts, np.array([[1, 2, 3], [4, 5, 6]]), problems, correct)
    assert stats["reward_mean"] == 1.0 and stats["reward_std"] == pytest.approx(np.std([1, 1, 1, 0, 2, 1]))
    assert stats["rewards"] == {"f": {"mean": 1.0, "std": 0.0, "applied": pytest.approx(2 / 6)}}
    assert stats["reward_zero_std_share"] == 0.5 and stats["mean_response_tokens"] == 3.5
    assert stats["by_data_source"] == {
        "x": {"reward_mean": 1.0, "reward_std": 0.0, "pass_at_1": 1.0, "prompts": 1},
        "y": {
            "reward_mean": 1.0,
            "reward_std": pytest.approx(np.std([0, 2, 1])),
            "pass_at_1": pytest.approx(2 / 3),
            "prompts": 1,
        },
    }
    # the share correct per source follows the task's decision, not the total (a format reward can pass the total)
    chosen = reward_stats(rewards, parts, np.ones((2, 3)), problems, np.array([[False, False, True], [False] * 3]))
    assert chosen["by_data_source"]["x"]["pass_at_1"] == pytest.approx(1 / 3)
    assert chosen["by_data_source"]["y"]["pass_at_1"] == 0.0
    one_of_three = reward_stats(
        np.array([[1.0, 1.0], [0.0, 1.0], [2.0, 5.0]]),
        {},
        np.ones((3, 2)),
        [Problem("d", "s")] * 3,
        np.ones((3, 2), dtype=bool),
    )
    assert one_of_three["reward_zero_std_share"] == pytest.approx(1 / 3)  # only the first prompt's samples agree
    never = reward_stats(rewards, {"g": np.full((2, 3), np.nan)}, np.ones((2, 3)), [Problem("c", "r")] * 2, correct)
    assert never["rewards"]["g"] == {"mean": None, "std": None, "applied": 0.0} and "by_data_source" not in never


# ----------------------------------------------------------------------------- the contract, call by call

FRAMES = """TABLE = {"1": 1.0}


def batch_only(prompts, completions, **kwargs):
    assert len(completions) == 1, "called with the whole batch"
    return [0.0]


def listed(prompts, completions, **kwargs):
    return [value(c) for c in completions]


def value(c):
    return first(c)


def first(c):
    return second(c)


def second(c):
    return TABLE[c]


def long_message(prompts, completions, **kwargs):
    raise ValueError("word\\n  " * 60)
"""


@pytest.fixture
def frames(tmp_path, monkeypatch):
    """A reward module in the working folder (its frames are shown by the file's name there)."""
    (tmp_path / "frame_rewards.py").write_text(FRAMES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield sys.modules.setdefault("frame_rewards", __import__("frame_rewards"))
    sys.modules.pop("frame_rewards", None)


def problem(i: int, prompt="text", **columns):
    from escov.llm.tasks.base import Problem

    return Problem(f"row-{i}", prompt, {"columns": columns})


def raised(functions, problems, completions) -> str:
    with pytest.raises(RewardFunctionError) as err:
        RewardFunctions(functions).score(problems, completions)
    return str(err.value)


def test_a_text_prompt_and_its_completion_are_given_as_text():
    seen = {}

    def record(prompts, completions, completion_ids, trainer_state, **columns):
        seen.update(
            prompts=prompts,
            completions=completions,
            completion_ids=completion_ids,
            step=trainer_state.global_step,
            columns=columns,
        )
        return [0.0] * len(completions)

    from escov.llm.tasks.base import Problem
    from escov.llm.tasks.reasoning_format import chat_prompt

    chat = chat_prompt([{"role": "user", "content": "2+2="}])
    problems = [Problem("a", "1+1=", {"answer": "2"}), Problem("b", chat, {"columns": {"answer": "4"}})]
    RewardFunctions(record).score(problems, ["2", "4"])
    assert seen == {
        "prompts": ["1+1=", [{"role": "user", "content": "2+2="}]],
        "completions": ["2", [{"role": "assistant", "content": "4"}]],
        "completion_ids": [[], []],
        "step": 0,  # no token ids given; before training
        "columns": {"answer": ["2", "4"]},
    }  # a problem's meta when it has no data columns
    assert type(seen["prompts"][0]) is str


def test_data_columns_named_like_trls_own_arguments_give_way_to_them():
    seen = {}

    def record(prompts, completions, completion_ids, trainer_state, **columns):
        seen.update(completion_ids=completion_ids, step=trainer_state.global_step, columns=columns)
        return [1.0] * len(completions)

    rows = [problem(0, completion_ids="a column", trainer_state="a column", other=1)]
    RewardFunctions(record).score(rows, ["x"], [[4, 5]], step=7)
    assert seen == {"completion_ids": [[4, 5]], "step": 7, "columns": {"other": [1]}}


def test_the_step_reaches_trainer_state_through_the_task(verl_parquet):
    steps = []

    def record(prompts, completions, trainer_state, **kwargs):
        steps.append(trainer_state.global_step)
        return [0.0] * len(completions)

    task = get_task("prompts", test_data=verl_parquet, reward_function=record)
    task.score_batch(by_index(task, [0]), ["x"])
    task.score_batch(by_index(task, [0]), ["x"], step=5)
    assert steps == [0, 5]
    countdown = get_task("countdown", reward_function=record)
    one = countdown.problems("test", 1, seed=0)[0]
    assert countdown.answer(one, "1+2") == get_task("countdown").answer(one, "1+2") is not None
    assert countdown.vote(one, "1+2") == get_task("countdown").vote(one, "1+2")
    assert countdown.size("test") == get_task("countdown").size("test")


def test_verls_ground_truth_comes_from_reward_model_else_from_its_own_column():
    seen = []

    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        seen.append((data_source, solution_str, ground_truth, extra_info))
        return 0.5 if ground_truth == solution_str else 0.0  # a number, not a dict

    rows = [
        problem(0, data_source="d", reward_model={"ground_truth": "7"}, ground_truth="other", extra_info={"i": 0}),
        problem(1, reward_model={"style": "rule"}, ground_truth="8"),
        problem(2, reward_model="not a record", ground_truth="9"),
    ]
    scores = RewardFunctions(compute_score).score(rows, ["7", "8", "0"])
    assert seen == [("d", "7", "7", {"i": 0}), (None, "8", "8", None), (None, "0", "9", None)]
    assert scores.total.tolist() == [0.5, 0.5, 0.0]


def test_a_raising_reward_shows_its_last_three_frames_most_recent_first(frames):
    message = raised("frame_rewards:listed", [problem(0), problem(1)], ["1", "{"])
    assert message.startswith(
        "reward_function 'frame_rewards:listed' raised KeyError: '{' on data row row-1, completion '{'; "
    )
    # five frames of the user's code (listed, its comprehension on the same line, value, first, second); the
    # comprehension's is not shown apart from its function's, and only the last three reach the message
    assert message.endswith(
        '; File "frame_rewards.py", line 22, in second: return TABLE[c] <- '
        'File "frame_rewards.py", line 18, in first: return second(c) <- '
        'File "frame_rewards.py", line 14, in value: return first(c)'
    )


def test_a_reward_function_without_python_frames_or_source_lines_is_named_as_such():
    import math

    message = raised(math.sqrt, [problem(0)], ["x"])
    assert message == (
        "reward_function 'sqrt' raised TypeError: math.sqrt() takes no keyword arguments on data row "
        "row-0, completion 'x'; (no Python frames)"
    )
    namespace = {}
    exec(compile("def no_source(prompts, completions, **kw):\n    return [1 / 0]\n", "<generated>", "exec"), namespace)
    assert raised(namespace["no_source"], [problem(0)], ["x"]).endswith(
        "ZeroDivisionError: division by zero on data row row-0, completion 'x'; "
        'File "<generated>", line 2, in no_source'
    )
    exec(compile("def no_file(prompts, completions, **kw):\n    return [1 / 0]\n", "", "exec"), namespace)
    assert raised(namespace["no_file"], [problem(0)], ["x"]).endswith('; File "", line 2, in no_file')  # as it is named


def test_a_reward_that_fails_only_on_the_whole_batch_is_named_at_its_first_row(frames):
    message = raised("frame_rewards:batch_only", [problem(3), problem(4)], ["first completion", "second"])
    assert message == (
        "reward_function 'frame_rewards:batch_only' raised AssertionError: called with the whole batch on "
        "the batch starting at data row row-3, completion 'first completion'; File "
        '"frame_rewards.py", line 5, in batch_only: assert len(completions) == 1, "called with the '
        'whole batch"'
    )


def test_a_long_completion_and_a_long_error_are_cut_in_the_message(frames):
    sixty = "a" * 60
    message = raised("frame_rewards:long_message", [problem(0)], [sixty])
    assert f"completion {sixty!r};" in message  # 60 characters: whole
    # the error's whitespace made single spaces, and cut to 200 characters
    assert "raised ValueError: " + ("word " * 40)[:200] + " on data row" in message
    message = raised("frame_rewards:long_message", [problem(0)], [sixty + "b"])
    assert f"completion {sixty!r}...;" in message


def test_returned_values_that_are_not_one_reward_per_completion_are_named():
    two = [problem(0), problem(1)]
    assert raised(lambda prompts, completions, **kw: np.ones((2, 1)), two, ["x", "y"]) == (
        "reward_function '<lambda>' must return a list of 2 numbers (one per completion), got [[1.]\n [1.]]"
    )
    assert raised(lambda prompts, completions, **kw: "9" * 100, two, ["x", "y"]) == (
        f"reward_function '<lambda>' must return a list of 2 numbers (one per completion), got {'9' * 80}"
    )
    assert raised(lambda prompts, completions, **kw: [1.0, True], two, ["x", "y"]) == (
        "reward_function '<lambda>' returned True on data row row-1, completion 'y'; every reward must be a finite "
        "number or None (does not apply)"
    )
    assert raised(lambda prompts, completions, **kw: [np.bool_(False), 1.0], two, ["x", "y"]).startswith(
        f"reward_function '<lambda>' returned {np.bool_(False)!r} on data row row-0"
    )
    assert raised(lambda prompts, completions, **kw: ["9" * 100, 1.0], two, ["x", "y"]).startswith(
        f"reward_function '<lambda>' returned '{'9' * 59} on data row row-0"
    )  # the value cut to 60 characters
    verl_two = [problem(0, ground_truth="1"), problem(1, ground_truth="2")]  # verl's functions need a ground truth
    assert raised(lambda data_source, solution_str, ground_truth, extra_info: "1", verl_two, ["x", "y"]) == (
        "reward_function '<lambda>' returned '1' on data row row-0, completion 'x'; every reward must be a finite "
        "number or None (does not apply)"
    )  # verl's, per completion
    assert raised(lambda data_source, solution_str, ground_truth, extra_info: {"acc": 1}, verl_two, ["x", "y"]) == (
        "reward_function '<lambda>' returned a dict without 'score' (['acc']) on data row row-0, completion 'x'; "
        "verl reads the reward from its 'score'"
    )  # not read as "does not apply"
    nan_and_int = RewardFunctions(lambda prompts, completions, **kw: [float("nan"), np.int64(3)]).score(two, ["x", "y"])
    assert np.isnan(nan_and_int.parts["<lambda>"][0]) and nan_and_int.total.tolist() == [0.0, 3.0]


def test_paths_weights_and_the_reward_convention_are_checked():
    from escov.llm.tasks.reward_function import as_list, check_alone, check_path, check_weights

    assert check_path("pkg.mod:f") == "pkg.mod:f" and check_path("dir/file.py:f") == "dir/file.py:f"
    for bad in ("f", ":f", "m:", "m:1f", "m:f-g"):
        with pytest.raises(
            ValueError,
            match=rf"^reward_function must look like 'module:function' or 'file.py:function', "
            rf"got {bad!r}$",
        ):
            check_path(bad)
    with pytest.raises(ValueError, match=r"^reward_function must be a string 'module:function', got 3$"):
        check_path(3)
    assert as_list("") == [] and as_list(None) == [] and as_list(()) == [] and as_list("m:f") == ["m:f"]
    assert as_list(("m:f", "m:g")) == ["m:f", "m:g"] and as_list([len]) == [len]
    assert (
        check_weights(["a", "b"], None) == check_weights(["a", "b"], []) == check_weights(["a", "b"], ()) == [1.0, 1.0]
    )
    assert check_weights(["a"], 2) == [2.0] and check_weights(["a", "b"], np.array([1, 0.5])) == [1.0, 0.5]
    assert check_weights(["a"], (np.float32(0.25),)) == [0.25] and type(check_weights(["a"], [3])[0]) is float
    for bad in ([True], ["1"], [float("inf")], [None]):
        with pytest.raises(ValueError, match=r"^reward_weights must be finite numbers, got \["):
            check_weights(["a"], bad)
    with pytest.raises(ValueError, match=r"^reward_weights are given without a reward_function$"):
        check_weights([], [1.0])
    with pytest.raises(
        ValueError,
        match=r"^reward_weights must hold one number per reward function: 1 functions, got 2 "
        r"weights \[1.0, 2.0\]$",
    ):
        check_weights(["a"], [1.0, 2.0])
    check_alone("m:f")
    check_alone((), reward="es-at-scale-countdown", format_reward=0.5)  # no reward function: nothing to check
    for reward, format_reward in (("es-at-scale-countdown", 0.0), ("escov", 0.5)):
        with pytest.raises(ValueError) as err:
            check_alone(["m:f"], reward, format_reward)
        assert str(err.value) == (
            "reward_function replaces the reward convention; leave reward and format_reward unset, "
            f"got reward={reward!r}, format_reward={format_reward!r}"
        )


RECORDABLE = "def top(prompts, completions, **kw):\n    return []\n\n\nalias = top\ndel top\n"


def test_only_a_function_named_at_the_top_of_an_importable_module_is_recorded(tmp_path, monkeypatch):
    import functools

    from escov.llm.tasks.reward_function import import_path

    (tmp_path / "recordable_rewards.py").write_text(
        RECORDABLE + "def named(prompts, completions, **kw):\n    return []\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import recordable_rewards

    class NotCallable:
        pass

    thing = NotCallable()
    thing.__qualname__ = "thing"
    monkeypatch.setattr(sys.modules[__name__], "thing", thing, raising=False)
    main = sys.modules["__main__"]

    def in_main(prompts, completions, **kw):
        return []

    in_main.__module__, in_main.__qualname__ = "__main__", "in_main"

    def nameless(prompts, completions, **kw):
        return []

    nameless.__module__, nameless.__qualname__ = None, "nameless"
    monkeypatch.setattr(main, "in_main", in_main, raising=False)
    try:
        assert import_path(recordable_rewards.named) == "recordable_rewards:named"
        for function in (
            recordable_rewards.alias,  # defined as top, then renamed: no top-level `top`
            in_main,
            nameless,
            thing,
            (1).__add__,
            functools.partial(recordable_rewards.named),
            lambda **kw: [],
        ):
            with pytest.raises(ValueError) as err:
                import_path(function)
            assert str(err.value) == (
                f"reward_function: {function!r} cannot be recorded as 'module:function' (define it "
                "at the top of a module that imports; or pass the task built by "
                "llm.tasks.get_task(..., reward_function=f) to llm.train.train)"
            )
    finally:
        sys.modules.pop("recordable_rewards", None)


def test_functions_are_checked_and_named_when_the_rewards_are_built(tmp_path):
    from escov.llm.tasks.reward_function import is_verl

    class Scorer:  # a callable object: named by its class
        def __call__(self, prompts, completions, **kw):
            return [1.0] * len(completions)

    assert RewardFunctions([Scorer(), Scorer()]).names == ["Scorer_0", "Scorer_1"]
    assert not is_verl(max) and not is_verl(Scorer()) and is_verl(lambda solution_str, **kw: 0)  # max has no signature
    with pytest.raises(ValueError, match=r"^reward_function: give at least one reward function \('module:function'\)$"):
        RewardFunctions([])
    with pytest.raises(ValueError, match=r"^reward_function must be 'module:function' or a callable, got 3$"):
        RewardFunctions(["m:f", 3])
    with pytest.raises(ValueError, match=r"^reward_function must look like"):  # the path is checked before the weights
        RewardFunctions(["no_colon"], [1.0, 2.0])


def test_import_errors_name_the_module_and_a_file_path_may_hold_a_colon(tmp_path, monkeypatch):
    from escov.llm.tasks.reward_function import load_function

    (tmp_path / "raises_on_import.py").write_text("1 / 0\n")
    (tmp_path / "a:b").mkdir()
    (tmp_path / "a:b" / "colon_rewards.py").write_text("def f(prompts, completions, **kw):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ValueError) as err:
            load_function("raises_on_import:f")
        assert str(err.value) == (
            "reward_function 'raises_on_import:f': cannot import 'raises_on_import' "
            "(ZeroDivisionError: division by zero)"
        )
    finally:
        sys.modules.pop("raises_on_import", None)
    with pytest.raises(ValueError) as err:
        load_function("fp_no_such_package.inner:score")
    assert str(err.value) == (
        "reward_function 'fp_no_such_package.inner:score': cannot import 'fp_no_such_package.inner' "
        "(No module named 'fp_no_such_package'); a module is looked up on the Python path and in "
        "the current folder; for a file elsewhere give 'path/to/inner.py:score'"
    )
    assert load_function(f"{tmp_path / 'a:b' / 'colon_rewards.py'}:f").__name__ == "f"


def test_only_the_module_itself_is_looked_up_in_the_current_folder(tmp_path, monkeypatch):
    from escov.llm.tasks.reward_function import load_function

    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "needs_helper.py").write_text(
        "import cwd_helper\n\ndef f(prompts, completions, **kw):\n    return []\n"
    )
    (tmp_path / "cwd_helper.py").write_text("")
    (tmp_path / "cwd_pkg").mkdir()
    (tmp_path / "cwd_pkg" / "__init__.py").write_text("")
    (tmp_path / "cwd_pkg" / "mod.py").write_text("def g(prompts, completions, **kw):\n    return []\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "lib")] + [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        # a module on the Python path whose own import fails is not retried with the current folder's modules
        with pytest.raises(
            ValueError,
            match=r"^reward_function 'needs_helper:f': 'needs_helper' was found, but it "
            r"imports 'cwd_helper', which is a file of the current folder, not on "
            r"the Python path",
        ):
            load_function("needs_helper:f")
        assert load_function("cwd_pkg.mod:g").__name__ == "g"  # a package in the current folder
        assert str(tmp_path) not in sys.path  # the current folder is not left on the path
    finally:
        for name in ("needs_helper", "cwd_helper", "cwd_pkg", "cwd_pkg.mod"):
            sys.modules.pop(name, None)


def test_a_task_scored_by_functions_keeps_the_tasks_problems():
    def zero(prompts, completions, **kw):
        return [0.0] * len(completions)

    scored, plain = get_task("countdown", reward_function=zero), get_task("countdown")
    assert (
        scored.problems("train", 3, seed=5) == plain.problems("train", 3, seed=5) != plain.problems("train", 3, seed=6)
    )


def test_a_task_scored_by_functions_keeps_the_tasks_answers(tmp_path):
    """The math task's answer reads the problem's gold answer: the problem is passed on."""

    def zero(prompts, completions, **kw):
        return [0.0] * len(completions)

    (tmp_path / "math.jsonl").write_text('{"problem": "What is 1 / 2?", "answer": "1/2"}\n')
    scored = get_task("deepscaler", test_data=tmp_path / "math.jsonl", reward_function=zero)
    plain = get_task("deepscaler", test_data=tmp_path / "math.jsonl")
    one = plain.problems("test", 1, seed=0)[0]
    assert scored.answer(one, "\\boxed{0.5}") == plain.answer(one, "\\boxed{0.5}") == plain.answer(one, "\\boxed{1/2}")


def test_a_time_limit_interrupts_its_block_at_a_fraction_of_a_second_and_leaves_no_timer_or_handler():
    """time_limit(0.3): a 2 s block stops with RewardTimeout well before its end; afterwards SIGALRM's timer is off
    and the handler that was there before is back (one set by the test)."""
    import signal
    import time

    from escov.llm.tasks.reward_function import RewardTimeout, time_limit

    def before(signum, frame):
        raise AssertionError("the earlier handler ran")

    previous = signal.signal(signal.SIGALRM, before)
    try:
        start = time.monotonic()
        with pytest.raises(RewardTimeout), time_limit(0.3):
            time.sleep(2.0)
        assert 0.25 <= time.monotonic() - start < 1.5
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is before
        with time_limit(0.5):  # a block that ends in time: no RewardTimeout, and again nothing left behind
            time.sleep(0.05)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before
        with time_limit(0):  # no limit: the handler is not touched
            assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_a_time_limit_outside_the_main_thread_does_not_limit():
    """SIGALRM's handler can be set from the main thread only: elsewhere the block runs unlimited, without error."""
    import threading
    import time

    from escov.llm.tasks.reward_function import time_limit

    outcome = []

    def block():
        try:
            with time_limit(0.05):
                time.sleep(0.2)
            outcome.append("done")
        except BaseException as err:  # noqa: BLE001 - the test reports whatever the thread raised
            outcome.append(repr(err))

    thread = threading.Thread(target=block)
    thread.start()
    thread.join()
    assert outcome == ["done"]
