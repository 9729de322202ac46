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
records the root's ts. A post interrupted between Slack's answer and that transaction (its replica killed, the store
unreachable) is found again in Slack by its metadata before it would be posted a second time
(lagbot.service.sent_marks).

The contract is `Outbox` (which also delivers); lagbot.service.outbox_stores keeps the queues: `RedisOutbox` in
Redis, `MemoryOutbox` in this process.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import JsonValue
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.service import proposal_messages, sent_marks
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
    key: str = ""
    """Unique, given when queued; a message posted for the operation carries it (`identity`) in its metadata, so a post
    interrupted before it was recorded is found, not posted twice (lagbot.service.sent_marks). Empty in what a
    release before it queued: such an operation is posted as it was."""

    @property
    def identity(self) -> str:
        """What a post of this operation carries: its key and kind (a reply and the root replacing a lost thread for
        it are two posts)."""
        return f"{self.key}.{self.op}"

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
"""`proposals`, `is_table`, `table` and `key` are each absent when unset. Version 1 (queued by the release before the
typed message) is upgraded as it is read, so what an older replica queued is still sent; a replica of the release
before `key` reads past it (decoding ignores fields the type does not have)."""


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


@dataclass(frozen=True)
class _Unrecorded:
    """An operation this outbox sent (or Slack refused for good) whose record failed: the store was unreachable."""

    raw: str | bytes
    """The queue's head it was, as stored."""
    operation: Operation
    outcome: str
    ts: str


class Outbox(ABC):
    """Per-incident ordered queues of Slack operations.

    Contract (delivery is this class's, the keeping its subclasses'):
    - `enqueue` appends an operation to its incident's queue, atomically; an edit of the root replaces an edit still
      queued last (only the newest text matters). Queues are delivered oldest first (by their first enqueue).
    - `deliver` sends each queue in order; an operation leaves its queue only once Slack accepted it (or refused it
      for good: then it is a dead letter, the newest `DEAD_KEEP` kept), in one atomic step that also records the
      root's (channel, ts), and only if it is still the queue's head (an edit queued meanwhile is sent next).
    - With a `fence` (lagbot.service.lease.FencedLock), nothing is sent or changed once the lock is no longer held
      with the fence's value; the fence is checked in the same atomic step.
    - A root (channel, ts), its newest body and its table reply are kept `ROOT_KEEP` seconds after its last message.
    - `pending()` counts queued operations; `stalled_for` is measured from the later of the last operation done and
      the oldest queue's first enqueue.
    - An operation sent whose record then failed (the store unreachable in between) is recorded, not sent again, by
      the next delivery of this outbox that finds it still at its queue's head. Any other deliverer (another replica,
      after this one was killed) finds a post begun and not recorded in Slack by its metadata, and records it where
      it landed instead of posting it again (lagbot.service.sent_marks). An edit is sent again: it is idempotent.
    """

    def __init__(self) -> None:
        self._unrecorded: dict[str, _Unrecorded] = {}
        self._unrecorded_lock = threading.Lock()

    def enqueue(self, operation: Operation, *, now: float) -> None:
        """Append an operation to its incident's queue (given its unique `key`); an edit replaces an edit that is still
        queued last."""
        if not operation.key:
            operation = replace(operation, key=uuid.uuid4().hex)
        self._enqueue(operation.incident_id, operation.encode(), is_edit=operation.op == UPDATE_ROOT, now=now)

    @abstractmethod
    def _enqueue(self, incident_id: str, raw: str, *, is_edit: bool, now: float) -> None:
        """Append `raw` to the incident's queue (listing the queue as pending since `now` if it was not), or replace
        the queue's last operation with it when both are edits; atomically."""

    @abstractmethod
    def root(self, incident_id: str) -> tuple[str, str] | None:
        """(channel id, ts) of the incident's root message once Slack has it.

        The channel id is the one Slack answered with, so a channel configured by name (#kafka-alerts)
        works for edits too (chat.update takes ids only).
        """

    def root_ts(self, incident_id: str) -> str | None:
        root = self.root(incident_id)
        return None if root is None else root[1]

    @abstractmethod
    def pending(self) -> int:
        """Operations still queued, over all incidents."""

    @abstractmethod
    def stalled_for(self, *, now: float) -> float:
        """Seconds the outbox has held operations without any being done (0 when empty or moving).

        Measured from the later of the last operation done and the oldest queue's first enqueue, so a
        queue that waits for nothing but its turn does not count as stalled.
        """

    @abstractmethod
    def dead_letters(self) -> list[DeadLetter]:
        """The operations Slack refused for good, newest first. Raises StoredFormatError for one not lagbot's."""

    # -- what delivery needs of the keeping -------------------------------------------------------------------

    @abstractmethod
    def _pending_ids(self) -> list[str]:
        """The incidents with a queue, oldest first enqueue first."""

    @abstractmethod
    def _head(self, incident_id: str) -> str | bytes | None:
        """The raw operation at the head of the incident's queue (None when empty)."""

    @abstractmethod
    def _fenced_out(self, fence: Fence) -> bool:
        """Whether the lock `fence` names is no longer held with its value."""

    @abstractmethod
    def _done(self, incident_id: str, raw: str | bytes, root: str, dead: str, fence: Fence | None) -> int:
        """Atomically: -1 (changing nothing) when `fence` is no longer held; else note progress, and if `raw` is still
        the queue's head pop it, keep `root` ("<channel> <ts>", when not '') as the incident's root (else refresh the
        kept root's expiry) and add `dead` (when not '') to the dead letters: 1; 0 when `raw` is no longer the head."""

    @abstractmethod
    def _forget_if_empty(self, incident_id: str) -> None:
        """Unlist the incident's queue if it is empty (atomically: an operation enqueued meanwhile keeps it listed)."""

    @abstractmethod
    def _put(self, key: str, value: str) -> None:
        """Keep `value` under `key` (lagbot.core.keys) for `ROOT_KEEP` seconds."""

    @abstractmethod
    def _get(self, key: str) -> str | None:
        """What `_put` kept under `key` (None when nothing, or expired)."""

    @abstractmethod
    def _replace_root_record(self, incident_id: str, root: str) -> None:
        """Keep `root` as the incident's root, marked as a replacement, and forget its table reply (its thread is the
        lost one)."""

    @abstractmethod
    def _keep_proposal_message(self, message: proposal_messages.ProposalMessage) -> None:
        """Where a reply with buttons landed, kept for each of its proposals (lagbot.service.proposal_messages)."""

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
        for incident_id in self._pending_ids():
            if deadline is not None and time.monotonic() > deadline:
                break
            stopped_by = self._drain(incident_id, _Round(client, on_error, replaced_root), report, fence)
            if stopped_by in STOP_ALL_ERRORS:
                break  # every further call this round would fail the same way
        report.pending = self.pending()
        return report

    def _drain(self, incident_id: str, sending: _Round, report: DeliveryReport, fence: Fence | None) -> str | None:
        """Send one queue in order. Returns the transient error that stopped it, None when it was emptied."""
        replaced = False  # one replacement root per round: a root lost again waits for the next round
        while (raw := self._head(incident_id)) is not None:
            if fence is not None and self._fenced_out(fence):
                return FENCED
            unrecorded = self._unrecorded_head(incident_id, raw)
            if unrecorded is not None:  # sent before the store failed to record it: recorded now, never sent again
                operation, outcome, ts = unrecorded
            else:
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
            if self._record(incident_id, raw, operation, outcome, ts, fence) == -1:
                return FENCED
            if outcome == "sent":
                report.sent += 1
            else:
                report.dead += 1
        self._forget_if_empty(incident_id)
        return None

    def _unrecorded_head(self, incident_id: str, raw: str | bytes) -> tuple[Operation, str, str] | None:
        """What this outbox sent of `incident_id`'s queue but could not record, if `raw` (the queue's head now) is
        that operation; forgotten when the head is another (another replica recorded it, or the queue changed)."""
        with self._unrecorded_lock:
            kept = self._unrecorded.pop(incident_id, None)
        if kept is None or kept.raw != raw:
            return None
        return kept.operation, kept.outcome, kept.ts

    def _record(
        self, incident_id: str, raw: str | bytes, operation: Operation, outcome: str, ts: str, fence: Fence | None
    ) -> int:
        """Record what happened to the queue's head (`_done`, then what the message leaves kept); -1 when fenced out.
        If the store fails meanwhile, the send is kept in memory so the next delivery records it instead of sending
        it again (Slack has no idempotency key: a second send would be a second message)."""
        try:
            return self._record_done(incident_id, raw, operation, outcome, ts, fence)
        except Exception:
            with self._unrecorded_lock:
                self._unrecorded[incident_id] = _Unrecorded(raw, operation, outcome, ts)
            raise

    def _record_done(
        self, incident_id: str, raw: str | bytes, operation: Operation, outcome: str, ts: str, fence: Fence | None
    ) -> int:
        root = ts if outcome == "sent" and operation.op == POST_ROOT else ""
        dead = "" if outcome == "sent" else _dead_letter(raw, ts)
        if self._done(incident_id, raw, root, dead, fence) == -1:
            return -1
        if outcome == "sent" and operation.op in (POST_ROOT, UPDATE_ROOT):
            self._keep_root_body(operation)
        if outcome == "sent" and operation.op == REPLY and operation.proposals:
            channel, _, where = ts.partition(" ")
            shown = operation.message
            self._keep_proposal_message(proposal_messages.ProposalMessage(
                channel, where, shown.text, shown.blocks, operation.proposals))  # fmt: skip
        if outcome == "sent" and operation.op == REPLY and operation.is_table:
            self._put(redis_keys.outbox_table(incident_id), ts)
        return 1

    def _keep_root_body(self, operation: Operation) -> None:
        """The newest root text and blocks sent: what a replacement root shows if this one is lost."""
        body = ROOT_BODY_CODEC.encode(RootBody(operation.message.text, operation.message.blocks))
        self._put(redis_keys.outbox_root_body(operation.incident_id), body)

    def _edit_table(self, operation: Operation, client: WebClient, on_error: ErrorSeen | None) -> None:
        """Edit the incident's table reply to the table a root edit carries. Cosmetic: a failure is logged and
        counted, and the root edit stands (the next one carries a newer table)."""
        where = self._get(redis_keys.outbox_table(operation.incident_id))
        if operation.table is None or where is None:
            return
        channel, _, ts = where.partition(" ")
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
            stored = self._get(redis_keys.outbox_root_body(operation.incident_id))
            body = ROOT_BODY_CODEC.decode(stored) if stored is not None else RootBody()
            latest = replace(latest, message=body.message)
        root = _with_note(latest, sending)
        outcome, ts = self._send(root, sending)
        if outcome == "sent":
            log.warning("incident root lost: posted a replacement", extra={"incident": operation.incident_id})
            self._replace_root_record(operation.incident_id, ts)
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
        client, on_error = sending.client, sending.on_error
        try:
            if operation.op != UPDATE_ROOT:
                return self._post(operation, sending, channel, None if operation.op == POST_ROOT else root_ts)
            if self._get(redis_keys.outbox_root_replaced(operation.incident_id)) is not None:
                operation = _with_note(operation, sending)  # a replacement root keeps saying so
            message = operation.message
            client.chat_update(channel=channel, ts=root_ts, text=message.text, blocks=message.json_blocks())
            self._edit_table(operation, client, on_error)
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

    def _post(self, operation: Operation, sending: _Round, channel: str, thread_ts: str | None) -> tuple[str, str]:
        """Post the operation's message (a root when `thread_ts` is None), once (lagbot.service.sent_marks.post).
        ('sent', "<channel id> <ts>") or ('transient', error); the post's own errors are raised."""
        message, client = operation.message, sending.client
        if not operation.key:  # queued by a release before marks: posted as it was
            response = client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=message.text, blocks=message.json_blocks()
            )
            return "sent", f"{response.get('channel') or channel} {response.get('ts')}"
        post = sent_marks.Post(operation.incident_id, operation.identity, channel, thread_ts, message)
        kept = sent_marks.Kept(self._get, self._put, redis_keys.outbox_sending(operation.incident_id))
        return sent_marks.post(client, post, kept, on_error=sending.on_error)


def _with_note(operation: Operation, sending: _Round) -> Operation:
    """The operation's root as the root that replaces a lost one says it."""
    return replace(operation, message=sending.replaced_root(operation.message, operation.cluster, operation.group))


def _dead_letter(raw: str | bytes, error: str) -> str:
    return DEAD_LETTER_CODEC.encode(DeadLetter(OPERATION_CODEC.parse(raw), error, time.time()))
