"""Ctrl-C and SIGTERM for the demos: raised as an exception in the main thread, deferred while a child
process is being started (so its stop is registered before the interruption unwinds), ignored while
everything stops."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Interrupted(Exception):
    """Ctrl-C or SIGTERM."""


class Interrupts:
    """Ctrl-C and SIGTERM raise Interrupted in the main thread, except inside `deferred()` blocks (a child
    process being started and its stop registered), where they are raised as the block ends."""

    def __init__(self) -> None:
        self._deferring = 0
        self._pending = False

    def handle(self, _signum: int, _frame: FrameType | None) -> None:
        if self._deferring:
            self._pending = True
            return
        raise Interrupted()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring and self._pending:
            raise Interrupted()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """The handlers inside the block (main thread only), the previous ones restored after."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.signal(s, self.handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    @staticmethod
    def ignore() -> None:
        """While everything stops: a second Ctrl-C must not leave processes behind."""
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, signal.SIG_IGN)
