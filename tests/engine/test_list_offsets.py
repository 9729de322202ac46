"""ListOffsets in chunks of partitions (lagbot.engine.list_offsets): the same answer, partition by partition, as one
request for all of them, for the log end, the log start and a timestamp, read back from Apache Kafka."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, OffsetSpec

from lagbot.engine import list_offsets
from lagbot.engine.collector import _list_offsets
from lagbot.engine.list_offsets import ask_offsets
from lagbot.engine.timeindex import offsets_at
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


class CountingAdmin:
    """The admin's `list_offsets`, counting the calls and the partitions of each."""

    def __init__(self, admin: AdminClient) -> None:
        self._admin = admin
        self.calls: list[int] = []

    def list_offsets(self, request: dict[Any, Any], **kwargs: Any) -> Any:
        self.calls.append(len(request))
        return self._admin.list_offsets(request, **kwargs)


def test_chunks_answer_as_one_request_does(kafka: Kafka, names: Names, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 7)
    for partition in range(7):
        kafka.produce(topic, partition, 3 + partition)
    partitions = [(topic, p) for p in range(7)]
    admin = CountingAdmin(kafka.admin)

    def answers(spec: Any) -> dict[tuple[str, int], int]:
        futures = ask_offsets(admin, partitions, spec, 10.0)  # type: ignore[arg-type]
        return {(tp.topic, tp.partition): future.result(15).offset for tp, future in futures.items()}

    whole = {
        name: answers(spec) for name, spec in (("latest", OffsetSpec.latest()), ("earliest", OffsetSpec.earliest()))
    }
    assert admin.calls == [7, 7]
    assert whole["latest"] == {(topic, p): 3 + p for p in range(7)}
    assert whole["earliest"] == {(topic, p): 0 for p in range(7)}

    monkeypatch.setattr(list_offsets, "CHUNK_PARTITIONS", 3)
    admin.calls.clear()
    assert answers(OffsetSpec.latest()) == whole["latest"]
    assert answers(OffsetSpec.earliest()) == whole["earliest"]
    assert admin.calls == [3, 3, 1, 3, 3, 1]

    log_end, log_start = _list_offsets(admin, "prod", partitions, 10.0)  # type: ignore[arg-type]
    assert (log_end, log_start) == (whole["latest"], whole["earliest"])
    assert admin.calls[6:] == [3, 3, 1, 3, 3, 1]

    later = time.time() + 3600  # nothing written since: -1 for every partition, from every chunk
    before = time.time() - 3600  # everything written since: the first offset, 0
    found = offsets_at(admin, 10.0)(partitions, [later, before])  # type: ignore[arg-type]
    assert found == [dict.fromkeys(partitions, -1), dict.fromkeys(partitions, 0)]
