"""What the remediation side keeps between checks and across replicas, each behind a contract with a Redis store and a
memory twin: the actions offered and refused in each incident's thread (`OfferBook`), each incident's latest
remediation (`RunStates`), the heartbeats of running remediations (`Heartbeats`) and where each proposal's buttons
were shown (`ProposalMessages`). With the proposals (lagbot.service.approvals `Proposals`) and what runs left to undo
(lagbot.service.restores `RestoreQueue`) they make `RemediationStores`, a part of the bot's stores
(lagbot.service.stores): a bot on memory stores proposes, runs and verifies remediations with no Redis.

Stored documents go through the one codec (lagbot.core.codec): the remediation state (RemediationState's) and the
proposal messages (ProposalMessage's). The offered and refused hashes keep plain strings (a proposal id, a refusal's
evidence text) under each action's name. Keys are lagbot.core.keys's. tests/service/test_remediation_store_contracts.py
checks each twin against its Redis store the same way.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import redis

from lagbot.core import keys
from lagbot.core.stored import text
from lagbot.service.approvals import Proposals
from lagbot.service.proposal_messages import ProposalMessage
from lagbot.service.remediation_state import RemediationState
from lagbot.service.restores import RestoreQueue

STATE_KEEP = 8 * 86_400
"""An incident's remediation state, offers and refusals stay readable this long after their last change."""
UNRETIRED_FOR = 3_600.0
"""Seconds an expired proposal whose message was not posted yet (its reply still queued) waits for it: the outbox
gives up on a message long before."""

Clock = Callable[[], float]


# -- the actions offered and refused in an incident's thread ------------------------------------------------------


class OfferBook(ABC):
    """Per incident: the actions offered in its thread, and those the live system refused, each said there once.

    Contract: `offer(incident, action, proposal)` records that `action` was offered as `proposal` (a later offer of
    the same action replaces it); `offered(incident)` is the set of actions offered. `claim_refusal(incident, action,
    reason)` is atomic across replicas: True for exactly one caller per (incident, action), who then says it; every
    later claim is False. Both are kept STATE_KEEP seconds after the incident's last offer, or last claim.
    """

    @abstractmethod
    def offer(self, incident_id: str, action: str, proposal_id: str) -> None: ...

    @abstractmethod
    def offered(self, incident_id: str) -> set[str]: ...

    @abstractmethod
    def claim_refusal(self, incident_id: str, action: str, reason: str) -> bool: ...


class RedisOfferBook(OfferBook):
    """Two hashes per incident: keys.offered (action -> proposal id), keys.refused (action -> reason, HSETNX)."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def offer(self, incident_id: str, action: str, proposal_id: str) -> None:
        key = keys.offered(incident_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(key, action, proposal_id)
        pipe.expire(key, STATE_KEEP)
        pipe.execute()

    def offered(self, incident_id: str) -> set[str]:
        return {text(action) for action in self._redis.hkeys(keys.offered(incident_id))}

    def claim_refusal(self, incident_id: str, action: str, reason: str) -> bool:
        key = keys.refused(incident_id)
        if not self._redis.hsetnx(key, action, reason):
            return False
        self._redis.expire(key, STATE_KEEP)
        return True


class MemoryOfferBook(OfferBook):
    """The hashes in this process, aging on `clock`; each step under one lock."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._offered: dict[str, tuple[float, dict[str, str]]] = {}
        self._refused: dict[str, tuple[float, dict[str, str]]] = {}

    def _live(self, table: dict[str, tuple[float, dict[str, str]]], incident_id: str) -> dict[str, str]:
        until, kept = table.get(incident_id, (0.0, {}))
        return kept if self._clock() < until else {}

    def offer(self, incident_id: str, action: str, proposal_id: str) -> None:
        with self._lock:
            kept = {**self._live(self._offered, incident_id), action: proposal_id}
            self._offered[incident_id] = (self._clock() + STATE_KEEP, kept)

    def offered(self, incident_id: str) -> set[str]:
        with self._lock:
            return set(self._live(self._offered, incident_id))

    def claim_refusal(self, incident_id: str, action: str, reason: str) -> bool:
        with self._lock:
            kept = self._live(self._refused, incident_id)
            if action in kept:
                return False
            self._refused[incident_id] = (self._clock() + STATE_KEEP, {**kept, action: reason})
            return True


# -- each incident's latest remediation -----------------------------------------------------------------------------


class RunStates(ABC):
    """Each incident's latest remediation state (RemediationState), written whole, kept STATE_KEEP seconds after its
    last write.

    Contract: `read(incident)` is (the state or None, a token; "" when none). `write(incident, state)` replaces it
    unconditionally (a run, at its start and end). `replace(incident, state, token)` writes only if the stored state
    is still the one `read` returned with `token`, atomically (True), else changes nothing (False): the check loop's
    verification never clobbers a run that started or ended meanwhile.

    Raises (read): StoredFormatError when the stored state is not one lagbot wrote.
    """

    @abstractmethod
    def read(self, incident_id: str) -> tuple[RemediationState | None, str]: ...

    @abstractmethod
    def write(self, incident_id: str, state: RemediationState) -> None: ...

    @abstractmethod
    def replace(self, incident_id: str, state: RemediationState, token: str) -> bool: ...


def _state_of(incident_id: str, raw: str | bytes) -> RemediationState:
    return RemediationState.from_json(f"stored remediation state {keys.remediation(incident_id)}", raw)


_REPLACE_IF_UNCHANGED = """
local current = redis.call('GET', KEYS[1])
if (current or '') ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 1
"""


class RedisRunStates(RunStates):
    """One string per incident (keys.remediation): the state's versioned JSON; its token is that JSON."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._replace = client.register_script(_REPLACE_IF_UNCHANGED)

    def read(self, incident_id: str) -> tuple[RemediationState | None, str]:
        raw = self._redis.get(keys.remediation(incident_id))
        if raw is None:
            return None, ""
        return _state_of(incident_id, raw), text(raw)

    def write(self, incident_id: str, state: RemediationState) -> None:
        self._redis.set(keys.remediation(incident_id), state.to_json(), ex=STATE_KEEP)

    def replace(self, incident_id: str, state: RemediationState, token: str) -> bool:
        args: list[str | int] = [token, state.to_json(), STATE_KEEP]
        return bool(self._replace(keys=[keys.remediation(incident_id)], args=args))


class MemoryRunStates(RunStates):
    """The states' JSON in this process (as Redis keeps them), aging on `clock`; each step under one lock."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, str]] = {}

    def _raw(self, incident_id: str) -> str:
        until, raw = self._kept.get(incident_id, (0.0, ""))
        return raw if self._clock() < until else ""

    def read(self, incident_id: str) -> tuple[RemediationState | None, str]:
        with self._lock:
            raw = self._raw(incident_id)
        return (None, "") if not raw else (_state_of(incident_id, raw), raw)

    def write(self, incident_id: str, state: RemediationState) -> None:
        with self._lock:
            self._kept[incident_id] = (self._clock() + STATE_KEEP, state.to_json())

    def replace(self, incident_id: str, state: RemediationState, token: str) -> bool:
        with self._lock:
            if self._raw(incident_id) != token:
                return False
            self._kept[incident_id] = (self._clock() + STATE_KEEP, state.to_json())
            return True


# -- heartbeats of running remediations -----------------------------------------------------------------------------


class Heartbeats(ABC):
    """The last beat of each running remediation (lagbot.service.heartbeat), shared by every replica.

    Contract: `beat(proposal, at)` records `at` as the run's last beat (a later beat replaces it). `last(ids)` is each
    id's last beat in order, None for one that never beat (or was forgotten). `forget(proposal)` drops it;
    `beating()` lists every run with a beat, sorted by its last beat.
    """

    @abstractmethod
    def beat(self, proposal_id: str, at: float) -> None: ...

    @abstractmethod
    def last(self, proposal_ids: Iterable[str]) -> list[float | None]: ...

    @abstractmethod
    def forget(self, proposal_id: str) -> None: ...

    @abstractmethod
    def beating(self) -> list[str]: ...


class RedisHeartbeats(Heartbeats):
    """A sorted set (keys.PROPOSALS_HEARTBEAT): proposal id -> its last beat."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def beat(self, proposal_id: str, at: float) -> None:
        self._redis.zadd(keys.PROPOSALS_HEARTBEAT, {proposal_id: at})

    def last(self, proposal_ids: Iterable[str]) -> list[float | None]:
        ids = list(proposal_ids)
        if not ids:
            return []
        return [None if beat is None else float(beat) for beat in self._redis.zmscore(keys.PROPOSALS_HEARTBEAT, ids)]

    def forget(self, proposal_id: str) -> None:
        self._redis.zrem(keys.PROPOSALS_HEARTBEAT, proposal_id)

    def beating(self) -> list[str]:
        return [text(i) for i in self._redis.zrange(keys.PROPOSALS_HEARTBEAT, 0, -1)]


class MemoryHeartbeats(Heartbeats):
    """The beats in this process, under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beats: dict[str, float] = {}

    def beat(self, proposal_id: str, at: float) -> None:
        with self._lock:
            self._beats[proposal_id] = at

    def last(self, proposal_ids: Iterable[str]) -> list[float | None]:
        with self._lock:
            return [self._beats.get(i) for i in proposal_ids]

    def forget(self, proposal_id: str) -> None:
        with self._lock:
            self._beats.pop(proposal_id, None)

    def beating(self) -> list[str]:
        with self._lock:
            return [i for i, _ in sorted(self._beats.items(), key=lambda item: (item[1], item[0]))]


# -- where each proposal's buttons were shown ------------------------------------------------------------------------


class ProposalMessages(ABC):
    """Where each proposal's buttons were shown (lagbot.service.proposal_messages), and the expired proposals whose
    message was not posted yet.

    Contract: `keep(message, ttl)` records `message` for each proposal it carries, for `ttl` seconds, all at once;
    `find(proposal)` is the latest kept for it (None when none, or expired). `await_posting(proposal, now)` lists an
    expired proposal whose message is still queued; `awaiting(now)` drops those listed more than UNRETIRED_FOR before
    `now` and returns the rest, oldest first; `claim_awaiting(proposal)` takes one off the list, atomically: True for
    exactly one caller (who retires its message).

    Raises (find): StoredFormatError when the stored message is not one lagbot wrote.
    """

    @abstractmethod
    def keep(self, message: ProposalMessage, *, ttl: float) -> None: ...

    @abstractmethod
    def find(self, proposal_id: str) -> ProposalMessage | None: ...

    @abstractmethod
    def await_posting(self, proposal_id: str, now: float) -> None: ...

    @abstractmethod
    def awaiting(self, now: float) -> list[str]: ...

    @abstractmethod
    def claim_awaiting(self, proposal_id: str) -> bool: ...


def _message_of(proposal_id: str, raw: str | bytes) -> ProposalMessage:
    return ProposalMessage.decode(f"stored message of proposal {proposal_id}", raw)


class RedisProposalMessages(ProposalMessages):
    """One string per proposal (keys.proposal_message), and a sorted set (keys.PROPOSALS_UNRETIRED): proposal id ->
    when it expired."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def keep(self, message: ProposalMessage, *, ttl: float) -> None:
        raw = message.encode()
        pipe = self._redis.pipeline(transaction=True)
        for proposal_id in message.proposals:
            pipe.set(keys.proposal_message(proposal_id), raw, ex=max(1, int(ttl)))
        pipe.execute()

    def find(self, proposal_id: str) -> ProposalMessage | None:
        raw = self._redis.get(keys.proposal_message(proposal_id))
        return None if raw is None else _message_of(proposal_id, raw)

    def await_posting(self, proposal_id: str, now: float) -> None:
        self._redis.zadd(keys.PROPOSALS_UNRETIRED, {proposal_id: now})

    def awaiting(self, now: float) -> list[str]:
        self._redis.zremrangebyscore(keys.PROPOSALS_UNRETIRED, "-inf", now - UNRETIRED_FOR)
        return [text(raw) for raw in self._redis.zrange(keys.PROPOSALS_UNRETIRED, 0, -1)]

    def claim_awaiting(self, proposal_id: str) -> bool:
        return bool(self._redis.zrem(keys.PROPOSALS_UNRETIRED, proposal_id))


class MemoryProposalMessages(ProposalMessages):
    """The messages' documents in this process (as Redis keeps them), aging on `clock`; each step under one lock."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, str]] = {}
        self._waiting: dict[str, float] = {}

    def keep(self, message: ProposalMessage, *, ttl: float) -> None:
        raw = message.encode()
        with self._lock:
            until = self._clock() + max(1, int(ttl))
            for proposal_id in message.proposals:
                self._kept[proposal_id] = (until, raw)

    def find(self, proposal_id: str) -> ProposalMessage | None:
        with self._lock:
            until, raw = self._kept.get(proposal_id, (0.0, ""))
        return _message_of(proposal_id, raw) if raw and self._clock() < until else None

    def await_posting(self, proposal_id: str, now: float) -> None:
        with self._lock:
            self._waiting[proposal_id] = now

    def awaiting(self, now: float) -> list[str]:
        with self._lock:
            self._waiting = {i: at for i, at in self._waiting.items() if at > now - UNRETIRED_FOR}
            return [i for i, _ in sorted(self._waiting.items(), key=lambda item: (item[1], item[0]))]

    def claim_awaiting(self, proposal_id: str) -> bool:
        with self._lock:
            return self._waiting.pop(proposal_id, None) is not None


# -- all of them ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemediationStores:
    """Every store of the remediation side of one bot replica (lagbot.service.remediate's `Remediator`)."""

    proposals: Proposals
    restores: RestoreQueue
    offers: OfferBook
    runs: RunStates
    heartbeats: Heartbeats
    messages: ProposalMessages
