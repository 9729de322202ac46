"""The incident state machine: a numbered proof of `lagbot.service.incidents.step`, and the store contract.

Each case says what it tests and why the answer is right. Verdicts are hand-made: only severity,
status, total lag and the primary cause matter to the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis

from lagbot.core.config import IncidentConfig
from lagbot.core.model import Cause, GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.core.stored import StoredFormatError
from lagbot.service.incidents import (
    POST_ROOT,
    REPLY,
    UPDATE_ROOT,
    Change,
    Incident,
    IncidentStore,
    MemoryIncidentStore,
    RedisIncidentStore,
    decode_incident,
    encode_incident,
    step,
)

T0 = 1_700_000_000.0
CONFIG = IncidentConfig(open_at="warn", resolve_after=600, reopen_within=1800)


def verdict(
    severity: Severity, lag: int | None = 60_000, cause: str | None = "hot_partition", status: Status = Status.WARN
) -> GroupVerdict:
    causes = () if cause is None else (Cause(cause, "because", 0.9, rank=1),)
    return GroupVerdict(
        cluster="prod",
        group="orders",
        state=GroupState.STABLE,
        status=status if severity > Severity.OK else Status.OK,
        severity=severity,
        severity_reason=f"{severity.label}: test",
        partitions=(),
        total_lag=lag,
        max_lag_seconds=None,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend=Trend.GROWING,
        causes=causes,
    )


def opened(at: float = T0, severity: Severity = Severity.WARN, **changes: object) -> Incident:
    incident = step(None, verdict(severity), channel="C1", silenced=False, config=CONFIG, now=at, new_id=lambda: "i1")
    assert incident.incident is not None
    return replace(incident.incident, **changes)  # type: ignore[arg-type]


def kinds(transition_effects: tuple[object, ...]) -> list[tuple[str, Change]]:
    return [(e.kind, e.change) for e in transition_effects]  # type: ignore[attr-defined]


# 1. Nothing open, severity OK: nothing happens. A healthy group never opens an incident.
def test_01_ok_without_incident_does_nothing() -> None:
    t = step(None, verdict(Severity.OK, lag=0), channel="C1", silenced=False, config=CONFIG, now=T0)
    assert t.incident is None and t.effects == ()


# 2. Severity reaches warn: one incident opens with a root message and one first reply (table + causes).
def test_02_warn_opens_with_root_and_first_reply() -> None:
    t = step(None, verdict(Severity.WARN), channel="C1", silenced=False, config=CONFIG, now=T0, new_id=lambda: "i1")
    assert t.incident is not None
    assert (t.incident.id, t.incident.channel, t.incident.opened_at, t.incident.severity) == (
        "i1",
        "C1",
        T0,
        Severity.WARN,
    )
    assert t.incident.primary_cause == "hot_partition" and t.incident.peak_lag == 60_000
    assert t.incident.causes_stated == ("hot_partition",)
    assert kinds(t.effects) == [(POST_ROOT, Change.OPENED), (REPLY, Change.OPENED)]


# 3. Opening at critical only: a warn verdict does not open (policy says critical opens).
def test_03_open_at_critical_ignores_warn() -> None:
    config = CONFIG.model_copy(update={"open_at": "critical"})
    assert step(None, verdict(Severity.WARN), channel="C1", silenced=False, config=config, now=T0).incident is None
    t = step(None, verdict(Severity.CRITICAL), channel="C1", silenced=False, config=config, now=T0)
    assert t.incident is not None


# 4. Silenced group: nothing opens, whatever the severity (silence suppresses opening).
def test_04_silence_suppresses_opening() -> None:
    t = step(None, verdict(Severity.PAGE), channel="C1", silenced=True, config=CONFIG, now=T0)
    assert t.incident is None and t.effects == ()


# 5. No channel routed: nothing opens (there is nowhere to post; not an error per group).
def test_05_no_channel_no_incident() -> None:
    assert step(None, verdict(Severity.PAGE), channel=None, silenced=False, config=CONFIG, now=T0).incident is None


# 6. Open, same severity, same cause: the root is edited, no reply (never a reply per cycle).
def test_06_same_state_edits_root_only() -> None:
    t = step(opened(), verdict(Severity.WARN, lag=70_000), channel="C1", silenced=False, config=CONFIG, now=T0 + 60)
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED)]
    assert t.incident is not None and t.incident.peak_lag == 70_000 and t.incident.updated_at == T0 + 60


# 7. Severity goes up: the root is edited and one reply says so, naming the previous level.
def test_07_severity_up_replies() -> None:
    t = step(opened(), verdict(Severity.CRITICAL), channel="C1", silenced=False, config=CONFIG, now=T0 + 60)
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED), (REPLY, Change.SEVERITY_UP)]
    assert t.effects[1].detail == "warn"
    assert t.incident is not None and t.incident.peak_severity is Severity.CRITICAL


# 8. Severity goes down but stays in trouble: one reply; the peak severity is kept for the resolution line.
def test_08_severity_down_replies_and_keeps_peak() -> None:
    t = step(
        opened(severity=Severity.PAGE), verdict(Severity.WARN), channel="C1", silenced=False, config=CONFIG, now=T0 + 60
    )
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED), (REPLY, Change.SEVERITY_DOWN)]
    assert t.incident is not None and t.incident.peak_severity is Severity.PAGE


# 9. A new primary cause: one reply naming the old one.
def test_09_new_primary_cause_replies() -> None:
    t = step(
        opened(), verdict(Severity.WARN, cause="stuck_consumer"), channel="C1", silenced=False, config=CONFIG, now=T0
    )
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED), (REPLY, Change.NEW_CAUSE)]
    assert t.effects[1].detail == "hot_partition"
    assert t.incident is not None and t.incident.primary_cause == "stuck_consumer"
    assert t.incident.causes_stated == ("hot_partition", "stuck_consumer")


# 9b. The causes reshuffle: a primary cause the thread already stated is not news (no reply), but the
#     incident follows the new primary.
def test_09b_known_cause_becoming_primary_is_not_news() -> None:
    incident = opened(causes_stated=("hot_partition", "no_active_members"))
    t = step(
        incident, verdict(Severity.WARN, cause="no_active_members"), channel="C1", silenced=False, config=CONFIG, now=T0
    )
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED)]
    assert t.incident is not None and t.incident.primary_cause == "no_active_members"


# 10. Causes vanish (none stand out this cycle): not a "new cause"; the last known one is kept.
def test_10_no_cause_is_not_a_new_cause() -> None:
    t = step(opened(), verdict(Severity.WARN, cause=None), channel="C1", silenced=False, config=CONFIG, now=T0)
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED)]
    assert t.incident is not None and t.incident.primary_cause == "hot_partition"


# 11. Back under threshold: recovering starts; the root says so; no reply yet (hysteresis).
def test_11_below_threshold_starts_recovering() -> None:
    t = step(opened(), verdict(Severity.OK, lag=10), channel="C1", silenced=False, config=CONFIG, now=T0 + 60)
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.RECOVERING)]
    assert t.incident is not None and t.incident.below_since == T0 + 60 and t.incident.is_open


# 12. Still below, but for less than resolve_after: still open (599 s < 600 s).
def test_12_below_for_less_than_resolve_after_stays_open() -> None:
    t = step(
        opened(below_since=T0 + 60), verdict(Severity.OK, 0), channel="C1", silenced=False, config=CONFIG, now=T0 + 659
    )
    assert t.incident is not None and t.incident.is_open
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.RECOVERING)]


# 13. Below for resolve_after: resolved; root edited green and one reply (600 s >= 600 s).
def test_13_resolves_after_hysteresis() -> None:
    t = step(
        opened(below_since=T0 + 60), verdict(Severity.OK, 0), channel="C1", silenced=False, config=CONFIG, now=T0 + 660
    )
    assert t.incident is not None and t.incident.resolved_at == T0 + 660
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.RESOLVED), (REPLY, Change.RESOLVED)]
    assert t.incident.duration(T0 + 9999) == 660


# 14. Flapping: trouble again while recovering clears `below_since`; no resolution, no new incident.
def test_14_trouble_while_recovering_cancels_recovery() -> None:
    t = step(
        opened(below_since=T0 + 60), verdict(Severity.WARN), channel="C1", silenced=False, config=CONFIG, now=T0 + 120
    )
    assert t.incident is not None and t.incident.below_since is None and t.incident.id == "i1"
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED)]


# 15. Trouble again soon after resolving (within reopen_within): the same thread reopens.
def test_15_reopens_same_thread_within_reopen_window() -> None:
    resolved = opened(resolved_at=T0 + 660)
    t = step(resolved, verdict(Severity.WARN), channel="C1", silenced=False, config=CONFIG, now=T0 + 660 + 1800)
    assert t.incident is not None and t.incident.id == "i1"  # the same id: the outbox finds the same thread
    assert t.incident.is_open and t.incident.reopened == 1
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.REOPENED), (REPLY, Change.REOPENED)]


# 16. Trouble long after resolving: a new incident (new id, new root) opens.
def test_16_new_incident_after_reopen_window() -> None:
    resolved = opened(resolved_at=T0 + 660)
    t = step(
        resolved,
        verdict(Severity.WARN),
        channel="C1",
        silenced=False,
        config=CONFIG,
        now=T0 + 660 + 1801,
        new_id=lambda: "i2",
    )
    assert t.incident is not None and t.incident.id == "i2"
    assert kinds(t.effects) == [(POST_ROOT, Change.OPENED), (REPLY, Change.OPENED)]


# 17. A resolved incident and a silenced group: the silence also stops the reopening.
def test_17_silence_stops_reopening() -> None:
    resolved = opened(resolved_at=T0 + 660)
    t = step(resolved, verdict(Severity.PAGE), channel="C1", silenced=True, config=CONFIG, now=T0 + 700)
    assert t.incident == resolved and t.effects == ()


# 18. A silence while an incident is open does not hide it: the root keeps being updated.
def test_18_silence_does_not_hide_an_open_incident() -> None:
    t = step(opened(), verdict(Severity.WARN), channel="C1", silenced=True, config=CONFIG, now=T0 + 60)
    assert kinds(t.effects) == [(UPDATE_ROOT, Change.UPDATED)]


# 19. The group could not be read (ERR): nothing changes, not even recovery (the lag is unknown).
def test_19_unreadable_group_changes_nothing() -> None:
    incident = opened()
    err = replace(verdict(Severity.OK, lag=None), status=Status.ERR, error="coordinator down")
    t = step(incident, err, channel="C1", silenced=False, config=CONFIG, now=T0 + 3600)
    assert t.incident == incident and t.effects == ()


# 20. Resolved and still fine: nothing happens (no edit per cycle of a closed thread).
def test_20_resolved_and_fine_is_quiet() -> None:
    resolved = opened(resolved_at=T0 + 660)
    t = step(resolved, verdict(Severity.OK, 0), channel="C1", silenced=False, config=CONFIG, now=T0 + 700)
    assert t.incident == resolved and t.effects == ()


# 21. Unknown total lag keeps the known peak (max ignores unknowns rather than dropping the peak).
def test_21_unknown_lag_keeps_peak() -> None:
    t = step(opened(), verdict(Severity.WARN, lag=None), channel="C1", silenced=False, config=CONFIG, now=T0 + 60)
    assert t.incident is not None and t.incident.peak_lag == 60_000


# 22. resolve_after = 0: the first cycle below threshold resolves at once.
def test_22_zero_hysteresis_resolves_at_once() -> None:
    config = CONFIG.model_copy(update={"resolve_after": 0})
    t = step(opened(), verdict(Severity.OK, 0), channel="C1", silenced=False, config=config, now=T0 + 60)
    assert t.incident is not None and t.incident.resolved_at == T0 + 60


# ---------------------------------------------------------------------------------------------------
# The store contract: memory and a real redis-server
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def store(request: pytest.FixtureRequest) -> Iterator[IncidentStore]:
    if request.param == "memory":
        yield MemoryIncidentStore()
    else:
        client: redis.Redis = request.getfixturevalue("redis_client")
        yield RedisIncidentStore(client)


def test_store_round_trips_and_replaces(store: IncidentStore) -> None:
    assert store.get("prod", "orders") is None
    first = opened()
    store.put(first)
    assert store.get("prod", "orders") == first
    later = replace(first, severity=Severity.CRITICAL, updated_at=T0 + 60)
    store.put(later)
    assert store.get("prod", "orders") == later
    assert store.open_incidents() == [later]


def test_store_lists_changes_since_including_resolved_and_replaced(store: IncidentStore) -> None:
    first = opened(resolved_at=T0 + 100, updated_at=T0 + 100)
    store.put(first)
    second = replace(opened(at=T0 + 5000), id="i2", updated_at=T0 + 5000)
    store.put(second)
    assert [i.id for i in store.changed_since(T0)] == ["i1", "i2"]
    assert [i.id for i in store.changed_since(T0 + 101)] == ["i2"]
    assert store.open_incidents() == [second]


def test_stored_json_is_versioned_and_unknown_versions_are_refused() -> None:
    raw = encode_incident(opened())
    assert raw == (
        '{"causes_stated":["hot_partition"],"channel":"C1","cluster":"prod","group":"orders","id":"i1",'
        '"opened_at":1700000000.0,"peak_lag":60000,"peak_severity":"warn","primary_cause":"hot_partition",'
        '"severity":"warn","status":"WARN","updated_at":1700000000.0,"v":2}'
    )  # unset fields (no storm, no remediation, never resolved) are left out
    assert decode_incident(raw) == opened()
    with pytest.raises(StoredFormatError, match="version 3"):
        decode_incident(raw.replace('"v":2', '"v":3'))


def test_redis_store_keeps_exact_keys(redis_client: redis.Redis) -> None:
    RedisIncidentStore(redis_client).put(opened())
    assert sorted(k.decode() for k in redis_client.keys("*")) == [
        "lagbot:incident:prod:orders",
        "lagbot:incidents:by-id",
        "lagbot:incidents:changed",
    ]
    assert redis_client.zscore("lagbot:incidents:changed", "i1") == T0


def test_store_reads_many_groups_at_once_and_skips_the_ones_without(store: IncidentStore) -> None:
    first = opened()
    other = replace(opened(), id="i2", group="billing")
    store.put(first)
    store.put(other)
    found = store.get_many([("prod", "orders"), ("prod", "nothing"), ("prod", "billing")])
    assert found == {("prod", "orders"): first, ("prod", "billing"): other}
    assert store.get_many([]) == {}


def test_redis_store_forgets_incidents_unchanged_for_the_history_period(redis_client: redis.Redis) -> None:
    from lagbot.service.incidents import HISTORY_KEEP

    store = RedisIncidentStore(redis_client)
    store.put(opened())
    later = replace(opened(at=T0 + HISTORY_KEEP + 1), id="i2", group="billing")
    store.put(later)
    assert [i.id for i in store.changed_since(0)] == ["i2"]
    assert redis_client.hkeys("lagbot:incidents:by-id") == [b"i2"]
