"""`make corpus`: start Apache Kafka, run every scenario of the corpus with both samplings, print the table.

`python -m tests.support.corpus --only NAME --runs N` runs only the scenarios whose name contains NAME (the flag
may repeat), N times over, and prints each run's table and, per row, how many of the N runs were right.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
import time
from collections import Counter

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.support.corpus import SCENARIOS, run_all, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.corpus")
    parser.add_argument("--only", action="append", default=[], help="scenarios whose name contains this")
    parser.add_argument("--runs", type=int, default=1, choices=range(1, 21), metavar="1..20")
    args = parser.parse_args(argv)
    scenarios = tuple(s for s in SCENARIOS if not args.only or any(o in s.name for o in args.only))
    if not scenarios:
        parser.error(f"no scenario's name contains {' or '.join(map(repr, args.only))}")
    started = time.monotonic()
    faulthandler.dump_traceback_later(600 * args.runs, exit=True)  # a hang shows where, and ends
    right: Counter[tuple[str, str]] = Counter()
    said: dict[tuple[str, str], Counter[str]] = {}
    ok = True
    with ApacheKafka().start() as broker:
        for run in range(args.runs):
            rows = run_all(broker.bootstrap, scenarios)
            if args.runs > 1:
                print(f"run {run + 1} of {args.runs}")
            print(table(rows))
            ok = ok and all(r.right for r in rows)
            for r in rows:
                right[(r.scenario, r.sampling)] += r.right
                said.setdefault((r.scenario, r.sampling), Counter())[f"{r.status} {r.cause} {r.remediation}"] += 1
    if args.runs > 1:
        for (scenario, sampling), answers in said.items():
            print(f"{scenario:30} {sampling:22} right in {right[(scenario, sampling)]} of {args.runs}: {dict(answers)}")
    print(f"{time.monotonic() - started:.0f} s (the broker's start included)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
