"""The outbox: every message lagbot sends to Slack goes through Redis first, so none is lost or duplicated.

Each incident has its own ordered queue of operations (post the root, edit it, reply in its thread).
`deliver` sends every queue's operations in order with slack_sdk's WebClient (whose retry handlers
already wait out 429 + Retry-After and retry connection and 5xx errors a few times). What still fails:
- a transient failure (rate limit, 5xx, connection) stops that queue where it is; the next cycle resumes
  it from the same operation, in order;
- a permanent one (invalid_blocks, channel_not_found, ...) moves that operation to a dead-letter list
  (logged and counted) so one bad message cannot block an incident forever.
Consecutive edits of the same root are coalesced: only the newest text matters.
The incident's first reply (its per-partition table) is kept current: a root edit carries the table as of the
same check, and once the root is edited the table reply is too (cosmetic: its failure is logged and the next root
edit carries a newer table).
When Slack says the root is gone (message_not_found, thread_not_found: deleted, or lost), the outbox posts a
new root that says it replaces a lost one (with the newest root text it sent) and continues the thread there.
An operation is removed from its queue only after Slack accepted it, in the same Redis transaction that
records the root's ts; a crash between Slack's answer and that transaction is the one window in which
an operation can be sent twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import redis
from pydantic import JsonValue
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.stored import text
from lagbot.service import proposal_messages
from lagbot.service.slack_message import Block, SlackMessage

log = logging.getLogger(__name__)

OUTBOX_VERSION = 2
ROOT_BODY_VERSION = 1
DEAD_LETTER_VERSION = 1
POST_ROOT, UPDATE_ROOT, REPLY = "post_root", "update_root", "reply"
LOST_ROOT_ERRORS = {"message_not_found", "thread_not_found"}
TRANSIENT_ERRORS = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
FENCED = "fenced"
"""The delivery lock is no longer this deliverer's: stop, the new holder delivers."""
STOP_ALL_ERRORS = {"ratelimited", "connection_error", FENCED}
"""After these, every further call of this round would fail too: stop and resume next cycle."""
DEAD_KEEP = 1_000
ROOT_KEEP = 8 * 86_400
"""A thread's root (channel, ts) is kept this long after its last message: edits and replies need it."""


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


@dataclass(frozen=True)
class Operation:
    """One Slack call for one incident's thread."""

    op: str
    incident_id: str
    cluster: str
    group: str
    channel: str
    message: SlackMessage
    proposals: tuple[str, ...] = ()
    """The proposals whose buttons a reply carries: once it is sent, where it landed is kept for each
    (lagbot.service.proposal_messages), so an expired proposal's buttons can be retired."""
    is_table: bool = False
    """A reply that is the incident's per-partition table (its first reply): where it landed is kept."""
    table: SlackMessage | None = None
    """A root edit's table as of the same check: the table reply is edited to it."""

    def encode(self) -> str:
        return OPERATION_CODEC.encode(self)

    @classmethod
    def decode(cls, raw: str | bytes) -> Operation:
        """Raises StoredFormatError (lagbot.core.stored) when it is not an operation lagbot wrote."""
        return OPERATION_CODEC.decode(raw)


def _operation_v1(document: dict[str, Any]) -> dict[str, Any]:
    """Version 1 held the message's text and blocks beside the operation's fields, and the table as a
    [text, blocks] pair."""
    upgraded = {k: v for k, v in document.items() if k not in ("text", "blocks", "table")}
    upgraded["message"] = {"text": document["text"], "blocks": document["blocks"]}
    if document.get("table") is not None:
        table_text, table_blocks = document["table"]
        upgraded["table"] = {"text": table_text, "blocks": table_blocks}
    return upgraded


OPERATION_CODEC = codec.register(
    codec.Codec("queued operation", Operation, OUTBOX_VERSION, {1: _operation_v1}, omit_defaults=True)
)
"""`proposals`, `is_table` and `table` are each absent when unset. Version 1 (queued by the release before the
typed message) is upgraded as it is read, so what an older replica queued is still sent."""


@dataclass(frozen=True)
class RootBody:
    """The newest text and blocks sent as an incident's root: what a replacement root shows if it is lost."""

    text: str = ""
    blocks: tuple[Block, ...] = ()

    @property
    def message(self) -> SlackMessage:
        return SlackMessage(self.text, self.blocks)


ROOT_BODY_CODEC = codec.register(
    codec.Codec("kept root message", RootBody, ROOT_BODY_VERSION, {codec.UNVERSIONED: lambda document: document})
)
"""Version 0: the same fields, written before they carried a version."""


@dataclass(frozen=True)
class DeadLetter:
    """An operation Slack refused for good, with Slack's error and when."""

    operation: dict[str, JsonValue]
    """The operation's stored document (lagbot.service.outbox.Operation), as it was queued."""
    error: str
    at: float


DEAD_LETTER_CODEC = codec.register(
    codec.Codec("dead letter", DeadLetter, DEAD_LETTER_VERSION, {codec.UNVERSIONED: lambda document: document})
)
"""Version 0: the same fields, written before they carried a version."""


@dataclass(frozen=True)
class Fence:
    """The delivery lock as this deliverer holds it: every step checks it still does.

    (lagbot.service.lease.FencedLock.)
    """

    key: str
    value: str


@dataclass(frozen=True)
class _Round:
    """What one delivery sends with: the Web API client, who hears of its errors, how a lost root is replaced."""

    client: WebClient
    on_error: ErrorSeen | None
    replaced_root: RootReplaced


@dataclass
class DeliveryReport:
    sent: int = 0
    failed_transient: int = 0
    dead: int = 0
    pending: int = 0


ErrorSeen = Callable[[str, str], None]
"""Called with (Slack method, error code) for every failed call."""
RootReplaced = Callable[[SlackMessage, str, str], SlackMessage]
"""The root that replaces a lost one, made of the newest root message and the incident's cluster and group
(lagbot.service.presenter.Presenter.replaced_root)."""


class Outbox:
    """Per-incident ordered queues of Slack operations, in Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._pending = redis_keys.OUTBOX_PENDING
        self._dead = redis_keys.OUTBOX_DEAD
        self._progress = redis_keys.OUTBOX_PROGRESS
        self._forget_if_empty = client.register_script(_FORGET_IF_EMPTY)
        self._enqueue = client.register_script(_ENQUEUE)
        self._done = client.register_script(_DONE)

    @staticmethod
    def _root_key(incident_id: str) -> str:
        return redis_keys.outbox_root(incident_id)

    @staticmethod
    def _root_body_key(incident_id: str) -> str:
        return redis_keys.outbox_root_body(incident_id)

    @staticmethod
    def _queue(incident_id: str) -> str:
        return redis_keys.outbox_queue(incident_id)

    def enqueue(self, operation: Operation, *, now: float) -> None:
        """Append an operation to its incident's queue; an edit replaces an edit that is still queued last."""
        is_edit = "1" if operation.op == UPDATE_ROOT else "0"
        self._enqueue(
            keys=[self._queue(operation.incident_id), self._pending],
            args=[operation.encode(), is_edit, operation.incident_id, now],
        )

    def root(self, incident_id: str) -> tuple[str, str] | None:
        """(channel id, ts) of the incident's root message once Slack has it.

        The channel id is the one Slack answered with, so a channel configured by name (#kafka-alerts)
        works for edits too (chat.update takes ids only).
        """
        value = self._redis.get(self._root_key(incident_id))
        if value is None:
            return None
        channel, _, ts = text(value).partition(" ")
        return channel, ts

    def root_ts(self, incident_id: str) -> str | None:
        root = self.root(incident_id)
        return None if root is None else root[1]

    def pending(self) -> int:
        """Operations still queued, over all incidents."""
        pipe = self._redis.pipeline(transaction=False)
        for incident_id in self._redis.zrange(self._pending, 0, -1):
            pipe.llen(self._queue(text(incident_id)))
        return sum(int(n) for n in pipe.execute())

    def stalled_for(self, *, now: float) -> float:
        """Seconds the outbox has held operations without any being done (0 when empty or moving).

        Measured from the later of the last operation done and the oldest queue's first enqueue, so a
        queue that waits for nothing but its turn does not count as stalled.
        """
        oldest = self._redis.zrange(self._pending, 0, 0, withscores=True)
        if not oldest:
            return 0.0
        progress = self._redis.get(self._progress)
        since = max(float(oldest[0][1]), float(progress) if progress is not None else 0.0)
        return max(0.0, now - since)

    def dead_letters(self) -> list[DeadLetter]:
        """The operations Slack refused for good, newest first. Raises StoredFormatError for one not lagbot's."""
        return [DEAD_LETTER_CODEC.decode(raw) for raw in self._redis.lrange(self._dead, 0, -1)]

    def deliver(
        self,
        client: WebClient,
        *,
        replaced_root: RootReplaced,
        on_error: ErrorSeen | None = None,
        deadline: float | None = None,
        fence: Fence | None = None,
    ) -> DeliveryReport:
        """Send what is queued, each incident's queue in order, until done or `deadline` (monotonic).

        A lost root is replaced by the message `replaced_root` makes of it. With a `fence`, nothing is sent or
        changed once the lock it names is no longer held with its value.
        """
        report = DeliveryReport()
        for incident_id in [text(i) for i in self._redis.zrange(self._pending, 0, -1)]:
            if deadline is not None and time.monotonic() > deadline:
                break
            stopped_by = self._drain(incident_id, _Round(client, on_error, replaced_root), report, fence)
            if stopped_by in STOP_ALL_ERRORS:
                break  # every further call this round would fail the same way
        report.pending = self.pending()
        return report

    def _drain(self, incident_id: str, sending: _Round, report: DeliveryReport, fence: Fence | None) -> str | None:
        """Send one queue in order. Returns the transient error that stopped it, None when it was emptied."""
        key = self._queue(incident_id)
        replaced = False  # one replacement root per round: a root lost again waits for the next round
        while (raw := self._redis.lindex(key, 0)) is not None:
            if fence is not None and text(self._redis.get(fence.key) or b"") != fence.value:
                return FENCED
            operation = Operation.decode(raw)
            outcome, ts = self._send(operation, sending)
            if outcome == "transient":
                report.failed_transient += 1
                return ts
            if outcome == "dead" and ts in LOST_ROOT_ERRORS and operation.op != POST_ROOT and not replaced:
                replaced = True
                outcome, ts = self._replace_root(operation, sending)
                if outcome == "transient":
                    report.failed_transient += 1
                    return ts
                if outcome == "sent" and operation.op == REPLY:
                    report.sent += 1
                    continue  # the reply itself goes into the new thread next
                operation = replace(operation, op=POST_ROOT)  # the new root shows this edit: done with it
            root = ts if outcome == "sent" and operation.op == POST_ROOT else ""
            dead = "" if outcome == "sent" else _dead_letter(raw, ts)
            done = self._done(
                keys=[key, self._root_key(incident_id), self._dead, fence.key if fence else key, self._progress],
                args=[raw, incident_id, root, dead, DEAD_KEEP, ROOT_KEEP, fence.value if fence else "", time.time()],
            )
            if done == -1:
                return FENCED
            if outcome == "sent" and operation.op in (POST_ROOT, UPDATE_ROOT):
                self._keep_root_body(operation)
            if outcome == "sent" and operation.op == REPLY and operation.proposals:
                self._keep_proposal_message(operation, ts)
            if outcome == "sent" and operation.op == REPLY and operation.is_table:
                self._redis.set(redis_keys.outbox_table(incident_id), ts, ex=ROOT_KEEP)
            if outcome == "sent":
                report.sent += 1
            else:
                report.dead += 1
        self._forget_if_empty(keys=[key, self._pending], args=[incident_id])
        return None

    def _keep_root_body(self, operation: Operation) -> None:
        """The newest root text and blocks sent: what a replacement root shows if this one is lost."""
        body = ROOT_BODY_CODEC.encode(RootBody(operation.message.text, operation.message.blocks))
        self._redis.set(self._root_body_key(operation.incident_id), body, ex=ROOT_KEEP)

    def _keep_proposal_message(self, operation: Operation, where: str) -> None:
        """Where a reply with buttons landed ("<channel id> <ts>"), kept for each of its proposals."""
        channel, _, ts = where.partition(" ")
        shown = operation.message
        message = proposal_messages.ProposalMessage(channel, ts, shown.text, shown.blocks, operation.proposals)
        proposal_messages.keep(self._redis, message, ttl=ROOT_KEEP)

    def _edit_table(self, operation: Operation, client: WebClient, on_error: ErrorSeen | None) -> None:
        """Edit the incident's table reply to the table a root edit carries. Cosmetic: a failure is logged and
        counted, and the root edit stands (the next one carries a newer table)."""
        where = self._redis.get(redis_keys.outbox_table(operation.incident_id))
        if operation.table is None or where is None:
            return
        channel, _, ts = text(where).partition(" ")
        table = operation.table
        try:
            client.chat_update(channel=channel, ts=ts, text=table.text, blocks=table.json_blocks())
        except SlackApiError as exc:
            error = str(exc.response.get("error", "unknown_error"))
            if on_error is not None:
                on_error("chat.update", error)
            log.warning("could not edit the table reply", extra={"incident": operation.incident_id, "error": error})
        except OSError as exc:
            if on_error is not None:
                on_error("chat.update", "connection_error")
            log.warning("slack unreachable", extra={"method": "chat.update", "error": str(exc)})

    def _replace_root(self, operation: Operation, sending: _Round) -> tuple[str, str]:
        """Post a root that replaces a lost one and record it as the incident's root.

        Returns ('sent', "<channel> <ts>") or ('transient' | 'dead', error code).
        """
        latest = replace(operation, op=POST_ROOT)  # an edit: the new root shows it
        if operation.op != UPDATE_ROOT:
            stored = self._redis.get(self._root_body_key(operation.incident_id))
            body = ROOT_BODY_CODEC.decode(stored) if stored is not None else RootBody()
            latest = replace(latest, message=body.message)
        root = _with_note(latest, sending)
        outcome, ts = self._send(root, sending)
        if outcome == "sent":
            log.warning("incident root lost: posted a replacement", extra={"incident": operation.incident_id})
            self._redis.set(self._root_key(operation.incident_id), ts, ex=ROOT_KEEP)
            self._redis.set(redis_keys.outbox_root_replaced(operation.incident_id), "1", ex=ROOT_KEEP)
            self._redis.delete(redis_keys.outbox_table(operation.incident_id))  # its thread is the lost one
            self._keep_root_body(latest)
        return outcome, ts

    def _send(self, operation: Operation, sending: _Round) -> tuple[str, str]:
        """('sent', "<channel id> <ts>" of a root or a reply posted, the root's ts for an edit) or ('transient' |
        'dead', error code)."""
        method = {POST_ROOT: "chat.postMessage", UPDATE_ROOT: "chat.update", REPLY: "chat.postMessage"}[operation.op]
        root = (operation.channel, "") if operation.op == POST_ROOT else self.root(operation.incident_id)
        if root is None:
            return "dead", "no_root_message"
        channel, root_ts = root
        message, client, on_error = operation.message, sending.client, sending.on_error
        try:
            if operation.op == POST_ROOT:
                response = client.chat_postMessage(channel=channel, text=message.text, blocks=message.json_blocks())
                return "sent", f"{response.get('channel') or channel} {response.get('ts')}"
            if operation.op == UPDATE_ROOT:
                if self._redis.exists(redis_keys.outbox_root_replaced(operation.incident_id)):
                    operation = _with_note(operation, sending)  # a replacement root keeps saying so
                message = operation.message
                client.chat_update(channel=channel, ts=root_ts, text=message.text, blocks=message.json_blocks())
                self._edit_table(operation, client, on_error)
            else:
                response = client.chat_postMessage(
                    channel=channel, thread_ts=root_ts, text=message.text, blocks=message.json_blocks()
                )
                return "sent", f"{response.get('channel') or channel} {response.get('ts')}"
        except SlackApiError as exc:
            error = str(exc.response.get("error", "unknown_error"))
            status = exc.response.status_code
            if on_error is not None:
                on_error(method, error)
            transient = status == 429 or status >= 500 or error in TRANSIENT_ERRORS
            log.warning("slack call failed", extra={"method": method, "error": error, "status": status})
            return ("transient" if transient else "dead"), ("ratelimited" if status == 429 else error)
        except OSError as exc:  # connection refused, reset, timeout: Slack may be back next cycle
            if on_error is not None:
                on_error(method, "connection_error")
            log.warning("slack unreachable", extra={"method": method, "error": str(exc)})
            return "transient", "connection_error"
        return "sent", root_ts


def _with_note(operation: Operation, sending: _Round) -> Operation:
    """The operation's root as the root that replaces a lost one says it."""
    return replace(operation, message=sending.replaced_root(operation.message, operation.cluster, operation.group))


def _dead_letter(raw: str | bytes, error: str) -> str:
    return DEAD_LETTER_CODEC.encode(DeadLetter(OPERATION_CODEC.parse(raw), error, time.time()))
