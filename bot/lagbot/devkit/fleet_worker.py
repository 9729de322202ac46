"""One member of a local consumer fleet: a real Kafka consumer process (`python -m lagbot.devkit.fleet_worker`).

It joins `--group` with `client.id` = `--client-id`, processes each message (optionally slowly:
`--delay-ms`, to make a throughput deficit), and commits synchronously after processing, every
`--commit-every` messages or `--commit-interval-ms`, whichever comes first (auto-commit is off).
Before partitions are revoked it commits what it processed of them.

Fault mode "stuck": once `--stuck-after` messages were processed, or as soon as the file
`--stuck-flag` exists, it stops polling and committing while its heartbeats keep it in the group
(until max.poll.interval.ms), as a consumer blocked in its processing does: its partitions stall.

It writes a small JSON status file (`--status-file`, replaced atomically about twice a second):
state, assignment, whether a rebalance is under way and how many it completed, last committed
offsets, messages processed, heartbeat time. On SIGTERM or SIGINT
it commits what it processed (unless stuck), closes the consumer (leaving the group) and exits 0.
It connects to the brokers only and binds nothing; it exits by itself after `--max-seconds`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

STATUS_VERSION = 1
STATUS_EVERY = 0.5
POLL_SECONDS = 0.2

log = logging.getLogger("lagbot.fleet_worker")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lagbot.devkit.fleet_worker", description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topics", required=True, help="comma-separated")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--status-file", required=True, type=Path)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--commit-every", type=int, default=100)
    parser.add_argument("--commit-interval-ms", type=int, default=1000)
    parser.add_argument("--stuck-after", type=int, default=0, help="0: never")
    parser.add_argument("--stuck-flag", type=Path, default=None)
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    parser.add_argument("--kafka", default="{}", help="extra librdkafka properties as a JSON object")
    return parser.parse_args(argv)


def consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The librdkafka config: extra properties first, then the ones this worker depends on."""
    extra = json.loads(args.kafka)
    return {
        **extra,
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "enable.auto.commit": False,
        "auto.offset.reset": extra.get("auto.offset.reset", "earliest"),
    }


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


class Worker:
    """The consume-process-commit loop of one member; bounded by `--max-seconds`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stopping = False
        self.stuck = False
        self.processed = 0
        self.assignment: list[tuple[str, int]] = []
        self.assigns = 0
        """Completed rebalances this member took part in (on_assign calls, even with no partitions)."""
        self.rebalancing = True
        """True from joining (or a revocation) until the next assignment."""
        self.pending: dict[tuple[str, int], int] = {}
        """Next offset to commit per partition: processed but not yet committed."""
        self.committed: dict[tuple[str, int], int] = {}
        self.started_at = time.time()
        self._since_commit = 0
        self._last_commit = time.monotonic()
        self._last_status = 0.0
        self._consumer: Any = None

    # --- status ---------------------------------------------------------------------------------

    def status(self, state: str) -> dict[str, Any]:
        return {
            "v": STATUS_VERSION,
            "client_id": self.args.client_id,
            "pid": os.getpid(),
            "state": state,
            "assignment": [[t, p] for t, p in sorted(self.assignment)],
            "assigns": self.assigns,
            "rebalancing": self.rebalancing,
            "committed": {f"{t}:{p}": o for (t, p), o in sorted(self.committed.items())},
            "processed": self.processed,
            "started_at": self.started_at,
            "heartbeat": time.time(),
        }

    def write_status(self, state: str | None = None, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_status < STATUS_EVERY:
            return
        self._last_status = now
        write_json_atomically(self.args.status_file, self.status(state or ("stuck" if self.stuck else "running")))

    # --- Kafka ----------------------------------------------------------------------------------

    def on_assign(self, _consumer: Any, partitions: list[Any]) -> None:
        self.assignment = [(tp.topic, tp.partition) for tp in partitions]
        self.assigns += 1
        self.rebalancing = False
        log.info("assigned %s", self.assignment)
        self.write_status(force=True)

    def on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        revoked = {(tp.topic, tp.partition) for tp in partitions}
        if not self.stuck:
            self.commit(only=revoked)
        for key in revoked:
            self.pending.pop(key, None)
        self.assignment = [tp for tp in self.assignment if tp not in revoked]
        self.rebalancing = True
        self.write_status(force=True)

    def commit(self, *, only: set[tuple[str, int]] | None = None) -> None:
        """Commit processed offsets synchronously; a failed commit keeps them pending for the next try."""
        from confluent_kafka import KafkaException, TopicPartition

        offsets = {k: v for k, v in self.pending.items() if only is None or k in only}
        if not offsets:
            return
        try:
            self._consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
            )
        except KafkaException as exc:
            log.warning("commit failed: %s", exc)
            return
        for key, offset in offsets.items():
            self.committed[key] = offset
            if self.pending.get(key) == offset:
                del self.pending[key]
        self._since_commit = 0
        self._last_commit = time.monotonic()

    def maybe_commit(self) -> None:
        due = time.monotonic() - self._last_commit >= self.args.commit_interval_ms / 1000
        if self.pending and (self._since_commit >= self.args.commit_every or due):
            self.commit()

    def process(self, message: Any) -> None:
        """'Process' one message: wait the configured delay (in slices, so a stop is noticed)."""
        remaining = self.args.delay_ms / 1000
        while remaining > 0 and not self.stopping:
            time.sleep(min(remaining, POLL_SECONDS))
            remaining -= POLL_SECONDS
        self.processed += 1
        self._since_commit += 1
        self.pending[(message.topic(), message.partition())] = message.offset() + 1

    def check_stuck(self) -> None:
        if self.stuck:
            return
        by_count = self.args.stuck_after > 0 and self.processed >= self.args.stuck_after
        by_flag = self.args.stuck_flag is not None and self.args.stuck_flag.exists()
        if by_count or by_flag:
            self.stuck = True
            log.warning("stuck: no more polling or committing (processed %d)", self.processed)
            self.write_status(force=True)

    # --- the loop -------------------------------------------------------------------------------

    def run(self) -> int:
        from confluent_kafka import Consumer

        self.write_status("starting", force=True)
        self._consumer = Consumer(consumer_config(self.args), logger=log)
        topics = [t for t in self.args.topics.split(",") if t]
        self._consumer.subscribe(topics, on_assign=self.on_assign, on_revoke=self.on_revoke)
        self.write_status(force=True)
        deadline = time.monotonic() + self.args.max_seconds
        try:
            while not self.stopping and time.monotonic() < deadline:
                self.step()
        finally:
            self.shutdown()
        return 0

    def step(self) -> None:
        self.check_stuck()
        if self.stuck:
            time.sleep(POLL_SECONDS)
        else:
            message = self._consumer.poll(POLL_SECONDS)
            if message is not None and message.error() is None:
                self.process(message)
            elif message is not None:
                log.warning("consumer error: %s", message.error())
            self.maybe_commit()
        self.write_status()

    def shutdown(self) -> None:
        self.write_status("stopping", force=True)
        if self._consumer is not None:
            if not self.stuck:
                self.commit()
            self._consumer.close()
        self.assignment = []
        self.write_status("stopped", force=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    verbose = "debug" in json.loads(args.kafka)  # librdkafka's debug logs arrive at DEBUG level
    level = logging.DEBUG if verbose else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    worker = Worker(args)

    def stop(signum: int, _frame: Any) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())
