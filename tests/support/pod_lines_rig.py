"""What `/lag <group>` and `lagbot check` share to show the owners' pods: a stalled group on Apache Kafka whose members
are named as the pods of the Deployment `orders` (tests/support/pod_evidence_rig.py) that run them.

`topic_with_backlog`: 2 partitions of 30 messages each. `stalled_on_pods`: two real members, their client ids the
names of the two `orders` pods (the policy's workload finds a member's pod by `{client_id}`: pod_evidence_rig's
`orders_policy(..., by_client_id=True)`); the member that owns partition 0 commits 10 of 30 (20 wait), the other is
caught up. `settings`: lagbot's configuration that checks the group; `explanation`: the stuck_consumer cause the
broker's side gives; `ago`: how a termination is worded when read at a moment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.conftest import Kafka, Names
from tests.support.apache_groups import LiveGroup, live_group

HOST = "/127.0.0.1"
"""Every member's host as the broker sees it: the pods are found by name, not by IP."""


@dataclass(frozen=True)
class Stalled:
    topic: str
    group: str
    stuck: str
    """The stuck member's client id: the name of its pod."""
    caught_up: str
    live: LiveGroup
    stuck_member: str
    """The stuck member's id, as the broker gave it (kept: the group's members are gone once it is closed)."""


def topic_with_backlog(kafka: Kafka, names: Names) -> tuple[str, str]:
    """A topic of 2 partitions with 30 messages on each, and a group name: (topic, group)."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 30)
    kafka.produce(topic, 1, 30)
    return topic, group


def settings(kafka: Kafka, group: str) -> dict[str, Any]:
    """lagbot's configuration (as a file holds it) checking `group` (a pattern) on the cluster "apache"."""
    cluster = {"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}
    return {"clusters": [{**cluster, "request_timeout": 5}], "evaluation": {"min_samples": 3, "min_span": 2}}


def explanation(stalled: Stalled) -> str:
    """The stuck_consumer cause of the stalled group as the broker shows it (before any pod's lines)."""
    owner = f"{stalled.stuck}@{HOST} (member {stalled.stuck_member})"
    return (
        f"partition 0 of {stalled.topic}: committed offset not moving while 20 messages wait; owner: {owner}; "
        f"every partition of {owner} is stuck: that member is stuck, restart it"
    )


def ago(at: float, finished: float) -> str:
    """How a termination at `finished` is worded when read at `at`."""
    return f"{int((at - finished) // 60)} min ago"


@contextmanager
def stalled_on_pods(bootstrap: str, topic: str, group: str, pods: list[str]) -> Iterator[Stalled]:
    """The group on `topic` (2 partitions, 30 messages each, already produced), its members named `pods`."""
    with live_group(bootstrap, group, [topic]) as live:
        for pod in pods:
            live.join(pod)
        owned = live.wait_spread(2, owning=2)
        [stuck] = [client for client, tps in owned.items() if tps == [(topic, 0)]]
        [caught_up] = [client for client, tps in owned.items() if tps == [(topic, 1)]]
        live.commit(stuck, {(topic, 0): 10})
        live.commit(caught_up, {(topic, 1): 30})
        yield Stalled(topic, group, stuck, caught_up, live, str(live.members[stuck].memberid()))
