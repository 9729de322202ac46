"""What a scale on KEDA leaves to undo is a `KedaHandBack` kept through the one codec (issue 25), in the restore
queue's record on the real redis-server; the shapes lagbot kept before it had a type still hand KEDA back as they did.

The record's bytes are written as each lagbot writes them (the hash `lagbot:restores:previous`, proposal id -> the
record) and read back by the real path: the restore queue, the remediator's `restore_due`, the real Kubernetes API
server (a KEDA-managed Deployment; the ScaledObject's annotations are read back from it).
"""

from __future__ import annotations

import pytest
import redis

from lagbot.core import keys
from lagbot.core.stored import StoredFormatError
from lagbot.devkit.emulator import SlackEmulator
from lagbot.remediations.base import CutShort, restore_document
from lagbot.remediations.executors.kubernetes import KEDA_PAUSED
from lagbot.remediations.scale.hand_back import KedaHandBack
from lagbot.remediations.scale.remediation import Scale
from lagbot.service.remediate import Remediator
from lagbot.service.restores import Restores
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.verdicts import CLUSTER, GROUP

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

HOLD = 600.0
PAUSED = {"owner": "shop", KEDA_PAUSED: "4"}
"""The ScaledObject after the scale 2 -> 4 paused it (it was not paused before)."""


def scaled(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> tuple[Remediator, str]:
    """A scale 2 -> 4 approved and run on the KEDA-managed workload: paused at 4, its hand-back due after the hold."""
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "hold_for": "10m"}})
    [proposal], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    assert r.click(proposal.id, "U0ONCALL1", now=NOW).ephemeral.startswith(":white_check_mark:")
    assert k8s.replicas() == 4 and k8s.annotations() == PAUSED
    return r, proposal.id


def stored(redis_client: redis.Redis, proposal_id: str) -> bytes | None:
    raw = redis_client.hget(keys.RESTORES_PREVIOUS, proposal_id)
    assert raw is None or isinstance(raw, bytes)
    return raw


@pytest.mark.integration
def test_a_scale_leaves_its_hand_back_versioned_and_it_hands_keda_back_after_the_hold(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r, proposal_id = scaled(redis_client, slack, k8s)
    assert stored(redis_client, proposal_id) == b'{"previous":{"interrupted":false,"keda_previous":null,"v":1},"v":1}'
    assert redis_client.zscore(keys.RESTORES, proposal_id) == NOW + HOLD

    [outcome] = r.restore_due(now=NOW + HOLD)
    assert (outcome.ok, outcome.cut_short) == (True, None), outcome.detail
    assert k8s.annotations() == {"owner": "shop"} and k8s.replicas() == 4
    assert r.restore_due(now=NOW + 3 * HOLD) == []  # once
    assert redis_client.zcard(keys.RESTORES) == 0 and redis_client.hlen(keys.RESTORES_PREVIOUS) == 0
    assert events(r)[-1] == ("restored", "lagbot")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("before", "annotations", "cut_short"),
    [
        # The hand-back after the hold, as lagbot kept it before: the bare paused count the pause reported.
        (b'{"previous":null,"v":1}', {"owner": "shop"}, None),
        (b'{"previous":3,"v":1}', {"owner": "shop", KEDA_PAUSED: "3"}, None),
        # What an interrupted run held before pausing, as lagbot kept it before: the annotation as it read it.
        (b'{"previous":{"interrupted":true,"keda_previous":null},"v":1}', {"owner": "shop"}, CutShort.INTERRUPTED),
        (
            b'{"previous":{"interrupted":true,"keda_previous":"7"},"v":1}',
            {"owner": "shop", KEDA_PAUSED: "7"},
            CutShort.INTERRUPTED,
        ),
        # And as this lagbot keeps it.
        (
            b'{"previous":{"interrupted":true,"keda_previous":"7","v":1},"v":1}',
            {"owner": "shop", KEDA_PAUSED: "7"},
            CutShort.INTERRUPTED,
        ),
    ],
    ids=["bare-none", "bare-count", "held-none", "held-annotation", "versioned-held"],
)
def test_a_hand_back_kept_by_an_older_lagbot_restores_keda_as_it_did(
    redis_client: redis.Redis,
    slack: SlackEmulator,
    k8s: Shop,
    before: bytes,
    annotations: dict[str, str],
    cut_short: CutShort | None,
) -> None:
    r, proposal_id = scaled(redis_client, slack, k8s)
    redis_client.hset(keys.RESTORES_PREVIOUS, proposal_id, before)  # as that lagbot wrote it, byte for byte

    [outcome] = r.restore_due(now=NOW + HOLD)
    assert (outcome.ok, outcome.cut_short) == (True, cut_short), outcome.detail
    assert k8s.annotations() == annotations and k8s.replicas() == 4  # read back from the API server
    assert r.restore_due(now=NOW + 3 * HOLD) == []  # once
    assert redis_client.zcard(keys.RESTORES) == 0 and redis_client.hlen(keys.RESTORES_PREVIOUS) == 0
    assert events(r)[-1] == ("restored", "lagbot")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("before", "problem"),
    [
        (
            b'{"previous":{"interrupted":true,"keda_previous":"7","v":2},"v":1}',
            "scale's KEDA hand-back has format version 2; this lagbot reads 1",
        ),
        (
            b'{"previous":{"interrupted":"maybe","v":1},"v":1}',
            "scale's KEDA hand-back is not one lagbot wrote: interrupted: Input should be a valid boolean, unable to "
            "interpret input",
        ),
    ],
    ids=["newer-version", "not-what-lagbot-wrote"],
)
def test_a_hand_back_this_lagbot_cannot_read_is_refused_with_the_one_error_and_changes_nothing(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, before: bytes, problem: str
) -> None:
    r, proposal_id = scaled(redis_client, slack, k8s)
    redis_client.hset(keys.RESTORES_PREVIOUS, proposal_id, before)

    [outcome] = r.restore_due(now=NOW + HOLD)
    assert not outcome.ok
    assert outcome.detail == (
        f"RESTORE FAILED: what to hand back cannot be read ({problem}); nothing changed: by hand, set ScaledObject "
        "orders-so's autoscaling.keda.sh/paused-replicas annotation back"
    )
    assert k8s.annotations() == PAUSED and k8s.replicas() == 4  # nothing changed on the API server
    assert events(r)[-1] == ("restore_failed", "lagbot")
    [failed] = [e for e in r.bot.audit.latest(CLUSTER, GROUP, 50) if e.event == "restore_failed"]
    assert failed.detail == {"detail": outcome.detail}
    with pytest.raises(StoredFormatError) as refused:
        Scale().held({"interrupted": True, "keda_previous": "7", "v": 2})
    assert str(refused.value) == "scale's KEDA hand-back has format version 2; this lagbot reads 1"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("held", "raw"),
    [
        (KedaHandBack("7", interrupted=True), b'{"previous":{"interrupted":true,"keda_previous":"7","v":1},"v":1}'),
        (KedaHandBack(3), b'{"previous":{"interrupted":false,"keda_previous":3,"v":1},"v":1}'),
        (KedaHandBack(None), b'{"previous":{"interrupted":false,"keda_previous":null,"v":1},"v":1}'),
    ],
)
def test_a_hand_back_round_trips_through_the_restore_queue_on_redis(
    redis_client: redis.Redis, held: KedaHandBack, raw: bytes
) -> None:
    queue = Restores(redis_client)
    queue.hold("p1", restore_document(held))
    assert stored(redis_client, "p1") == raw
    assert queue.release("p1", NOW)
    [(proposal_id, previous)] = list(queue.claim_due(now=NOW))
    read = Scale().held(previous)
    assert proposal_id == "p1" and read == held and type(read.keda_previous) is type(held.keda_previous)
    assert redis_client.hlen(keys.RESTORES_PREVIOUS) == 0
