"""`lagbot run`: assemble the bot from settings and the environment (lagbot.app.assembly), start its long-lived parts
in dependency order, run until SIGTERM or SIGINT, and stop them in reverse.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Mapping

from lagbot.app.assembly import assemble
from lagbot.core.config import Settings
from lagbot.engine.check import tune_gc

log = logging.getLogger(__name__)


def run_bot(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run the bot until `stop` is set (or SIGTERM/SIGINT). Returns the exit code."""
    tune_gc()  # a long-running process that keeps every check window: see tune_gc
    done = stop or threading.Event()
    if stop is None:  # from the start: a SIGTERM while starting stops the bot cleanly once it has started
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: done.set())
    parts = assemble(settings, os.environ if environ is None else environ)
    parts.lifecycle.start()
    log.warning("lagbot listening", extra={"host": settings.http.host, "port": parts.server.port,
                                           "replica": parts.bot.replica_id})  # fmt: skip
    try:
        done.wait()
    finally:
        parts.lifecycle.stop()
    return 0
