"""llm/interrupts.py in this process, with real signals sent to it: the first is recorded and stops at the next safe
point, the second at once, the third gets the default action; the handlers and the record end with the block."""

import os
import signal
import threading
import time

import pytest

from escov.llm.interrupts import Interrupted, InterruptedAtOnce, stop_if_requested, stop_on_signals


def _send(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.05)  # Python runs the handler in the main thread at its next check


def test_first_signal_waits_for_a_safe_point_the_second_stops_at_once_the_third_is_the_default(capsys):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with stop_on_signals():
        stop_if_requested("after step 1")  # nothing received: nothing happens
        _send(signal.SIGTERM)
        assert "SIGTERM: stopping at the next safe point" in capsys.readouterr().err
        for _ in range(2):  # every safe point after it stops, naming where and the first signal
            with pytest.raises(Interrupted) as stopped:
                stop_if_requested("after step 3")
            assert (str(stopped.value), stopped.value.exit_code) == ("stopped by SIGTERM after step 3", 128 + 15)
        with pytest.raises(InterruptedAtOnce) as at_once:
            _send(signal.SIGINT)
        assert (str(at_once.value), at_once.value.exit_code) == ("stopped at once by a second SIGINT", 128 + 2)
        assert not isinstance(at_once.value, Exception)  # a reward function's `except Exception` lets it through
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert {s: signal.getsignal(s) for s in before} == before
    stop_if_requested("after the run")  # the record ends with the block


def test_a_signal_not_reached_by_a_safe_point_does_not_stop_the_next_block():
    with stop_on_signals():
        _send(signal.SIGINT)
    with stop_on_signals():
        stop_if_requested("after step 1")


def test_outside_the_main_thread_the_block_runs_unchanged():
    before, seen = signal.getsignal(signal.SIGINT), []

    def run():
        with stop_on_signals():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


def test_without_the_handlers_nothing_stops():
    stop_if_requested("after step 1")
