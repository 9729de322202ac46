"""The drain through a Spark Connect server (`drain.master: sc://HOST:PORT`): lagbot is a thin gRPC client.

The driver lives in the Connect server's process (in production its own Deployment, whose master is
k8s://, so the executors are pods); the bot's process starts no JVM and needs no Java. What the classic
job (`drain_job.run_job`) uses that Spark Connect does not offer, and what is used instead:

- SparkContext (`parallelize`, accumulators, `setLogLevel`): the ranges are `spark.range(n, numPartitions=n)`,
  one row and so one task per range; each task writes its range and returns its receipt as a row
  (`mapInArrow`). Receipts stream back as the tasks finish (`toLocalIterator`, in range order): that is
  the progress (ranges done, messages), and the receipts are the manifest's.
- The JVM gateway (Hadoop's filesystem API, which the classic driver uses to write the manifest and remove
  older cuts of a range): a client cannot reach it. Both run as a one-task job on an executor with
  pyarrow's filesystems, which see the sink as the range tasks do (a volume the executors mount, or
  s3://, gs://, abfs://, hdfs://). So Parquet is always written by the tasks (writer arrow; writer spark
  is refused with a Connect master, see `lagbot.remediations.drain.settings.check_connect_writer`).

Exactly once holds as in the classic path: one directory per range, replaced by a rename
(`drain_sinks.parquet_range`); older, differently cut ranges that completed ranges cover are removed
afterwards; the manifest is written after the outputs and before any offset moves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, fields, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lagbot.remediations.drain.job import JobConfig, JobProgress, ProgressFn, _by_partition, _spans
from lagbot.remediations.drain.plan import Manifest, OffsetRange, RangeReceipt
from lagbot.remediations.drain.sinks import (
    ParquetSink,
    ReplaySink,
    arrow_filesystem,
    first_line,
    parquet_range,
    parse_sink,
    replay_range,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
"""What PySpark sets in the environment once a Spark Connect session was made in the process."""


def connect_session(url: str) -> SparkSession:
    """A new Spark Connect session on the server at `url` (sc://HOST:PORT): a gRPC channel, no JVM in this process.

    Always a new one (`create`, not `getOrCreate`): two drains at once each stop only their own session.
    """
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(url).create()


def run_connect(
    config: JobConfig, url: str, *, on_progress: ProgressFn | None = None, timeout: float | None = None
) -> Manifest:
    """The job on the Connect server at `url`; the session is released afterwards (the server keeps running).

    After `timeout` seconds the ranges still running are interrupted on the server (see `watchdog`).
    """
    with connect_mode():
        spark = connect_session(url)
        try:
            return run_connect_job(spark, config, on_progress=on_progress, timeout=timeout)
        finally:
            spark.stop()


@contextlib.contextmanager
def watchdog(spark: SparkSession, timeout: float | None, what: str) -> Iterator[list[float]]:
    """Past `timeout` seconds, interrupt the session's operations on the server, every second until the block ends.

    Repeated because an interrupt reaches only operations already running: one sent while the next is being
    submitted would be lost. The yielded list gets the timeout once it fired.
    """
    fired: list[float] = []
    if timeout is None:
        yield fired
        return
    done = threading.Event()

    def watch() -> None:
        if done.wait(timeout):
            return
        fired.append(timeout)
        log.warning("%s still running after %g s: interrupting it on the Spark Connect server", what, timeout)
        while not done.is_set():
            with contextlib.suppress(Exception):  # the session may be closing: the block ends anyway
                spark.interruptAll()
            done.wait(1.0)

    thread = threading.Thread(target=watch, name="lagbot-drain-watchdog", daemon=True)
    thread.start()
    try:
        yield fired
    finally:
        done.set()
        thread.join(5)


class _ConnectMode:
    """How many drains of this process are inside `connect_mode`, and the variable as the first one found it."""

    lock = threading.Lock()
    users = 0
    before: str | None = None


@contextlib.contextmanager
def connect_mode() -> Iterator[None]:
    """While inside, PySpark may mark this process as a Spark Connect client; afterwards it is what it was.

    Creating a remote session sets SPARK_CONNECT_MODE_ENABLED in the environment for good, after which
    PySpark refuses to make a classic session (`[CONNECT_URL_NOT_SET]`), and every process started later
    (spark-submit's driver) inherits it: one drain through sc:// would break every later local[N] or
    spark-submit drain. Counted, so that two drains at once restore it only when the last one leaves.
    """
    with _ConnectMode.lock:
        if _ConnectMode.users == 0:
            _ConnectMode.before = os.environ.get(CONNECT_MODE)
        _ConnectMode.users += 1
    try:
        yield
    finally:
        with _ConnectMode.lock:
            _ConnectMode.users -= 1
            if _ConnectMode.users == 0:
                if _ConnectMode.before is None:
                    os.environ.pop(CONNECT_MODE, None)
                else:
                    os.environ[CONNECT_MODE] = _ConnectMode.before


def run_connect_job(
    spark: SparkSession, config: JobConfig, *, on_progress: ProgressFn | None = None, timeout: float | None = None
) -> Manifest:
    """Drain every range of `config` into its sink through `spark` (a Connect session), write the manifest.

    Never raises for a failed drain: the manifest's `error` and range statuses say what happened. Ranges
    still running after `timeout` seconds are interrupted: those received before stay written.
    """
    started = time.time()
    sink = parse_sink(config.sink)
    try:
        root = task_root(sink.url) if isinstance(sink, ParquetSink) else ""
        receipts, error = drain_ranges(spark, config, root, on_progress, timeout=timeout)
        written = [r.range for r in receipts if r.status == "written"]
        if root and written:  # what completed replaces older cuts now, even if other ranges failed
            on_executor(spark, lambda: _clear(root, written))
        failed = [r for r in receipts if r.status != "written"]
        if error is None and failed:
            error = f"{len(failed)} of {len(receipts)} ranges failed: {failed[0].error}"
    except Exception as exc:  # the job could not run: every range not written
        receipts = tuple(_not_written(r) for r in config.ranges)
        error = f"{type(exc).__name__}: {first_line(exc)}"
    manifest = Manifest(config.plan_id, config.cluster, config.group, sink.url, started, time.time(), receipts, error)
    text, target = manifest.to_json(), task_root(config.manifest_url)
    try:
        on_executor(spark, lambda: write_text(target, text))
    except Exception as exc:  # a drain whose manifest is not durable is not complete
        manifest = replace(manifest, error=f"writing the manifest {config.manifest_url}: {first_line(exc)}")
    return manifest


ARROW_SCHEMES = frozenset({"s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"})
"""URL schemes pyarrow has filesystems for (besides local paths): what the tasks can write through Connect."""


def task_root(url: str) -> str:
    """`url` as the tasks' pyarrow opens it: a local path for a plain path or a file: URL, else the URL itself.

    Only the scheme is checked here: the bucket or namenode is the executors' to reach, with their credentials.

    Raises:
        ValueError: pyarrow has no filesystem for the URL's scheme (every task would fail); says what works.
    """
    if url.startswith("/"):
        return url
    if url.startswith("file:"):
        return unquote(urlparse(url).path) or "/"
    scheme = urlparse(url).scheme
    if scheme not in ARROW_SCHEMES:
        raise ValueError(
            f"the tasks cannot open {url} with pyarrow (no filesystem for {scheme}://): through Spark Connect give "
            "a path the executors mount, or an s3://, gs://, abfs:// or hdfs:// URL"
        )
    return url


RECEIPT_FIELDS = tuple(f.name for f in fields(RangeReceipt))


def receipt_schema() -> Any:
    """The Spark schema of a receipt row (the fields of `RangeReceipt`)."""
    from pyspark.sql import types as T

    kinds = {"topic": T.StringType(), "partition": T.IntegerType(), "status": T.StringType(), "error": T.StringType()}
    return T.StructType([T.StructField(name, kinds.get(name, T.LongType())) for name in RECEIPT_FIELDS])


def _receipt_batch(receipt: RangeReceipt) -> Any:
    import pyarrow as pa

    types = {"topic": pa.string(), "partition": pa.int32(), "status": pa.string(), "error": pa.string()}
    schema = pa.schema([(name, types.get(name, pa.int64())) for name in RECEIPT_FIELDS])
    return pa.RecordBatch.from_pylist([asdict(receipt)], schema=schema)


def drain_ranges(
    spark: SparkSession, config: JobConfig, root: str, on_progress: ProgressFn | None, *, timeout: float | None = None
) -> tuple[tuple[RangeReceipt, ...], str | None]:
    """One task per range writes it (pyarrow Parquet under `root`, or replay) and returns its receipt.

    The receipts of every range (not written when none came back), and the error that stopped the job, if any.
    """
    ranges = [r.to_list() for r in config.ranges]
    sink = parse_sink(config.sink)
    topic = sink.topic if isinstance(sink, ReplaySink) else ""
    kafka, idle, fail_after = config.kafka, config.idle_timeout, config.fail_after

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                rng = OffsetRange.from_list(ranges[index])
                if topic:
                    receipt = replay_range(kafka, rng, topic, idle_timeout=idle, fail_after=fail_after)
                else:
                    receipt = parquet_range(kafka, rng, root, idle_timeout=idle, fail_after=fail_after)
                yield _receipt_batch(receipt)

    count = max(1, len(ranges))
    frame = spark.range(0, len(ranges), 1, count).mapInArrow(task, receipt_schema())
    received: dict[OffsetRange, RangeReceipt] = {}
    started, error = time.monotonic(), None
    with watchdog(spark, timeout, f"drain of {config.group}") as fired:
        try:
            for row in frame.toLocalIterator():
                receipt = RangeReceipt(**row.asDict())
                received[receipt.range] = receipt
                if on_progress is not None:
                    done = sum(r.count for r in received.values())
                    on_progress(JobProgress(len(received), len(ranges), done, time.monotonic() - started))
        except Exception as exc:  # the job failed or was interrupted: what came back before stays written
            error = f"{type(exc).__name__}: {first_line(exc)}"
    if fired:
        error = f"interrupted after {fired[0]:g} s (drain.job_timeout)"
    return tuple(received.get(r, _not_written(r)) for r in config.ranges), error


def _not_written(rng: OffsetRange) -> RangeReceipt:
    return RangeReceipt(rng.topic, rng.partition, rng.start, rng.end, "not_written")


def on_executor(spark: SparkSession, action: Callable[[], None]) -> None:
    """Run `action` in one task on an executor (where the sink is mounted), raising its error here.

    Raises:
        OSError: the action failed on the executor; its first line.
    """

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for _ in batches:
            try:
                action()
                error = None
            except Exception as exc:  # brought back as data: a task error would carry the worker's trace
                error = f"{type(exc).__name__}: {first_line(exc)}"
            yield pa.RecordBatch.from_pylist([{"error": error}], schema=pa.schema([("error", pa.string())]))

    [row] = spark.range(0, 1, 1, 1).mapInArrow(task, "error string").collect()
    if row["error"] is not None:
        raise OSError(row["error"])


def write_text(target: str, text: str) -> None:
    """Write `text` at `target` (a local path or a pyarrow URL) through a temporary file and a rename."""
    filesystem, path = arrow_filesystem(target)
    parent = path.rsplit("/", 1)[0]
    if parent:
        filesystem.create_dir(parent, recursive=True)
    temporary = f"{path}.tmp-{os.getpid()}-{time.monotonic_ns()}"
    with filesystem.open_output_stream(temporary) as out:
        out.write(text.encode())
    filesystem.move(temporary, path)


def read_text(target: str) -> str | None:
    """The text at `target` (a local path or a pyarrow URL), or None if there is no such file."""
    import pyarrow.fs as pafs

    filesystem, path = arrow_filesystem(target)
    if filesystem.get_file_info(path).type != pafs.FileType.File:
        return None
    with filesystem.open_input_stream(path) as stream:
        return bytes(stream.read()).decode()


def _clear(root: str, ranges: Sequence[OffsetRange]) -> None:
    clear_overlaps(root, ranges)


def clear_overlaps(root: str, ranges: Sequence[OffsetRange]) -> list[str]:
    """`drain_job.clear_overlaps` with pyarrow: remove range directories of earlier, differently cut plans
    that `ranges` fully cover (a partly covered one is kept: a duplicate beats a loss). The removed paths."""
    import pyarrow.fs as pafs

    filesystem, base = arrow_filesystem(root)
    removed: list[str] = []
    for (topic, partition), new in _by_partition(ranges).items():
        selector = pafs.FileSelector(f"{base}/topic={topic}/partition={partition}", allow_not_found=True)
        spans = _spans(new)
        for info in filesystem.get_file_info(selector):
            if info.type != pafs.FileType.Directory:
                continue
            old = OffsetRange.from_label(topic, partition, info.base_name.removeprefix("offset_range="))
            if old is None or old in new or not any(s <= old.start and old.end <= e for s, e in spans):
                continue
            filesystem.delete_dir(info.path)
            removed.append(info.path)
    return removed
