"""The contracts of the remediation side's stores (lagbot.service.remediation_stores: offers and refusals, run states,
heartbeats, proposal messages) hold for the Redis store and its memory twin alike: each check runs on both (one
"space" each: a flushed client of the session's redis-server, or one set of twins that every replica of the test
shares, as replicas share one Redis), so a service test may take the twins and need no Redis."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TypeVar

import pytest
import redis

from lagbot.core import keys
from lagbot.core.model import Severity, Status
from lagbot.core.stored import StoredFormatError
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.remediations.base import Progress
from lagbot.service.checkpoints import CheckPoint
from lagbot.service.proposal_messages import ProposalMessage
from lagbot.service.remediation_state import RemediationState, RunState
from lagbot.service.remediation_stores import (
    STATE_KEEP,
    UNRETIRED_FOR,
    Heartbeats,
    MemoryHeartbeats,
    MemoryOfferBook,
    MemoryProposalMessages,
    MemoryRunStates,
    OfferBook,
    ProposalMessages,
    RedisHeartbeats,
    RedisOfferBook,
    RedisProposalMessages,
    RedisRunStates,
    RunStates,
)
from lagbot.service.slack_message import Block
from tests.support.waiting import wait_for

Twin = TypeVar("Twin")
T0 = 1_790_000_000.0
HOSTILE = "inc:*{x}\r\n\x1b[31m"
"""An incident id with what a key, a glob, a terminal and a Lua pattern might take for syntax."""


@dataclass
class Space:
    """One shared keeping: Redis (`client`, a new store per replica) or the twins (one per kind, every replica's)."""

    client: redis.Redis | None
    twins: dict[str, object] = field(default_factory=dict)

    def offers(self) -> OfferBook:
        if self.client is None:
            return self._twin("offers", MemoryOfferBook)
        return RedisOfferBook(self.client)

    def runs(self) -> RunStates:
        return self._twin("runs", MemoryRunStates) if self.client is None else RedisRunStates(self.client)

    def heartbeats(self) -> Heartbeats:
        return self._twin("heartbeats", MemoryHeartbeats) if self.client is None else RedisHeartbeats(self.client)

    def messages(self) -> ProposalMessages:
        if self.client is None:
            return self._twin("messages", MemoryProposalMessages)
        return RedisProposalMessages(self.client)

    def _twin(self, kind: str, make: type[Twin]) -> Twin:
        twin = self.twins.setdefault(kind, make())
        assert isinstance(twin, make)
        return twin


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def space(request: pytest.FixtureRequest) -> Iterator[Space]:
    if request.param == "memory":
        yield Space(None)
        return
    server: EmbeddedRedis = request.getfixturevalue("redis_server")
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    yield Space(client)
    client.flushdb()
    client.close()


def run(proposal_id: str, state: RunState) -> RemediationState:
    return RemediationState(action="scale", state=state, detail="", id=proposal_id)


# -- offers and refusals --------------------------------------------------------------------------------------------


def test_offers_are_listed_per_incident_each_action_once(space: Space) -> None:
    book = space.offers()
    assert book.offered("inc-1") == set()
    book.offer("inc-1", "scale", "p1")
    book.offer("inc-1", "restart", "p2")
    book.offer("inc-1", "scale", "p3")  # offered again on request: still one action
    book.offer(HOSTILE, "drain", "p4")
    assert space.offers().offered("inc-1") == {"scale", "restart"}  # another replica reads the same
    assert book.offered(HOSTILE) == {"drain"} and book.offered("inc-2") == set()


def test_a_refusal_is_claimed_by_exactly_one_of_many_racing_replicas(space: Space) -> None:
    books = [space.offers() for _ in range(8)]
    start = threading.Barrier(len(books))
    won: list[bool] = []

    def claim(book: OfferBook) -> None:
        start.wait(timeout=5)
        won.append(book.claim_refusal(HOSTILE, "restart", "OOMKilled 5 times in 10 min"))

    threads = [threading.Thread(target=claim, args=(book,)) for book in books]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(won) == [False] * 7 + [True]
    assert space.offers().claim_refusal(HOSTILE, "restart", "again") is False  # said once, for good
    assert space.offers().claim_refusal(HOSTILE, "scale", "another action") is True
    assert space.offers().claim_refusal("inc-other", "restart", "another incident") is True
    assert space.offers().offered(HOSTILE) == set()  # a refusal is no offer


@pytest.mark.integration
def test_redis_offers_and_refusals_expire_state_keep_after_their_last_change(redis_client: redis.Redis) -> None:
    book = RedisOfferBook(redis_client)
    book.offer("inc-1", "scale", "p1")
    assert book.claim_refusal("inc-1", "restart", "evidence")
    assert redis_client.hgetall(keys.offered("inc-1")) == {b"scale": b"p1"}
    assert redis_client.hgetall(keys.refused("inc-1")) == {b"restart": b"evidence"}
    for key in (keys.offered("inc-1"), keys.refused("inc-1")):
        assert STATE_KEEP - 5 < redis_client.ttl(key) <= STATE_KEEP


def test_memory_offers_and_refusals_expire_state_keep_after_their_last_change() -> None:
    now = [T0]
    book = MemoryOfferBook(clock=lambda: now[0])
    book.offer("inc-1", "scale", "p1")
    assert book.claim_refusal("inc-1", "restart", "evidence")
    now[0] = T0 + STATE_KEEP - 1
    book.offer("inc-1", "drain", "p2")  # the last change: kept from here
    assert book.offered("inc-1") == {"scale", "drain"}
    assert not book.claim_refusal("inc-1", "restart", "again")
    now[0] = T0 + STATE_KEEP
    assert book.claim_refusal("inc-1", "restart", "long after: said again")
    now[0] = T0 + 2 * STATE_KEEP - 1
    assert book.offered("inc-1") == set()


# -- run states -----------------------------------------------------------------------------------------------------


def test_a_run_state_is_replaced_only_while_it_is_still_what_was_read(space: Space) -> None:
    runs, other = space.runs(), space.runs()
    assert runs.read(HOSTILE) == (None, "")
    assert runs.replace(HOSTILE, run("p1", RunState.RUNNING), "")  # nothing there yet: written
    verifying, seen = runs.read(HOSTILE)
    assert verifying == run("p1", RunState.RUNNING) and seen

    other.write(HOSTILE, run("p2", RunState.RUNNING))  # a new run starts between the check's read and write
    assert verifying is not None
    assert not runs.replace(HOSTILE, replace(verifying, state=RunState.VERIFYING), seen)
    assert runs.read(HOSTILE)[0] == run("p2", RunState.RUNNING)  # the run's state stands
    assert not runs.replace(HOSTILE, run("p3", RunState.RUNNING), "")  # "nothing there" is stale too once something is

    current, token = runs.read(HOSTILE)
    assert current is not None
    assert runs.replace(HOSTILE, replace(current, state=RunState.VERIFYING), token)
    assert other.read(HOSTILE)[0] == run("p2", RunState.VERIFYING)
    assert runs.read("inc-2") == (None, "")


def test_a_run_state_keeps_every_field_through_the_codec(space: Space) -> None:
    point = CheckPoint(T0, 500, Status.STALL, Severity.WARN, 10.0, 2.5, None)
    full = RemediationState(
        "drain", RunState.WORSE, "lag rose", "p9", (point,), Progress.WORSE, executed_at=T0, settle_until=T0 + 90
    )
    space.runs().write("inc-1", full)
    assert space.runs().read("inc-1")[0] == full


@pytest.mark.integration
def test_a_redis_run_state_written_by_an_earlier_lagbot_is_read_and_a_foreign_one_is_refused(
    redis_client: redis.Redis,
) -> None:
    runs = RedisRunStates(redis_client)
    old_point = [
        T0,
        500,
        Status.STALL.name,
        Severity.WARN.label,
        10.0,
        2.5,
        None,
    ]  # format 1: check points as positional lists
    old = {"v": 1, "action": "scale", "state": "verifying", "detail": "", "id": "p1", "checks": [old_point]}
    redis_client.set(keys.remediation("inc-1"), json.dumps(old))
    state, token = runs.read("inc-1")
    assert state is not None and state.state is RunState.VERIFYING and [c.at for c in state.checks] == [T0]
    assert runs.replace("inc-1", replace(state, detail="next"), token)  # the old record is the token: replaced
    assert json.loads(redis_client.get(keys.remediation("inc-1")) or "")["v"] == 2
    assert STATE_KEEP - 5 < redis_client.ttl(keys.remediation("inc-1")) <= STATE_KEEP

    redis_client.set(keys.remediation("inc-2"), '{"v": 99, "action": "scale"}')
    with pytest.raises(StoredFormatError, match="inc-2"):
        runs.read("inc-2")


def test_a_memory_run_state_expires_state_keep_after_its_last_write() -> None:
    now = [T0]
    runs = MemoryRunStates(clock=lambda: now[0])
    runs.write("inc-1", run("p1", RunState.RUNNING))
    now[0] = T0 + STATE_KEEP - 1
    state, token = runs.read("inc-1")
    assert state == run("p1", RunState.RUNNING)
    now[0] = T0 + STATE_KEEP
    assert runs.read("inc-1") == (None, "")
    assert not runs.replace("inc-1", run("p1", RunState.VERIFYING), token)


# -- heartbeats -----------------------------------------------------------------------------------------------------


def test_heartbeats_keep_each_run_s_last_beat_until_forgotten(space: Space) -> None:
    beats, other = space.heartbeats(), space.heartbeats()
    assert beats.last([]) == [] and beats.beating() == []
    beats.beat("p1", T0)
    other.beat("p2", T0 - 5)
    beats.beat("p1", T0 + 10)  # a later beat replaces the earlier
    assert other.last(["p1", "never", "p2"]) == [T0 + 10, None, T0 - 5]
    assert other.beating() == ["p2", "p1"]  # by last beat
    other.forget("p1")
    other.forget("never")  # forgetting what is not there changes nothing
    assert beats.last(["p1", "p2"]) == [None, T0 - 5] and beats.beating() == ["p2"]


# -- proposal messages ----------------------------------------------------------------------------------------------


def message(*proposals: str, url: str = "") -> ProposalMessage:
    blocks = (Block({"type": "section", "text": {"type": "mrkdwn", "text": "*Scale* <!here>"}}),)
    channel, ts = ("", "") if url else ("C1", "1790000000.000100")
    return ProposalMessage(channel, ts, "Scale orders", blocks, proposals, url)


def test_a_proposal_message_is_kept_for_each_proposal_it_carries(space: Space) -> None:
    messages = space.messages()
    assert messages.find("p1") is None
    shown = message("p1", "p2")
    messages.keep(shown, ttl=60)
    assert space.messages().find("p1") == shown and space.messages().find("p2") == shown
    answer = message("p2", url="https://hooks.slack.com/commands/T1/1/x")
    messages.keep(answer, ttl=60)  # shown again as a command's answer: the latest is kept
    assert messages.find("p2") == answer and messages.find("p1") == shown
    assert messages.find("p3") is None


def test_a_proposal_message_is_gone_after_its_ttl(space: Space) -> None:
    messages = space.messages()
    messages.keep(message("p1"), ttl=1)
    messages.keep(message("p2"), ttl=60)
    wait_for("the message kept 1 s to be gone", lambda: messages.find("p1") is None, timeout=5, every=0.1)
    assert messages.find("p2") == message("p2")


def test_an_expired_proposal_awaits_its_message_at_most_unretired_for_and_is_claimed_once(space: Space) -> None:
    messages, other = space.messages(), space.messages()
    assert messages.awaiting(T0) == []
    messages.await_posting("p1", T0)
    messages.await_posting("p2", T0 + 10)
    messages.await_posting("p0", T0 - 10)
    assert other.awaiting(T0 + 10) == ["p0", "p1", "p2"]  # oldest first
    assert other.awaiting(T0 + UNRETIRED_FOR - 5) == ["p1", "p2"]  # p0 waited longer than UNRETIRED_FOR: dropped
    assert messages.claim_awaiting("p1") is True
    assert other.claim_awaiting("p1") is False  # once across replicas
    assert other.claim_awaiting("p0") is False  # dropped: nothing to claim
    assert messages.awaiting(T0 + UNRETIRED_FOR - 5) == ["p2"]
    assert messages.awaiting(T0 + 10 + UNRETIRED_FOR) == []  # p2 waited UNRETIRED_FOR: dropped


@pytest.mark.integration
def test_a_redis_proposal_message_that_lagbot_did_not_write_is_refused(redis_client: redis.Redis) -> None:
    redis_client.set(keys.proposal_message("p1"), '{"v": 1, "channel": 7}')
    with pytest.raises(StoredFormatError, match="p1"):
        RedisProposalMessages(redis_client).find("p1")
