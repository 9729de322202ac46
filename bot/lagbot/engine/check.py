"""One check cycle: collect -> window -> evaluate -> diagnose, for every configured cluster.

`judge` is the pure part (a snapshot and its windows in, verdicts out); `Checker` wires it to the
collector and the window store and is what the CLI, the scheduler and the benchmark run.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from confluent_kafka.admin import AdminClient

from lagbot.core.config import Settings, Thresholds
from lagbot.core.model import ClusterSnapshot, GroupState, GroupVerdict, GroupWindow, Severity, Status, TopicPartition
from lagbot.engine import burst
from lagbot.engine.batch import GroupRows, group_rows
from lagbot.engine.collector import collect, make_admin
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import error_verdict, evaluate_group
from lagbot.engine.exactlag import first_timestamps, pick, with_exact
from lagbot.engine.index_tables import IndexTables
from lagbot.engine.timeindex import BaselineCache, IndexPoint, offsets_at
from lagbot.engine.window import WindowStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckReport:
    """The outcome of one cycle over all clusters."""

    taken_at: float
    verdicts: list[GroupVerdict]
    cluster_errors: dict[str, str] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)

    @property
    def worst_severity(self) -> Severity:
        return max((v.severity for v in self.verdicts), default=Severity.OK)

    @property
    def unreadable(self) -> bool:
        """A cluster or a group could not be read: its lag is unknown."""
        return bool(self.cluster_errors) or any(v.status is Status.ERR for v in self.verdicts)


ThresholdsFor = Callable[[str, str], Thresholds]
"""(cluster, group) -> the thresholds that judge this group (a policy rule may set its own)."""


def judge(
    snapshot: ClusterSnapshot,
    windows: dict[str, GroupWindow],
    settings: Settings,
    now: float,
    thresholds_for: ThresholdsFor | None = None,
    history: Mapping[TopicPartition, Sequence[IndexPoint]] | None = None,
    born: Mapping[TopicPartition, float] | None = None,
) -> list[GroupVerdict]:
    """Verdicts (with causes) for every group of a snapshot, from the windows that include it.

    The time index's points (`history`) are read into tables once (`IndexTables`), for every group: the groups that
    read a topic share its partitions' points. The windows' arrays are judged together (lagbot.engine.batch
    `group_rows`): the groups of a snapshot share its sample times. `born`: when the oldest retained record of each
    partition with a shorter history than the horizons was written (`BaselineCache.born`)."""
    index = IndexTables(history, now, born) if history else None
    judged = {name: windows[name] for name, group in snapshot.groups.items() if group.error is None and name in windows}
    found = judge_windows(judged, settings, now, thresholds_for, index)
    return [
        found[name] if name in found else error_verdict(snapshot.cluster, name, group.state, group.error or "no window")
        for name, group in sorted(snapshot.groups.items())
    ]


def judge_windows(
    windows: Mapping[str, GroupWindow],
    settings: Settings,
    now: float,
    thresholds_for: ThresholdsFor | None = None,
    index: IndexTables | None = None,
) -> dict[str, GroupVerdict]:
    """Every window's verdict (`judge_window`), keyed by group, in the groups' order: the array rules run on batches of
    windows together (`group_rows`, at most BATCH_PARTITIONS partitions a batch)."""
    verdicts = {}
    for names in _batches(sorted(windows), windows, BATCH_PARTITIONS):
        rows = group_rows([windows[name] for name in names], settings.evaluation, now, index)
        for name in names:
            verdicts[name] = judge_window(windows[name], settings, now, thresholds_for, index, rows.get(name))
    return verdicts


BATCH_PARTITIONS = 2_000
"""Partitions whose windows the array rules judge together (`group_rows`), at most, unless one group has more: enough
rows that numpy's cost per operation does not count, few enough that what the rules make of them (stacked arrays,
each row's findings and figures) stays small beside the windows. Measured at 100,000 group-partitions: judged in one
stack, each cycle's resident memory rose by ~140 MiB above its steady state."""


def _batches(names: Sequence[str], windows: Mapping[str, GroupWindow], limit: int) -> Iterator[list[str]]:
    """`names` in order, in runs whose windows have at most `limit` partitions together (one group may have more)."""
    batch: list[str] = []
    size = 0
    for name in names:
        window = windows.get(name)
        count = len(window.partitions) if window is not None else 0
        if batch and size + count > limit:
            yield batch
            batch, size = [], 0
        batch.append(name)
        size += count
    if batch:
        yield batch


def judge_window(
    window: GroupWindow,
    settings: Settings,
    now: float,
    thresholds_for: ThresholdsFor | None = None,
    index: IndexTables | None = None,
    rows: GroupRows | None = None,
) -> GroupVerdict:
    """One group's verdict, with its causes, from its window (and the broker's time index, when asked): what
    lagbot.engine.index_figures `with_index` adds to the window's verdict, put in as the verdict is made. `rows`: what
    the array rules found of its window with the others of its sample times (`group_rows`, given the same `now` and
    `index`)."""
    thresholds = settings.thresholds if thresholds_for is None else thresholds_for(window.cluster, window.group)
    found: tuple[tuple[float, float | None], ...] = ()
    if index is not None:
        measured_at = window.samples[-1].at if window.samples else now
        stacked = rows.baselines if rows is not None else None
        found = _baselines(window, index, measured_at) if stacked is None else stacked
    verdict = evaluate_group(
        window, thresholds=thresholds, rules=settings.evaluation, now=now, index=index, rows=rows, baselines=found
    )
    if index is not None and index.born and not burst.enough_horizons(found):
        verdict = replace(verdict, born_at=burst.group_born_at(window, index.born))
    return replace(verdict, causes=diagnose(verdict, window, settings.evaluation))


def _baselines(window: GroupWindow, index: IndexTables, measured_at: float) -> tuple[tuple[float, float | None], ...]:
    """The group's baseline produce rates: of its verdict's partitions, which are its window's arrays' rows when it
    has arrays (their log ends are the arrays' newest), else the partitions with samples, at their newest log ends."""
    if window.columns is not None:
        return index.baselines_of(window.columns.tps, window.columns.log_end[:, -1], measured_at)
    # a window without arrays: the rule itself, no arrays made for it (nor numpy loaded)
    newest = [(tp, samples[-1].log_end) for tp, samples in sorted(window.partitions.items()) if samples]
    return index.baselines([tp for tp, _ in newest], [end for _, end in newest], measured_at)


def unreachable(cluster: str, known_groups: list[str], error: str) -> list[GroupVerdict]:
    """ERR verdicts for the groups we have history of on a cluster that could not be read."""
    return [error_verdict(cluster, group, GroupState.UNKNOWN, error) for group in known_groups]


GC_THRESHOLDS = (50_000, 10, 10)
"""CPython's collector thresholds for a process that runs check cycles continuously (`lagbot run`)."""


def tune_gc() -> None:
    """Let CPython's cyclic garbage collector run far less often in a process that keeps the check windows.

    A window store holds every sample of the window as an object (300,000 at 500 groups x 20 partitions x
    30 samples) and a cycle makes tens of thousands more that outlive it (the report). With the default
    thresholds (700, 10, 10) they are promoted to the oldest generation, whose collection walks the whole
    heap: measured (bench/check_cycle.py), a full collection every second or third cycle, 0.1 to 0.4 s each.
    With the first threshold at 50,000 young collections are rare, the objects of a cycle are mostly freed
    by reference counting before one, and full collections become rare. Nothing else changes: garbage
    without reference cycles is freed at once as before; cyclic garbage waits longer to be collected.
    Process-wide, so it is called by the bot's entry point, never by a library function.
    """
    gc.set_threshold(*GC_THRESHOLDS)


_pauses = 0
"""How many `collector_paused` blocks are running (in any thread)."""
_pauses_lock = threading.Lock()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """CPython's cyclic garbage collector paused while the block runs: a check cycle, in the bot's own loop.

    A cycle's objects (snapshot, windows, verdicts, futures) live until the cycle ends and are then freed by
    reference counting; young collections during it only walk and promote them. Measured at 100,000
    group-partitions with `tune_gc`'s thresholds: 0.19-0.23 s of collector time a cycle of ~3 s. Cyclic garbage
    made meanwhile (by the cycle or another thread) waits for the block's end, when the collector resumes with
    its thresholds. Blocks may overlap (one cycle per cluster, each on its own thread): the collector resumes
    when the last one ends. A collector already disabled (by whoever runs lagbot) is left as it is.
    Process-wide, so used by the bot's loop, never by a library function.
    """
    global _pauses
    with _pauses_lock:
        if _pauses == 0 and not gc.isenabled():
            paused = False
        else:
            _pauses += 1
            paused = True
            gc.disable()
    try:
        yield
    finally:
        if paused:
            with _pauses_lock:
                _pauses -= 1
                if _pauses == 0:
                    gc.enable()


class Checker:
    """Runs check cycles against the configured clusters, keeping history in a window store.

    One AdminClient per cluster is created lazily and reused across cycles.
    """

    def __init__(
        self,
        settings: Settings,
        store: WindowStore,
        *,
        clock: Callable[[], float] = time.time,
        admin_factory: Callable[..., AdminClient] = make_admin,
        thresholds_for: ThresholdsFor | None = None,
        index: Mapping[str, BaselineCache] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._clock = clock
        self._admin_factory = admin_factory
        self._admins: dict[str, AdminClient] = {}
        self.thresholds_for = thresholds_for
        self._index: dict[str, BaselineCache] = dict(index or {})
        """The time index's answers per cluster; `index`: those already asked (`lagbot check`'s early read)."""

    def admin(self, cluster_name: str) -> AdminClient:
        """The cluster's AdminClient, created once and reused (remediations use it too)."""
        if cluster_name not in self._admins:
            self._admins[cluster_name] = self._admin_factory(self.settings.cluster(cluster_name))
        return self._admins[cluster_name]

    def sample(self, clusters: list[str] | None = None) -> dict[str, ClusterSnapshot]:
        """Collect one snapshot per cluster (all, or those named) and append it to the window store."""
        snapshots = {}
        for cluster in self.settings.clusters:
            if clusters is not None and cluster.name not in clusters:
                continue
            snapshot = collect(self.admin(cluster.name), cluster, clock=self._clock)
            self.store.append(snapshot)
            snapshots[cluster.name] = snapshot
        return snapshots

    def evaluate(self, snapshots: dict[str, ClusterSnapshot]) -> CheckReport:
        """Judge the newest snapshots against their windows."""
        now = self._clock()
        verdicts: list[GroupVerdict] = []
        errors: dict[str, str] = {}
        for name, snapshot in snapshots.items():
            if snapshot.error is not None:
                errors[name] = snapshot.error
                verdicts.extend(unreachable(name, self.store.groups(name), snapshot.error))
                continue
            windows = self.store.windows(name, [g for g, s in snapshot.groups.items() if s.error is None])
            history = self.history(snapshot)
            born = self.born(snapshot) if history else None
            judged = judge(snapshot, windows, self.settings, now, self.thresholds_for, history, born)
            verdicts.extend(self.exact(name, judged, now))
        return CheckReport(taken_at=now, verdicts=verdicts, cluster_errors=errors, clusters=list(snapshots))

    def history(self, snapshot: ClusterSnapshot) -> dict[TopicPartition, tuple[IndexPoint, ...]]:
        """The broker's time index for the snapshot's partitions (one batched request per horizon that moved on)."""
        horizons = self.settings.evaluation.history_horizons
        if not horizons or not snapshot.log_end:
            return {}
        cache = self._index.get(snapshot.cluster)
        if cache is None:
            timeout = self.settings.cluster(snapshot.cluster).request_timeout
            cache = self._index[snapshot.cluster] = BaselineCache(
                offsets_at(self.admin(snapshot.cluster), timeout), horizons
            )
        tps = sorted(snapshot.log_end)
        history = cache.history(tps, snapshot.taken_at, snapshot.log_end, snapshot.log_start)
        cache.saw(snapshot.taken_at, snapshot.log_end)  # a later cycle's horizon may take these log ends
        return history

    def born(self, snapshot: ClusterSnapshot) -> dict[TopicPartition, float]:
        """When the oldest retained record of each of the snapshot's partitions with a history shorter than a horizon
        was written, from the time index's answers `history` asked (`BaselineCache.born`)."""
        cache = self._index.get(snapshot.cluster)
        return {} if cache is None else cache.born(sorted(snapshot.log_end), snapshot.log_start)

    def exact(self, cluster: str, verdicts: list[GroupVerdict], now: float) -> list[GroupVerdict]:
        """The verdicts with exact lag in seconds for the worst partitions, when `exact_lag_seconds` allows it."""
        rules = self.settings.evaluation
        positions = pick(verdicts, rules.exact_lag_seconds)
        if not positions:
            return verdicts
        written_at = first_timestamps(
            self.settings.cluster(cluster).client_config(), positions, rules.exact_lag_timeout
        )
        return [with_exact(v, written_at, now) for v in verdicts]

    def judge_stored(self, cluster: str, groups: list[str] | None = None) -> list[GroupVerdict]:
        """Verdicts from the stored windows alone, without asking the cluster: what any replica can answer.

        Uses each group's newest stored snapshot; groups default to all the store knows on that cluster.
        """
        names = self.store.groups(cluster) if groups is None else groups
        windows = self.store.windows(cluster, names)
        return list(judge_windows(windows, self.settings, self._clock(), self.thresholds_for).values())

    def run(
        self,
        samples: int,
        every: float,
        *,
        sleep: Callable[[float], None] = time.sleep,
        progress: Callable[[int], None] | None = None,
        first: Mapping[str, ClusterSnapshot] | None = None,
    ) -> CheckReport:
        """Take `samples` snapshots `every` seconds apart, then judge the newest against the window.

        `first`: snapshots already read of some clusters (`lagbot check` reads the cluster named by --bootstrap while
        its settings load: lagbot.cli.early), taken as their first sample instead of reading them again.
        Stops sampling early when every cluster failed: more waiting cannot make them answer sooner.
        """
        snapshots = self.sample() if not first else self._first_sample(first)
        _note_taken(1, samples, snapshots)
        for taken in range(1, samples):
            if all(s.error is not None for s in snapshots.values()):
                break
            if progress is not None:
                progress(taken)
            sleep(every)
            snapshots = self.sample()
            _note_taken(taken + 1, samples, snapshots)
        return self.evaluate(snapshots)

    def _first_sample(self, taken: Mapping[str, ClusterSnapshot]) -> dict[str, ClusterSnapshot]:
        """`sample` with the snapshots already `taken` of configured clusters appended as they are, the other
        clusters read now."""
        names = [c.name for c in self.settings.clusters]
        for name in names:
            if name in taken:
                self.store.append(taken[name])
        rest = [name for name in names if name not in taken]
        read = self.sample(rest) if rest else {}
        return {name: taken[name] if name in taken else read[name] for name in names}

    def cycle(self, clusters: list[str] | None = None) -> CheckReport:
        """One full cycle: sample every cluster (or those named), then judge."""
        started = time.monotonic()
        report = self.evaluate(self.sample(clusters))
        log.info(
            "check cycle",
            extra={
                "groups": len(report.verdicts),
                "cluster_errors": len(report.cluster_errors),
                "seconds": round(time.monotonic() - started, 3),
            },
        )
        return report


def _note_taken(sample: int, samples: int, snapshots: Mapping[str, ClusterSnapshot]) -> None:
    """Log one snapshot of `lagbot check`'s sampling (shown with --verbose): when each was in, and what failed."""
    log.info(
        "snapshot taken",
        extra={
            "sample": sample,
            "samples": samples,
            "clusters": len(snapshots),
            "cluster_errors": sum(s.error is not None for s in snapshots.values()),
        },
    )
