"""`tune_gc` and `collector_paused`: how the bot's process runs CPython's collector around its check cycles."""

from __future__ import annotations

import gc
import threading

import pytest

from lagbot.engine.check import GC_THRESHOLDS, collector_paused, tune_gc


def test_tune_gc_sets_the_bots_thresholds_and_keeps_the_collector_on() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS == (50_000, 10, 10)
        assert gc.isenabled()
    finally:
        gc.set_threshold(*before)


def test_the_collector_is_paused_while_a_cycle_runs_and_resumes_after_it() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_resumes_after_a_cycle_that_failed() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the cluster could not be read")
    assert gc.isenabled()


def test_overlapping_cycles_resume_the_collector_when_the_last_one_ends() -> None:
    """One cycle per cluster, each on its own thread: the first to end must not resume it under the other."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with collector_paused():
            second_in.set()
            first_out.wait(5)
            seen["after the first ended"] = gc.isenabled()
        seen["after both ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"after the first ended": False, "after both ended": True}
    assert gc.isenabled()


def test_a_collector_disabled_by_whoever_runs_lagbot_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
