"""Inputs checked at load, before any model is loaded: prompts longer than the model's context allows
(an error naming the file, the count and the longest, or truncation when asked for), text that is not
valid UTF-8 (naming the file and the line or record), and records that lack a column the others have."""

import json
import shutil

import pytest

from escov.llm.config import TrainConfig
from escov.llm.engines.base import encode_prompt, load_tokenizer
from escov.llm.prompt_lengths import check_prompt_lengths, model_context, prompt_budget
from escov.llm.tasks import get_task

REWARD = "def digits(prompts, completions, **kwargs):\n    return [float(c[:1].isdigit()) for c in completions]\n"
COMPLETION = 24


def _prompts_file(path, prompts, extra=None):
    path.write_text("".join(json.dumps({"prompt": p, "id": i, **(extra or {})}) + "\n" for i, p in enumerate(prompts)))
    return path


def _config(model, data, out, **settings) -> TrainConfig:
    cfg = TrainConfig(
        model=str(model),
        task="prompts",
        data=str(data),
        data_split="first-2",
        reward_function="my_rewards:digits",
        out=str(out),
        steps=1,
        batch_size=1,
        train_pool=2,
        threads=1,
        max_completion_length=COMPLETION,
        probe=False,
        probe_prompts=1,
        eval_problems=1,
        eval_samples=1,
        eval_ks=[1],
        heldout_task="",
        threshold_keep=[],
        **settings,
    )
    cfg.validate()
    return cfg


@pytest.fixture
def rewards(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(REWARD)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    import sys

    sys.modules.pop("my_rewards", None)


@pytest.fixture
def model_without_weights(tiny_model_dir, tmp_path):
    """The tiny model's config and tokenizer without its weights: loading the model fails, so an error
    about prompts proves the prompts were checked first."""
    folder = tmp_path / "no-weights"
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns("model*.safetensors", "*.bin"))
    return folder


def test_prompts_longer_than_the_context_stop_the_run_before_the_model_loads(
    tmp_path, rewards, tiny_model_dir, model_without_weights
):
    """The tiny model holds 256 positions: with 24 completion tokens a prompt may have 232. Two prompts of
    the file are over (233 and 1,900 tokens, a character-level tokenizer): the error names the file, the
    count and the longest, and comes before the model (whose weights are missing here) would load."""
    from escov.llm.train import train

    tokenizer = load_tokenizer(tiny_model_dir)
    assert model_context(tiny_model_dir) == 256 and prompt_budget(tiny_model_dir, COMPLETION) == 232
    at_budget = "1" * (232 - (len(encode_prompt(tokenizer, "1")) - 1))  # the tokens a prompt adds beside its text
    assert len(encode_prompt(tokenizer, at_budget)) == 232
    data = _prompts_file(tmp_path / "d.jsonl", ["12+3=", at_budget, at_budget + "1", "7" * 1900, "4*4="])
    assert len(encode_prompt(tokenizer, "7" * 1900)) == 1900
    with pytest.raises(ValueError) as err:
        train(_config(model_without_weights, data, tmp_path / "run"), show_progress=False)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"data file {data}: 2 of 5 prompts are longer than the model has room for (232 tokens")
    assert "the longest, prompts/test/3, has 1900 tokens" in message and "truncate_prompts" in message
    assert not (tmp_path / "run").exists()
    data.write_text(data.read_text().replace("7" * 1900, "7").replace(at_budget + "1", "1"))
    with pytest.raises(Exception) as err:  # within the budget: now the model itself is what is missing
        train(_config(model_without_weights, data, tmp_path / "run"), show_progress=False)
    assert "prompts are longer" not in str(err.value)


def test_truncate_prompts_cuts_them_to_their_last_tokens_and_says_so(tmp_path, rewards, tiny_model_dir, capsys):
    """truncate_prompts: the check returns the budget and names the file, the count and the longest once;
    the run's engine then feeds each prompt's last 232 tokens, and generates from the 1,900-token one."""
    from escov.llm.train import TrainingRun, prompt_sources

    data = _prompts_file(tmp_path / "d.jsonl", ["12+3=", "4*4=", "7" * 1900 + "12+3="])
    cfg = _config(tiny_model_dir, data, tmp_path / "run", truncate_prompts=True)
    tokenizer = load_tokenizer(tiny_model_dir)
    sources = prompt_sources(cfg, cfg.make_task())
    assert list(sources) == [f"data file {data}"] and len(sources[f"data file {data}"]) == 3
    with pytest.raises(ValueError, match="1 of 3 prompts are longer"):
        check_prompt_lengths(sources, tokenizer, tiny_model_dir, COMPLETION, truncate=False)
    capsys.readouterr()
    assert check_prompt_lengths(sources, tokenizer, tiny_model_dir, COMPLETION, truncate=True) == 232
    err = capsys.readouterr().err
    assert f"data file {data}: 1 of 3 prompts are longer" in err and "cut to their last 232 tokens" in err
    short = _prompts_file(tmp_path / "short.jsonl", ["12+3=", "4*4=", "9-1="])
    assert (
        check_prompt_lengths(
            prompt_sources(
                _config(tiny_model_dir, short, tmp_path / "r2", truncate_prompts=True),
                get_task("prompts", reward_function="my_rewards:digits", data=short, data_split="first-2"),
            ),
            tokenizer,
            tiny_model_dir,
            COMPLETION,
            truncate=True,
        )
        is None
    )  # nothing to cut
    run = TrainingRun(cfg, show_progress=False)
    long_prompt = "7" * 1900 + "12+3="
    assert run.engine.max_prompt_tokens == 232
    assert run.encode(long_prompt) == encode_prompt(tokenizer, long_prompt)[-232:]
    assert run.encode("12+3=") == encode_prompt(tokenizer, "12+3=")
    completions = run.engine.generate([long_prompt], n=1, temperature=1.0, max_new_tokens=COMPLETION, seed=0)
    assert len(completions[0][0].token_ids) <= COMPLETION


def test_text_that_is_not_utf8_is_named_by_file_and_line_or_record(tmp_path, rewards):
    bad_bytes = tmp_path / "bytes.jsonl"
    bad_bytes.write_bytes(b'{"prompt": "a"}\n{"prompt": "b"}\n{"prompt": "c\xff"}\n')
    with pytest.raises(ValueError, match=rf"^data file {bad_bytes}: line 3 is not UTF-8 text \(byte {2 * 16 + 13}\)$"):
        get_task("prompts", reward_function="my_rewards:digits", data=bad_bytes)
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text('{"prompt": "a", "meta": {"x": "ok"}}\n{"prompt": "b", "meta": {"x": "\\ud800"}}\n')
    with pytest.raises(ValueError) as err:
        get_task("prompts", reward_function="my_rewards:digits", data=surrogate)
    assert str(err.value).startswith(
        f"data file {surrogate}: record 1, column 'meta.x' holds text that is not valid UTF-8"
    )
    surrogate.write_text('{"prompt": "\\udfff b"}\n')
    with pytest.raises(ValueError, match="record 0, column 'prompt' holds text that is not valid UTF-8"):
        get_task("gsm8k", test_data=surrogate)


def test_a_record_that_lacks_a_column_the_others_hold_is_named_at_load(tmp_path, rewards):
    data = tmp_path / "d.jsonl"
    records = [
        {"prompt": "a", "answer": "1"},
        {"prompt": "b", "answer": "2"},
        {"prompt": "c"},
        {"prompt": "d", "answer": "4"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(
        ValueError,
        match=rf"^data file {data}: record 2 lacks the column 'answer' "
        r"\(record 0 holds it\)$",
    ):
        get_task("prompts", reward_function="my_rewards:digits", data=data)
    data.write_text("".join(json.dumps(r) + "\n" for r in [{"prompt": "a"}, {"prompt": "b", "answer": "2"}]))
    with pytest.raises(ValueError, match=r"record 0 lacks the column 'answer' \(record 1 holds it\)$"):
        get_task("prompts", reward_function="my_rewards:digits", data=data)
    data.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    assert get_task("prompts", reward_function="my_rewards:digits", data=data).size("train") == 2
