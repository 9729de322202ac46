"""A producer thread at a steady pace for the end-to-end tests: one message every PACE seconds (up to ~200 msg/s)
round-robin over the partitions, bounded in time and count, stopped by the test (or at the `with` block's end)."""

from __future__ import annotations

import threading
import time

from lagbot.devkit.embedded import exact_producer

PACE = 0.005


class PacedWriter:
    def __init__(self, bootstrap: str, topic: str, partitions: int, *, limit: int | None = None,
                 seconds: float = 150.0) -> None:  # fmt: skip
        self.stopping = threading.Event()
        self._args = (bootstrap, topic, partitions, limit, seconds)
        self._thread = threading.Thread(target=self._write, daemon=True)

    def __enter__(self) -> PacedWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop writing and wait (at most 15 s) for what was produced to be flushed."""
        self.stopping.set()
        if self._thread.is_alive():
            self._thread.join(15)

    def _write(self) -> None:
        bootstrap, topic, partitions, limit, seconds = self._args
        producer = exact_producer(bootstrap)
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline and (limit is None or n < limit):
            producer.produce(topic, value=b"m", partition=n % partitions)
            producer.poll(0)
            n += 1
            if self.stopping.wait(PACE):  # the pace, ended at once by `stop`
                break
        producer.flush(10)
