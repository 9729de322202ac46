"""Committed offsets (OffsetFetch) and group descriptions (DescribeGroups) read by a child process, so that a
crash of the Kafka client there cannot take the bot down with it.

Why: librdkafka (measured with confluent-kafka 2.16.1 / librdkafka 2.16.0, the newest release) crashes the
whole process when an AdminClient's ListConsumerGroupOffsets is answered with a coordinator error that asks
for a coordinator refresh (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE): its OffsetFetch response handler
hands the refresh to the client's consumer-group handle, which an admin client does not have (NULL). Measured
on Apache Kafka 4.1 restarted under load: SIGSEGV in rd_kafka_cgrp_op, or SIGABRT on an assertion in the same
path. Any broker restart or coordinator move can give those answers, and no check made beforehand closes the
race (the coordinator can move between the check and the request), so the request is sent from a child.
The same restart measured a second crash in the admin client's coordinator lookup, which DescribeGroups shares
(SIGABRT: "rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0' failed"), so the collector's
DescribeGroups is sent from the child as well. AlterConsumerGroupOffsets (a remediation's commit) goes to the same
coordinator through the same lookup, so it is sent from the child too: the whole AdminClient conversation with
group coordinators lives there, and the bot's own AdminClient sends only cluster-wide requests (ListGroups,
Metadata, ListOffsets).

A reader is one long-lived child (`python -m <this module>`) per cluster client, sharing nothing with the bot
but a pipe: the client's properties arrive on its stdin (never on its command line or in its environment),
then one JSON line per request (every group of a check at once), one JSON line per answer. A child that dies
or does not answer in time fails only that request: every group of it gets an error saying so, and the next
request starts a new child. The child exits when its stdin closes (the bot stopped or was killed).

The Kafka requests themselves, and their answers as JSON lines, are lagbot.engine.group_requests.
`InProcessReader` sends the same requests from the calling process instead, through the cluster's own
AdminClient. It is for a one-shot command (`lagbot check`): there a crash of the Kafka client is a failed command
with a nonzero exit, not a bot that stops watching, and starting a second interpreter (with confluent-kafka
and a connection of its own) would be most of the command's time. Which one a client uses is chosen where it
is made (`make_admin(..., isolate_group_reads=...)`), never from what the broker is.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import IO, Any, NoReturn, cast

from lagbot.core import messages
from lagbot.core.model import GroupState, Member
from lagbot.engine.group_requests import (
    AlterAnswer,
    Answer,
    GroupDocument,
    ReadAnswer,
    Request,
    alter_request,
    read_request,
    send,
)

TopicPartition = tuple[str, int]
ANSWER_GRACE = 5.0
"""Seconds the child may take beyond the request timeout before it is given up (and killed)."""
CHUNK_GROUPS = 100
"""Groups per request line. The child builds each answer whole: measured on Apache Kafka 4.1 with 2,000 groups of
50 partitions, one line for all of them left the child at 113 MiB resident (132 MiB peak), chunks of 250 at 42 MiB
and chunks of 100 at 35 MiB (the child importing only the Kafka client and lagbot.core), and a read of all 2,000
took no longer (1.5-1.8 s in chunks of 100 or 250 against 2.5-4.8 s in one line)."""


AHEAD = 2
"""Chunks asked of the child before the oldest one's answer is read: while this process decodes one chunk's
answer, the child already reads the next."""


@dataclass(frozen=True)
class Committed:
    """One partition's committed offset as the broker answered: `offset` None when nothing is committed."""

    topic: str
    partition: int
    offset: int | None
    error: str | None = None


GroupAnswer = list[Committed] | str
"""A group's committed offsets, or the text of why they could not be read."""


@dataclass(frozen=True)
class Described:
    """A group as DescribeGroups reported it."""

    state: GroupState
    members: tuple[Member, ...]
    assignor: str


@dataclass(frozen=True)
class Altered:
    """One partition of an AlterConsumerGroupOffsets answer: `error_code` (librdkafka's KafkaError code) and
    `error` (its text) None when the offset was stored."""

    topic: str
    partition: int
    error_code: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class AlterFailed:
    """The whole AlterConsumerGroupOffsets request failed. `unknown`: the child died or did not answer, so whether
    the broker stored the offsets is not known (read them back); otherwise the broker's answer says it did not."""

    problem: str
    unknown: bool
    error_code: int | None = None


CommittedOffsets = dict[TopicPartition, int | None]
"""A group's committed offsets by partition (None: nothing committed), less any partition whose fetch failed."""


@dataclass(frozen=True)
class GroupRead:
    """One group's committed offsets and description (each: the answer, or the text of why it failed)."""

    committed: CommittedOffsets | str
    described: Described | str


def plain_properties(config: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    """The client properties a child can be given: every plain value (callbacks and loggers stay here)."""
    return {k: v for k, v in config.items() if isinstance(v, str | int | float | bool)}


class OffsetReader:
    """Reads committed offsets of many groups at once through a child process; thread-safe, one request at a time."""

    def __init__(self, properties: Mapping[str, str | int | float | bool]) -> None:
        self._properties = dict(properties)
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self.failures = 0
        """How many children died or were given up (each replaced at the next read)."""

    def fetch(self, requests: Mapping[str, Sequence[TopicPartition] | None], timeout: float) -> dict[str, GroupAnswer]:
        """Committed offsets per group: the partitions asked for, or (None) every partition the group committed."""
        answer = self._request(requests, timeout, describe=frozenset())
        return {g: a if isinstance(a, str) else _group_answer(a) for g, a in answer.items()}

    def read(
        self, groups: Sequence[str], timeout: float, known: Mapping[str, Described] | None = None
    ) -> dict[str, GroupRead]:
        """Every committed offset and the description of each group: each chunk of groups' requests in flight
        together. A group in `known` is not described: its description is already known (see the collector)."""
        known = known or {}
        answer = self._request(dict.fromkeys(groups), timeout, describe=frozenset(g for g in groups if g not in known))
        return {
            g: GroupRead(a, a)
            if isinstance(a, str)
            else GroupRead(_committed_offsets(a), known[g] if g in known else _described(a))
            for g, a in answer.items()
        }

    def alter(self, group: str, offsets: Mapping[TopicPartition, int], timeout: float) -> list[Altered] | AlterFailed:
        """Commit `offsets` for the group (AlterConsumerGroupOffsets) from the child: per partition, stored or not."""
        with self._lock:
            try:
                answer = cast("AlterAnswer", self._send(alter_request(group, offsets, timeout), timeout))
            except ReaderFailed as exc:
                return AlterFailed(str(exc), unknown=True)
        if "error" in answer:
            code = answer.get("code")
            return AlterFailed(str(answer["error"]), unknown=False, error_code=None if code is None else int(code))
        return [
            Altered(str(t), int(p), None if c is None else int(c), None if e is None else str(e))
            for t, p, c, e in answer["altered"]
        ]

    def _request(
        self, requests: Mapping[str, Sequence[TopicPartition] | None], timeout: float, *, describe: AbstractSet[str]
    ) -> dict[str, GroupDocument | str]:
        """Every group's answer (with its description for those in `describe`), asked CHUNK_GROUPS at a time within
        one deadline (`timeout` for them all), the next chunk asked before this one's answer is read (`AHEAD`).

        When every group of a chunk failed (the cluster does not answer), the groups after it are not asked: they
        get the first failure's text, so an outage costs one timeout and one new child, not one per chunk.
        """
        groups = list(requests)
        chunks = [{g: requests[g] for g in groups[i : i + CHUNK_GROUPS]} for i in range(0, len(groups), CHUNK_GROUPS)]
        answer: dict[str, GroupDocument | str] = {}
        with self._lock:
            try:
                for got in self._chunk_answers(chunks, timeout, describe):
                    answer.update(got)
            except BaseException:
                self._stop_child()  # answers still on their way would be taken for the next request's
                raise
        return answer

    def _chunk_answers(
        self, chunks: list[dict[str, Sequence[TopicPartition] | None]], timeout: float, describe: AbstractSet[str]
    ) -> Iterator[dict[str, GroupDocument | str]]:
        """Each chunk's answer, in order. Up to AHEAD chunks are asked before the oldest one's answer is read, so
        the child reads the next chunk while this process decodes the last. Chunks not asked (the deadline passed,
        or a chunk failed as a whole) and chunks asked of a child that was then given up get the failure's text."""
        deadline = time.monotonic() + timeout
        asked = 0
        failed: str | None = None  # why the chunks from `asked` on are not asked
        lost: str | None = None  # why the chunks already asked will not be answered (their child was given up)
        for index, chunk in enumerate(chunks):
            while failed is None and asked < len(chunks) and asked - index < AHEAD:
                left = deadline - time.monotonic()
                if left <= 0:
                    failed = messages.offset_reader_failed(messages.timed_out(timeout))
                    break
                try:
                    self._write(read_request(chunks[asked], left, describe))
                except ReaderFailed as exc:
                    failed = messages.offset_reader_failed(str(exc))
                    break
                asked += 1
            if index >= asked or lost is not None:
                why = lost or failed
                assert why is not None  # a chunk goes unasked only once asking failed
                yield dict.fromkeys(chunk, why)
                continue
            got = self._chunk_answer(chunk, deadline + ANSWER_GRACE)
            if _all_failed(got):
                lost = failed = next(_failure_text(a) for a in got.values())
            yield got

    def _chunk_answer(self, chunk: Mapping[str, object], deadline: float) -> dict[str, GroupDocument | str]:
        """The child's answer to an asked chunk; a chunk whose every group failed gives up the child."""
        try:
            answer = cast("ReadAnswer", self._read_answer(deadline))
        except ReaderFailed as exc:
            return {g: messages.offset_reader_failed(str(exc)) for g in chunk}
        if _all_failed(answer):
            # Measured after a 60 s broker outage: a client that lived through it timed out every group
            # request for minutes after the broker was back, while a new client was answered within 3 s.
            self._stop_child()
            self.failures += 1
        missing = messages.offset_reader_failed("no answer for the group")
        return {g: answer[g] if isinstance(answer.get(g), dict) else missing for g in chunk}

    def _send(self, request: Request, timeout: float) -> Answer:
        """The answer to one request, from the child."""
        self._write(request)
        return self._read_answer(time.monotonic() + timeout + ANSWER_GRACE)

    @property
    def child_pid(self) -> int | None:
        """The running child's process id (None before the first read and after a failure)."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def close(self) -> None:
        """Stop the child (it exits on its own when its stdin closes)."""
        with self._lock:
            self._stop_child()

    def _write(self, request: Request) -> None:
        """Ask the child (started if there is none); its answer is read by `_read_answer`, in the order asked."""
        child = self._ensure_child()
        assert child.stdin is not None
        try:
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
        except (OSError, ValueError):
            self._give_up(child, 0.0)

    def _read_answer(self, deadline: float) -> Answer:
        """The child's next answer, by `deadline` (else the child is given up)."""
        child = self._child
        if child is None or child.stdout is None:
            raise ReaderFailed(messages.reader_no_answer(0.0))
        try:
            line = self._read_line(child.stdout, deadline)
        except (OSError, ValueError):
            line = None
        if line is None:
            self._give_up(child, max(0.0, deadline - time.monotonic()))
        answer: Answer = json.loads(line)  # the child's JSON: lagbot.engine.group_requests' documents
        return answer

    def _give_up(self, child: subprocess.Popen[bytes], within: float) -> NoReturn:
        problem = self._failure(child, within)
        self._stop_child()
        self.failures += 1
        raise ReaderFailed(problem)

    def _ensure_child(self) -> subprocess.Popen[bytes]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        if self._child is not None:  # died between two requests
            self._stop_child()
            self.failures += 1
        self._child = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C meant for the bot reaches the child only as its stdin closing
        )
        assert self._child.stdin is not None
        self._child.stdin.write(json.dumps(self._properties).encode() + b"\n")
        self._child.stdin.flush()
        self._buffer = b""
        return self._child

    def _read_line(self, stream: IO[bytes], deadline: float) -> bytes | None:
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _failure(self, child: subprocess.Popen[bytes], within: float) -> str:
        try:
            code = child.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return messages.reader_no_answer(within)
        if code < 0:
            try:
                return messages.reader_crashed(signal.Signals(-code).name)
            except ValueError:
                pass
        return messages.reader_exited(code)

    def _stop_child(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if child.poll() is None:
            child.kill()
        child.wait(timeout=5)


class InProcessReader(OffsetReader):
    """The same requests and answers as `OffsetReader`, sent by `admin` in this process: no child to start.

    A coordinator error can crash this process (see the module's docstring), so it is only for a process whose
    crash is just a failed command (`lagbot check`), never for the bot.
    """

    def __init__(self, admin: Any) -> None:
        super().__init__({})
        self._admin = admin
        self._answers: deque[Callable[[], Answer]] = deque()

    def _write(self, request: Request) -> None:
        """Send the request's groups' requests now; their answer is gathered when it is read (so the chunks asked
        ahead are in flight together, as they are when the child reads them)."""
        self._answers.append(send(self._admin, request))

    def _read_answer(self, deadline: float) -> Answer:
        return self._answers.popleft()()

    @property
    def child_pid(self) -> int | None:
        return None

    def _stop_child(self) -> None:
        """No child to stop: the answers computed ahead are dropped (a request in which every group failed is simply
        answered as failed)."""
        self._answers.clear()


class ReaderFailed(Exception):
    """The child died or did not answer; the message says which (the request's outcome is not known)."""


def _all_failed(answer: Mapping[str, GroupDocument | str]) -> bool:
    """True when every group failed (its offsets, and its description if asked for): the child's answer, or the
    text each group got when the child gave none."""
    return bool(answer) and all(isinstance(a, str) or ("error" in a and "described" not in a) for a in answer.values())


def _failure_text(answer: str | GroupDocument) -> str:
    return answer if isinstance(answer, str) else str(answer["error"])


def _group_answer(raw: GroupDocument) -> GroupAnswer:
    if "error" in raw:
        return str(raw["error"])
    return [Committed(str(t), int(p), None if o < 0 else int(o), e) for t, p, o, e in raw["offsets"]]


def _committed_offsets(raw: GroupDocument) -> CommittedOffsets | str:
    """`_group_answer` as the collector keeps it, made straight from the answer's rows: no `Committed` per
    partition (100,000 of them a cycle at 100,000 group-partitions, ~0.15 s)."""
    if "error" in raw:
        return str(raw["error"])
    return {(t, p): None if o < 0 else o for t, p, o, e in raw["offsets"] if e is None}


def _described(raw: GroupDocument) -> Described | str:
    described = raw.get("described")
    if not isinstance(described, dict):
        return str(raw.get("described_error") or messages.offset_reader_failed("no description of the group"))
    members = tuple(
        Member(str(m), str(c), str(h), tuple((str(t), int(p)) for t, p in a)) for m, c, h, a in described["members"]
    )
    return Described(GroupState(described["state"]), members, str(described["assignor"]))


# ---------------------------------------------------------------------------------------------------
# The child
# ---------------------------------------------------------------------------------------------------


def main() -> int:
    """The child: properties on the first stdin line, then one request per line; exits when stdin closes."""
    from confluent_kafka.admin import AdminClient

    from lagbot.core.logs import configure_logging

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging()  # JSON lines on stderr like the bot's; librdkafka's connection noise stays out
    lines = _Lines(sys.stdin.buffer.fileno())
    first = lines.next(wait=True)
    if not first:
        return 0
    admin = AdminClient({**json.loads(first), "logger": logging.getLogger("librdkafka")})
    serve(lines, lambda request: send(admin, request), _reply)
    return 0


def serve(lines: _Lines, start: Callable[[Request], Callable[[], Answer]], reply: Callable[[Answer], None]) -> None:
    """Answer every request line, in order, until the pipe closes. Every request already asked is sent (`start`)
    before the oldest one is answered, at most AHEAD in flight: the parent asks the next chunk before it reads this
    one's answer, and the broker then works on both. The requests asked before the pipe closed are still answered."""
    pending: deque[Callable[[], Answer]] = deque()
    while True:
        line = lines.next(wait=not pending) if len(pending) < AHEAD else None
        if line is None:
            reply(pending.popleft()())
        elif not line:  # stdin closed: the parent stopped or gave up on this child
            while pending:
                reply(pending.popleft()())
            return
        else:
            pending.append(start(json.loads(line)))


def _reply(answer: Answer) -> None:
    sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
    sys.stdout.buffer.flush()


class _Lines:
    """The lines of a pipe, read from its descriptor: `next(wait=False)` answers at once whether a whole line has
    arrived (None when not), which a buffered file's `readline` cannot."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self._closed = False

    def next(self, *, wait: bool) -> bytes | None:
        """The next line (without its newline), b"" once the pipe is closed, None if `wait` is False and no whole
        line is there yet."""
        while b"\n" not in self._buffer and not self._closed:
            if not wait and not _readable(self._fd):
                return None
            chunk = os.read(self._fd, 1 << 16)
            self._closed = not chunk
            self._buffer += chunk
        if b"\n" not in self._buffer:
            return b""
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def _readable(fd: int) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(0))


if __name__ == "__main__":
    sys.exit(main())
