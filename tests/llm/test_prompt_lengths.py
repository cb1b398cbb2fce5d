"""llm/prompt_lengths.py by hand: the context a model's config.json names (its first positive integer among the
keys configs use), the prompt budget beside a full completion, and the check of each data file's prompts, with a
tokenizer that gives one token per character so every length is the prompt's own."""

import json

import pytest

from escov.llm.prompt_lengths import check_prompt_lengths, model_context, prompt_budget
from escov.llm.tasks.base import Problem


class _CharTokenizer:
    """One token per character, no chat template."""

    chat_template = None

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": list(range(len(text)))}


def _model(tmp_path, name: str, config) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def test_the_context_is_the_first_positive_integer_a_config_names(tmp_path):
    assert model_context(_model(tmp_path, "qwen", {"max_position_embeddings": 256, "n_positions": 64})) == 256
    assert model_context(_model(tmp_path, "gpt2", {"max_position_embeddings": True, "n_positions": 64})) == 64
    assert model_context(_model(tmp_path, "zero", {"max_position_embeddings": 0, "seq_length": 32})) == 32
    assert model_context(_model(tmp_path, "none", {"hidden_size": 8})) is None
    assert model_context(_model(tmp_path, "list", [1, 2])) is None
    assert model_context(tmp_path / "absent") is None


def test_the_prompt_budget_leaves_room_for_a_full_completion(tmp_path):
    model = _model(tmp_path, "m", {"max_position_embeddings": 40})
    assert prompt_budget(model, 39) == 1
    with pytest.raises(ValueError) as err:
        prompt_budget(model, 40)
    assert str(err.value) == (
        f"max_completion_length 40 leaves no room for a prompt: the model {model} holds 40 positions "
        "(max_position_embeddings in its config.json)"
    )
    assert prompt_budget(_model(tmp_path, "unknown", {}), 4000) is None


def test_each_files_prompts_are_checked_and_the_longest_over_the_budget_named(tmp_path, capsys):
    """Budget 10 (16 positions less 6): the first file fits; in the second, two of three prompts are over it, the
    longer one second."""
    model = _model(tmp_path, "m", {"max_position_embeddings": 16})
    sources = {
        "fits.jsonl": [Problem("a", "x" * 10), Problem("b", "y")],
        "long.jsonl": [Problem("c", "z" * 11), Problem("d", "ok"), Problem("e", "w" * 13)],
    }
    with pytest.raises(ValueError) as err:
        check_prompt_lengths(sources, _CharTokenizer(), model, 6)
    what = (
        f"long.jsonl: 2 of 3 prompts are longer than the model has room for (10 tokens: 16 positions of {model} less "
        "max_completion_length 6); the longest, e, has 13 tokens"
    )
    assert str(err.value) == (
        f"{what}; shorten them, lower max_completion_length, or set truncate_prompts = true (--truncate_prompts) to "
        "keep their last 10 tokens"
    )
    assert check_prompt_lengths(sources, _CharTokenizer(), model, 6, truncate=True) == 10
    assert capsys.readouterr().err == f"note: {what}; truncate_prompts: they are cut to their last 10 tokens\n"
    assert (
        check_prompt_lengths({"fits.jsonl": sources["fits.jsonl"]}, _CharTokenizer(), model, 6, truncate=True) is None
    )
