"""Collect one `ClusterSnapshot` per cycle through confluent-kafka's AdminClient.

A cycle is four batched rounds, whatever the number of partitions:
1. ListGroups (one request per broker), filtered by the cluster's include/exclude patterns;
2. OffsetFetch of every selected group and DescribeGroups of those whose listing does not already say what it
   would answer (a classic group listed as Empty: no members, no protocol), all issued at once, from a child
   process (`lagbot.engine.offset_reader`) where a crash of the Kafka client on a coordinator error cannot stop the bot
   (`lagbot check`, a one-shot command, sends them itself: `make_admin(..., isolate_group_reads=False)`);
3. Metadata of every topic those groups consume (partition counts), in one request;
4. ListOffsets latest and earliest of every partition of those topics, all issued at once, in chunks of partitions
   (lagbot.engine.list_offsets: librdkafka batches each chunk per partition leader).

Every wait has a deadline. A cluster that is down or slow gives a snapshot whose `error` says why;
one group that cannot be read gives that group an `error`. Never a crash, never a hang.
"""

from __future__ import annotations

import logging
import re
import time
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Any, Protocol

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, OffsetSpec

from lagbot.core import messages
from lagbot.core.errors import ConfigError
from lagbot.core.model import ClusterSnapshot, GroupSnapshot, GroupState, TopicPartition
from lagbot.engine import wording
from lagbot.engine.list_offsets import ask_offsets
from lagbot.engine.offset_reader import (
    Described,
    GroupRead,
    InProcessReader,
    OffsetReader,
    plain_properties,
)

if TYPE_CHECKING:  # the settings' models (pydantic) are not loaded by reading a cluster
    from lagbot.core.config import Settings

log = logging.getLogger(__name__)


class GroupPicker(Protocol):
    """Which groups of a cluster are watched (`GroupFilter`)."""

    def matches(self, group: str) -> bool: ...


class Cluster(Protocol):
    """What reading a cluster needs of its settings: `ClusterConfig`, or the cluster `lagbot check --bootstrap`
    reads before its settings are loaded (lagbot.cli.early)."""

    @property
    def name(self) -> str: ...

    @property
    def request_timeout(self) -> float: ...

    @property
    def groups(self) -> GroupPicker: ...

    def client_config(self) -> dict[str, Any]: ...


_NO_OFFSET = -1001  # OFFSET_INVALID: what OffsetFetch answers for a partition with nothing committed


class CollectError(Exception):
    """The cluster as a whole could not be read in this cycle."""


class ClusterAdmin(AdminClient):  # type: ignore[misc]  # confluent-kafka ships no types
    """An AdminClient that remembers the last authentication failure librdkafka reported, with an `offsets`
    reader for committed offsets and group descriptions (read from a child process unless the client was made
    for a one-shot command: see `make_admin` and `lagbot.engine.offset_reader`).

    librdkafka reports a refused login (wrong SASL password, unknown user) only as an error event while the
    request itself times out; `authentication_error` serves those events so that a failed collection can say
    why instead of "timed out".
    """

    def __init__(self, config: dict[str, Any], *, isolate_group_reads: bool = True) -> None:
        self._auth_error: str | None = None
        super().__init__({**config, "error_cb": self._on_error})
        self._properties = plain_properties(config)
        self._isolate_group_reads = isolate_group_reads
        self._offsets: OffsetReader | None = None

    @property
    def offsets(self) -> OffsetReader:
        """The reader of committed offsets and group descriptions for this cluster: a child process (started at
        the first read), or this client itself when the client was made with `isolate_group_reads=False`."""
        if self._offsets is None:
            if self._isolate_group_reads:
                self._offsets = OffsetReader(self._properties)
                weakref.finalize(self, self._offsets.close)
            else:
                self._offsets = InProcessReader(weakref.proxy(self))
        return self._offsets

    def _on_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self._auth_error = _AFTER_STATE.sub("", error.str())

    def take_authentication_error(self) -> str | None:
        """The last authentication failure reported since the previous call (events served now), or None."""
        self.poll(0)
        error, self._auth_error = self._auth_error, None
        return error


_AFTER_STATE = re.compile(r" \(after \d+ms in state \w+\)$")
"""librdkafka's suffix on connection errors: timing noise for a human."""


def make_admin(cluster: Cluster, *, isolate_group_reads: bool = True) -> AdminClient:
    """An AdminClient for `cluster`, its librdkafka logs routed to Python logging.

    Creating it does no I/O (librdkafka connects in the background), but librdkafka validates the
    properties here.

    `isolate_group_reads`: send DescribeGroups and OffsetFetch from a child process (the default, and what the
    bot uses), where a crash of the Kafka client on a coordinator error cannot take this process down; False
    sends them from this process, for a one-shot command whose crash is only a failed command (`lagbot check`):
    it saves starting a second interpreter. See `lagbot.engine.offset_reader`.

    Raises:
        ClientConfigError: librdkafka refused a property of the cluster's `kafka` settings.
        ConfigError: a variable named in the cluster's `kafka_env` is not set.
    """
    config: dict[str, Any] = {**cluster.client_config(), "logger": logging.getLogger("librdkafka")}
    config.setdefault("socket.timeout.ms", int(cluster.request_timeout * 1000))
    try:
        return ClusterAdmin(config, isolate_group_reads=isolate_group_reads)
    except (KafkaException, ValueError, TypeError) as exc:
        raise ClientConfigError(cluster.name, _exception_text(exc)) from exc


class ClientConfigError(Exception):
    """librdkafka refused a cluster's client properties."""

    def __init__(self, cluster: str, problem: str) -> None:
        super().__init__(problem)
        self.cluster = cluster
        self.problem = problem


def check_clients(settings: Settings, *, source: str) -> None:
    """Build (and drop) one client per cluster so that bad librdkafka properties are reported as config errors.

    Raises:
        ConfigError: naming the source, the field path (`clusters.N.kafka`) and librdkafka's complaint.
    """
    for index, cluster in enumerate(settings.clusters):
        try:
            make_admin(cluster)
        except ClientConfigError as exc:
            raise ConfigError(
                messages.config_field_error(source, f"clusters.{index}.kafka", exc.problem, None)
            ) from None
        except ConfigError as exc:
            raise ConfigError(
                messages.config_field_error(source, f"clusters.{index}.kafka_env", str(exc), None)
            ) from None


def _exception_text(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args:
        return _describe_error(exc.args[0])
    return str(exc)


def collect(admin: AdminClient, cluster: Cluster, *, clock: Callable[[], float] = time.time) -> ClusterSnapshot:
    """Read one snapshot of every watched group of `cluster`.

    Args:
        admin: a client for the cluster (reused across cycles).
        cluster: the cluster's settings: group filter and request timeout.
        clock: the source of the snapshot's timestamp.

    Returns:
        The snapshot; its `error` is set (and its maps empty) when the cluster could not be read.
    """
    taken_at = clock()
    if isinstance(admin, ClusterAdmin):
        admin.take_authentication_error()  # only a failure of this cycle explains this cycle
    try:
        return _collect(admin, cluster, taken_at)
    except CollectError as exc:
        refused = admin.take_authentication_error() if isinstance(admin, ClusterAdmin) else None
        problem = str(exc) if refused is None else wording.cluster_authentication_failed(cluster.name, refused)
        log.info("collect failed", extra={"cluster": cluster.name, "error": problem})
        return ClusterSnapshot(cluster=cluster.name, taken_at=taken_at, error=problem)
    except Exception as exc:  # whatever the client raises, one cluster's failure never stops the checks
        log.warning("collect failed unexpectedly", extra={"cluster": cluster.name}, exc_info=True)
        problem = wording.cluster_unreachable(cluster.name, "collecting", f"{type(exc).__name__}: {exc}")
        return ClusterSnapshot(cluster=cluster.name, taken_at=taken_at, error=problem)


def _collect(admin: AdminClient, cluster: Cluster, taken_at: float) -> ClusterSnapshot:
    timeout = cluster.request_timeout
    # The empty group id is legal in Kafka (old clients' default) but cannot be asked for by name.
    listed = {
        g.group_id: g
        for g in _list_groups(admin, cluster, timeout)
        if g.group_id and cluster.groups.matches(g.group_id)
    }
    groups = _describe_and_fetch(admin, cluster.name, sorted(listed), _known_descriptions(listed.values()), timeout)
    interesting = {name: sorted(_interesting_topics(g)) for name, g in groups.items()}
    topics = sorted({topic for names in interesting.values() for topic in names})
    counts = _partition_counts(admin, cluster.name, topics, timeout)
    partitions = [(topic, p) for topic in topics for p in range(counts.get(topic, 0))]
    log_end, log_start = _list_offsets(admin, cluster.name, partitions, timeout)
    shown = _shown_partitions(partitions, log_end)
    groups = {name: _complete(g, interesting[name], shown) for name, g in groups.items()}
    return ClusterSnapshot(
        cluster=cluster.name,
        taken_at=taken_at,
        groups=groups,
        log_end=log_end,
        log_start=log_start,
        partition_counts=counts,
    )


def _list_groups(admin: AdminClient, cluster: Cluster, timeout: float) -> list[Any]:
    """The groups' listings (ConsumerGroupListing: group_id, state, type)."""
    future = admin.list_consumer_groups(request_timeout=timeout)
    result = _result(future, timeout, cluster.name, "listing consumer groups")
    if result.errors and not result.valid:
        raise CollectError(
            wording.cluster_unreachable(cluster.name, "listing consumer groups", _describe_error(result.errors[0]))
        )
    for error in result.errors:
        log.warning("list groups partial error", extra={"cluster": cluster.name, "error": _describe_error(error)})
    return list(result.valid)


def _known_descriptions(listings: Iterable[Any]) -> dict[str, Described]:
    """What DescribeGroups would answer for the groups whose listing already says it: a classic group listed as
    Empty has no members and no protocol (the broker answers state Empty, no members, an empty protocol), so it is
    not described. ListGroups reports state and type from v5 (Kafka 4.0, KIP-848); an older broker reports no type,
    and a consumer-protocol group is always described (its description names the broker's assignor)."""
    return {
        listing.group_id: _EMPTY_CLASSIC
        for listing in listings
        if listing.type == ConsumerGroupType.CLASSIC and listing.state == ConsumerGroupState.EMPTY
    }


_EMPTY_CLASSIC = Described(GroupState.EMPTY, (), "")


def _describe_and_fetch(
    admin: AdminClient, cluster: str, group_ids: list[str], known: dict[str, Described], timeout: float
) -> dict[str, GroupSnapshot]:
    """DescribeGroups and OffsetFetch for every group (DescribeGroups only for those not in `known`), all requests
    in flight together (from the offset reader's child process: both requests go to the group coordinators, whose
    errors crash an admin client)."""
    if not group_ids:
        return {}
    reads = offset_reader(admin).read(group_ids, timeout, known)
    # Nothing read at all: every group's offsets failed, and its description too where one was asked for.
    if all(isinstance(r.committed, str) and (g in known or isinstance(r.described, str)) for g, r in reads.items()):
        first = next(iter(reads.values()))
        sample = first.described if isinstance(first.described, str) else first.committed
        raise CollectError(wording.cluster_unreachable(cluster, "describing consumer groups", str(sample)))
    return {g: _group_snapshot(g, reads[g]) for g in group_ids}


def offset_reader(admin: Any) -> OffsetReader:
    """The committed-offsets reader of a client made by `make_admin` (or of an object standing for one)."""
    reader = getattr(admin, "offsets", None)
    if not isinstance(reader, OffsetReader):
        raise TypeError("committed offsets are read through a ClusterAdmin (make_admin), never an AdminClient")
    return reader


def _group_snapshot(group: str, read: GroupRead) -> GroupSnapshot:
    if isinstance(read.committed, str):
        problem = wording.group_unreadable(group, "fetching committed offsets", read.committed)
        return GroupSnapshot(group=group, state=GroupState.UNKNOWN, members=(), committed={}, error=problem)
    committed = read.committed
    if isinstance(read.described, str):
        problem = wording.group_unreadable(group, "describing the group", read.described)
        return GroupSnapshot(group=group, state=GroupState.UNKNOWN, members=(), committed=committed, error=problem)
    return GroupSnapshot(
        group=group,
        state=read.described.state,
        members=read.described.members,
        committed=committed,
        assignor=read.described.assignor,
    )


def _interesting_topics(group: GroupSnapshot) -> set[str]:
    """Topics a group commits to or is assigned: all their partitions are shown, committed or not."""
    assigned = {topic for member in group.members for topic, _ in member.assignment}
    return group.topics | assigned


def _shown_partitions(
    partitions: list[TopicPartition], log_end: dict[TopicPartition, int]
) -> dict[str, list[TopicPartition]]:
    """Each topic's partitions with a log end, in partition order: what a group reading the topic shows (made once
    a cycle for all the groups that read it; their snapshots share these keys)."""
    shown: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        if tp in log_end:
            shown.setdefault(tp[0], []).append(tp)
    return shown


def _complete(group: GroupSnapshot, topics: list[str], shown: dict[str, list[TopicPartition]]) -> GroupSnapshot:
    """Every partition of the group's topics (`topics`, sorted), None where nothing is committed; deleted topics
    dropped."""
    known = group.committed
    committed = {tp: known.get(tp) for topic in topics for tp in shown.get(topic, ())}
    return GroupSnapshot(
        group=group.group,
        state=group.state,
        members=group.members,
        committed=committed,
        assignor=group.assignor,
        generation=group.generation,
        error=group.error,
    )


def _partition_counts(admin: AdminClient, cluster: str, topics: list[str], timeout: float) -> dict[str, int]:
    if not topics:
        return {}
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=timeout)
    _wait_all(futures.values(), timeout)
    counts: dict[str, int] = {}
    for topic, future in futures.items():
        if _failed(future):
            log.info("topic not described", extra={"topic": topic, "error": _error_text(future, timeout)})
            continue
        counts[topic] = len(future.result(0).partitions)
    if not counts and all(_failed(f) for f in futures.values()):
        sample = _error_text(next(iter(futures.values())), timeout)
        if "UNKNOWN_TOPIC" not in sample:
            raise CollectError(wording.cluster_unreachable(cluster, "describing topics", sample))
    return counts


def _list_offsets(
    admin: AdminClient, cluster: str, partitions: list[TopicPartition], timeout: float
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """Log-end and log-start offsets of every partition: ListOffsets latest and earliest, in chunks of partitions
    (lagbot.engine.list_offsets), all in flight together."""
    if not partitions:
        return {}, {}
    latest = ask_offsets(admin, partitions, OffsetSpec.latest(), timeout)
    earliest = ask_offsets(admin, partitions, OffsetSpec.earliest(), timeout)
    _wait_all([*latest.values(), *earliest.values()], timeout)
    if all(_failed(f) for f in latest.values()):
        sample = _error_text(next(iter(latest.values())), timeout)
        raise CollectError(wording.cluster_unreachable(cluster, "listing offsets", sample))
    log_end = _offsets(latest, timeout)
    log_start = _offsets(earliest, timeout)
    both = log_end.keys() & log_start.keys()
    return {tp: log_end[tp] for tp in both}, {tp: log_start[tp] for tp in both}


def _offsets(futures: dict[Any, Future[Any]], timeout: float) -> dict[TopicPartition, int]:
    offsets: dict[TopicPartition, int] = {}
    for tp, future in futures.items():
        if _failed(future):
            log.info("offset not listed", extra={"topic": tp.topic, "partition": tp.partition})
            continue
        offsets[(tp.topic, tp.partition)] = future.result(0).offset
    return offsets


# ---------------------------------------------------------------------------------------------------
# Futures with deadlines
# ---------------------------------------------------------------------------------------------------


def _wait_all(futures: Iterable[Future[Any]], timeout: float) -> None:
    """Wait for all futures, at most `timeout` + 1 s (librdkafka enforces request_timeout itself)."""
    wait(list(futures), timeout=timeout + 1.0)


def _failed(future: Future[Any]) -> bool:
    return not future.done() or future.exception(0) is not None


def _error_text(future: Future[Any], timeout: float) -> str:
    if not future.done():
        return messages.timed_out(timeout)
    exc = future.exception(0)
    assert exc is not None
    return _exception_text(exc) or type(exc).__name__


def _describe_error(error: Any) -> str:
    """A KafkaError as 'Local: Timed out (_TIMED_OUT)'; anything else as its text."""
    if hasattr(error, "str") and hasattr(error, "name"):
        return f"{error.str()} ({error.name()})"
    return str(error)


def _result(future: Future[Any], timeout: float, cluster: str, doing: str) -> Any:
    _wait_all([future], timeout)
    if _failed(future):
        raise CollectError(wording.cluster_unreachable(cluster, doing, _error_text(future, timeout)))
    return future.result(0)
