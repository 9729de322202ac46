"""`lagbot check --bootstrap`'s first read of the cluster, made while the settings load.

Loading and validating the settings (pydantic and every settings model: ~150 ms of CPU) and reading the cluster
(~0.1 s for 200 groups, most of it waiting on the broker) do not need each other when the cluster comes from
`--bootstrap` and no file: the settings then name exactly that cluster, `FLAG_CLUSTER`, with the defaults of
lagbot.core.cluster_defaults and the `--group` filter. So the read starts first, in a thread, from the flags alone
(`EarlyRead`), and its snapshot is taken only if the validated settings name the same cluster with the same groups,
timeout and client properties (`fits`); otherwise it is dropped and the check reads the cluster as it always does.
A read sends only requests that change nothing on the cluster: dropping one has no effect.

Nothing here loads the settings' models (only the collector and the Kafka client): this module is imported, and
the read started, before them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lagbot.core.cluster_defaults import ALL_GROUPS, REQUEST_TIMEOUT, group_matches
from lagbot.engine.collector import collect, make_admin

if TYPE_CHECKING:
    from collections.abc import Iterable

    from confluent_kafka.admin import AdminClient

    from lagbot.core.config import ClusterConfig
    from lagbot.core.model import ClusterSnapshot

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


def flag_cluster(config: Path | None, bootstrap: str | None, group: str | None) -> FlagCluster | None:
    """The cluster the settings will name when it comes from `--bootstrap` alone (no `--config`), or None. A `--group`
    that is not a regex gives None: the settings report it."""
    if config is not None or not bootstrap:
        return None
    include = (ALL_GROUPS,) if group is None else (group,)
    try:
        for pattern in include:
            re.compile(pattern)
    except re.error:
        return None
    return FlagCluster(bootstrap, include)


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


class EarlyRead:
    """One read of a `FlagCluster`, in a thread of its own from creation (a daemon: a dropped read is not waited
    for). `take` gives its client and snapshot when they fit the validated settings' cluster."""

    def __init__(self, cluster: FlagCluster) -> None:
        self.cluster = cluster
        self._admin: AdminClient | None = None
        self._snapshot: ClusterSnapshot | None = None
        self._thread = threading.Thread(target=self._read, name="lagbot-early-read", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:  # read in this process, as `lagbot check` reads (see lagbot.engine.collector `make_admin`)
            admin = make_admin(self.cluster, isolate_group_reads=False)
            self._snapshot, self._admin = collect(admin, self.cluster), admin
        except Exception:  # e.g. librdkafka refuses the bootstrap: the check, reading as usual, reports it
            self._snapshot = self._admin = None

    def take(self, clusters: Iterable[ClusterConfig]) -> tuple[AdminClient, ClusterSnapshot] | None:
        """The read's client and snapshot (waiting for the read) if they fit the validated settings' cluster of the
        same name (`clusters`: the settings' clusters), else None at once."""
        cluster = next((c for c in clusters if c.name == self.cluster.name), None)
        if cluster is None or not fits(self.cluster, cluster):
            return None
        self._thread.join()
        if self._admin is None or self._snapshot is None:
            return None
        return self._admin, self._snapshot
