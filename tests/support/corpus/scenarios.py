"""The scenarios of the corpus: each a context manager that builds one lag situation live on Apache Kafka and keeps
it going while `lagbot check` runs, with what a right diagnosis says about it (see __init__.py for the grading).

Rates are small (tens to hundreds of msg/s) so that fourteen scenarios run at once on two cores; the burst
scenarios write their history with past create timestamps, so the broker's time index holds it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lagbot.core.model import Status
from tests.support.bot_process import wait_for
from tests.support.corpus.checks import first_snapshots
from tests.support.corpus.clients import (
    Reader,
    at_rate,
    backlog,
    commit_empty,
    consumer,
    create,
    history,
    joined,
    producer,
    round_robin,
    running,
    watermarks,
    writer,
)

Setup = Callable[[str, str, str], AbstractContextManager[None]]
"""(bootstrap, topic, group) -> a context in which the situation holds."""


@dataclass(frozen=True)
class Expected:
    """What a right diagnosis says: the group's status, the primary cause (rank 1, or none) and its remediation.

    A status of None: this sampling cannot decide the status (`why` says why); the cause and remediation are graded.
    """

    status: Status | None
    cause: str | None
    remediation: str | None
    why: str


@dataclass(frozen=True)
class Undecidable:
    """Sampling that cannot decide the scenario, and why (what lagbot says then is shown, not graded)."""

    why: str


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Setup
    expected: Expected
    """Graded with `lagbot check`'s default sampling (4 samples, 5 s apart: a 15 s window)."""
    short: Expected | Undecidable | None = None
    """With `--samples 4 --every 3` (a 9 s window): None means the same as `expected`."""


@contextmanager
def _members(bootstrap: str, group: str, topic: str, count: int) -> Iterator[list[Consumer]]:
    members = [consumer(bootstrap, group) for _ in range(count)]
    for m in members:
        m.subscribe([topic])
    try:
        joined(members)
        yield members
    finally:
        for m in members:
            m.close()


def _read_to_end(member: Consumer, topic: str, ends: dict[int, int], timeout: float = 30.0) -> None:
    """Read until the member's position is the log end of every partition (bounded), then commit it."""
    deadline = time.monotonic() + timeout
    tps = [TopicPartition(topic, p) for p in ends]
    while any(tp.offset != ends[tp.partition] for tp in member.position(tps)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the member did not read {topic} to its end")
        member.consume(100, 0.2)
    member.commit(asynchronous=False)


@contextmanager
def healthy(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions written at 5 msg/s each; one member reads and commits everything as it comes (most snapshots
    see lag 0: Burrow's guard, the consumer kept up)."""
    create(bootstrap, topic, 2)
    with _members(bootstrap, group, topic, 1) as [c], running(writer(bootstrap, topic, 2, 5), Reader(c)):
        yield


@contextmanager
def idle_topic(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions, 50 messages each read and committed long ago; nothing is written any more. The member stays."""
    create(bootstrap, topic, 2)
    out = producer(bootstrap)
    for i in range(100):
        out.produce(topic, b"m", partition=i % 2)
    out.flush(15)
    with _members(bootstrap, group, topic, 1) as [c]:
        _read_to_end(c, topic, {0: 50, 1: 50})
        with running(Reader(c)):
            yield


@contextmanager
def key_skew(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """3 partitions; 300 msg/s carry the key 'hot' (the partitioner puts them all on one partition), 10 msg/s go to
    each partition round robin. One member reads 100 msg/s in all: the cold partitions keep up, the hot one falls
    behind."""
    create(bootstrap, topic, 3)
    spread = round_robin(topic, 3)

    def send(out: Producer, count: int) -> None:
        cold = count * 30 // 330
        for _ in range(count - cold):
            out.produce(topic, b"m", key=b"hot")
        spread(out, cold)

    out = producer(bootstrap)
    for _ in range(1000):  # the skew was there before the check: 1,000 'hot' messages waiting
        out.produce(topic, b"m", key=b"hot")
    out.flush(15)
    with _members(bootstrap, group, topic, 1) as [c], running(at_rate(bootstrap, 330, send), Reader(c, 100)):
        yield


@contextmanager
def slow_owner(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """3 partitions at 60 msg/s each, 1,000 waiting on each; 3 members (one partition each). Two read as fast as
    messages come (their backlog is gone in a moment); one reads only 10 msg/s."""
    create(bootstrap, topic, 3)
    backlog(bootstrap, topic, 3, 1000)
    with _members(bootstrap, group, topic, 3) as members:
        readers = [Reader(members[0], 10), *(Reader(c) for c in members[1:])]
        with running(writer(bootstrap, topic, 3, 60), *readers):
            yield


@contextmanager
def stuck_short(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """4 partitions at 20 msg/s each, 100 waiting on each; member A (2 partitions) polls but never commits after
    committing 0 once, member B (the other 2) reads and commits every batch."""
    create(bootstrap, topic, 4)
    writer_backlog = producer(bootstrap)
    for i in range(400):
        writer_backlog.produce(topic, b"m", partition=i % 4)
    writer_backlog.flush(15)
    with _members(bootstrap, group, topic, 2) as [a, b]:
        a.commit(offsets=[TopicPartition(tp.topic, tp.partition, 0) for tp in a.assignment()], asynchronous=False)
        with running(writer(bootstrap, topic, 4, 20), Reader(a, commits=False), Reader(b)):
            yield


@contextmanager
def stuck_alone(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 20 msg/s each, 100 waiting on each; the group's one member committed 0 once and then polls
    without ever committing: nobody in the group commits."""
    create(bootstrap, topic, 2)
    out = producer(bootstrap)
    for i in range(200):
        out.produce(topic, b"m", partition=i % 2)
    out.flush(15)
    with _members(bootstrap, group, topic, 1) as [c]:
        c.commit(offsets=[TopicPartition(topic, p, 0) for p in range(2)], asynchronous=False)
        with running(writer(bootstrap, topic, 2, 20), Reader(c, commits=False)):
            yield


@contextmanager
def no_members(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 20 msg/s each; the group committed 50 of 200 on each, then its only member left (Empty)."""
    create(bootstrap, topic, 2)
    out = producer(bootstrap)
    for i in range(400):
        out.produce(topic, b"m", partition=i % 2)
    out.flush(15)
    with _members(bootstrap, group, topic, 1) as [c]:
        c.commit(offsets=[TopicPartition(topic, p, 50) for p in range(2)], asynchronous=False)
    with running(writer(bootstrap, topic, 2, 20)):
        yield


@contextmanager
def throughput_deficit(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """4 partitions at 60 msg/s each (240 msg/s), 300 waiting on each; 2 members (2 partitions each) read 60 msg/s
    each: 120 of 240."""
    create(bootstrap, topic, 4)
    backlog(bootstrap, topic, 4, 300)
    with (
        _members(bootstrap, group, topic, 2) as members,
        running(writer(bootstrap, topic, 4, 60), *(Reader(c, 60) for c in members)),
    ):
        yield


@contextmanager
def partition_ceiling(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 60 msg/s each, 500 waiting on each; 2 members, one partition each, each reading 30 msg/s."""
    create(bootstrap, topic, 2)
    backlog(bootstrap, topic, 2, 500)
    with (
        _members(bootstrap, group, topic, 2) as members,
        running(writer(bootstrap, topic, 2, 60), *(Reader(c, 30) for c in members)),
    ):
        yield


@contextmanager
def never_committed(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 20 msg/s each, 100 waiting on each; the member reads everything and never commits."""
    create(bootstrap, topic, 2)
    out = producer(bootstrap)
    for i in range(200):
        out.produce(topic, b"m", partition=i % 2)
    out.flush(15)
    with (
        _members(bootstrap, group, topic, 1) as [c],
        running(writer(bootstrap, topic, 2, 20), Reader(c, commits=False)),
    ):
        yield


BASELINE, BURST = 5, 200
"""msg/s per partition before the burst (for 1,000 s: the 15 min horizon holds it) and during it."""


@contextmanager
def burst_ongoing(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions, each written 5 msg/s for the 1,000 s before the last minute and 200 msg/s since (create
    timestamps); 200 msg/s each go on. The group's one member read up to 16 min ago and reads 50 msg/s."""
    create(bootstrap, topic, 2)
    now = time.time()
    for partition in range(2):
        history(bootstrap, topic, partition, now, [(1060, 60, BASELINE), (60, 0, BURST)])
    with _members(bootstrap, group, topic, 1) as [c], running(writer(bootstrap, topic, 2, BURST), Reader(c, 50)):
        yield


@contextmanager
def burst_ended(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition written 5 msg/s for 1,000 s, then 200 msg/s from 120 s to 20 s ago, then 5 msg/s again, which
    goes on. The group's one member reads 100 msg/s from the start: it drains the burst's backlog."""
    create(bootstrap, topic, 1)
    history(bootstrap, topic, 0, time.time(), [(1120, 120, BASELINE), (120, 20, BURST), (20, 0, BASELINE)])
    with _members(bootstrap, group, topic, 1) as [c], running(writer(bootstrap, topic, 1, BASELINE), Reader(c, 100)):
        yield


YOUNG_BEFORE, YOUNG_BURST = 15, 1000
"""msg/s per partition of the young topic: for its first 30 s, and since (the burst)."""


@contextmanager
def burst_young(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions of a new topic, each written 15 msg/s for 30 s and then 1,000 msg/s for 6 s (create timestamps:
    its first record is 36 s old, younger than the smallest horizon, 1 min); 1,000 msg/s each go on. The group's
    one member reads 50 msg/s from the start (issue 22: it was called throughput_deficit)."""
    create(bootstrap, topic, 2)
    now = time.time()
    for partition in range(2):
        history(bootstrap, topic, partition, now, [(36, 6, YOUNG_BEFORE), (6, 0, YOUNG_BURST)])
    with (
        _members(bootstrap, group, topic, 1) as [c],
        running(writer(bootstrap, topic, 2, YOUNG_BURST), Reader(c, 50)),
    ):
        yield


@contextmanager
def rebalance_churn(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions, 10 messages on each every 2 s; one member reads and commits all along while a second member
    keeps joining, reading for half a second and leaving (a consumer that crashes and restarts)."""
    create(bootstrap, topic, 2)

    def churn(stop: threading.Event) -> None:
        while not stop.is_set():
            joiner = consumer(bootstrap, group)
            joiner.subscribe([topic])
            joining = time.monotonic() + 5.0  # a join (bounded), then half a second of work, then it leaves
            while not joiner.assignment() and time.monotonic() < joining and not stop.is_set():
                joiner.poll(0.1)
            working = time.monotonic() + 0.5
            while time.monotonic() < working and not stop.is_set():
                if joiner.consume(100, 0.1):
                    joiner.commit(asynchronous=False)
            joiner.close()

    def bursts(stop: threading.Event) -> None:
        out = producer(bootstrap)
        while not stop.wait(2.0):
            round_robin(topic, 2)(out, 20)
            out.flush(10)

    with _members(bootstrap, group, topic, 1) as [c], running(bursts, Reader(c), churn):
        yield


@contextmanager
def retention_risk(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition whose retention keeps 2 MB in 1 MB segments; 3,600 messages of 1 kB were written, so retention
    deleted the oldest segment. The group committed 50 messages past the new log start and its member reads
    2 msg/s while 5 msg/s are written: most retained messages are unread, and the next deletion nears."""
    create(bootstrap, topic, 1, {"retention.bytes": str(2 << 20), "segment.bytes": str(1 << 20)})
    value = b"x" * 1000
    out = producer(bootstrap)
    for _ in range(3600):
        out.produce(topic, value, partition=0)
    out.flush(30)
    wait_for("retention to delete the oldest segment", lambda: watermarks(bootstrap, topic, 0)[0] > 0, timeout=60)
    start = watermarks(bootstrap, topic, 0)[0]
    commit_empty(bootstrap, group, {(topic, 0): start + 50})
    with _members(bootstrap, group, topic, 1) as [c]:
        send = at_rate(bootstrap, 5, lambda out, n: [out.produce(topic, value, partition=0) for _ in range(n)])
        with running(send, Reader(c, 2)):
            yield


@contextmanager
def steady_20(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition written at 20 msg/s; one member reads and commits every batch as it comes: lag of a few messages,
    under a second old, that can rise across the snapshots between commits (issue 22: it was called WARN, with
    hot_partition -> drain and throughput_deficit -> scale)."""
    create(bootstrap, topic, 1)
    with _members(bootstrap, group, topic, 1) as [c], running(writer(bootstrap, topic, 1, 20), Reader(c)):
        yield


@contextmanager
def two_topics_one_idle(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """A group reading two topics: `topic` (2 partitions) written at 15 msg/s a partition, and an idle one read to
    its end long ago. One member reads and commits everything as it comes."""
    idle = f"{topic}-idle"
    create(bootstrap, topic, 2)
    create(bootstrap, idle, 2)
    out = producer(bootstrap)
    for i in range(40):
        out.produce(idle, b"m", partition=i % 2)
    out.flush(15)
    c = consumer(bootstrap, group)
    c.subscribe([topic, idle])
    try:
        joined([c])
        _read_to_end(c, idle, {0: 20, 1: 20})
        with running(writer(bootstrap, topic, 2, 15), Reader(c)):
            yield
    finally:
        c.close()


@contextmanager
def transactions(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions written by a transactional producer, a transaction of 4 messages every 0.2 s; one read_committed
    member reads and commits every batch: once read, each partition's lag is 1, the commit marker (issue 22: it was
    called STALL, stuck_consumer -> restart)."""
    create(bootstrap, topic, 2)
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    out = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn", "linger.ms": 5})
    out.init_transactions(30)

    def write(stop: threading.Event) -> None:
        while not stop.wait(0.2):
            out.begin_transaction()
            round_robin(topic, 2)(out, 4)
            out.commit_transaction(30)

    try:
        joined([c])
        with running(write, Reader(c)):
            yield
    finally:
        c.close()


@contextmanager
def members_over_partitions(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 60 msg/s each, 200 waiting on each; 3 members, each reading at most 30 msg/s (slow processing):
    two own a partition each and fall behind alike, the third owns nothing. Scaling cannot help (issue 22: it was
    offered as idle_members -> scale)."""
    create(bootstrap, topic, 2)
    backlog(bootstrap, topic, 2, 200)
    with (
        _members_some_idle(bootstrap, group, topic, 3, 2) as members,
        running(writer(bootstrap, topic, 2, 60), *(Reader(m, 30) for m in members)),
    ):
        yield


def _members_in(bootstrap: str, group: str) -> int:
    """Members of `group` in a Stable state as the broker describes it (0 while it rebalances)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [described] = admin.describe_consumer_groups([group], request_timeout=5).values()
    found = described.result(timeout=10)
    return len(found.members) if str(found.state).endswith("STABLE") else 0


@contextmanager
def _members_some_idle(bootstrap: str, group: str, topic: str, count: int, partitions: int) -> Iterator[list[Consumer]]:
    """`count` members of which only `partitions` get a partition (bounded wait)."""
    members = [consumer(bootstrap, group) for _ in range(count)]
    for m in members:
        m.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while (
            sum(len(m.assignment()) for m in members) < partitions
            or len({len(m.assignment()) for m in members}) > 2
            or _members_in(bootstrap, group) < count  # the idle one has joined too: no membership change in a window
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the members did not share the partitions")
            for m in members:
                m.poll(0.1)
        yield members
    finally:
        for m in members:
            m.close()


@contextmanager
def crash_loop(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition at 20 msg/s, committed at 0 with 200 waiting; its only consumer keeps crashing: it joins, reads a
    few messages for half a second and dies without committing (closes), then a new one starts. The offset never
    moves and the member id changes at every crash (issue 22: it was called stuck_consumer -> restart, which is what
    already happens)."""
    create(bootstrap, topic, 1)
    backlog(bootstrap, topic, 1, 200)
    commit_empty(bootstrap, group, {(topic, 0): 0})

    def crashing(stop: threading.Event) -> None:
        while not stop.is_set():
            # KIP-848's protocol: a new member is in the group at its first heartbeat, so the loop turns in about a
            # second, as a process that dies at once does (a classic JoinGroup can take longer than the crash).
            dying = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "group.protocol": "consumer",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
            dying.subscribe([topic])
            joining = time.monotonic() + 10.0
            while not dying.assignment() and time.monotonic() < joining and not stop.is_set():
                dying.poll(0.1)
            working = time.monotonic() + 0.5
            while time.monotonic() < working and not stop.is_set():
                dying.consume(10, 0.1)
            dying.close()

    with running(writer(bootstrap, topic, 1, 20), crashing):
        yield


@contextmanager
def poison_message(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 20 msg/s each; one member reads both, but fails on record 50 of partition 0 and retries it
    forever (seeks back to it, commits partition 0 no further), while partition 1 is read and committed as it comes
    (issue 22: it was offered throughput_deficit -> scale beside hot_partition -> restart)."""
    create(bootstrap, topic, 2)
    backlog(bootstrap, topic, 2, 100)
    poison = TopicPartition(topic, 0, 50)

    def retrying(c: Consumer) -> Callable[[threading.Event], None]:
        def loop(stop: threading.Event) -> None:
            while not stop.is_set():
                got = [m for m in c.consume(100, 0.1) if m.error() is None]
                if any(m.partition() == 0 and (m.offset() or 0) >= 50 for m in got):
                    c.seek(poison)  # the handler failed on record 50: try it again
                done = [m for m in got if m.partition() == 1]
                if done:
                    c.commit(offsets=[TopicPartition(topic, 1, (done[-1].offset() or 0) + 1)], asynchronous=False)

        return loop

    commit_empty(bootstrap, group, {(topic, 0): 50})
    with _members(bootstrap, group, topic, 1) as [c], running(writer(bootstrap, topic, 2, 20), retrying(c)):
        yield


KICK_POLL_MS = 6000
"""max.poll.interval.ms of the kicked-out member: the smallest librdkafka allows with the broker's smallest classic
session (6 s)."""
KICK_BATCH = 40
"""Messages the kicked-out member reads and commits before each batch that outlasts max.poll.interval.ms."""


@contextmanager
def poll_interval_kick_outs(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition with 2,000 messages written over the last 100 s (create timestamps) and 20 msg/s more; the
    group's one member reads 40, commits them, then spends 7 s on the next batch without polling (longer than its
    max.poll.interval.ms, 6 s): librdkafka leaves the group and the next poll joins it again, under a new member id.
    Once it has been kicked out once and committed again, it waits after its next commit (its partition paused,
    polling: in the group) until both checks took their first snapshot, then goes on:
    every window starts with the member in the group, not in the second the group is Empty between two lives."""
    create(bootstrap, topic, 1)
    history(bootstrap, topic, 0, time.time(), [(100, 0, 20)])
    member = consumer(bootstrap, group, max_poll_interval_ms=KICK_POLL_MS)
    member.subscribe([topic])
    ids: list[str] = []
    hold, holding, go = threading.Event(), threading.Event(), threading.Event()

    def wait_for_the_checks(stop: threading.Event, deadline: float) -> None:
        assignment = member.assignment()
        member.pause(assignment)
        holding.set()
        while not go.is_set() and not stop.is_set() and time.monotonic() < deadline:
            member.poll(0.1)
        member.resume(assignment)

    def batches(stop: threading.Event) -> None:
        deadline = time.monotonic() + 200.0
        while not stop.is_set() and time.monotonic() < deadline:
            got = [m for m in member.consume(KICK_BATCH, 0.5) if m.error() is None]
            if not got:
                continue
            last = max(m.offset() or 0 for m in got)
            member.commit(offsets=[TopicPartition(topic, 0, last + 1)], asynchronous=False)
            ids.append(member.memberid() or "")
            if hold.is_set() and not go.is_set():
                wait_for_the_checks(stop, deadline)
            stop.wait(KICK_POLL_MS / 1000 + 1.0)  # the slow batch: no poll for longer than max.poll.interval.ms

    def waits_for_first_snapshots(stop: threading.Event) -> None:
        try:
            first_snapshots(group, count=2)
        finally:
            go.set()

    try:
        with running(writer(bootstrap, topic, 1, 20), batches, waits_for_first_snapshots):
            wait_for("a kick-out and a commit after it", lambda: len(set(ids)) >= 2, timeout=60)
            hold.set()
            wait_for("the member waiting for the checks", holding.is_set, timeout=30)
            yield
    finally:
        member.close()


REWIND_AFTER, REWIND_BY, REREAD_FOR = 2.0, 500, 6.5
"""Seconds after both checks took their first snapshot when the member is sent back, how many messages back, and in
how many seconds it reads them again (it reaches the offset it went back from 8.5 s after the first snapshots):
after the second snapshot of the default sampling (5 s and a collection time) and before the last of
`--every 3`'s (9 s and three)."""


@contextmanager
def rewind_recovered(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """1 partition written at 20 msg/s, 600 messages read and committed before the check; the group's one member
    reads and commits as messages come. 2 s after both checks' first snapshot, a rebalance sends it back 500
    messages (it seeks there and commits the old offset, as a member handed a partition at an old commit does); it
    reads them again at an even pace, committing each batch, and is back at the offset it went back from 6.5 s
    later, then reads as messages come again."""
    create(bootstrap, topic, 1)
    backlog(bootstrap, topic, 1, 600)
    rewind_at: list[float] = []
    steps: list[tuple[int, int, float]] = []
    """(offset it went back from, offset it went back to, when), once done."""
    recovered: list[int] = []
    """The first offset committed at or past the one it went back from."""

    def waits_for_first_snapshots(stop: threading.Event) -> None:
        first_snapshots(group, count=2)
        rewind_at.append(time.monotonic() + REWIND_AFTER)

    def allowed(committed: int) -> int:
        """Messages the member may read now: all while it is not rereading, else up to its even pace."""
        if not steps or recovered:
            return 500
        start, back, at = steps[0]
        due = back + int((start - back) * min(1.0, (time.monotonic() - at) / REREAD_FOR))
        return min(100, due - committed) if time.monotonic() - at < REREAD_FOR else 500

    def member_loop(c: Consumer) -> Callable[[threading.Event], None]:
        def loop(stop: threading.Event) -> None:
            committed = 0
            while not stop.is_set():
                if not steps and rewind_at and time.monotonic() >= rewind_at[0]:
                    [at] = c.position([TopicPartition(topic, 0)])
                    back = TopicPartition(topic, 0, at.offset - REWIND_BY)
                    c.seek(back)
                    c.commit(offsets=[back], asynchronous=False)
                    steps.append((at.offset, back.offset, time.monotonic()))
                    committed = back.offset
                take = allowed(committed)
                if take <= 0:
                    stop.wait(0.05)
                    continue
                got = [m for m in c.consume(take, 0.1) if m.error() is None]
                if got:
                    committed = max(m.offset() or 0 for m in got) + 1
                    c.commit(offsets=[TopicPartition(topic, 0, committed)], asynchronous=False)
                    if steps and not recovered and committed >= steps[0][0]:
                        recovered.append(committed)

        return loop

    with _members(bootstrap, group, topic, 1) as [c]:
        _read_to_end(c, topic, {0: 600})
        with running(writer(bootstrap, topic, 1, 20), member_loop(c), waits_for_first_snapshots):
            yield
    if not (steps and recovered):  # else the checks saw a healthy group, not this situation
        raise RuntimeError(f"the member did not rewind and recover while the checks ran: {steps} {recovered}")


LEAVES_AFTER = 2.0
"""Seconds after both checks took their first snapshot when the member of `members_left` stops."""


@contextmanager
def members_left(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """2 partitions at 20 msg/s each, 200 waiting on each, committed at 50; the group's one member reads 20 msg/s and
    commits every batch, and stops 2 s after both checks' first snapshot (it leaves the group: Empty). Its offsets
    moved between the first snapshot and the second, and not since, while lag grows."""
    create(bootstrap, topic, 2)
    backlog(bootstrap, topic, 2, 200)
    commit_empty(bootstrap, group, {(topic, 0): 50, (topic, 1): 50})
    c = consumer(bootstrap, group)
    c.subscribe([topic])
    leave = threading.Event()
    seen: list[float] = []

    def timer(stop: threading.Event) -> None:
        try:
            first_snapshots(group, count=2)
            seen.append(time.monotonic())
            stop.wait(LEAVES_AFTER)
        finally:
            leave.set()

    def reads_then_leaves(stop: threading.Event) -> None:
        Reader(c, 20)(leave)
        c.close()

    try:
        joined([c])
    except RuntimeError:
        c.close()
        raise
    with running(writer(bootstrap, topic, 2, 20), timer, reads_then_leaves):
        yield
    if not seen:  # else the checks saw a member reading all along, not this situation
        raise RuntimeError("the checks' first snapshots were not seen: the member did not leave in time")


WRITES_AFTER = 2.0
"""Seconds after both checks took their first snapshot when the producer of `stopped_behind_zero_lag` starts."""


@contextmanager
def stopped_behind_zero_lag(bootstrap: str, topic: str, group: str) -> Iterator[None]:
    """Burrow #290 (a stopped consumer hidden behind an old zero lag). 2 partitions, 100 messages each, read and
    committed to their ends by the group's 2 members (one partition each): caught up, nothing written. Member A then
    stops committing (it polls, so it stays in the group, and reads, but commits nothing: a hung handler); member B
    reads and commits as messages come. 2 s after both checks' first snapshot, 20 msg/s per partition are written:
    every window's first snapshot sees lag 0 on both partitions, and only that one on A's."""
    create(bootstrap, topic, 2)
    backlog(bootstrap, topic, 2, 100)
    seen: list[float] = []

    def quiet_then_writes(stop: threading.Event) -> None:
        first_snapshots(group, count=2)
        seen.append(time.monotonic())
        if not stop.wait(WRITES_AFTER):
            writer(bootstrap, topic, 2, 20)(stop)

    with _members(bootstrap, group, topic, 2) as [a, b]:
        for member in (a, b):
            _read_to_end(member, topic, {tp.partition: 100 for tp in member.assignment()})
        with running(quiet_then_writes, Reader(a, commits=False), Reader(b)):
            yield
    if not seen:  # else the checks' windows never saw the group caught up: not this situation
        raise RuntimeError("the checks' first snapshots were not seen: the writes did not wait for them")


NINE_SECONDS_NO_SIBLING = (
    "nobody in the group commits, so there is no sibling to judge against, and Kafka keeps no history of commits: "
    "an offset unmoved for 9 s is also what a consumer committing every 10 s shows; STALL needs min_span (10 s)"
)

SCENARIOS = (
    Scenario(
        "healthy",
        healthy,
        Expected(Status.OK, None, None, "every message is read and committed as it comes: nothing to explain"),
    ),
    Scenario(
        "idle topic",
        idle_topic,
        Expected(Status.OK, None, None, "nothing written, everything committed: a quiet topic, not a stuck consumer"),
    ),
    Scenario(
        "hot partition, key skew",
        key_skew,
        Expected(
            Status.WARN,
            "hot_partition",
            "drain",
            "one partition holds nearly all the lag, growing at every sample; it is written 30x faster than the "
            "others (one key): one partition cannot be split between consumers, so drain it",
        ),
    ),
    Scenario(
        "hot partition, slow owner",
        slow_owner,
        Expected(
            Status.WARN,
            "hot_partition",
            "restart",
            "one partition holds the lag; its owner reads 10 msg/s while the others read their 60 msg/s: restart "
            "that owner (no scale: the other partitions keep up)",
        ),
    ),
    Scenario(
        "stuck consumer, short window",
        stuck_short,
        Expected(
            Status.STALL,
            "stuck_consumer",
            "restart",
            "member A's partitions never commit while lag grows (15 s >= min_span): STALL, restart A",
        ),
        Expected(
            Status.STALL,
            "stuck_consumer",
            "restart",
            "9 s < min_span, but B's partitions committed while A's did not: stuck judged against its sibling",
        ),
    ),
    Scenario(
        "stuck consumer, long window",
        stuck_alone,
        Expected(
            Status.STALL,
            "stuck_consumer",
            "restart",
            "the only member's offsets did not move for 15 s (>= min_span) while lag grew: STALL, restart it",
        ),
        Undecidable(NINE_SECONDS_NO_SIBLING),
    ),
    Scenario(
        "no active members",
        no_members,
        Expected(
            Status.STOP,
            "no_active_members",
            "scale",
            "the group is Empty while lag grows; its offsets did not move for 15 s: STOP, start consumers",
        ),
        Expected(
            None,
            "no_active_members",
            "scale",
            "the group is Empty with lag (the broker says so): cause and remedy are decided. The status is not: STOP "
            "needs the offsets unmoved over min_span (10 s, case 11 of tests/engine/test_evaluate_cases.py), and "
            "--every 3 spaces snapshots 3 s after each one is taken, so the span is 9 s plus three collection times: "
            "WARN (growing lag) under 10 s, STOP at 10 s or more",
        ),
    ),
    Scenario(
        "throughput deficit",
        throughput_deficit,
        Expected(
            Status.WARN,
            "throughput_deficit",
            "scale",
            "2 members read 120 of the 240 msg/s written, every partition alike: more replicas (up to 4) keep up",
        ),
    ),
    Scenario(
        "partition ceiling",
        partition_ceiling,
        Expected(
            Status.WARN,
            "partition_ceiling",
            "drain",
            "each partition has its own member and both fall behind alike: more replicas would sit idle, drain",
        ),
    ),
    Scenario(
        "never committed",
        never_committed,
        Expected(
            Status.OK,
            None,
            None,
            "no committed offset: lag and lag in seconds are unknown ('-', null), never a made-up number",
        ),
    ),
    Scenario(
        "producer burst, ongoing",
        burst_ongoing,
        Expected(
            Status.WARN,
            "producer_burst",
            "scale",
            "400 msg/s now against 10 msg/s over the 15 min before (the time index), still going, and 1 member for "
            "2 partitions: scale",
        ),
    ),
    Scenario(
        "producer burst, just ended",
        burst_ended,
        Expected(
            Status.OK,
            "producer_burst",
            None,
            "the time index shows 200 msg/s against 5 before; writes are back at 5 msg/s and the backlog drains "
            "at 95 msg/s: nothing to do",
        ),
    ),
    Scenario(
        "producer burst, young topic",
        burst_young,
        Expected(
            Status.WARN,
            "producer_burst",
            "scale",
            "the topic was 36 s old at the scenario's start: at most the 1 min horizon has data, but the time index "
            "says when its first record was written; 2,000 msg/s in the window (or the last minute) against the rate "
            "from then to the window's first sample (or to a minute ago), still going, and 1 member for 2 "
            "partitions: scale",
        ),
    ),
    Scenario(
        "rebalance churn",
        rebalance_churn,
        Expected(
            Status.OK,
            "rebalance_churn",
            None,
            "a member keeps joining and leaving, so membership changes between snapshots; lag stays small",
        ),
    ),
    Scenario(
        "healthy, 20 msg/s",
        steady_20,
        Expected(Status.OK, None, None, "a consumer that keeps up: a few messages under a second old are no trouble"),
    ),
    Scenario(
        "two topics, one idle",
        two_topics_one_idle,
        Expected(Status.OK, None, None, "one topic idle and read, the other read as it comes: nothing to explain"),
    ),
    Scenario(
        "transactions, caught up",
        transactions,
        Expected(Status.OK, None, None, "lag 1 per partition is the transaction's commit marker: caught up"),
    ),
    Scenario(
        "members over partitions",
        members_over_partitions,
        Expected(
            Status.WARN,
            "partition_ceiling",
            "drain",
            "3 members for 2 partitions, both owners slow alike: more members would own nothing, drain; never scale",
        ),
    ),
    Scenario(
        "crash loop",
        crash_loop,
        Expected(
            None,
            "rebalance_churn",
            None,
            "the member keeps dying and coming back: churn, with no restart (it restarts already). The status is STALL"
            " when a member holds the partition at the last snapshot, STOP when it is between lives: not graded",
        ),
    ),
    Scenario(
        "poison message",
        poison_message,
        Expected(
            Status.STALL,
            "stuck_consumer",
            None,
            "partition 0 is stuck at one record while its owner reads partition 1 as it comes: a poison message; "
            "neither a restart nor more members get past it",
        ),
    ),
    Scenario(
        "retention risk",
        retention_risk,
        Expected(
            Status.WARN,
            "retention_risk",
            "drain",
            "retention truncates the log and ~98% of what it keeps is unread, growing: drain before it is deleted",
        ),
    ),
    Scenario(
        "poll-interval kick-outs",
        poll_interval_kick_outs,
        Expected(
            Status.WARN,
            "rebalance_churn",
            None,
            "the member is kicked out every 7.5 s and rejoins, its offset moves between and the lag grows: churn "
            "with its mechanism (kicked out: configuration), no restart and no scale (more members are kicked out "
            "the same way)",
        ),
        Expected(
            Status.WARN,
            "rebalance_churn",
            None,
            "a kick-out every 7.5 s changes the member once, at most twice, in a 9 s window: one departure and a "
            "rejoin while the offset moved and lag grows name the kick-out (configuration), and the ceiling measured "
            "across that rebalance offers no drain",
        ),
    ),
    Scenario(
        "rewind recovered",
        rewind_recovered,
        Expected(
            Status.OK,
            None,
            None,
            "the offset went back 500 and came back past where it went back from before the last snapshot: "
            "recovered (Burrow's rewind recovery), keeping up",
        ),
    ),
    Scenario(
        "members left, offsets moved",
        members_left,
        Expected(
            Status.STOP,
            "no_active_members",
            "scale",
            "the group's only member committed at the first snapshot and left before the second: Empty, lag growing, "
            "offsets unmoved over the last 3 snapshots (10 s and more, min_span): STOP, start consumers",
        ),
        Expected(
            None,
            "no_active_members",
            "scale",
            "Empty with lag (the broker says so): cause and remedy decided. Not the status: the offsets moved between "
            "the first and second snapshots, so they are unmoved over the last 3 only, 6 s and collection times, "
            "under min_span (10 s): STOP needs more",
        ),
    ),
    Scenario(
        "stopped behind old zero lag",
        stopped_behind_zero_lag,
        Expected(
            Status.STALL,
            "stuck_consumer",
            "restart",
            "Burrow #290: A's partition was caught up at the first snapshot only and its offset never moved since "
            "while lag grows (15 s >= min_span): the old zero lag hides nothing, STALL, restart A",
        ),
        Expected(
            Status.STALL,
            "stuck_consumer",
            "restart",
            "9 s < min_span, but B's partition committed while A's did not since its zero lag, which is older than "
            "the recent samples: stuck judged against its sibling",
        ),
    ),
)
