"""Where drained messages go, and how one range is read: the code that runs inside Spark tasks.

Sinks, named by a URL:
- a Parquet dataset: a local path or any Hadoop filesystem URL (file://, hdfs://, s3a://, abfss://,
  gs:// ... whatever the Spark cluster's Hadoop has connectors for). Layout
  `<sink>/topic=T/partition=P/offset_range=S-E/part-*.parquet` with columns offset, timestamp (ms
  since the epoch, as Kafka gives it; -1 when the broker has none), key, value, headers (list of
  key/value); topic, partition and offset_range come from the directories, as Spark's partitionBy
  writes them. One directory per range, replaced as a whole on a rerun: written by the task itself
  with pyarrow (`parquet_range`, writer "arrow") or by Spark's writer from the rows `record_batch`
  builds (writer "spark", dynamic partition overwrite); `chosen_writer` decides.
- `kafka:TOPIC`: replay into another topic of the same cluster with an idempotent producer, keys,
  values, headers and timestamps kept, plus a `lagbot-drain-source` header `topic/partition/offset`
  that lets a reader drop the duplicates a rerun of a failed range can produce. Keys are partitioned
  with murmur2 like the Java client, so the target keeps key -> partition affinity.

Reading is by offset, never by count: a task assigns its partition at the range start and stops at
the first offset >= the range end (or when its position or the partition end reaches it), so gaps
left by compaction or transaction markers are fine. Readers are always read_committed: the records of
an aborted transaction are dropped (the reader's position moves past them), never written to a sink.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lagbot.remediations.drain.plan import OffsetRange, RangeReceipt, RangeStatus
from lagbot.remediations.drain.settings import ParquetWriter

TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
CLIENT_LOG = logging.getLogger("lagbot.drain.librdkafka")
"""The tasks' Kafka clients log here, not to stderr: in a Spark worker without logging set up, only warnings
and errors are printed (Python's last-resort handler); librdkafka's notices and info lines are not."""
SOURCE_HEADER = "lagbot-drain-source"
READ_BATCH = 10_000
"""Messages asked of librdkafka per consume() call, at most: never more than the offsets left in the
range, because consume() waits its whole timeout for a batch it cannot fill (a partition end does not
cut the wait short): asking 10,000 of a range's last 2,500 messages at the log end cost a second."""
READ_WAIT = 0.2
"""Seconds one consume() call waits; an empty answer re-checks the position (gaps, the partition end)."""

# What the reader needs librdkafka to do whatever the cluster's own settings say.
_READER_CONFIG: dict[str, Any] = {
    "group.id": "lagbot-drain-reader",  # never joins nor commits: partitions are assigned, not subscribed
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "error",  # a range start deleted by retention is an error, never a silent skip
    "isolation.level": "read_committed",  # an aborted transaction's records are dropped, whatever the cluster says
}
FETCH_TUNING: dict[str, Any] = {"fetch.queue.backoff.ms": 5}
"""librdkafka stops prefetching once its queue holds queued.min.messages, then waits this long before
fetching again (default 1,000 ms): a reader that empties its queue faster than that sits idle.
Measured on the embedded broker: 270,000 msg/s with the default, 1,260,000 with 5 ms."""
_READER_DEFAULTS: dict[str, Any] = {"max.partition.fetch.bytes": 8 * 1024 * 1024, **FETCH_TUNING}


class SinkError(ValueError):
    """A sink URL lagbot cannot use; the message says why."""


class RangeReadError(RuntimeError):
    """One range could not be read to its end."""


class InjectedFailure(RuntimeError):
    """Raised by the `fail_after` fault-injection hook (tests only)."""


@dataclass(frozen=True)
class ParquetSink:
    url: str
    kind: str = "parquet"


@dataclass(frozen=True)
class ReplaySink:
    topic: str
    kind: str = "replay"

    @property
    def url(self) -> str:
        return f"kafka:{self.topic}"


Sink = ParquetSink | ReplaySink


def parse_sink(url: str) -> Sink:
    """A sink from its URL: `kafka:TOPIC` replays, anything else is a Parquet dataset path or URL.

    A path without a scheme is made absolute (the job may run in another working directory).

    Raises:
        SinkError: empty URL, bad topic name, or a path with characters Hadoop paths cannot hold.
    """
    text = url.strip()
    if not text:
        raise SinkError("the sink is empty: give a Parquet path or URL, or kafka:TOPIC")
    if text.startswith("kafka:"):
        topic = text.removeprefix("kafka:").lstrip("/")
        if not TOPIC_NAME.match(topic):
            raise SinkError(f"{topic!r} is not a Kafka topic name (letters, digits, . _ -, at most 249)")
        return ReplaySink(topic)
    if any(c in text for c in "\n\r\t") or "{" in text or "}" in text:
        raise SinkError(f"{text!r} is not a usable path: no control characters or braces")
    if "://" not in text and not text.startswith("file:"):
        text = os.path.abspath(os.path.expanduser(text))
    return ParquetSink(text.rstrip("/") or "/")


def chosen_writer(writer: ParquetWriter, *, filesystem_scheme: str | None) -> ParquetWriter:
    """ "arrow" or "spark": "auto" takes arrow only when the sink is on the local filesystem as Hadoop
    resolves it (`filesystem_scheme` "file": a file:// URL, or a path where fs.defaultFS is file:///).

    A path means HDFS where the cluster's default filesystem is HDFS, and other filesystems' connectors
    and credentials are set up for Hadoop on a Spark cluster (s3a:// is Hadoop's own scheme): those
    keep Spark's writer unless asked. None: Hadoop could not resolve the URL (Spark will say why).
    """
    if writer != "auto":
        return writer
    return "arrow" if filesystem_scheme == "file" else "spark"


def manifest_url(sink: Sink, *, manifest_dir: str, group: str, plan_id: str) -> str:
    """Where a drain's manifest goes: inside the Parquet dataset (ignored by readers: `_` prefix), else manifest_dir."""
    name = f"drain-{group}-{plan_id}.json"
    if isinstance(sink, ParquetSink):
        return f"{sink.url}/_lagbot/{name}"
    base = manifest_dir if "://" in manifest_dir else os.path.abspath(os.path.expanduser(manifest_dir))
    return f"{base.rstrip('/')}/{name}"


def range_subdir(rng: OffsetRange) -> str:
    """A range's directory under the dataset's root."""
    return f"topic={rng.topic}/partition={rng.partition}/offset_range={rng.label}"


def first_line(exc: BaseException) -> str:
    """An error's first line (Java and native errors carry traces): what a receipt, a manifest and Slack show.

    A task's own error raised inside Spark comes back wrapped in the JVM's stack: its line is found there.
    """
    text = str(exc).strip()
    for marker in ("InjectedFailure: ", "RangeReadError: "):
        if marker in text:
            return marker + text.split(marker, 1)[1].splitlines()[0]
    lines = text.splitlines()
    if lines and lines[0].startswith("An error occurred while calling "):
        # A Java exception through Py4J: its first line names only the call (o58.create); the next says what.
        cause = next((line.removeprefix(": ") for line in lines[1:] if line.startswith(": ")), None)
        if cause:
            return cause
    return lines[0] if lines else type(exc).__name__


# ---------------------------------------------------------------------------------------------------
# Reading one range (inside a Spark task)
# ---------------------------------------------------------------------------------------------------


def reader_config(kafka: dict[str, Any]) -> dict[str, Any]:
    """The cluster's client settings (SASL, SSL ...) plus what reading by offset needs."""
    return {**_READER_DEFAULTS, **kafka, **_READER_CONFIG}


def read_range(
    kafka: dict[str, Any],
    rng: OffsetRange,
    *,
    idle_timeout: float = 30.0,
    fail_after: int | None = None,
) -> Iterator[list[Any]]:
    """Yield the messages of `[rng.start, rng.end)` in offset order, in batches, then stop.

    Args:
        kafka: librdkafka settings of the cluster (bootstrap.servers and security).
        idle_timeout: seconds without progress after which the range is declared unreadable.
        fail_after: fault injection for tests: raise InjectedFailure once this many messages were read.

    Raises:
        RangeReadError: the broker reported an error (e.g. the range start was deleted by retention)
            or nothing arrived for `idle_timeout` seconds before the end.
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(reader_config(kafka), logger=CLIENT_LOG)
    tp = TopicPartition(rng.topic, rng.partition, rng.start)
    position, seen, idle_since = rng.start, 0, time.monotonic()
    try:
        consumer.assign([tp])
        while position < rng.end:
            batch: list[Any] = []
            for message in consumer.consume(min(READ_BATCH, rng.end - position), READ_WAIT):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        position = max(position, message.offset())  # the partition end: nothing beyond it
                        continue
                    raise RangeReadError(f"reading {_where(rng)} at offset {position}: {error.str()}")
                offset = message.offset()
                if offset >= rng.end:
                    position = rng.end
                    break
                batch.append(message)
                position = offset + 1
            if batch:
                seen += len(batch)
                if fail_after is not None and seen >= fail_after:
                    raise InjectedFailure(f"fault injection: {_where(rng)} failed after {fail_after} messages")
                idle_since = time.monotonic()
                yield batch
                continue
            position = max(position, _position(consumer, tp))
            if position < rng.end and time.monotonic() - idle_since > idle_timeout:
                raise RangeReadError(f"reading {_where(rng)}: no message for {idle_timeout:g} s at offset {position}")
    finally:
        consumer.close()


def _position(consumer: Any, tp: Any) -> int:
    """The consumer's next offset (past skipped control records), or -1 when unknown."""
    [current] = consumer.position([tp])
    return int(current.offset)


def _where(rng: OffsetRange) -> str:
    return f"{rng.topic}/{rng.partition} [{rng.start}, {rng.end})"


@dataclass
class Tally:
    """What a task read so far: messages, key+value bytes, first and last offset."""

    count: int = 0
    bytes: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, batch: list[Any]) -> None:
        if not batch:
            return
        self.count += len(batch)
        self.bytes += sum(len(m.key() or b"") + len(m.value() or b"") for m in batch)
        if self.first is None:
            self.first = batch[0].offset()
        self.last = batch[-1].offset()

    def receipt(self, rng: OffsetRange, status: RangeStatus, error: str | None = None) -> RangeReceipt:
        return RangeReceipt(
            rng.topic,
            rng.partition,
            rng.start,
            rng.end,
            status,
            self.count,
            self.bytes,
            self.first,
            self.last,
            error,
        )


# ---------------------------------------------------------------------------------------------------
# Parquet: messages -> Arrow record batches (Spark writes them)
# ---------------------------------------------------------------------------------------------------

OUTPUT_COLUMNS = ("offset", "timestamp", "key", "value", "headers", "topic", "partition", "offset_range")


@functools.cache
def arrow_schema() -> Any:
    """The Arrow schema of the rows handed to Spark (the Spark schema is `drain_job.output_schema`)."""
    import pyarrow as pa

    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    return pa.schema(
        [
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", pa.list_(header)),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset_range", pa.string()),
        ]
    )


def record_batch(rng: OffsetRange, batch: list[Any]) -> Any:
    """One Arrow record batch of messages of `rng`, built column by column (this is the hot loop).

    One comprehension per column costs about half of one loop filling five lists; headers, absent on
    most topics, cost one pass when there are none.
    """
    import pyarrow as pa

    schema = arrow_schema()
    n = len(batch)
    raw_headers = [m.headers() for m in batch]
    columns = [
        pa.array([m.offset() for m in batch], pa.int64()),
        pa.array([m.timestamp()[1] for m in batch], pa.int64()),
        pa.array([m.key() for m in batch], pa.binary()),
        pa.array([m.value() for m in batch], pa.binary()),
        _headers_column(raw_headers, schema.field("headers").type),
        pa.repeat(pa.scalar(rng.topic, pa.string()), n),
        pa.repeat(pa.scalar(rng.partition, pa.int32()), n),
        pa.repeat(pa.scalar(rng.label, pa.string()), n),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _headers_column(raw: list[Any], kind: Any) -> Any:
    """Each message's headers as a list of {key, value}; an empty list for a message without any."""
    import pyarrow as pa

    if not any(raw):
        empty = pa.array([], kind.value_type)
        return pa.ListArray.from_arrays(pa.array([0] * (len(raw) + 1), pa.int32()), empty, type=kind)
    return pa.array([[{"key": k, "value": v} for k, v in h] if h else [] for h in raw], kind)


def tally_batch(tally: Tally, batch: Any) -> None:
    """Add an Arrow record batch (from `record_batch`) to `tally`, computed column-wise."""
    import pyarrow.compute as pc

    if batch.num_rows == 0:
        return
    sizes = [pc.sum(pc.binary_length(batch.column(name))).as_py() or 0 for name in ("key", "value")]
    offsets = batch.column("offset")
    tally.count += batch.num_rows
    tally.bytes += sum(sizes)
    if tally.first is None:
        tally.first = offsets[0].as_py()
    tally.last = offsets[-1].as_py()


FILE_COLUMNS = OUTPUT_COLUMNS[:5]
"""What a Parquet file holds; topic, partition and offset_range are its directories' names."""
PART_FILE = "part-00000.parquet"
ROW_GROUP_ROWS = 100_000
"""Rows buffered before a row group is written (a consume() batch can be a handful of messages)."""
TEMPORARY_PREFIX = ".lagbot-"
STALE_TEMPORARY = 3_600.0
"""Seconds after which another attempt's temporary file is taken as left by one that died."""


def parquet_range(
    kafka: dict[str, Any],
    rng: OffsetRange,
    root: str,
    *,
    idle_timeout: float = 30.0,
    fail_after: int | None = None,
) -> RangeReceipt:
    """Read `rng` and write it with pyarrow as the one file of its range directory; never raises.

    `root` is the dataset as pyarrow opens it: an absolute local path (where Hadoop resolves the sink
    to the local filesystem), else a URL of pyarrow's own filesystems (s3://, gs://, abfs://, hdfs://).
    The file is written under a hidden temporary name (readers skip `.` names), flushed to disk, and
    renamed onto `part-00000.parquet` only when the range was read to its end (on a local disk the
    earlier output is replaced in that one rename; on object stores a move is a copy then a delete);
    then other visible files of the directory (an earlier Spark-written output) go. A failed attempt
    leaves the directory as it was; two attempts of one range both end with the same file in place.
    """
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    tally, filesystem, temporary = Tally(), None, ""
    try:
        filesystem, base = arrow_filesystem(root)
        directory = f"{base}/{range_subdir(rng)}"
        final = f"{directory}/{PART_FILE}"
        temporary = f"{directory}/{TEMPORARY_PREFIX}{os.getpid()}-{time.monotonic_ns()}.parquet"
        filesystem.create_dir(directory, recursive=True)
        with pq.ParquetWriter(temporary, _file_schema(), filesystem=filesystem) as writer:
            for rows in _row_groups(read_range(kafka, rng, idle_timeout=idle_timeout, fail_after=fail_after), rng):
                tally_batch(tally, rows)
                writer.write_table(rows.select(FILE_COLUMNS), row_group_size=rows.num_rows or None)
        _sync(filesystem, temporary)
        filesystem.move(temporary, final)
        _sync(filesystem, directory)
        _remove_others(filesystem, directory, keep=final, now=time.time())
        if filesystem.get_file_info(final).type != pafs.FileType.File:
            raise OSError(f"{final} is not there after it was moved into place")
        return tally.receipt(rng, "written")
    except Exception as exc:  # a receipt per range: the driver decides, one range never hides the others
        if filesystem is not None and temporary:
            _discard(filesystem, temporary)
        return tally.receipt(rng, "failed", f"{type(exc).__name__}: {first_line(exc)}")


def arrow_filesystem(root: str) -> tuple[Any, str]:
    """A pyarrow filesystem and the path in it for `root` (an absolute local path, or a URL)."""
    import pyarrow.fs as pafs

    if root.startswith("/"):
        return pafs.LocalFileSystem(), root.rstrip("/") or "/"
    filesystem, path = pafs.FileSystem.from_uri(root)
    return filesystem, path.rstrip("/")


def _row_groups(batches: Iterator[list[Any]], rng: OffsetRange) -> Iterator[Any]:
    """Arrow tables of about ROW_GROUP_ROWS rows from the reader's batches (the last one smaller)."""
    import pyarrow as pa

    pending: list[Any] = []
    buffered, yielded = 0, False
    for batch in batches:
        pending.append(record_batch(rng, batch))
        buffered += len(batch)
        if buffered >= ROW_GROUP_ROWS:
            yield pa.Table.from_batches(pending)
            pending, buffered, yielded = [], 0, True
    if pending or not yielded:  # an empty range still gets its (empty) file: the range was drained
        yield pa.Table.from_batches(pending, schema=arrow_schema())


def _file_schema() -> Any:
    import pyarrow as pa

    schema = arrow_schema()
    return pa.schema([schema.field(name) for name in FILE_COLUMNS])


def _sync(filesystem: Any, path: str) -> None:
    """Flush a local file or directory to the disk (before offsets move past what it holds)."""
    import pyarrow.fs as pafs

    if not isinstance(filesystem, pafs.LocalFileSystem):
        return  # object stores and HDFS acknowledge a closed file as durable
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_others(filesystem: Any, directory: str, *, keep: str, now: float) -> None:
    """Remove what an earlier writer left beside `keep`: visible files (with Hadoop's `.NAME.crc`) and
    temporaries of dead attempts. A live attempt's temporary file stays (it will replace `keep` with
    the same rows); other hidden files belong to someone else."""
    import pyarrow.fs as pafs

    for info in filesystem.get_file_info(pafs.FileSelector(directory)):
        name = info.base_name
        if info.path == keep or info.type != pafs.FileType.File:
            continue
        hidden = name.startswith((".", "_"))
        stale = name.startswith(TEMPORARY_PREFIX) and now - info.mtime.timestamp() > STALE_TEMPORARY
        if stale or not hidden:
            filesystem.delete_file(info.path)
        if not hidden:
            with contextlib.suppress(OSError):
                filesystem.delete_file(f"{directory}/.{name}.crc")


def _discard(filesystem: Any, temporary: str) -> None:
    """Remove a failed attempt's temporary file, if it was created (best effort: readers skip it anyway)."""
    import pyarrow.fs as pafs

    with contextlib.suppress(OSError):
        if filesystem.get_file_info(temporary).type != pafs.FileType.NotFound:
            filesystem.delete_file(temporary)


# ---------------------------------------------------------------------------------------------------
# Replay: messages -> another topic
# ---------------------------------------------------------------------------------------------------


def producer_config(kafka: dict[str, Any]) -> dict[str, Any]:
    """An idempotent producer (no duplicates from retries, order kept per partition), Java-compatible keys."""
    return {
        "linger.ms": 20,
        "compression.type": "lz4",
        **kafka,
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": "murmur2_random",
    }


def replay_range(
    kafka: dict[str, Any],
    rng: OffsetRange,
    topic: str,
    *,
    idle_timeout: float = 30.0,
    fail_after: int | None = None,
    flush_timeout: float = 60.0,
) -> RangeReceipt:
    """Read `rng` and produce every message to `topic`; never raises: failures come back as a receipt.

    `written` only when every message was acknowledged by the broker; a failed range's receipt counts
    what was read (some of it may have been produced: readers dedupe on the source header).
    """
    from confluent_kafka import Producer

    tally, failures = Tally(), []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer(producer_config(kafka), logger=CLIENT_LOG)
    try:
        for batch in read_range(kafka, rng, idle_timeout=idle_timeout, fail_after=fail_after):
            for m in batch:
                _produce(producer, topic, m, rng, delivered)
            tally.add(batch)
            if failures:
                break
        remaining = producer.flush(flush_timeout)
        if failures or remaining:
            problem = failures[0] if failures else f"{remaining} messages not acknowledged in {flush_timeout:g} s"
            return tally.receipt(rng, "failed", f"producing to {topic}: {problem}")
        return tally.receipt(rng, "written")
    except Exception as exc:  # a receipt per range: the driver decides, one range never hides the others
        producer.flush(min(flush_timeout, 10.0))
        return tally.receipt(rng, "failed", f"{type(exc).__name__}: {first_line(exc)}")


def _produce(producer: Any, topic: str, m: Any, rng: OffsetRange, delivered: Any) -> None:
    headers = [*(m.headers() or []), (SOURCE_HEADER, f"{rng.topic}/{rng.partition}/{m.offset()}".encode())]
    kind, timestamp = m.timestamp()
    extra = {"timestamp": timestamp} if kind != 0 and timestamp >= 0 else {}
    deadline = time.monotonic() + 60.0
    while True:
        try:
            producer.produce(topic, value=m.value(), key=m.key(), headers=headers, on_delivery=delivered, **extra)
            producer.poll(0)
            return
        except BufferError:  # the local queue is full: let deliveries drain it, for at most a minute
            if time.monotonic() > deadline:
                raise
            producer.poll(0.1)
