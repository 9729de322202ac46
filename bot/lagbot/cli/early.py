"""`lagbot check --bootstrap`'s first read of the cluster, and of its time index, made while the settings load.

Loading and validating the settings (pydantic and every settings model: ~150 ms of CPU) and reading the cluster
(~0.1 s for 200 groups, most of it waiting on the broker) do not need each other when the cluster comes from
`--bootstrap` and no file: the settings then name exactly that cluster, `FLAG_CLUSTER`, with the defaults of
lagbot.core.defaults and the `--group` filter. So the read, then the time index at the default horizons, starts
first, in a thread, from the flags alone (`EarlyRead`). Its snapshot is taken only if the validated settings name the
same cluster with the same groups, timeout and client properties (`fits`), its index only if they ask the default
horizons; otherwise they are dropped and the check reads as it always does. A read sends only requests that change
nothing on the cluster: dropping one has no effect.

Nothing here loads the settings' models (only the collector and the Kafka client; the time index once the read is
sent): this module is imported, and the read started, before them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lagbot.core.defaults import ALL_GROUPS, HISTORY_HORIZONS, REQUEST_TIMEOUT, group_matches
from lagbot.engine.collector import collect, make_admin

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from lagbot.core.config import ClusterConfig, Settings
    from lagbot.core.model import ClusterSnapshot
    from lagbot.engine.timeindex import BaselineCache

FLAG_CLUSTER = "default"
"""The name of the cluster `--bootstrap` names (lagbot.cli.settings gives it this name)."""


@dataclass(frozen=True)
class FlagCluster:
    """The cluster `--bootstrap` names, as the settings will have it when no file names clusters (see the module's
    docstring): its own group filter (`groups`), with `--group` as the only pattern, or every group."""

    bootstrap_servers: str
    include: tuple[str, ...]
    name: str = FLAG_CLUSTER
    request_timeout: float = REQUEST_TIMEOUT

    @property
    def groups(self) -> FlagCluster:
        return self

    def matches(self, group: str) -> bool:
        return group_matches(self.include, (), group)

    def client_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap_servers}


def flag_cluster(
    config: Path | None, bootstrap: str | None, group: str | None, timeout: float | None = None
) -> FlagCluster | None:
    """The cluster the settings will name when it comes from `--bootstrap` alone (no `--config`), or None. A `--group`
    that is not a regex gives None: the settings report it. `timeout`: --timeout, if given."""
    if config is not None or not bootstrap:
        return None
    include = (ALL_GROUPS,) if group is None else (group,)
    try:
        for pattern in include:
            re.compile(pattern)
    except re.error:
        return None
    return FlagCluster(bootstrap, include, request_timeout=REQUEST_TIMEOUT if timeout is None else timeout)


def fits(read: FlagCluster, cluster: ClusterConfig) -> bool:
    """Whether the validated settings' `cluster` is the one `read` was made for: the same name, groups, timeout and
    client properties (secrets from the environment included), so its snapshot is the one a read now would take."""
    try:
        client = cluster.client_config()
    except Exception:  # a secret's variable is not set: the settings' own check reports it, not this
        return False
    return (
        cluster.name == read.name
        and tuple(cluster.groups.include) == read.include
        and not cluster.groups.exclude
        and cluster.request_timeout == read.request_timeout
        and client == read.client_config()
    )


@dataclass(frozen=True)
class Taken:
    """What an early read gives the check: its client, its snapshot, and the time index's answers for that snapshot
    (None when the settings ask other horizons than the defaults it asked)."""

    admin: AdminClient
    snapshot: ClusterSnapshot
    index: BaselineCache | None


class EarlyRead:
    """One read of a `FlagCluster`, then its time index at the default horizons, in a thread of its own from
    creation (a daemon: a dropped read is not waited for). `take` gives them when they fit the validated settings."""

    def __init__(self, cluster: FlagCluster) -> None:
        self.cluster = cluster
        self._admin: AdminClient | None = None
        self._snapshot: ClusterSnapshot | None = None
        self._index: BaselineCache | None = None
        self._thread = threading.Thread(target=self._read, name="lagbot-early-read", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:  # read in this process, as `lagbot check` reads (see lagbot.engine.collector `make_admin`)
            admin = make_admin(self.cluster, isolate_group_reads=False)
            snapshot = collect(admin, self.cluster)
            self._snapshot, self._admin = snapshot, admin
            if snapshot.error is None and snapshot.log_end:  # as the Checker asks it (lagbot.engine.check `history`)
                from lagbot.engine.timeindex import BaselineCache, offsets_at  # after the requests: they go out first

                index = BaselineCache(offsets_at(admin, self.cluster.request_timeout), HISTORY_HORIZONS)
                index.history(sorted(snapshot.log_end), snapshot.taken_at, snapshot.log_end, snapshot.log_start)
                self._index = index
        except Exception:  # e.g. librdkafka refuses the bootstrap: the check, reading as usual, reports it
            self._index = None
            if self._snapshot is None:
                self._admin = None

    def take(self, settings: Settings) -> Taken | None:
        """The read (waiting for it) if it fits the validated settings' cluster of the same name, else None at once;
        its time index only if the settings ask the default horizons."""
        cluster = next((c for c in settings.clusters if c.name == self.cluster.name), None)
        if cluster is None or not fits(self.cluster, cluster):
            return None
        self._thread.join()
        if self._admin is None or self._snapshot is None:
            return None
        default_horizons = tuple(sorted(settings.evaluation.history_horizons)) == HISTORY_HORIZONS
        return Taken(self._admin, self._snapshot, self._index if default_horizons else None)
