"""Keep the JVM's start-up noise out of what the user reads.

PySpark starts its JVM with this process's stderr. Spark 4 runs it with an incubator module, so every start
prints `WARNING: Using incubator modules: jdk.incubator.vector`, which says nothing to a lagbot user. While a
JVM is being started inside `quiet_jvm_start()`, file descriptor 2 is a pipe: a thread forwards every line to
the real stderr except the known noise. The JVM (and the Python workers it starts) keep that pipe for their
lifetime, so their later warnings still reach the user, filtered the same way; this process writes to its real
stderr again as soon as the block ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator

NOISE = re.compile(rb"^(WARNING: Using incubator modules: |%[5-7]\|\d+\.\d+\|)")
"""The JVM's incubator warning, and librdkafka's notice/info/debug lines (%5| %6| %7|) from tasks' clients."""


def is_noise(line: bytes) -> bool:
    return NOISE.match(line) is not None


def _forward(source: int, target: int) -> None:
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            if not is_noise(line):
                with contextlib.suppress(OSError):
                    os.write(target, line)
    os.close(target)


@contextlib.contextmanager
def quiet_jvm_start() -> Iterator[None]:
    """Processes started inside inherit a filtered stderr (see the module doc)."""
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    saved = os.dup(2)  # this process's real stderr, put back at the end
    forwarded_to = os.dup(2)  # the forwarder's own copy, closed when the last child holding the pipe exits
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=_forward, args=(read_end, forwarded_to), name="jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # from here only the children started inside hold the pipe's write end
        os.close(saved)
