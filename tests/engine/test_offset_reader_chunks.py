"""The offset reader asks for many groups a chunk at a time (so its child's memory stays bounded), under one
deadline, and an unreachable cluster costs one timeout and one new child, not one per chunk."""

from __future__ import annotations

import socket
import time

import pytest

from lagbot.engine import offset_reader
from lagbot.engine.offset_reader import OffsetReader
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


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
        assert sorted((c.topic, c.partition, c.offset) for c in committed) == [(topic, 0, i), (topic, 1, 10 + i)]
        fetch = fetched[group]
        assert not isinstance(fetch, str), fetch
        assert [(c.topic, c.partition, c.offset) for c in fetch] == [(topic, 1, 10 + i)]


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
