"""The contracts of the outbox, storms, leases, the fenced lock, the state epoch and the shown roots hold for the Redis
store and its memory twin alike: each check runs on both (one "space" each: a flushed client of the session's
redis-server, or one `LeaseBoard` and `EpochMarker` the twins share), so a service test may take the twins
(lagbot.service.stores.memory_stores) and need no Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import count

import pytest
import redis

from lagbot.core import keys as redis_keys
from lagbot.core.config import StormConfig
from lagbot.core.model import Severity, Status
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.edits import MemoryShownStore, RedisShownStore, Shown, ShownStore
from lagbot.service.incidents import Incident
from lagbot.service.lease import (
    FencedLock,
    Lease,
    LeaseBoard,
    MemoryFencedLock,
    MemoryLease,
    RedisFencedLock,
    RedisLease,
)
from lagbot.service.outbox import POST_ROOT, REPLY, UPDATE_ROOT, Fence, Operation, Outbox
from lagbot.service.outbox_stores import MemoryOutbox, RedisOutbox
from lagbot.service.slack_api import slack_client
from lagbot.service.slack_message import Block, SlackMessage
from lagbot.service.state_epoch import EpochMarker, LossNews, MemoryStateEpoch, RedisStateEpoch, StateEpoch
from lagbot.service.storms import MemoryStorms, RedisStorms, Show, Storms, StormSummary
from tests.support.slack_messages import deliver, section_message
from tests.support.waiting import wait_for

TOKEN = "xoxb-store-contracts"
T0 = 1_790_000_000.0
STORM = StormConfig(threshold=1, window=60, update_every=5)


@dataclass
class Space:
    """One shared keeping: Redis (`client`) or the twins' board and marker."""

    client: redis.Redis | None
    board: LeaseBoard
    marker: EpochMarker

    def lease(self, holder: str, ttl: float) -> Lease:
        if self.client is None:
            return MemoryLease(self.board, "leader", holder=holder, ttl=ttl)
        return RedisLease(self.client, "leader", holder=holder, ttl=ttl)

    def lock(self, holder: str, ttl: float) -> FencedLock:
        if self.client is None:
            return MemoryFencedLock(self.board, redis_keys.OUTBOX_LOCK, holder=holder, ttl=ttl)
        return RedisFencedLock(self.client, redis_keys.OUTBOX_LOCK, holder=holder, ttl=ttl)

    def epoch(self) -> StateEpoch:
        return MemoryStateEpoch(self.marker) if self.client is None else RedisStateEpoch(self.client)

    def lose_state(self) -> None:
        """Redis restarted empty (the twins: their marker forgotten)."""
        if self.client is None:
            self.marker.forget()
        else:
            self.client.flushdb()

    def outbox(self) -> Outbox:
        return MemoryOutbox(board=self.board) if self.client is None else RedisOutbox(self.client)

    def storms(self) -> Storms:
        ids = (f"storm-{i}" for i in count(1))
        if self.client is None:
            return MemoryStorms(STORM, new_id=lambda: next(ids), clock=lambda: T0)
        return RedisStorms(self.client, STORM, new_id=lambda: next(ids))

    def shown(self) -> ShownStore:
        return MemoryShownStore() if self.client is None else RedisShownStore(self.client)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def space(request: pytest.FixtureRequest) -> Iterator[Space]:
    if request.param == "memory":
        yield Space(None, LeaseBoard(), EpochMarker())
        return
    server: EmbeddedRedis = request.getfixturevalue("redis_server")
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    yield Space(client, LeaseBoard(), EpochMarker())
    client.flushdb()
    client.close()


# -- leases -----------------------------------------------------------------------------------------------------------


def test_a_lease_has_one_holder_renewed_and_released_only_by_it(space: Space) -> None:
    a, b = space.lease("a", 5), space.lease("b", 5)
    assert a.acquire() is True
    assert b.acquire() is False and b.renew() is False and b.release() is False
    assert a.current_holder() == b.current_holder() == "a"
    assert a.acquire() is True  # held already: renewed
    assert a.release() is True and a.current_holder() is None
    assert b.acquire() is True and b.current_holder() == "b"


def test_an_expired_lease_is_free_and_its_old_holder_cannot_renew_it(space: Space) -> None:
    a, b = space.lease("a", 0.2), space.lease("b", 5)
    assert a.acquire()
    wait_for("the lease to expire", lambda: a.current_holder() is None, timeout=2)  # a was paused past its expiry
    assert b.acquire()
    assert a.renew() is False and a.release() is False
    assert b.current_holder() == "b"


def test_a_lease_needs_a_positive_ttl(space: Space) -> None:
    with pytest.raises(ValueError, match="a lease needs a positive ttl"):
        space.lease("a", 0)


def test_the_fenced_lock_is_exclusive_its_tokens_count_up_and_it_expires(space: Space) -> None:
    first, second = space.lock("first", 0.3), space.lock("second", 0.3)
    held = first.acquire()
    assert held == "first 1" and second.acquire() is None  # never waits
    assert first.holds(held) and not second.holds("second 1")
    assert first.release(held) and not first.holds(held)
    again = second.acquire()
    assert again == "second 2"  # a token is never reused, also after a release
    assert not first.renew(held) and not first.release(held)  # the old value no longer counts
    taken = wait_for("the lock to expire", first.acquire, timeout=2)  # nobody renewed it
    assert taken == "first 3" and not second.holds(again) and not second.renew(again)


def test_the_fenced_lock_is_kept_while_it_is_renewed(space: Space) -> None:
    # A ttl well above a loaded machine's scheduling delays: at 0.3 s a renewing thread starved for three of its
    # 0.1 s periods (load 9 on 2 cores, a cold Go build beside the suite) let the lock lapse, which says nothing of
    # the renewal. Three ttls of work and more, as before.
    lock = space.lock("alive", 1.5)
    value = lock.acquire()
    assert value is not None
    with lock.renewing(value):
        until = time.monotonic() + 4.6  # over three ttls
        wait_for("three lock periods of work", lambda: time.monotonic() >= until, timeout=8, every=0.1)
        assert lock.holds(value) and space.lock("other", 1.5).acquire() is None


# -- the state epoch --------------------------------------------------------------------------------------------------


def test_a_lost_state_is_seen_by_every_replica_that_saw_it_before_and_a_first_start_is_not_a_loss(
    space: Space,
) -> None:
    first, second = space.epoch(), space.epoch()
    assert first.observe() is None  # a first start: nothing to lose
    assert second.observe() is None and first.observe() is None
    space.lose_state()
    lost = first.observe()  # the first to look writes the next epoch; the other reads the same one
    assert lost is not None and second.observe() == lost
    assert first.observe() is None and second.observe() is None  # once per loss
    late = space.epoch()
    assert late.observe() is None  # a replica that starts after the loss saw nothing before it
    space.lose_state()
    assert second.observe() not in (None, lost) and first.observe() not in (None, lost)


def test_each_channel_is_claimed_once_per_loss_whichever_replica_claims(space: Space) -> None:
    first, second = space.epoch(), space.epoch()
    assert first.observe() is None and second.observe() is None
    space.lose_state()
    epoch = first.observe()
    assert epoch is not None and second.observe() == epoch
    assert [first.claim(epoch, "C1"), second.claim(epoch, "C1"), first.claim(epoch, "C1")] == [True, False, False]
    assert second.claim(epoch, "C2") and not first.claim(epoch, "C2")
    space.lose_state()
    again = second.observe()
    assert again is not None and first.claim(again, "C1")  # the next loss is told again


def test_a_replica_tells_a_loss_at_each_clusters_first_check_and_only_within_the_horizon(space: Space) -> None:
    leader = LossNews(space.epoch(), ["prod", "dr"], horizon=60.0)
    follower = LossNews(space.epoch(), ["prod", "dr"], horizon=60.0)
    assert not leader.look(now=0.0) and not follower.look(now=0.0)
    space.lose_state()
    assert leader.look(now=100.0) and follower.look(now=101.0)
    assert leader.to_tell("prod", ["C1", "C2", "C1"], now=102.0) == ["C1", "C2"]
    assert leader.to_tell("prod", ["C1", "C3"], now=103.0) == []  # the first check since is past
    assert not leader.look(now=104.0)
    # The leader changes before `dr` was checked: the follower tells what nobody told, at its first check of each.
    assert follower.to_tell("dr", ["C2", "C4"], now=110.0) == ["C4"]
    assert follower.to_tell("prod", ["C3"], now=111.0) == ["C3"]
    assert follower.to_tell("prod", ["C5"], now=112.0) == []
    # A replica that leads long after it learned of a loss says nothing of it.
    space.lose_state()
    assert follower.look(now=200.0) and leader.look(now=200.0)
    assert follower.to_tell("prod", ["C1"], now=261.0) == []
    assert leader.to_tell("prod", ["C1"], now=260.0) == ["C1"]


# -- what each root showed --------------------------------------------------------------------------------------------


def test_the_shown_store_gives_back_what_was_last_put(space: Space) -> None:
    shown = space.shown()
    assert shown.get("i1") is None
    shown.put("i1", Shown("story", "digest-1", T0))
    shown.put("i1", Shown("story 2", "digest-2", T0 + 1))
    shown.put("i2", Shown("other", "digest-3", T0))
    assert shown.get("i1") == Shown("story 2", "digest-2", T0 + 1)
    assert shown.get("i2") == Shown("other", "digest-3", T0)
    assert shown.get("i3") is None


# -- storms -----------------------------------------------------------------------------------------------------------


def incident(number: int, **changes: object) -> Incident:
    base = Incident(id=f"inc-{number}", cluster="prod", group=f"orders-{number}", channel="C1", opened_at=T0,
                    severity=Severity.CRITICAL, peak_severity=Severity.CRITICAL, peak_lag=1_000 * number,
                    primary_cause=None, status=Status.STALL, updated_at=T0)  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_storms_fold_past_the_threshold_show_one_summary_and_finish_once_resolved(space: Space) -> None:
    storms = space.storms()
    assert storms.admit("C1", now=T0) is None  # up to the threshold: posted as usual
    folded = [storms.admit("C1", now=T0 + 1), storms.admit("C1", now=T0 + 2)]
    assert folded == ["storm-1", "storm-1"] and storms.live() == ["storm-1"]
    assert storms.admit("C2", now=T0 + 2) is None  # another channel is its own
    for number in (1, 2):
        storms.fold(None, incident(number, storm="storm-1"))
    assert sorted(m.group for m in storms.members("storm-1")) == ["orders-1", "orders-2"]

    shown: list[tuple[Show, StormSummary]] = []
    assert storms.due(lambda show, summary: shown.append((show, summary)), now=T0 + 3) == 1
    [(show, summary)] = shown
    assert show is Show.POST and summary.storm.folded == 2 and summary.still_open == 2
    assert [m.group for m in summary.members] == ["orders-2", "orders-1"]  # worst first
    assert storms.due(lambda *_: shown.append(_), now=T0 + 4) == 0  # nothing changed

    for number in (1, 2):
        storms.fold(incident(number, storm="storm-1"), incident(number, storm="storm-1", resolved_at=T0 + 100))
    assert storms.due(lambda show, summary: shown.append((show, summary)), now=T0 + 200) == 1  # the window is over
    show, summary = shown[-1]
    assert show is Show.UPDATE and summary.storm.ended_at == T0 + 200 and summary.still_open == 0
    assert storms.live() == []  # ended, shown as it is, everything resolved: finished
    assert storms.opens("C1").storm_id is None and storms.get("storm-1") == summary.storm
    assert storms.get("storm-9") is None and storms.members("storm-9") == []


# -- the outbox -------------------------------------------------------------------------------------------------------


def op(kind: str, text: str, incident_id: str = "i1", channel: str = "C1") -> Operation:
    return Operation(kind, incident_id, "prod", "orders", channel, section_message(text))


def test_the_outbox_delivers_each_queue_in_order_coalescing_edits(space: Space, slack: SlackEmulator) -> None:
    outbox = space.outbox()
    for operation in [op(POST_ROOT, "root"), op(REPLY, "table"), op(UPDATE_ROOT, "edit 1"), op(UPDATE_ROOT, "edit 2")]:
        outbox.enqueue(operation, now=T0)
    outbox.enqueue(op(POST_ROOT, "other root", incident_id="i2"), now=T0 + 1)
    assert outbox.pending() == 4 and outbox.root("i1") is None
    assert outbox.stalled_for(now=T0 + 10) == 10.0

    report = deliver(outbox, slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.failed_transient, report.dead, report.pending) == (4, 0, 0, 0)
    root, other = slack.channel("C1")
    assert (root.text, root.edits, other.text) == ("edit 2", 1, "other root")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["table"]
    assert [(c.method, c.args["text"]) for c in slack.calls] == [
        ("chat.postMessage", "root"),
        ("chat.postMessage", "table"),
        ("chat.update", "edit 2"),
        ("chat.postMessage", "other root"),
    ]
    assert outbox.root("i1") == ("C1", root.ts) and outbox.root_ts("i2") == other.ts
    assert outbox.pending() == 0 and outbox.stalled_for(now=T0 + 100) == 0.0


def test_the_outbox_keeps_what_slack_refused_for_good_as_dead_letters(space: Space, slack: SlackEmulator) -> None:
    outbox = space.outbox()
    outbox.enqueue(op(REPLY, "orphan reply", incident_id="i9"), now=T0)  # no root: can never be sent
    bad = SlackMessage("bad", (Block({"type": "no-such-block"}),))
    outbox.enqueue(Operation(POST_ROOT, "i1", "prod", "orders", "C1", bad), now=T0)

    report = deliver(outbox, slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.dead, report.pending) == (0, 2, 0)
    # the operation's stored document as queued (format 2: its message's text under "message")
    assert [(d.error, d.operation["message"]["text"]) for d in outbox.dead_letters()] == [
        ("no_root_message", "orphan reply"),
        ("invalid_blocks", "bad"),
    ]  # newest first: queues enqueued at the same time go in order of their incident ids
    assert slack.channel("C1") == []


def test_a_fenced_delivery_sends_nothing_once_its_lock_is_lost(space: Space, slack: SlackEmulator) -> None:
    outbox, lock = space.outbox(), space.lock("deliverer", 5)
    outbox.enqueue(op(POST_ROOT, "root"), now=T0)
    value = lock.acquire()
    assert value is not None and lock.release(value)  # lost before it delivered (another took over)
    taken = space.lock("other", 5).acquire()
    assert taken is not None

    report = deliver(outbox, slack_client(TOKEN, slack.api_url), fence=Fence(lock.key, value))

    assert (report.sent, report.pending) == (0, 1) and slack.calls == []
    report = deliver(outbox, slack_client(TOKEN, slack.api_url), fence=Fence(lock.key, taken))
    assert (report.sent, report.pending) == (1, 0)
    assert [m.text for m in slack.channel("C1")] == ["root"]
