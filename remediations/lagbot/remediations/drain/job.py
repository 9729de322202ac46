"""The PySpark drain application: read every planned offset range with one Spark task each, write the sink.

Two ways to run it:
- in-process (`run_job` with a SparkSession from `spark_session`): the default `local[*]` master;
- `spark-submit lagbot.remediations.drain.job --config JOB.json` to a cluster (`spark_submit_argv` builds
  the command line). The driver then prints one `LAGBOT-DRAIN-PROGRESS {json}` line per change and a
  final `LAGBOT-DRAIN-RESULT {manifest}` line on stdout, which lagbot reads (client deploy mode).

Exactly once in the Parquet sink: every range is one directory (`offset_range=START-END`), replaced
on a rerun instead of gaining files. `writer: arrow` (local paths): each task writes its range's one
file with pyarrow and moves it into place when complete (`drain_sinks.parquet_range`), so ranges that
completed stay written when others fail. `writer: spark` (Hadoop URLs): one Spark job with dynamic
partition overwrite commits all ranges or, when any task fails, none (Spark aborts the write).
Directories of older, differently cut ranges that the new ones cover are removed after the write, so
a re-planned drain does not duplicate either (see `clear_overlaps`). The manifest is written after the outputs, through
Hadoop's filesystem API (any URL the cluster can write).

Fault injection (tests only): `JobConfig.fail_after` makes every task raise once it has read that many
messages of its range (ranges shorter than that complete).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lagbot.core import codec
from lagbot.remediations.drain.jvm_stderr import quiet_jvm_start
from lagbot.remediations.drain.plan import Manifest, OffsetRange, RangeReceipt
from lagbot.remediations.drain.settings import DrainSettings, ParquetWriter, is_local
from lagbot.remediations.drain.sinks import (
    ParquetSink,
    Sink,
    Tally,
    arrow_filesystem,
    chosen_writer,
    first_line,
    parquet_range,
    parse_sink,
    read_range,
    record_batch,
    replay_range,
    tally_batch,
)

if TYPE_CHECKING:
    from pyspark.accumulators import AccumulatorParam
    from pyspark.sql import SparkSession

JOB_VERSION = 2
"""2: ranges are objects. 1 (still read): ranges are [topic, partition, start, end] lists."""
PROGRESS_PREFIX = "LAGBOT-DRAIN-PROGRESS "
RESULT_PREFIX = "LAGBOT-DRAIN-RESULT "
_POLL = 0.5

_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
"""


@dataclass(frozen=True)
class JobConfig:
    """Everything the job needs, as JSON (a spark-submit run reads it from a file)."""

    plan_id: str
    cluster: str
    group: str
    sink: str
    manifest_url: str
    kafka: dict[str, Any]
    """librdkafka settings of the cluster: bootstrap.servers and security (kept out of plans and logs)."""
    ranges: tuple[OffsetRange, ...]
    idle_timeout: float = 30.0
    fail_after: int | None = None
    writer: ParquetWriter = "auto"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return JOB_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str | bytes) -> JobConfig:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a job config lagbot wrote."""
        return JOB_CODEC.decode(raw)


def _ranges_as_objects(document: dict[str, Any]) -> dict[str, Any]:
    """Version 1 kept each range as a list [topic, partition, start, end]."""
    fields = ("topic", "partition", "start", "end")
    return {**document, "ranges": [dict(zip(fields, r, strict=True)) for r in document["ranges"]]}


JOB_CODEC = codec.register(codec.Codec("drain job config", JobConfig, JOB_VERSION, {1: _ranges_as_objects}))


@dataclass(frozen=True)
class JobProgress:
    """Ranges done of the total and messages drained so far, `elapsed` seconds after the job started."""

    ranges_done: int
    ranges_total: int
    messages: int
    elapsed: float

    @property
    def rate(self) -> float:
        return self.messages / self.elapsed if self.elapsed > 0 else 0.0

    def to_json(self) -> str:
        return PROGRESS_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str) -> JobProgress:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a progress line lagbot wrote."""
        return PROGRESS_CODEC.decode(raw)


PROGRESS_CODEC = codec.register(
    codec.Codec("drain progress", JobProgress, 1, {codec.UNVERSIONED: lambda document: document})
)
"""Version 0: the same fields, printed before they carried a version."""


ProgressFn = Callable[[JobProgress], None]


# ---------------------------------------------------------------------------------------------------
# The Spark session
# ---------------------------------------------------------------------------------------------------


def spark_session(master: str | None, *, app_name: str = "lagbot-drain") -> SparkSession:
    """The one place a SparkSession is made: quiet (WARN), and bound to 127.0.0.1 when local.

    `master=None` takes the master from spark-submit. An existing session of this process is reused
    (PySpark allows one per process). Local workers run this interpreter, so they see lagbot and its deps.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={_log4j_file()}")
    if master is not None:
        builder = builder.master(master)
    if master is not None and is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = (
            builder.config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.pyspark.python", sys.executable)
        )
    from pyspark import SparkContext

    starts_jvm = SparkContext._active_spark_context is None and master is not None and is_local(master)
    with quiet_jvm_start() if starts_jvm else contextlib.nullcontext():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def _log4j_file() -> str:
    path = Path(tempfile.gettempdir()) / "lagbot-drain-log4j2.properties"
    if not path.exists():
        path.write_text(_LOG4J)
    return str(path)


# ---------------------------------------------------------------------------------------------------
# Running the job
# ---------------------------------------------------------------------------------------------------


def run_job(spark: SparkSession, config: JobConfig, *, on_progress: ProgressFn | None = None) -> Manifest:
    """Drain every range of `config` into its sink, write the manifest, and return it.

    Never raises for a failed drain: the manifest's `error` and range statuses say what happened.
    """
    started = time.time()
    sink = parse_sink(config.sink)
    try:
        if isinstance(sink, ParquetSink) and _writer(spark, sink, config.writer) == "spark":
            receipts, error = _run_parquet(spark, config, sink, on_progress)
        else:
            receipts, error = _run_per_range(spark, config, sink, on_progress)
    except Exception as exc:  # the job could not even start: every range not written
        receipts = tuple(_not_written(r) for r in config.ranges)
        error = f"{type(exc).__name__}: {first_line(exc)}"
    manifest = Manifest(
        plan_id=config.plan_id,
        cluster=config.cluster,
        group=config.group,
        sink=sink.url,
        started_at=started,
        finished_at=time.time(),
        ranges=receipts,
        error=error,
    )
    try:
        write_text(spark, config.manifest_url, manifest.to_json())
    except Exception as exc:  # a drain whose manifest is not durable is not complete
        manifest = replace(manifest, error=f"writing the manifest {config.manifest_url}: {first_line(exc)}")
    return manifest


def _run_parquet(
    spark: SparkSession, config: JobConfig, sink: ParquetSink, on_progress: ProgressFn | None
) -> tuple[tuple[RangeReceipt, ...], str | None]:
    tallies = spark.sparkContext.accumulator(Tallies(), tally_param())
    kafka, idle, fail_after = config.kafka, config.idle_timeout, config.fail_after

    def drain(batches: Any) -> Any:
        for rows in batches:
            for row in rows.to_pylist():
                rng = OffsetRange(row["topic"], row["partition"], row["start"], row["end"])
                tally = Tally()
                for batch in read_range(kafka, rng, idle_timeout=idle, fail_after=fail_after):
                    arrow = record_batch(rng, batch)
                    tally_batch(tally, arrow)
                    yield arrow
                tallies.add({_key(rng): [tally.count, tally.bytes, tally.first, tally.last]})

    def write() -> None:
        (
            _ranges_frame(spark, config.ranges)
            .mapInArrow(drain, output_schema())
            .write.partitionBy("topic", "partition", "offset_range")
            .mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .parquet(sink.url)
        )

    error = _run_watched(write, lambda: len(tallies.value), lambda: _messages(tallies.value), config, on_progress)
    if error is not None:
        return tuple(_not_written(r) for r in config.ranges), error
    done: dict[tuple[Any, ...], list[Any]] = tallies.value
    receipts = tuple(_written(r, done.get(_key(r))) for r in config.ranges)
    clear_overlaps(spark, sink, config.ranges)
    return receipts, None


def _run_per_range(
    spark: SparkSession, config: JobConfig, sink: Sink, on_progress: ProgressFn | None
) -> tuple[tuple[RangeReceipt, ...], str | None]:
    """One task per range writes it itself (pyarrow Parquet, or replay) and hands back its receipt."""
    sc = spark.sparkContext
    progress = sc.accumulator(Tallies(), tally_param())
    kafka, idle, fail_after = config.kafka, config.idle_timeout, config.fail_after
    results: list[RangeReceipt] = []
    root = _arrow_root(spark, sink) if isinstance(sink, ParquetSink) else ""

    def task(raw: list[Any]) -> dict[str, Any]:
        rng = OffsetRange.from_list(raw)
        if isinstance(sink, ParquetSink):
            receipt = parquet_range(kafka, rng, root, idle_timeout=idle, fail_after=fail_after)
        else:
            receipt = replay_range(kafka, rng, sink.topic, idle_timeout=idle, fail_after=fail_after)
        progress.add({tuple(raw): [receipt.count, receipt.bytes, receipt.first_offset, receipt.last_offset]})
        return asdict(receipt)

    def run() -> None:
        rows = [r.to_list() for r in config.ranges]
        results.extend(RangeReceipt(**d) for d in sc.parallelize(rows, max(1, len(rows))).map(task).collect())

    error = _run_watched(run, lambda: len(progress.value), lambda: _messages(progress.value), config, on_progress)
    if error is not None:
        return tuple(_not_written(r) for r in config.ranges), error
    by_range = {r.range: r for r in results}
    receipts = tuple(by_range.get(r, _not_written(r)) for r in config.ranges)
    if isinstance(sink, ParquetSink):  # what completed replaces older cuts now, even if other ranges failed
        clear_overlaps(spark, sink, [r.range for r in receipts if r.status == "written"])
    failed = [r for r in receipts if r.status != "written"]
    return receipts, (f"{len(failed)} of {len(receipts)} ranges failed: {failed[0].error}" if failed else None)


def _arrow_root(spark: SparkSession, sink: ParquetSink) -> str:
    """The dataset's root as the tasks' pyarrow opens it: the local path Hadoop resolves a file:// URL or a
    plain path to (spaces and %-escapes as Hadoop reads them), else the URL, checked before any task runs.

    Raises:
        ValueError: pyarrow cannot open the sink's filesystem (every task would fail); names the setting.
    """
    with contextlib.suppress(Exception):  # Hadoop cannot resolve it: pyarrow's own answer below
        filesystem, path = _fs(spark, sink.url)
        if str(filesystem.getScheme()) == "file":
            return str(path.toUri().getPath())
    try:
        arrow_filesystem(sink.url)
    except Exception as exc:  # pyarrow raises ValueError, OSError or ArrowInvalid by scheme
        raise ValueError(f"pyarrow cannot write to {sink.url} ({first_line(exc)}): set drain.writer to spark") from exc
    return sink.url


def _run_watched(
    action: Callable[[], None],
    done: Callable[[], int],
    messages: Callable[[], int],
    config: JobConfig,
    on_progress: ProgressFn | None,
) -> str | None:
    """Run the Spark action in a thread, reporting progress every half second; its error text, or None."""
    failure: list[BaseException] = []
    started = time.monotonic()

    def target() -> None:
        try:
            action()
        except BaseException as exc:  # reported as the job's error, never lost in the thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="lagbot-drain-job", daemon=True)
    thread.start()
    last: tuple[int, int] | None = None
    while True:
        thread.join(_POLL)
        now = (done(), messages())
        if on_progress is not None and (now != last or not thread.is_alive()):
            on_progress(JobProgress(now[0], len(config.ranges), now[1], time.monotonic() - started))
            last = now
        if not thread.is_alive():
            break
    return f"{type(failure[0]).__name__}: {first_line(failure[0])}" if failure else None


def _ranges_frame(spark: SparkSession, ranges: Sequence[OffsetRange]) -> Any:
    """One row per range, one Spark partition per row: one task per range."""
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("topic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("start", T.LongType()),
            T.StructField("end", T.LongType()),
        ]
    )
    rows = [(r.topic, r.partition, r.start, r.end) for r in ranges]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, max(1, len(rows))), schema)


def output_schema() -> Any:
    """The Spark schema of the drained rows (see drain_sinks.arrow_schema)."""
    from pyspark.sql import types as T

    header = T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
    return T.StructType(
        [
            T.StructField("offset", T.LongType()),
            T.StructField("timestamp", T.LongType()),
            T.StructField("key", T.BinaryType()),
            T.StructField("value", T.BinaryType()),
            T.StructField("headers", T.ArrayType(header)),
            T.StructField("topic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("offset_range", T.StringType()),
        ]
    )


Tallies = dict[tuple[Any, ...], list[Any]]


class TallyParam:
    """Accumulates {(topic, partition, start, end): [count, bytes, first, last]} from the tasks.

    PySpark's `AccumulatorParam` is only these two methods (PySpark calls them, it checks no base class): this
    module defines it without importing PySpark, so the bot and `lagbot check` load it without the `drain` extra.
    """

    def zero(self, value: Tallies) -> Tallies:
        return {}

    def addInPlace(self, value1: Tallies, value2: Tallies) -> Tallies:
        value1.update(value2)
        return value1


def tally_param() -> AccumulatorParam[Tallies]:
    """A `TallyParam`, typed as what SparkContext.accumulator takes."""
    return cast("AccumulatorParam[Tallies]", TallyParam())


def _key(rng: OffsetRange) -> tuple[Any, ...]:
    return (rng.topic, rng.partition, rng.start, rng.end)


def _messages(tallies: Tallies) -> int:
    return sum(int(t[0]) for t in tallies.values())


def _written(rng: OffsetRange, tally: list[Any] | None) -> RangeReceipt:
    count, size, first, last = tally if tally is not None else (0, 0, None, None)
    return RangeReceipt(rng.topic, rng.partition, rng.start, rng.end, "written", count, size, first, last)


def _not_written(rng: OffsetRange) -> RangeReceipt:
    return RangeReceipt(rng.topic, rng.partition, rng.start, rng.end, "not_written")


# ---------------------------------------------------------------------------------------------------
# Hadoop filesystem: the manifest, and ranges of older plans
# ---------------------------------------------------------------------------------------------------


def _writer(spark: SparkSession, sink: ParquetSink, choice: ParquetWriter) -> ParquetWriter:
    """Who writes `sink`: `choice`, or for "auto" what the sink's filesystem as Hadoop resolves it says."""
    scheme = None
    if choice == "auto":
        with contextlib.suppress(Exception):  # no connector for the scheme: Spark's writer reports it
            scheme = str(_fs(spark, sink.url)[0].getScheme())
    return chosen_writer(choice, filesystem_scheme=scheme)


def _fs(spark: SparkSession, url: str) -> tuple[Any, Any]:
    jvm: Any = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(url)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def write_text(spark: SparkSession, url: str, text: str) -> None:
    """Write `text` at `url` (any Hadoop filesystem) through a temporary file and a rename."""
    fs, path = _fs(spark, url)
    jvm: Any = spark.sparkContext._jvm
    temporary = jvm.org.apache.hadoop.fs.Path(f"{url}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    stream = fs.create(temporary, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()
    if fs.exists(path):
        fs.delete(path, False)
    if not fs.rename(temporary, path):
        raise OSError(f"could not rename {temporary} to {url}")


def read_text(spark: SparkSession, url: str) -> str | None:
    """The text at `url`, or None if there is no such file."""
    fs, path = _fs(spark, url)
    if not fs.exists(path):
        return None
    jvm: Any = spark.sparkContext._jvm
    stream = fs.open(path)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode()


def clear_overlaps(spark: SparkSession, sink: ParquetSink, ranges: Sequence[OffsetRange]) -> list[str]:
    """Remove range directories of earlier, differently cut plans that the ranges just written cover.

    A drain re-planned before its offsets were committed (the log grew, the chunk changed) cuts other
    ranges over the same offsets; those older directories now hold copies, and go. An older range only
    partly covered is kept: it holds offsets no new range has (after a rewind, say), and a duplicate is
    better than a loss. Returns the directories removed.
    """
    removed: list[str] = []
    for (topic, partition), new in _by_partition(ranges).items():
        fs, parent = _fs(spark, f"{sink.url}/topic={topic}/partition={partition}")
        if not fs.exists(parent):
            continue
        spans = _spans(new)
        for status in fs.listStatus(parent):
            name = str(status.getPath().getName())
            old = OffsetRange.from_label(topic, partition, name.removeprefix("offset_range="))
            if old is None or old in new or not any(s <= old.start and old.end <= e for s, e in spans):
                continue
            fs.delete(status.getPath(), True)
            removed.append(str(status.getPath()))
    return removed


def _spans(ranges: set[OffsetRange]) -> list[tuple[int, int]]:
    """The offsets `ranges` cover, as disjoint [start, end) spans (adjacent ranges joined)."""
    spans: list[tuple[int, int]] = []
    for r in sorted(ranges, key=lambda r: r.start):
        if spans and r.start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], r.end))
        else:
            spans.append((r.start, r.end))
    return spans


def _by_partition(ranges: Sequence[OffsetRange]) -> dict[tuple[str, int], set[OffsetRange]]:
    grouped: dict[tuple[str, int], set[OffsetRange]] = {}
    for r in ranges:
        grouped.setdefault((r.topic, r.partition), set()).add(r)
    return grouped


# ---------------------------------------------------------------------------------------------------
# spark-submit
# ---------------------------------------------------------------------------------------------------


def spark_submit_argv(settings: DrainSettings, *, config_file: str, app_name: str = "lagbot-drain") -> list[str]:
    """The spark-submit command line for `settings.master` (client deploy mode: lagbot reads the driver's stdout).

    With `python_archive` (a venv packed with venv-pack, lagbot installed in it), the archive is shipped
    with `--archives ARCHIVE#environment` and the executors run `./environment/bin/python`, as the
    PySpark documentation describes; the driver runs the local Python (client mode).
    """
    argv = [settings.spark_submit, "--master", settings.master, "--deploy-mode", "client", "--name", app_name]
    conf = {"spark.ui.showConsoleProgress": "false", **settings.spark_conf}
    if is_local(settings.master):  # a local master through spark-submit: stay on the loopback
        conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
                **conf}  # fmt: skip
    if settings.python_archive:
        argv += ["--archives", f"{settings.python_archive}#environment"]
        conf.setdefault("spark.pyspark.python", "./environment/bin/python")
        conf.setdefault("spark.pyspark.driver.python", sys.executable)
    for key in sorted(conf):
        argv += ["--conf", f"{key}={conf[key]}"]
    return [*argv, str(Path(__file__).resolve()), "--config", config_file]


def main(argv: Sequence[str] | None = None) -> int:
    """spark-submit entry point: run the job in `--config`, report on stdout; 0 when the manifest is complete."""
    parser = argparse.ArgumentParser(prog="drain_job.py", description="lagbot's emergency drain (PySpark).")
    parser.add_argument("--config", required=True, help="the job's JSON configuration file")
    args = parser.parse_args(argv)
    config = JobConfig.from_json(Path(args.config).read_text())
    spark = spark_session(None, app_name=f"lagbot-drain-{config.group}")

    def report(progress: JobProgress) -> None:
        print(PROGRESS_PREFIX + progress.to_json(), flush=True)

    manifest = run_job(spark, config, on_progress=report)
    print(RESULT_PREFIX + manifest.to_json(), flush=True)  # compact: one line
    spark.stop()
    return 0 if manifest.complete else 1


if __name__ == "__main__":
    # Run as a file by spark-submit: import this module under its package name, so that what Spark pickles
    # for the tasks refers to `lagbot.remediations.*` (installed on the executors) rather than to `__main__`.
    from lagbot.remediations.drain import job as drain_job

    sys.exit(drain_job.main())
