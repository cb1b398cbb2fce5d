"""llm/tasks/reasoning_format.py by hand: the answer part after the last `</think>`, es-at-scale's format score for
blocks in the wrong order, and chat prompts that keep every message."""

from escov.llm.tasks.reasoning_format import after_thinking, chat_prompt, es_at_scale_format_score, system_prompt


def test_the_answer_part_follows_the_last_think_block():
    assert after_thinking("<think>a</think>x<think>b</think>y") == "y"
    assert after_thinking("<think>never ends") is None
    assert after_thinking("no thinking") == "no thinking"
    assert after_thinking("a</think>b", starts_in_think=True) == "b"


def test_a_block_counts_only_when_its_closing_tag_follows_its_opening_one():
    assert es_at_scale_format_score("</answer> then <answer>", False) == 0.0
    assert es_at_scale_format_score("</think> then <think>", False) == 0.0
    assert es_at_scale_format_score("<think>a</think> <answer>1</answer>", False) == 0.6
    assert es_at_scale_format_score("a</think>\n<answer>1</answer>", True) == 1.0


def test_chat_prompts_keep_every_message_in_order():
    prompt = system_prompt("be brief", "2+2?")
    assert list(prompt.messages) == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}]
    assert str(prompt) == "be brief\n\n2+2?" and prompt.chat
    three = chat_prompt(
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    )
    assert [m["content"] for m in three.messages] == ["a", "b", "c"]
