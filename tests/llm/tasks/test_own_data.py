"""Data and rewards as users bring them: HF datasets folders and objects, dotted fields into nested
records (a verl parquet), prompts given as chat messages, reward functions named by import path
with TRL's signature, and the offline error for hub names."""

import importlib.util
import json
import pickle
import sys

import datasets
import pytest
from transformers import AutoTokenizer

from escov.llm.config import TrainConfig, load_config
from escov.llm.engines.base import encode_prompt
from escov.llm.tasks import get_task
from escov.llm.tasks.data_files import load_records
from escov.llm.tasks.reward_function import RewardFunctions, load_function
from escov.llm.tinymodel import build_tokenizer

# a verl data file: the prompt as chat messages, the answer under reward_model.ground_truth
VERL = [
    {
        "data_source": "toy",
        "prompt": [
            {"role": "system", "content": "Answer with a number."},
            {"role": "user", "content": f"What is {i} + 1?"},
        ],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
        "extra_info": {"index": i, "question": f"What is {i} + 1?"},
    }
    for i in range(6)
]

REWARDS = '''
CALLS = []

def exact(prompts, completions, answer, **kwargs):
    """TRL style, conversational: completions[i] is [{"role": "assistant", "content": text}]."""
    CALLS.append({"prompts": prompts, "completions": completions, "answer": answer, **kwargs})
    return [1.0 if c[0]["content"].strip() == a else 0.0 for c, a in zip(completions, answer)]

def wrong_length(prompts, completions, **kwargs):
    return [0.0] * (len(completions) + 1)

def not_a_number(prompts, completions, **kwargs):
    return ["1" for _ in completions]

def infinite(prompts, completions, **kwargs):
    return [float("inf") for _ in completions]
'''


@pytest.fixture
def verl_parquet(tmp_path):
    path = tmp_path / "train.parquet"
    datasets.Dataset.from_list(VERL).to_parquet(path)
    return path


@pytest.fixture
def rewards_module(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_rewards"
    sys.modules.pop("my_rewards", None)


def test_save_to_disk_folders_and_dataset_objects_give_the_file_records(tmp_path, verl_parquet):
    dataset = datasets.Dataset.from_list(VERL)
    dataset.save_to_disk(tmp_path / "saved")
    assert load_records(tmp_path / "saved") == load_records(verl_parquet) == load_records(dataset) == VERL
    datasets.DatasetDict({"train": dataset, "test": dataset}).save_to_disk(tmp_path / "dict")
    with pytest.raises(ValueError) as err:
        load_records(tmp_path / "dict")
    assert str(err.value) == (
        f"data folder {tmp_path / 'dict'} holds the splits ['test', 'train']; give one split's "
        f"folder, e.g. {tmp_path / 'dict' / 'test'}"
    )
    (tmp_path / "plain").mkdir()
    with pytest.raises(Exception) as datasets_error:  # what datasets says of the folder, cut to 120 characters
        datasets.load_from_disk(str(tmp_path / "plain"))
    said = str(datasets_error.value)
    assert len(said) > 120
    with pytest.raises(ValueError) as err:
        load_records(tmp_path / "plain")
    assert str(err.value) == (
        f"data folder {tmp_path / 'plain'} is not a folder written by datasets' save_to_disk "
        f"({type(datasets_error.value).__name__}: {said[:120]})"
    )


def test_a_hub_name_is_a_one_line_offline_error():
    with pytest.raises(ValueError) as err:
        load_records("openai/gsm8k")
    message = str(err.value)
    assert "\n" not in message and "read offline" in message and "load_dataset('openai/gsm8k'" in message
    with pytest.raises(ValueError, match="data file 'missing.parquet' does not exist"):
        load_records("missing.parquet")


def test_dotted_fields_read_nested_columns_for_every_file_task(verl_parquet):
    task = get_task(
        "deepscaler",
        test_data=verl_parquet,
        fields={"problem": "extra_info.question", "answer": "reward_model.ground_truth"},
    )
    golds = sorted(int(p.meta["gold"]) for p in task.problems("test", 6, seed=0))
    assert golds == [1, 2, 3, 4, 5, 6]
    with pytest.raises(
        ValueError, match=r"record 0 lacks the field 'answer' \(mapped to the file's 'reward_model.truth'\)"
    ):
        get_task(
            "deepscaler",
            test_data=verl_parquet,
            fields={"problem": "extra_info.question", "answer": "reward_model.truth"},
        )


def test_chat_message_prompts_go_through_the_chat_template(verl_parquet, rewards_module, random_qwen2_dir):
    task = get_task("prompts", test_data=verl_parquet, reward_function=f"{rewards_module}:exact")
    problem = sorted(task.problems("test", 6, seed=0), key=lambda p: p.id)[0]
    assert problem.prompt.messages == tuple(VERL[0]["prompt"])
    with_template = AutoTokenizer.from_pretrained(random_qwen2_dir)
    assert with_template.chat_template
    rendered = with_template.apply_chat_template(VERL[0]["prompt"], tokenize=False, add_generation_prompt=True)
    assert (
        encode_prompt(with_template, problem.prompt) == with_template(rendered, add_special_tokens=False)["input_ids"]
    )
    # a tokenizer without a template (the tiny model's) reads the contents joined by a blank line
    plain = build_tokenizer()
    assert not plain.chat_template
    assert encode_prompt(plain, problem.prompt) == plain("Answer with a number.\n\nWhat is 0 + 1?")["input_ids"]


def test_a_reward_function_gets_trl_arguments_and_its_rewards_are_the_tasks(verl_parquet, rewards_module):
    task = get_task(
        "prompts",
        test_data=verl_parquet,
        reward_function=f"{rewards_module}:exact",
        fields={"answer": "reward_model.ground_truth"},
    )
    problem = sorted(task.problems("test", 6, seed=0), key=lambda p: p.id)[2]
    assert task.score(problem, " 3 ") == 1.0 and task.score(problem, "4") == 0.0
    assert task.is_correct(problem, "3") and not task.is_correct(problem, "4")
    call = sys.modules[rewards_module].CALLS[0]
    assert call["prompts"] == [VERL[2]["prompt"]]  # the messages, as TRL passes a conversational prompt
    assert call["completions"] == [[{"role": "assistant", "content": " 3 "}]]
    assert call["answer"] == ["3"]  # the mapped dotted field
    assert call["reward_model"] == [VERL[2]["reward_model"]] and call["extra_info"] == [VERL[2]["extra_info"]]
    assert call["data_source"] == ["toy"] and "prompt" not in call  # every other column, not the prompt
    again = pickle.loads(pickle.dumps(task))  # Ray actors receive the task and import the function again
    assert again.score(problem, "3") == 1.0


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")
def test_trls_own_reward_functions_run_unchanged(tmp_path):
    """trl.rewards.think_format_reward, named by its import path, scores conversational completions."""
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"prompt": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(2)))
    task = get_task("prompts", test_data=path, reward_function="trl.rewards:think_format_reward")
    problem = task.problems("test", 1, seed=0)[0]
    assert task.score(problem, "<think>\nadd them\n</think>\n4") == 1.0
    assert task.score(problem, "4") == 0.0


def test_reward_function_errors_name_the_setting(tmp_path, verl_parquet, rewards_module):
    for path, message in [
        ("no_colon", "must look like 'module:function'"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        (f"{rewards_module}:missing", "has no function 'missing'"),
        ("missing.py:f", "no such file missing.py"),
    ]:
        with pytest.raises(ValueError, match=f"reward_function.*{message}"):
            load_function(path)
    (tmp_path / "file_rewards.py").write_text(
        "def constant(prompts, completions, **kw):\n    return [0.5] * len(completions)\n"
    )
    by_file = RewardFunctions(f"{tmp_path / 'file_rewards.py'}:constant")
    assert by_file.score([get_task("countdown").problems("test", 1, seed=0)[0]], ["c"]).total.tolist() == [0.5]
    for name, message in [
        ("wrong_length", "must return a list of 1 numbers"),
        ("not_a_number", "returned '1' on data row prompts/test/.*; every reward must be a finite number or None"),
        ("infinite", "returned inf on data row"),
    ]:
        task = get_task("prompts", test_data=verl_parquet, reward_function=f"{rewards_module}:{name}")
        with pytest.raises(ValueError, match=message):
            task.score(task.problems("test", 1, seed=0)[0], "x")
    with pytest.raises(ValueError, match="task 'prompts' needs a reward"):
        get_task("prompts", test_data=verl_parquet)


def test_reward_function_is_a_setting_recorded_for_resume(tmp_path, rewards_module, tiny_model_dir):
    cfg = TrainConfig.from_dict(
        {
            "model": str(tiny_model_dir),
            "out": str(tmp_path / "run"),
            "task": "prompts",
            "data": "train.parquet",
            "reward_function": f"{rewards_module}:exact",
            "data_fields": "answer=reward_model.ground_truth",
        }
    )
    assert cfg.task_kwargs()["reward_function"] == [f"{rewards_module}:exact"]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(json.dumps(cfg.to_dict()))
    assert load_config(tmp_path / "run").reward_function == (f"{rewards_module}:exact",)
    with pytest.raises(ValueError, match="task 'prompts' needs reward_function"):
        TrainConfig(model="m", out="o", task="prompts", data="d.jsonl")
    with pytest.raises(ValueError, match="reward_function replaces the reward convention"):
        TrainConfig(model="m", out="o", reward_function="m:f", reward="es-at-scale-countdown")
    with pytest.raises(ValueError, match="reward_function must look like"):
        TrainConfig(model="m", out="o", reward_function="m.f")


def test_llm_eval_scores_a_verl_parquet_with_a_reward_function(tiny_model_dir, tmp_path, verl_parquet, monkeypatch):
    """`llm eval --task prompts --reward_function`: the rewards are the function's (a constant 1 here: all correct).
    In this process, through the command's main (an evaluation sets no torch threads)."""
    from escov.llm.cli import main as llm_main

    (tmp_path / "always.py").write_text("def one(prompts, completions, **kw):\n    return [1.0] * len(completions)\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # where the command finds module "always", as PYTHONPATH would
    assert (
        llm_main(
            [
                "eval",
                "--model",
                str(tiny_model_dir),
                "--task",
                "prompts",
                "--test_data",
                str(verl_parquet),
                "--eval_problems",
                str(len(VERL)),
                "--reward_function",
                "always:one",
                "--n",
                "2",
                "--k",
                "1",
                "--max-new-tokens",
                "4",
                "--out",
                str(tmp_path / "ev"),
                "--no-progress",
            ]
        )
        == 0
    )
    sys.modules.pop("always", None)  # this test's module, not another's
    result = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert result["num_problems"] == len(VERL) and result["pass_at_k"]["1"] == 1.0
    assert result["reward_function"] == ["always:one"]


def test_a_reward_function_and_a_reward_convention_together_are_refused(rewards_module):
    with pytest.raises(ValueError, match="reward_function replaces the reward convention"):
        get_task("countdown", reward="es-at-scale-countdown", reward_function=f"{rewards_module}:exact")
    task = get_task("countdown", reward_function=f"{rewards_module}:exact")
    problem = task.problems("test", 1, seed=0)[0]
    assert sys.modules[rewards_module].CALLS == [] and task.answer(problem, "1+2") is not None


def test_a_mapped_prompt_column_is_the_prompt_and_no_reward_argument(tmp_path, monkeypatch):
    """With data_fields prompt=question, the question column is the prompt: the reward function gets the other
    columns and the other mapped names (answer=sol), and neither `question` nor `prompt`; a prompt of whitespace only
    is refused, naming the file and the record."""
    (tmp_path / "recording_rewards.py").write_text(
        "CALLS = []\n\n\ndef record(prompts, completions, answer, **kwargs):\n"
        "    CALLS.append({'prompts': prompts, 'completions': completions, 'answer': answer, **kwargs})\n"
        "    return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer)]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "recording_rewards", raising=False)
    path = tmp_path / "d.jsonl"
    rows = [{"question": f"What is {i} + 1?", "sol": str(i + 1), "level": i} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fields = {"prompt": "question", "answer": "sol"}
    task = get_task("prompts", test_data=path, reward_function="recording_rewards:record", fields=fields)
    problem = sorted(task.problems("test", 3, seed=0), key=lambda p: p.id)[1]
    assert problem.prompt == "What is 1 + 1?" and task.score(problem, "2") == 1.0
    call = sys.modules["recording_rewards"].CALLS[-1]
    trl = {"prompts", "completions", "completion_ids", "trainer_state"}  # TRL's own arguments
    assert set(call) - trl == {"answer", "sol", "level"}
    assert call["answer"] == call["sol"] == ["2"] and call["level"] == [1]
    path.write_text(json.dumps({"question": "  \n\t", "sol": "1", "level": 0}) + "\n")
    with pytest.raises(ValueError, match=rf"data file {path}: record 0: field 'prompt' is empty"):
        get_task("prompts", test_data=path, reward_function="recording_rewards:record", fields={"prompt": "question"})


def test_a_prompts_answer_is_its_text_with_whitespace_collapsed_and_no_prompt_style_applies(tmp_path, rewards_module):
    """The `prompts` task's final answer (for Maj@k and distinct answers) is the completion with every run of
    whitespace made one space; the built-in tasks' prompt styles are refused, naming the setting."""
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"prompt": "Say it.", "answer": "a b"}) + "\n")
    task = get_task("prompts", test_data=path, reward_function=f"{rewards_module}:exact")
    (problem,) = task.problems("test", 1, seed=0)
    assert task.answer(problem, "  a \n\t b  ") == task.answer(problem, "a b") == "a b"
    assert task.answer(problem, " \n ") is None
    with pytest.raises(ValueError, match="task 'prompts' feeds the data's prompts as they are; prompt_style"):
        get_task("prompts", test_data=path, reward_function=f"{rewards_module}:exact", prompt_style="instruct")
