"""Proposals: single use, expiring, two people where needed, exactly one run. The contract (Proposals) is checked on
a real redis-server and on the memory twin alike (the `proposals` fixture); the races and Redis's own expiry on the
Redis store only."""

from __future__ import annotations

import threading

import pytest
import redis

from lagbot.core.stored import StoredFormatError, text
from lagbot.remediations.base import Plan, Risk
from lagbot.service.approvals import Proposals, State, Verdict
from lagbot.service.audit import AuditEntry, AuditLog
from lagbot.service.proposal_stores import MemoryProposals, ProposalStore

T0 = 1_700_000_000.0


def plan(action: str = "scale", group: str = "orders") -> Plan:
    return Plan(
        action=action,
        cluster="prod",
        group=group,
        summary="Scale orders 2 -> 4",
        risk=Risk.MEDIUM,
        params={"replicas": 4},
        steps=("scale to 4",),
        before={"replicas": 2},
        after={"replicas": 4},
    )


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def proposals(request: pytest.FixtureRequest) -> Proposals:
    """The memory twin, or the Redis store on the session's redis-server (flushed)."""
    if request.param == "memory":
        return MemoryProposals()
    client: redis.Redis = request.getfixturevalue("redis_client")
    return ProposalStore(client)


def make(store: Proposals, *, approvals: int = 1, cooldown: float = 600, expires_in: float = 900, **kw: object):  # type: ignore[no-untyped-def]
    return store.create(
        kw.pop("the_plan", plan()),  # type: ignore[arg-type]
        requested_by=str(kw.pop("by", "lagbot")),
        now=T0,
        expires_in=expires_in,
        approvals_required=approvals,
        cooldown=cooldown,
        channel="C1",
        incident_id="i1",
    )


def test_one_approval_runs_once_and_finishes(proposals: Proposals) -> None:
    store = proposals
    proposal = make(store)
    assert store.get(proposal.id) == proposal

    first = store.approve(proposal.id, "U1", now=T0 + 1)
    assert first.verdict is Verdict.RUN and first.proposal is not None
    assert first.proposal.state is State.RUNNING and first.proposal.approvals == ("U1",)
    assert store.approve(proposal.id, "U2", now=T0 + 2).verdict is Verdict.NOT_PROPOSED
    assert store.approve(proposal.id, "U1", now=T0 + 2).verdict is Verdict.NOT_PROPOSED

    assert store.finish(proposal.id, ok=True, detail="scaled 2 -> 4", now=T0 + 10)
    assert not store.finish(proposal.id, ok=False, detail="again", now=T0 + 11)
    done = store.get(proposal.id)
    assert done is not None and (done.state, done.detail, done.finished_at) == (
        State.SUCCEEDED,
        "scaled 2 -> 4",
        T0 + 10,
    )


def test_expired_proposal_is_refused(proposals: Proposals) -> None:
    store = proposals
    proposal = make(store, expires_in=60)
    assert store.approve(proposal.id, "U1", now=T0 + 61).verdict is Verdict.EXPIRED
    assert store.get(proposal.id).state_at(T0 + 61) is State.EXPIRED  # type: ignore[union-attr]
    assert store.approve("no-such-id", "U1", now=T0).verdict is Verdict.MISSING


@pytest.mark.integration
def test_redis_forgets_a_proposal_a_week_after_it_expired(redis_client: redis.Redis) -> None:
    proposal = make(ProposalStore(redis_client), expires_in=60)
    assert 60 + 7 * 86_400 - 5 <= redis_client.ttl(f"lagbot:proposal:{proposal.id}") <= 60 + 7 * 86_400


def test_an_expired_proposal_is_retired_once_and_the_settled_ones_only_leave_the_list(proposals: Proposals) -> None:
    store = proposals
    proposal, ran, denied = make(store, expires_in=60), make(store, expires_in=60), make(store, expires_in=60)
    later = make(store, expires_in=120)
    assert store.approve(ran.id, "U1", now=T0 + 1).verdict is Verdict.RUN
    assert store.deny(denied.id, user="U2", reason="no", now=T0 + 1)
    assert not store.retire(proposal.id, now=T0 + 60)  # at its expiry: not yet
    assert sorted(store.expiring(now=T0 + 60)) == sorted([proposal.id, ran.id, denied.id])
    assert [store.retire(proposal.id, now=T0 + 61) for _ in range(3)] == [True, False, False]
    gone = store.get(proposal.id)
    assert gone is not None and (gone.state, gone.finished_at) == (State.EXPIRED, T0 + 60)
    assert store.approve(proposal.id, "U1", now=T0 + 62).verdict is Verdict.EXPIRED
    assert not store.deny(proposal.id, user="U1", reason="late", now=T0 + 62)
    assert not store.retire(ran.id, now=T0 + 61) and not store.retire(denied.id, now=T0 + 61)
    assert not store.retire("no-such-id", now=T0 + 61)
    assert store.get(ran.id).state is State.RUNNING  # type: ignore[union-attr]
    assert store.get(denied.id).state is State.DENIED  # type: ignore[union-attr]
    assert store.expiring(now=T0 + 10**6) == [later.id]


@pytest.mark.integration
def test_an_expired_proposal_is_retired_once_by_twenty_racing_replicas_then_refused_as_expired(
    redis_server: object, redis_client: redis.Redis
) -> None:
    store = ProposalStore(redis_client)
    proposal = make(store, expires_in=60)
    ran, denied = make(store, expires_in=60), make(store, expires_in=60)
    later = make(store, expires_in=120)
    assert store.approve(ran.id, "U1", now=T0 + 1).verdict is Verdict.RUN
    assert store.deny(denied.id, user="U2", reason="no", now=T0 + 1)
    expiring = "lagbot:proposals:expiring"
    listed = {text(k): v for k, v in redis_client.zrange(expiring, 0, -1, withscores=True)}
    assert listed == {proposal.id: T0 + 60, ran.id: T0 + 60, denied.id: T0 + 60, later.id: T0 + 120}
    assert not store.retire(proposal.id, now=T0 + 60)  # at its expiry: not yet
    assert sorted(store.expiring(now=T0 + 60)) == sorted([proposal.id, ran.id, denied.id])

    url = redis_server.url  # type: ignore[attr-defined]
    retired: list[bool] = []
    barrier = threading.Barrier(20)

    def sweep() -> None:
        own = ProposalStore(redis.Redis.from_url(url))
        barrier.wait()
        retired.append(own.retire(proposal.id, now=T0 + 61))

    threads = [threading.Thread(target=sweep) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(retired) == [False] * 19 + [True]
    gone = store.get(proposal.id)
    assert gone is not None and (gone.state, gone.finished_at) == (State.EXPIRED, T0 + 60)
    assert store.approve(proposal.id, "U1", now=T0 + 62).verdict is Verdict.EXPIRED
    assert not store.deny(proposal.id, user="U1", reason="late", now=T0 + 62)

    # The approved and the denied one only leave the set; the one not yet due stays.
    assert not store.retire(ran.id, now=T0 + 61) and not store.retire(denied.id, now=T0 + 61)
    assert not store.retire("no-such-id", now=T0 + 61)
    assert store.get(ran.id).state is State.RUNNING  # type: ignore[union-attr]
    assert store.get(denied.id).state is State.DENIED  # type: ignore[union-attr]
    assert [text(k) for k in redis_client.zrange(expiring, 0, -1)] == [later.id]


def test_two_approvals_need_two_people_neither_the_requester(proposals: Proposals) -> None:
    store = proposals
    proposal = make(store, approvals=2, by="UREQ")
    assert store.approve(proposal.id, "UREQ", now=T0).verdict is Verdict.REQUESTER
    assert store.approve(proposal.id, "U1", now=T0).verdict is Verdict.RECORDED
    assert store.approve(proposal.id, "U1", now=T0).verdict is Verdict.AGAIN
    second = store.approve(proposal.id, "U2", now=T0)
    assert second.verdict is Verdict.RUN and second.proposal.approvals == ("U1", "U2")  # type: ignore[union-attr]


def test_cooldown_blocks_a_second_run_of_the_same_action(proposals: Proposals) -> None:
    store = proposals
    first, second = make(store), make(store)
    assert store.approve(first.id, "U1", now=T0).verdict is Verdict.RUN
    blocked = store.approve(second.id, "U1", now=T0)
    assert blocked.verdict is Verdict.COOLDOWN and 599_000 <= int(blocked.detail) <= 600_000
    assert blocked.proposal.state is State.PROPOSED and blocked.proposal.approvals == ()  # type: ignore[union-attr]
    assert 599 <= store.in_cooldown("prod", "orders", "scale") <= 600
    other_action = make(store, the_plan=plan(action="restart"))
    busy = store.approve(other_action.id, "U1", now=T0)  # the scale still runs: one action at a time per group
    assert busy.verdict is Verdict.BUSY and busy.detail == first.id
    assert store.finish(first.id, ok=True, detail="scaled", now=T0 + 5)
    assert store.approve(other_action.id, "U1", now=T0 + 6).verdict is Verdict.RUN  # another action, no cooldown


def test_a_run_whose_process_died_is_overdue_after_its_longest_run(proposals: Proposals) -> None:
    store = proposals
    proposal = make(store)
    assert store.approve(proposal.id, "U1", now=T0, longest_run=60).verdict is Verdict.RUN
    assert store.overdue(now=T0 + 59) == []
    assert store.overdue(now=T0 + 61) == [proposal.id]
    other = make(store, the_plan=plan(action="restart"))
    assert store.approve(other.id, "U1", now=T0 + 61).verdict is Verdict.BUSY  # held until it finishes
    assert store.finish(proposal.id, ok=False, detail="interrupted", now=T0 + 61)
    assert store.overdue(now=T0 + 61) == []
    assert not store.finish(proposal.id, ok=True, detail="late result", now=T0 + 90)  # finished once
    assert store.approve(other.id, "U1", now=T0 + 62).verdict is Verdict.RUN  # the group was released


@pytest.mark.integration
def test_redis_holds_a_group_for_the_longest_run_at_most(redis_client: redis.Redis) -> None:
    store = ProposalStore(redis_client)
    proposal = make(store)
    assert store.approve(proposal.id, "U1", now=T0, longest_run=60).verdict is Verdict.RUN
    assert 59_000 <= redis_client.pttl("lagbot:busy:prod:orders") <= 60_000  # the group is held that long at most
    assert store.finish(proposal.id, ok=False, detail="interrupted", now=T0 + 61)
    assert redis_client.exists("lagbot:busy:prod:orders") == 0


def test_deny_only_a_live_proposal(proposals: Proposals) -> None:
    store = proposals
    proposal = make(store)
    assert store.deny(proposal.id, user="U9", reason="we are failing over", now=T0)
    denied = store.get(proposal.id)
    assert denied is not None and (denied.state, denied.denied_by, denied.detail) == (
        State.DENIED,
        "U9",
        "we are failing over",
    )
    assert store.approve(proposal.id, "U1", now=T0).verdict is Verdict.NOT_PROPOSED
    expired = make(store, expires_in=1)
    assert not store.deny(expired.id, user="U9", reason="late", now=T0 + 2)


@pytest.mark.integration
def test_fifty_concurrent_clicks_run_exactly_once(redis_server: object, redis_client: redis.Redis) -> None:
    store = ProposalStore(redis_client)
    proposal = make(store)
    url = redis_server.url  # type: ignore[attr-defined]
    verdicts: list[Verdict] = []
    barrier = threading.Barrier(50)

    def click(user: str) -> None:
        own = ProposalStore(redis.Redis.from_url(url))
        barrier.wait()
        verdicts.append(own.approve(proposal.id, user, now=T0).verdict)

    threads = [threading.Thread(target=click, args=(f"U{i % 7}",)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert verdicts.count(Verdict.RUN) == 1
    assert len(verdicts) == 50 and set(verdicts) == {Verdict.RUN, Verdict.NOT_PROPOSED}


@pytest.mark.integration
def test_unknown_stored_version_is_refused(redis_client: redis.Redis) -> None:
    store = ProposalStore(redis_client)
    proposal = make(store)
    redis_client.hset(f"lagbot:proposal:{proposal.id}", "v", "2")
    with pytest.raises(StoredFormatError, match="version '2'"):
        store.get(proposal.id)


@pytest.mark.integration
def test_audit_per_group_newest_first_and_export_oldest_first(redis_client: redis.Redis) -> None:
    log = AuditLog(redis_client)
    for i, group in enumerate(["orders", "billing", "orders"]):
        log.record(AuditEntry(at=T0 + i, event="proposed", cluster="prod", group=group, user="lagbot", action="scale"))
    assert [e.at for e in log.latest("prod", "orders")] == [T0 + 2, T0]
    assert [e.group for e in log.export()] == ["orders", "billing", "orders"]
    assert [e.at for e in log.export(since=T0 + 1)] == [T0 + 1, T0 + 2]
    assert [e.at for e in log.export(batch=1)] == [T0, T0 + 1, T0 + 2]
    with pytest.raises(StoredFormatError):
        AuditEntry.from_json('{"v": 9}')


@pytest.mark.integration
def test_audit_export_writes_json_lines_and_filters(redis_server: object, redis_client: redis.Redis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys

    log = AuditLog(redis_client)
    log.record(AuditEntry(at=T0, event="proposed", cluster="prod", group="orders", user="lagbot", action="scale"))
    log.record(AuditEntry(at=T0 + 1, event="approved", cluster="prod", group="billing", user="U1", action="scale"))
    config = tmp_path / "lagbot.yaml"
    config.write_text(f"clusters: [{{name: prod, bootstrap_servers: 'k:9092'}}]\nredis_url: {redis_server.url}\n")  # type: ignore[attr-defined]

    def export(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "lagbot.cli.main", "audit", "export", "--config", str(config), *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    everything = export()
    assert everything.returncode == 0, everything.stderr
    lines = [json.loads(line) for line in everything.stdout.splitlines()]
    assert [(e["event"], e["group"], e["v"]) for e in lines] == [("proposed", "orders", 1), ("approved", "billing", 1)]
    assert [json.loads(x)["group"] for x in export("--group", "billing").stdout.splitlines()] == ["billing"]
    bad = export("--since", "yesterday")
    assert bad.returncode == 4 and "--since" in bad.stderr and "Traceback" not in bad.stderr
