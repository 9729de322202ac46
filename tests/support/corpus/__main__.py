"""`make corpus`: start Apache Kafka, run every scenario of the corpus with both samplings, print the table."""

from __future__ import annotations

import faulthandler
import sys
import time

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.support.corpus import run_all, table


def main() -> int:
    started = time.monotonic()
    faulthandler.dump_traceback_later(600, exit=True)  # a hang shows where, and ends
    with ApacheKafka().start() as broker:
        rows = run_all(broker.bootstrap)
    print(table(rows))
    print(f"{time.monotonic() - started:.0f} s (the broker's start included)")
    return 0 if all(r.right for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
