"""Messages -> the Arrow rows a drain writes (every field kept, headers or none), and who writes them."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from lagbot.remediations.drain.plan import OffsetRange
from lagbot.remediations.drain.settings import ParquetWriter
from lagbot.remediations.drain.sinks import Tally, chosen_writer, record_batch, tally_batch

RANGE = OffsetRange("orders", 2, 100, 200)
LABEL = RANGE.label


def message(offset: int, *, key: bytes | None = b"k", headers: list[tuple[str, bytes]] | None = None) -> Message:
    return Message(
        topic="orders", partition=2, offset=offset, key=key, value=b"v%d" % offset, headers=headers,
        timestamp=(1, 1_700_000_000_000 + offset),
    )  # fmt: skip


def row(offset: int, key: bytes | None, headers: list[dict[str, object]]) -> dict[str, object]:
    return {
        "offset": offset, "timestamp": 1_700_000_000_000 + offset, "key": key, "value": b"v%d" % offset,
        "headers": headers, "topic": "orders", "partition": 2, "offset_range": LABEL,
    }  # fmt: skip


def test_messages_without_headers_become_rows_with_empty_header_lists() -> None:
    batch = record_batch(RANGE, [message(100), message(103, key=None)])

    assert batch.to_pylist() == [row(100, b"k", []), row(103, None, [])]


def test_headers_are_kept_in_order_next_to_messages_without_any() -> None:
    headers = [("trace", b"t1"), ("trace", b"t2"), ("n", b"")]
    batch = record_batch(RANGE, [message(100), message(101, headers=headers), message(102)])

    kept: list[dict[str, object]] = [
        {"key": "trace", "value": b"t1"},
        {"key": "trace", "value": b"t2"},
        {"key": "n", "value": b""},
    ]
    assert batch.to_pylist() == [row(100, b"k", []), row(101, b"k", kept), row(102, b"k", [])]


def test_an_empty_batch_has_the_schema_and_no_rows() -> None:
    batch = record_batch(RANGE, [])

    assert (batch.num_rows, batch.schema.names) == (
        0,
        ["offset", "timestamp", "key", "value", "headers", "topic", "partition", "offset_range"],
    )


def test_the_tally_counts_messages_key_and_value_bytes_and_the_offsets_seen() -> None:
    tally = Tally()
    tally_batch(tally, record_batch(RANGE, [message(100), message(101, key=None)]))
    tally_batch(tally, record_batch(RANGE, [message(150)]))

    assert (tally.count, tally.bytes, tally.first, tally.last) == (3, 1 + 4 + 4 + 1 + 4, 100, 150)


@pytest.mark.parametrize(
    ("writer", "scheme", "chosen"),
    [
        ("auto", "file", "arrow"),  # file://, or a path where Hadoop's default filesystem is local
        ("auto", "hdfs", "spark"),  # a path on a cluster whose default filesystem is HDFS, or hdfs://
        ("auto", "s3a", "spark"),  # Hadoop's scheme: its credentials live in Spark's configuration
        ("auto", None, "spark"),  # Hadoop has no connector for it: Spark's writer says so
        ("arrow", "s3a", "arrow"),  # asked for: pyarrow's own clients (it refuses s3a:// itself)
        ("spark", "file", "spark"),
    ],
)
def test_auto_writes_local_datasets_with_pyarrow_and_leaves_other_filesystems_to_spark(
    writer: ParquetWriter, scheme: str | None, chosen: str
) -> None:
    assert chosen_writer(writer, filesystem_scheme=scheme) == chosen
