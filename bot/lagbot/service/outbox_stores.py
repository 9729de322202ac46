"""Where the outbox's queues are kept (the contract, and delivery, are lagbot.service.outbox's `Outbox`):
`RedisOutbox` in Redis, each atomic step a Lua script; `MemoryOutbox` in this process, each step under one lock.
tests/service/test_bot_store_contracts.py checks both the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.stored import text
from lagbot.service import proposal_messages
from lagbot.service.lease import LeaseBoard
from lagbot.service.outbox import (
    DEAD_KEEP,
    DEAD_LETTER_CODEC,
    ROOT_KEEP,
    UPDATE_ROOT,
    DeadLetter,
    Fence,
    Operation,
    Outbox,
)
from lagbot.service.remediation_stores import MemoryProposalMessages, ProposalMessages, RedisProposalMessages

# KEYS[1] = an incident's queue, KEYS[2] = the pending index, ARGV[1] = the incident id. Atomic, so an
# operation enqueued by another thread while a queue is being emptied is never left unlisted.
_FORGET_IF_EMPTY = """
if redis.call('LLEN', KEYS[1]) == 0 then
    return redis.call('ZREM', KEYS[2], ARGV[1])
end
return 0
"""


# KEYS[1] = queue, KEYS[2] = pending index; ARGV = raw op, '1' if it is an edit, incident id, now.
# An edit replaces an edit still queued last; anything else is appended.
_ENQUEUE = """
if ARGV[2] == '1' then
    local tail = redis.call('LINDEX', KEYS[1], -1)
    if tail and cjson.decode(tail)['op'] == 'update_root' then
        redis.call('LSET', KEYS[1], -1, ARGV[1])
        return 0
    end
end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[3])
return 1
"""
# KEYS[1] = queue, KEYS[2] = the incident's root key, KEYS[3] = dead letters, KEYS[4] = the delivery lock,
# KEYS[5] = the time of the last operation done; ARGV = raw op sent, incident id, "<channel> <ts>" of a root
# just posted or '', dead letter or '', dead letters kept, seconds to keep the root, the lock's value as this
# deliverer holds it ('' when unfenced), now.
# Returns -1 when the lock is no longer ours (the fence: another deliverer took over; change nothing).
# Pops the head only if it is still the operation that was sent (an edit queued meanwhile may have replaced
# it: then the newer edit is sent next instead of being lost).
_DONE = """
if ARGV[7] ~= '' and redis.call('GET', KEYS[4]) ~= ARGV[7] then
    return -1
end
redis.call('SET', KEYS[5], ARGV[8])
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[1] then
    return 0
end
redis.call('LPOP', KEYS[1])
if ARGV[3] ~= '' then
    redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[6])
elseif redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('EXPIRE', KEYS[2], ARGV[6])
end
if ARGV[4] ~= '' then
    redis.call('LPUSH', KEYS[3], ARGV[4])
    redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[5]) - 1)
end
return 1
"""


class RedisOutbox(Outbox):
    """The queues in Redis (lagbot.core.keys), each atomic step a script."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__()
        self._redis = client
        self._messages = RedisProposalMessages(client)
        self._pending = redis_keys.OUTBOX_PENDING
        self._dead = redis_keys.OUTBOX_DEAD
        self._progress = redis_keys.OUTBOX_PROGRESS
        self._forget_script = client.register_script(_FORGET_IF_EMPTY)
        self._enqueue_script = client.register_script(_ENQUEUE)
        self._done_script = client.register_script(_DONE)

    def _enqueue(self, incident_id: str, raw: str, *, is_edit: bool, now: float) -> None:
        self._enqueue_script(
            keys=[redis_keys.outbox_queue(incident_id), self._pending],
            args=[raw, "1" if is_edit else "0", incident_id, now],
        )

    def root(self, incident_id: str) -> tuple[str, str] | None:
        value = self._redis.get(redis_keys.outbox_root(incident_id))
        if value is None:
            return None
        channel, _, ts = text(value).partition(" ")
        return channel, ts

    def pending(self) -> int:
        pipe = self._redis.pipeline(transaction=False)
        for incident_id in self._redis.zrange(self._pending, 0, -1):
            pipe.llen(redis_keys.outbox_queue(text(incident_id)))
        return sum(int(n) for n in pipe.execute())

    def stalled_for(self, *, now: float) -> float:
        oldest = self._redis.zrange(self._pending, 0, 0, withscores=True)
        if not oldest:
            return 0.0
        progress = self._redis.get(self._progress)
        since = max(float(oldest[0][1]), float(progress) if progress is not None else 0.0)
        return max(0.0, now - since)

    def dead_letters(self) -> list[DeadLetter]:
        return [DEAD_LETTER_CODEC.decode(raw) for raw in self._redis.lrange(self._dead, 0, -1)]

    def _pending_ids(self) -> list[str]:
        return [text(i) for i in self._redis.zrange(self._pending, 0, -1)]

    def _head(self, incident_id: str) -> str | bytes | None:
        head: str | bytes | None = self._redis.lindex(redis_keys.outbox_queue(incident_id), 0)
        return head

    def _fenced_out(self, fence: Fence) -> bool:
        return text(self._redis.get(fence.key) or b"") != fence.value

    def _done(self, incident_id: str, raw: str | bytes, root: str, dead: str, fence: Fence | None) -> int:
        key = redis_keys.outbox_queue(incident_id)
        return int(
            self._done_script(
                keys=[
                    key,
                    redis_keys.outbox_root(incident_id),
                    self._dead,
                    fence.key if fence else key,
                    self._progress,
                ],
                args=[raw, incident_id, root, dead, DEAD_KEEP, ROOT_KEEP, fence.value if fence else "", time.time()],
            )
        )

    def _forget_if_empty(self, incident_id: str) -> None:
        self._forget_script(keys=[redis_keys.outbox_queue(incident_id), self._pending], args=[incident_id])

    def _put(self, key: str, value: str) -> None:
        self._redis.set(key, value, ex=ROOT_KEEP)

    def _get(self, key: str) -> str | None:
        value = self._redis.get(key)
        return None if value is None else text(value)

    def _replace_root_record(self, incident_id: str, root: str) -> None:
        self._redis.set(redis_keys.outbox_root(incident_id), root, ex=ROOT_KEEP)
        self._redis.set(redis_keys.outbox_root_replaced(incident_id), "1", ex=ROOT_KEEP)
        self._redis.delete(redis_keys.outbox_table(incident_id))

    def _keep_proposal_message(self, message: proposal_messages.ProposalMessage) -> None:
        self._messages.keep(message, ttl=ROOT_KEEP)


class MemoryOutbox(Outbox):
    """The queues in this process, each operation kept as its stored document (as Redis keeps it); each step holds
    one lock, so it is atomic as Redis's scripts are. Fences are checked on `board` (the memory locks'
    lagbot.service.lease.LeaseBoard); kept roots age on `clock`. Proposal messages are kept in `messages` (the
    remediation side's twin, lagbot.service.remediation_stores: memory_stores shares one), read back with
    `proposal_message`."""

    def __init__(
        self,
        *,
        board: LeaseBoard | None = None,
        clock: Callable[[], float] = time.time,
        messages: ProposalMessages | None = None,
    ) -> None:
        super().__init__()
        self._board = board or LeaseBoard()
        self._clock = clock
        self._messages = messages or MemoryProposalMessages(clock=clock)
        self._queues: dict[str, list[str]] = {}
        self._since: dict[str, float] = {}
        self._dead: list[str] = []
        self._progress: float | None = None
        self._kept: dict[str, tuple[float, str]] = {}
        self._lock = threading.RLock()

    def _enqueue(self, incident_id: str, raw: str, *, is_edit: bool, now: float) -> None:
        with self._lock:
            queue = self._queues.setdefault(incident_id, [])
            if is_edit and queue and Operation.decode(queue[-1]).op == UPDATE_ROOT:
                queue[-1] = raw
                return
            queue.append(raw)
            self._since.setdefault(incident_id, now)

    def root(self, incident_id: str) -> tuple[str, str] | None:
        value = self._get(redis_keys.outbox_root(incident_id))
        if value is None:
            return None
        channel, _, ts = value.partition(" ")
        return channel, ts

    def pending(self) -> int:
        with self._lock:
            return sum(len(self._queues.get(i, ())) for i in self._since)

    def stalled_for(self, *, now: float) -> float:
        with self._lock:
            if not self._since:
                return 0.0
            since = max(min(self._since.values()), self._progress or 0.0)
        return max(0.0, now - since)

    def dead_letters(self) -> list[DeadLetter]:
        with self._lock:
            dead = list(self._dead)
        return [DEAD_LETTER_CODEC.decode(raw) for raw in dead]

    def proposal_message(self, proposal_id: str) -> proposal_messages.ProposalMessage | None:
        """Where the proposal's buttons were posted (None when never, or no longer kept)."""
        return self._messages.find(proposal_id)

    def _pending_ids(self) -> list[str]:
        with self._lock:
            return [i for i, _ in sorted(self._since.items(), key=lambda item: (item[1], item[0]))]

    def _head(self, incident_id: str) -> str | None:
        with self._lock:
            queue = self._queues.get(incident_id)
            return queue[0] if queue else None

    def _fenced_out(self, fence: Fence) -> bool:
        return not self._board.holds(fence.key, fence.value)

    def _done(self, incident_id: str, raw: str | bytes, root: str, dead: str, fence: Fence | None) -> int:
        with self._lock:
            if fence is not None and self._fenced_out(fence):
                return -1
            self._progress = time.time()
            queue = self._queues.get(incident_id, [])
            if not queue or queue[0] != text(raw):
                return 0
            queue.pop(0)
            root_key = redis_keys.outbox_root(incident_id)
            if root:
                self._put(root_key, root)
            elif (kept := self._get(root_key)) is not None:
                self._put(root_key, kept)
            if dead:
                self._dead = [dead, *self._dead][:DEAD_KEEP]
            return 1

    def _forget_if_empty(self, incident_id: str) -> None:
        with self._lock:
            if not self._queues.get(incident_id):
                self._queues.pop(incident_id, None)
                self._since.pop(incident_id, None)

    def _put(self, key: str, value: str) -> None:
        with self._lock:
            self._kept[key] = (self._clock() + ROOT_KEEP, value)

    def _get(self, key: str) -> str | None:
        with self._lock:
            until, value = self._kept.get(key, (0.0, ""))
            if self._clock() >= until:
                self._kept.pop(key, None)
                return None
            return value

    def _replace_root_record(self, incident_id: str, root: str) -> None:
        with self._lock:
            self._put(redis_keys.outbox_root(incident_id), root)
            self._put(redis_keys.outbox_root_replaced(incident_id), "1")
            self._kept.pop(redis_keys.outbox_table(incident_id), None)

    def _keep_proposal_message(self, message: proposal_messages.ProposalMessage) -> None:
        self._messages.keep(message, ttl=ROOT_KEEP)
