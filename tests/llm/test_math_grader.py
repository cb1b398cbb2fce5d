"""Bounded math grading: hostile answers end within the per-answer budget in the main thread, in
worker threads, in a subprocess and in a Ray actor; long chain-of-thought is graded; each sample is
parsed once; unparseable golds are reported when the data loads."""
import json
import multiprocessing
import sys
import threading
import warnings

import pytest

from llm.tasks import get_task
from llm.tasks import math_grader
from llm.tasks.math_grader import ANSWER_BUDGET_SECONDS, grade

HOSTILE = [r"\boxed{9^{9^{9^{%d}}}}", r"\boxed{10^{10^{%d}}!}", r"The answer is $(10^%d)!$"]  # % (9, 10, 6): the issue's
# without a budget, each of these keeps sympy busy for minutes; the liveness limit below is generous
LIVENESS_SECONDS = 60


def grade_all(out: list, shift: int = 0) -> None:
    """Grade the hostile answers (made distinct by shift, so that no result comes from the cache), then two plain ones."""
    hostile = [text % (base + shift) for text, base in zip(HOSTILE, (9, 10, 6))]
    out.extend(grade("41", text).correct for text in hostile + [r"\boxed{41}", r"\boxed{40}"])


def test_hostile_answers_end_in_the_main_thread_and_in_threads():
    outs: list[list] = [[], [], []]  # one list per thread: the threads' grades interleave in time
    grade_all(outs[0])
    threads = [threading.Thread(target=grade_all, args=(outs[shift], shift)) for shift in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIVENESS_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert outs == [[False, False, False, True, False]] * 3


def test_an_over_budget_answer_or_an_unparseable_gold_keeps_the_worker():
    """Only a worker that does not reply is replaced; its timer firing, or a gold it cannot parse, are answers."""
    grader = math_grader._grader()
    assert math_grader.gold_key("???") is None
    grade("41", r"\boxed{41}")
    worker = grader.worker
    assert worker is not None
    assert math_grader.gold_key("?!?") is None
    assert grade("41", r"\boxed{40 + 1}").correct
    assert grader.worker is worker


def _grade_in_child(queue) -> None:
    out: list = []
    grade_all(out, shift=3)
    queue.put(out)


def test_hostile_answers_end_in_a_subprocess():
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_grade_in_child, args=(queue,))
    child.start()
    result = queue.get(timeout=LIVENESS_SECONDS * 2)
    child.join(LIVENESS_SECONDS)
    assert result == [False, False, False, True, False]


@pytest.mark.ray
@pytest.mark.slow
def test_hostile_answers_end_in_a_ray_actor():
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # actors cannot import test files
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024 ** 2)
    try:
        @ray.remote
        class Grader:
            def run(self):
                out: list = []
                grade_all(out, shift=4)
                return out

        actor = Grader.remote()
        assert ray.get(actor.run.remote(), timeout=LIVENESS_SECONDS * 2) == [False, False, False, True, False]
    finally:
        ray.shutdown()


def test_a_timed_out_answer_is_wrong_and_the_next_one_is_graded():
    assert ANSWER_BUDGET_SECONDS < 1
    assert grade("7", r"\boxed{(10^7)!} and again").key is None
    assert grade("7", r"\boxed{7}").correct


def test_long_chain_of_thought_is_graded_up_to_the_bound():
    thought = "Let me think about it step by step. " * 1700  # about 61k characters
    assert 60_000 < len(thought) < math_grader.MAX_COMPLETION_CHARS
    assert grade("41", thought + r"so \boxed{41}").correct
    assert grade("41", "x" * 20_000 + r"\boxed{41}").correct  # the case: it used to score 0
    assert not grade("41", thought * 2 + r"\boxed{41}").correct  # over the bound: no answer
    assert grade("41", thought * 2 + r"\boxed{41}", max_chars=200_000).correct  # the bound is configurable


def test_each_sample_is_parsed_once(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "#### 12"}) + "\n")
    task = get_task("gsm8k", test_data=path)
    p = task.problems("test", 1, seed=0)[0]
    completion = r"unique completion for this test: \boxed{12}"
    before = math_grader._grade_text.cache_info()
    assert task.score(p, completion) == 1.0
    assert task.answer(p, completion) == task.vote(p, completion) == "12"
    after = math_grader._grade_text.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 2)


def test_unparseable_golds_are_reported_at_load(tmp_path):
    good = [{"problem": f"p{i}", "answer": str(i)} for i in range(199)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good + [{"problem": "bad", "answer": "\\frac{"}]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = get_task("deepscaler", test_data=path)
    assert task.size("test") == 199 and [i for _, i, _ in task.unparseable["test"]] == [199]
    assert any("1 of 200 gold answers cannot be parsed" in str(w.message) and "record 199" in str(w.message)
               for w in caught)
    path.write_text("".join(json.dumps(r) + "\n" for r in good[:8] + [{"problem": "bad", "answer": "\\frac{"}] * 2))
    with pytest.raises(ValueError, match=r"2 of 10 gold answers cannot be parsed .*more than 1% of the file"):
        get_task("deepscaler", test_data=path)
