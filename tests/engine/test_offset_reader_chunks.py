"""The offset reader asks for many groups a chunk at a time (so its child's memory stays bounded), under one
deadline, and an unreachable cluster costs one timeout and one new child, not one per chunk."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from functools import partial
from typing import Any

import pytest

from lagbot.engine import offset_reader
from lagbot.engine.offset_reader import InProcessReader, OffsetReader
from tests.conftest import Kafka, Names


@pytest.mark.integration
def test_groups_read_in_chunks_are_exact_and_in_one_child(
    kafka: Kafka, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offset_reader, "CHUNK_GROUPS", 2)
    topic = names("topic")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.produce(topic, 1, 30)
    groups = [names("group") for _ in range(5)]
    for i, group in enumerate(groups):
        kafka.commit(group, {(topic, 0): i, (topic, 1): 10 + i})
    reader = OffsetReader({"bootstrap.servers": kafka.bootstrap})
    try:
        read = reader.read(groups, 10.0)
        pid = reader.child_pid
        fetched = reader.fetch({g: [(topic, 1)] for g in groups}, 10.0)
        assert reader.child_pid == pid and reader.failures == 0
    finally:
        reader.close()
    assert list(read) == groups
    for i, group in enumerate(groups):
        committed = read[group].committed
        assert not isinstance(committed, str), committed
        assert committed == {(topic, 0): i, (topic, 1): 10 + i}
        fetch = fetched[group]
        assert not isinstance(fetch, str), fetch
        assert [(c.topic, c.partition, c.offset) for c in fetch] == [(topic, 1, 10 + i)]


@pytest.mark.integration  # the child's client tries to connect
def test_an_unreachable_cluster_costs_one_timeout_and_one_child_whatever_the_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(offset_reader, "CHUNK_GROUPS", 2)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    reader = OffsetReader({"bootstrap.servers": f"127.0.0.1:{port}"})
    groups = [f"g{i}" for i in range(7)]
    try:
        started = time.monotonic()
        read = reader.read(groups, 2.0)
        took = time.monotonic() - started
    finally:
        reader.close()
    assert list(read) == groups
    texts = {r.committed for r in read.values()}
    [text] = texts  # every group the same text: the first chunk's, given to the chunks not asked
    assert isinstance(text, str) and text.endswith("Local: Timed out (_TIMED_OUT)"), text
    assert reader.failures == 1  # the first chunk's child was replaced; the other chunks were not asked
    assert took < 2.0 + offset_reader.ANSWER_GRACE, took


@pytest.mark.integration
def test_the_child_loads_only_the_kafka_client_and_the_foundation(kafka: Kafka, names: Names) -> None:
    """Every module the child imports stays resident in it for the bot's lifetime (measured: importing the collector,
    and through it the configuration's pydantic models, cost the child 16 MB). The child's code answers a real read
    here, in a process of its own, which then lists what it loaded."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 5)
    kafka.commit(group, {(topic, 0): 3})
    code = (
        "import json, sys\n"
        "from confluent_kafka.admin import AdminClient\n"
        "from lagbot.engine import group_requests, offset_reader\n"
        f"admin = AdminClient({{'bootstrap.servers': {kafka.bootstrap!r}}})\n"
        f"request = {{'timeout': 10.0, 'describe': [{group!r}], 'groups': {{{group!r}: None}}}}\n"
        "answer = group_requests.send(admin, request)()\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml', 'numpy')"
        " or m in ('lagbot.engine.collector', 'lagbot.core.config'))\n"
        "print(json.dumps([answer, heavy]))\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    answer, heavy = json.loads(shown.stdout)
    assert answer[group]["offsets"] == [[topic, 0, 3, None]]
    assert answer[group]["described"]["state"] == "Empty"
    assert heavy == []


def test_a_chunk_failed_as_a_whole_drops_the_chunk_asked_ahead_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next chunk is asked before a chunk's answer is read; when that answer fails as a whole, the chunk asked
    ahead is given the same failure, and its answer is never taken for a later request's."""
    monkeypatch.setattr(offset_reader, "CHUNK_GROUPS", 2)
    asked: list[list[str]] = []
    outage = {"on": True}

    def answer(admin: object, request: dict[str, Any]) -> dict[str, Any]:
        groups = list(request["groups"])
        asked.append(groups)
        if outage["on"]:
            return {g: {"error": "Local: Timed out (_TIMED_OUT)"} for g in groups}
        return {g: {"offsets": [["t", 0, 7, None]]} for g in groups}

    # The requests' answer as the reader gets it when it sends them (`send`), gathered when it is read.
    monkeypatch.setattr(offset_reader, "send", lambda admin, request: partial(dict, answer(admin, request)))
    reader = InProcessReader(admin=None)
    first = reader.fetch({g: None for g in ("a", "b", "c", "d", "e")}, 5.0)
    assert asked == [["a", "b"], ["c", "d"]]  # the second chunk was asked ahead, the third never
    assert first == dict.fromkeys("abcde", "Local: Timed out (_TIMED_OUT)")
    outage["on"] = False
    second = reader.fetch({"e": None}, 5.0)
    assert asked[2:] == [["e"]]
    assert second == {"e": [offset_reader.Committed("t", 0, 7, None)]}


def test_the_child_sends_every_request_asked_before_it_answers_the_oldest() -> None:
    """Requests already on the pipe are all sent (at most AHEAD in flight) before the oldest is answered, answers go
    back in the order asked, and the child stops when the pipe closes."""
    read_end, write_end = os.pipe()
    events: list[str] = []

    def start(request: dict[str, Any]) -> Any:
        events.append(f"send {request['n']}")
        return lambda: {"n": request["n"]}

    def reply(answer: dict[str, Any]) -> None:
        events.append(f"answer {answer['n']}")
        if answer["n"] == 3:  # the parent asks a fourth request once it has read the third answer, then leaves
            os.write(write_end, b'{"n": 4}\n')
            os.close(write_end)

    os.write(write_end, b"".join(json.dumps({"n": n}).encode() + b"\n" for n in (1, 2, 3)))
    with os.fdopen(read_end, "rb", buffering=0):
        offset_reader.serve(offset_reader._Lines(read_end), start, reply)
    assert offset_reader.AHEAD == 2
    assert events == ["send 1", "send 2", "answer 1", "send 3", "answer 2", "answer 3", "send 4", "answer 4"]


def test_lines_tell_a_whole_line_from_a_part_without_waiting() -> None:
    read_end, write_end = os.pipe()
    lines = offset_reader._Lines(read_end)
    try:
        assert lines.next(wait=False) is None
        os.write(write_end, b'{"a": 1}\n{"b"')
        assert lines.next(wait=False) == b'{"a": 1}'
        assert lines.next(wait=False) is None  # half a line is not a line
        os.write(write_end, b": 2}\n")
        assert lines.next(wait=True) == b'{"b": 2}'
        os.close(write_end)
        assert lines.next(wait=True) == b""
        assert lines.next(wait=False) == b""
    finally:
        os.close(read_end)
