"""Live consumer groups on Apache Kafka, and what Apache Kafka's own ConsumerGroupCommand says about them.

`LiveGroup` runs real members (classic protocol or KIP-848's `group.protocol=consumer`) and keeps them
polling in one background thread, so they stay in the group and follow rebalances; commits go through
the same lock. The `describe_*` functions run ConsumerGroupCommand (lagbot.devkit.apache_kafka.group_command) and
parse its tables, '-' read as None.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from lagbot.devkit.apache_kafka import group_command
from tests.support.bot_process import wait_for

T = TypeVar("T")

DescribeRow = tuple[str, int, int | None, int, int | None, str | None, str | None, str | None]
"""(topic, partition, CURRENT-OFFSET, LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID)."""


def _tool(bootstrap: str, args: list[str]) -> list[list[str]]:
    """The rows (header dropped) of one ConsumerGroupCommand table, split on whitespace."""
    completed = group_command(bootstrap, args)
    assert completed.returncode == 0, completed.stderr
    lines = [line.split() for line in completed.stdout.strip().splitlines() if line.strip()]
    assert lines and lines[0][0] == "GROUP", completed.stdout
    return lines[1:]


def _number(cell: str) -> int | None:
    return None if cell == "-" else int(cell)


def _text(cell: str) -> str | None:
    return None if cell == "-" else cell


def describe_rows(bootstrap: str, group: str) -> list[DescribeRow]:
    """`--describe --group G`, one tuple per row, sorted by topic and partition."""
    rows = []
    for cells in _tool(bootstrap, ["--describe", "--group", group]):
        assert len(cells) == 9 and cells[0] == group, cells
        topic, partition, current, log_end, lag, member, host, client = cells[1:]
        rows.append(
            (
                topic,
                int(partition),
                _number(current),
                int(log_end),
                _number(lag),
                _text(member),
                _text(host),
                _text(client),
            )
        )
    return sorted(rows, key=lambda r: (r[0], r[1]))


def describe_state(bootstrap: str, group: str) -> tuple[str, int]:
    """`--describe --state`: (STATE, #MEMBERS)."""
    [cells] = _tool(bootstrap, ["--describe", "--group", group, "--state"])
    return cells[-2], int(cells[-1])


def describe_members(bootstrap: str, group: str) -> list[tuple[str, str, str, int]]:
    """`--describe --members`: (CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS), sorted by client id."""
    rows = [(c[1], c[2], c[3], int(c[4])) for c in _tool(bootstrap, ["--describe", "--group", group, "--members"])]
    return sorted(rows, key=lambda r: (r[2], r[0]))


def report_rows(group_json: dict[str, Any]) -> list[DescribeRow]:
    """`lagbot check --json`'s rows of one group in the shape of `describe_rows`."""
    rows = []
    for p in group_json["partitions"]:
        owner = p["owner"] or {}
        rows.append(
            (
                p["topic"],
                p["partition"],
                p["committed"],
                p["log_end"],
                p["lag"],
                owner.get("member_id"),
                owner.get("host"),
                owner.get("client_id"),
            )
        )
    return sorted(rows, key=lambda r: (r[0], r[1]))


class LiveGroup:
    """Real members of one group, polled in a background thread until `close`.

    Each member has its own client id; `protocol` is 'classic' or 'consumer' (KIP-848).
    """

    def __init__(self, bootstrap: str, group: str, topics: list[str], protocol: str = "classic") -> None:
        self.bootstrap, self.group, self.topics, self.protocol = bootstrap, group, topics, protocol
        self.members: dict[str, Consumer] = {}
        self.paused: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll_loop, daemon=True)
        self._thread.start()

    def _config(self, client_id: str) -> dict[str, object]:
        config: dict[str, object] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if self.protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        return config

    def join(self, client_id: str, **overrides: object) -> Consumer:
        consumer = Consumer({**self._config(client_id), **overrides})
        consumer.subscribe(self.topics)
        with self._lock:
            self.members[client_id] = consumer
        return consumer

    def pause(self, client_id: str) -> None:
        """Stop polling this member: it stays in the group (heartbeats) but serves no rebalance."""
        with self._lock:
            self.paused.add(client_id)

    def leave(self, client_id: str) -> None:
        with self._lock:
            consumer = self.members.pop(client_id)
            consumer.close()

    def assignments(self) -> dict[str, list[tuple[str, int]]]:
        with self._lock:
            return {c: sorted((tp.topic, tp.partition) for tp in m.assignment()) for c, m in self.members.items()}

    def wait_spread(self, partitions: int, owning: int, timeout: float = 60.0) -> dict[str, list[tuple[str, int]]]:
        """Wait until `owning` members own all `partitions` partitions between them, each exactly once."""

        def spread() -> dict[str, list[tuple[str, int]]] | None:
            owned = self.assignments()
            every = [tp for tps in owned.values() for tp in tps]
            busy = [c for c, tps in owned.items() if tps]
            return owned if len(every) == len(set(every)) == partitions and len(busy) == owning else None

        return wait_for(f"{owning} member(s) to own the {partitions} partition(s)", spread, timeout)

    def commit(self, client_id: str, offsets: dict[tuple[str, int], int], timeout: float = 15.0) -> None:
        """Commit as the member, synchronously. On the consumer protocol (KIP-848) a commit sent while the member's
        epoch is being bumped (a reconciliation in flight) is refused with STALE_MEMBER_EPOCH: the member learns its
        new epoch at its next heartbeat (the poll loop), and the commit is sent again, as a consumer's own would be."""

        def committed() -> bool:
            with self._lock:
                try:
                    self.members[client_id].commit(
                        offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
                    )
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                        raise
                    return False
                return True

        wait_for(f"{client_id}'s commit with its current member epoch", committed, timeout)

    def _poll_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                for client_id, consumer in self.members.items():
                    if client_id not in self.paused:
                        consumer.poll(0.02)
            self._stop.wait(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for consumer in self.members.values():
            consumer.close()
        self.members.clear()


@contextmanager
def live_group(bootstrap: str, group: str, topics: list[str], protocol: str = "classic") -> Iterator[LiveGroup]:
    running = LiveGroup(bootstrap, group, topics, protocol)
    try:
        yield running
    finally:
        running.close()
