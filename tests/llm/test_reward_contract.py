"""TRL's reward contract on a verl-style parquet: one call per batch with lists (prompts, completions,
completion_ids, trainer_state, every column), several functions with reward_weights, None = does not
apply, numpy arrays and callables, verl's compute_score adapted, and errors that name the function,
the data row and the completion with the user's own traceback lines. Totals are checked against
values computed by hand from TRL's rule (sum of w_j r_j over the functions that apply)."""
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

ROWS = [{"data_source": "add" if i % 2 else "sub", "prompt": [{"role": "user", "content": f"{i}+{i % 7}="}],
         "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i + i % 7)},
         "extra_info": {"index": i}} for i in range(48)]

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
    task = get_task("prompts", test_data=verl_parquet, reward_function=["user_rewards:accuracy", "user_rewards:digits"],
                    reward_weights=[1.0, 0.5])
    problems = by_index(task, [1, 1, 2, 3])  # 1, 3: "add"; 2: "sub" (digits does not apply)
    completions = ["2", "22", "4", "6"]      # row 1's truth is "2", row 2's "4", row 3's "6"
    scores = task.score_batch(problems, completions, [[5], [5, 5], [6], [7]], step=3)
    assert scores.parts["accuracy"].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert scores.parts["digits"][[0, 1, 3]].tolist() == [1.0, 2.0, 1.0] and math.isnan(scores.parts["digits"][2])
    assert scores.total.tolist() == [1.0 + 0.5 * 1, 0.0 + 0.5 * 2, 1.0, 1.0 + 0.5 * 1]  # None left out of the sum
    assert task.reward_names == ["accuracy", "digits"]
    (name, prompts, given, reward_model, kwargs), = [c for c in user_rewards.CALLS if c[0] == "accuracy"]
    assert prompts == [ROWS[1]["prompt"], ROWS[1]["prompt"], ROWS[2]["prompt"], ROWS[3]["prompt"]]
    assert given == [[{"role": "assistant", "content": c}] for c in completions]
    assert reward_model == [ROWS[i]["reward_model"] for i in (1, 1, 2, 3)]
    assert kwargs["completion_ids"] == [[5], [5, 5], [6], [7]] and kwargs["trainer_state"].global_step == 3
    assert kwargs["data_source"] == ["add", "add", "sub", "add"] and kwargs["extra_info"][0] == {"index": 1}
    # a completion no function applies to gets 0 (TRL's nansum)
    only_digits = get_task("prompts", test_data=verl_parquet, reward_function="user_rewards:digits")
    assert only_digits.score_batch(by_index(only_digits, [2]), ["44"]).total.tolist() == [0.0]


def test_each_function_is_called_once_per_batch_of_sampled_completions(verl_parquet, user_rewards, tiny_model_dir):
    task = get_task("prompts", test_data=verl_parquet, reward_function=["user_rewards:accuracy", "user_rewards:digits"],
                    reward_weights=[1.0, 0.5])
    problems = by_index(task, [0, 1, 2])
    with make_engine("hf", tiny_model_dir, dtype=torch.float32, seed=0) as engine:
        out = rollout(engine, task, problems, n=4, temperature=1.0, max_new_tokens=6, seed=1, step=2)
    calls = user_rewards.CALLS
    assert [c[0] for c in calls] == ["accuracy", "digits"]  # one call each for 3 prompts x 4 samples
    assert len(calls[0][2]) == 12 and calls[0][1] == [ROWS[i]["prompt"] for i in (0, 1, 2) for _ in range(4)]
    assert calls[0][4]["completion_ids"] == [c.token_ids for row in out.completions for c in row]
    assert calls[0][4]["trainer_state"].global_step == 2
    expected = [[float(c.text.strip() == ROWS[i]["reward_model"]["ground_truth"])
                 + (0.5 * len(c.text) if ROWS[i]["data_source"] == "add" else 0.0) for c in row]
                for i, row in zip((0, 1, 2), out.completions)]
    assert out.rewards.tolist() == expected
    assert out.parts["accuracy"].shape == (3, 4) and np.isnan(out.parts["digits"][0]).all()


def test_verls_compute_score_is_called_per_completion_with_the_verl_columns(verl_parquet, user_rewards):
    task = get_task("prompts", test_data=verl_parquet, reward_function="user_rewards:compute_score")
    scores = task.score_batch(by_index(task, [4, 5]), [" 8 ", "0"])
    assert scores.total.tolist() == [1.0, 0.25] and list(scores.parts) == ["compute_score"]
    assert user_rewards.CALLS == [("compute_score", "sub", " 8 ", "8", {"index": 4}),
                                  ("compute_score", "add", "0", "10", {"index": 5})]


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
    assert message.startswith("reward_function 'user_rewards:fails_on_row_7' raised KeyError: 7 on data row prompts/test/7")
    assert "completion 'the completion'" in message
    assert 'user_rewards.py", line 26, in lookup' in message and 'line 22, in fails_on_row_7' in message
    assert "reward_function.py" not in message  # escov's own frames are left out
    as_verl = get_task("prompts", test_data=verl_parquet, reward_function=lambda data_source, solution_str, ground_truth,
                       extra_info: 1 / 0)
    with pytest.raises(RewardFunctionError, match=r"'<lambda>' raised ZeroDivisionError: division by zero on data row "
                                                  r"prompts/test/3, completion 'x'"):
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
    (folder / "here_rewards.py").write_text("def one(prompts, completions, **kw):\n    return [1.0] * len(completions)\n")
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

    problems = [Problem("a", "p", {"columns": {"data_source": "x"}}), Problem("b", "q", {"columns": {"data_source": "y"}})]
    rewards = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 1.0]])
    parts = {"f": np.array([[1.0, np.nan, 1.0], [np.nan, np.nan, np.nan]])}
    stats = reward_stats(rewards, parts, np.array([[1, 2, 3], [4, 5, 6]]), problems)
    assert stats["reward_mean"] == 1.0 and stats["reward_std"] == pytest.approx(np.std([1, 1, 1, 0, 2, 1]))
    assert stats["rewards"] == {"f": {"mean": 1.0, "std": 0.0, "applied": pytest.approx(2 / 6)}}
    assert stats["reward_zero_std_share"] == 0.5 and stats["mean_response_tokens"] == 3.5
    assert stats["by_data_source"] == {"x": {"reward_mean": 1.0, "reward_std": 0.0, "pass_at_1": 1.0, "prompts": 1},
                                       "y": {"reward_mean": 1.0, "reward_std": pytest.approx(np.std([0, 2, 1])),
                                             "pass_at_1": pytest.approx(2 / 3), "prompts": 1}}
    one_of_three = reward_stats(np.array([[1.0, 1.0], [0.0, 1.0], [2.0, 5.0]]), {}, np.ones((3, 2)), [Problem("d", "s")] * 3)
    assert one_of_three["reward_zero_std_share"] == pytest.approx(1 / 3)  # only the first prompt's samples agree
    never = reward_stats(rewards, {"g": np.full((2, 3), np.nan)}, np.ones((2, 3)), [Problem("c", "r")] * 2)
    assert never["rewards"]["g"] == {"mean": None, "std": None, "applied": 0.0} and "by_data_source" not in never
