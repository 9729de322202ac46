"""`tune_gc`: the collector thresholds the bot's process runs its check cycles with (bench/check_cycle.py)."""

from __future__ import annotations

import gc

from lagbot.engine.check import GC_THRESHOLDS, tune_gc


def test_tune_gc_sets_the_bots_thresholds_and_keeps_the_collector_on() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS == (50_000, 10, 10)
        assert gc.isenabled()
    finally:
        gc.set_threshold(*before)
