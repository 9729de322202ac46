"""A post that may have landed already: found in Slack by its metadata, not posted twice.

Slack takes no idempotency key, and the outbox records a post only after Slack answered it. A replica killed in
between (or a store that failed in between) leaves the operation at its queue's head, and whoever delivers that queue
next would post it a second time. So:
- every message the outbox posts carries its operation's identity in its message metadata (`metadata`: the
  `lagbot_message` event, with the incident and the identity);
- just before posting, the outbox marks the identity as begun (`Marks`, kept per incident in the store);
- an operation found marked when it is about to be posted was begun by an attempt that never recorded its end:
  `find` reads the thread (a reply) or the channel since the mark (a root) for a message with that identity.
  Found: it is recorded as sent where it landed. Not there: it is posted.
Reading needs the `channels:history` scope (`groups:history` for a private channel). When Slack refuses the read for
good (a missing scope, a root channel configured by name, which conversations.history does not take), the post is
sent again, as it was before marks, and the log says so. Lookups happen only for an interrupted post, so they cost
nothing while Slack and the replicas are well.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lagbot.core import codec
from lagbot.core.stored import StoredFormatError
from lagbot.service.slack_message import SlackMessage

log = logging.getLogger(__name__)

EVENT_TYPE = "lagbot_message"
"""The metadata event every message the outbox posts carries."""
MARKS_VERSION = 1
MARKS_KEPT = 4
"""Marks kept per incident: a post and the replacement root a lost thread needs, with room to spare."""
PAGE = 200
PAGES = 10
"""At most this many pages of `PAGE` messages are read for one post (a thread or a channel since the mark)."""
CLOCK_MARGIN = 300.0
"""A root is looked for in the channel from this many seconds before its mark (this host's clock against Slack's)."""
TRANSIENT_READ = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}


@dataclass(frozen=True)
class Mark:
    """A post begun: its identity (lagbot.service.outbox.Operation.identity) and when (epoch seconds)."""

    identity: str
    at: float


@dataclass(frozen=True)
class Marks:
    """An incident's newest posts begun, newest last."""

    marks: tuple[Mark, ...] = ()

    def of(self, identity: str) -> Mark | None:
        return next((mark for mark in self.marks if mark.identity == identity), None)

    def begun(self, identity: str, *, now: float) -> Marks:
        """These marks with `identity` begun at `now` (an earlier mark of it dropped), the newest `MARKS_KEPT` kept."""
        kept = tuple(mark for mark in self.marks if mark.identity != identity)
        return Marks((*kept, Mark(identity, now))[-MARKS_KEPT:])

    def encode(self) -> str:
        return MARKS_CODEC.encode(self)

    @classmethod
    def decode(cls, raw: str | bytes) -> Marks:
        return MARKS_CODEC.decode(raw)


MARKS_CODEC = codec.register(codec.Codec("posts begun", Marks, MARKS_VERSION))


@dataclass(frozen=True)
class Post:
    """One message to post: for an incident, under its operation's identity, in `channel` (in the thread of
    `thread_ts`, or as a root when None)."""

    incident_id: str
    identity: str
    channel: str
    thread_ts: str | None
    message: SlackMessage


@dataclass(frozen=True)
class Kept:
    """Where an incident's marks are kept: the outbox's own get and put (kept as long as its roots), and the key."""

    get: Callable[[str], str | None]
    put: Callable[[str, str], None]
    key: str

    def marks(self) -> Marks:
        """The marks kept; none when what is kept is not lagbot's (logged: the post is then sent as before marks,
        never blocked)."""
        stored = self.get(self.key)
        if stored is None:
            return Marks()
        try:
            return Marks.decode(stored)
        except StoredFormatError as exc:
            log.warning("unreadable marks of posts begun: ignored", extra={"key": self.key, "error": str(exc)})
            return Marks()


def post(client: WebClient, post: Post, kept: Kept, *, on_error: Callable[[str, str], None] | None) -> tuple[str, str]:
    """Post once: ('sent', "<channel id> <ts>") where it landed (now, or by an interrupted attempt found in Slack), or
    ('transient', error) when Slack could not be read for it now. The post's own errors (SlackApiError, OSError) are
    raised. `on_error` is told a failed read (Slack method, error)."""
    marks = kept.marks()
    begun = marks.of(post.identity)
    if begun is not None:
        found = find(client, post.channel, post.thread_ts, begun)
        extra = {"incident": post.incident_id, "post": post.identity, "error": found.error}
        if found.where:
            log.warning("an interrupted post had landed: recorded, not posted again", extra=extra)
            return "sent", found.where
        if found.error and on_error is not None:
            on_error("conversations.history" if post.thread_ts is None else "conversations.replies", found.error)
        if found.transient:
            return "transient", found.error
        if found.error:
            log.warning("could not look for an interrupted post in Slack: posting it again", extra=extra)
    kept.put(kept.key, marks.begun(post.identity, now=time.time()).encode())
    message = post.message
    response = client.chat_postMessage(
        channel=post.channel,
        thread_ts=post.thread_ts,
        text=message.text,
        blocks=message.json_blocks(),
        metadata=metadata(post.incident_id, post.identity),
    )
    return "sent", f"{response.get('channel') or post.channel} {response.get('ts')}"


def metadata(incident_id: str, identity: str) -> dict[str, Any]:
    """The message metadata a post carries (Slack's `metadata` argument of chat.postMessage)."""
    return {"event_type": EVENT_TYPE, "event_payload": {"incident": incident_id, "post": identity}}


@dataclass(frozen=True)
class Found:
    """What reading Slack for a begun post found: `where` ("<channel id> <ts>") when it landed; else `error` when the
    read failed, `transient` saying whether the next attempt may read it (else the post is sent again)."""

    where: str = ""
    error: str = ""
    transient: bool = False


def find(client: WebClient, channel: str, thread_ts: str | None, mark: Mark) -> Found:
    """The message posted for `mark` in `channel`: in the thread of `thread_ts` (a reply), or among the channel's
    messages since the mark (a root). An empty Found when it is not there."""
    cursor = ""
    try:
        for _ in range(PAGES):
            page = _page(client, channel, thread_ts, mark, cursor)
            for message in page.get("messages") or []:
                if _is_post(message, mark.identity):
                    return Found(where=f"{channel} {message['ts']}")
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not page.get("has_more") or not cursor:
                return Found()
    except SlackApiError as exc:
        error, status = str(exc.response.get("error", "unknown_error")), exc.response.status_code
        return Found(error=error, transient=status == 429 or status >= 500 or error in TRANSIENT_READ)
    except OSError:
        return Found(error="connection_error", transient=True)
    log.warning("a begun post was not found in the pages read: posting it", extra={"post": mark.identity})
    return Found()


def _page(client: WebClient, channel: str, thread_ts: str | None, mark: Mark, cursor: str) -> Any:
    """One page of the thread's messages (conversations.replies) or the channel's since the mark
    (conversations.history), with their metadata."""
    paging: dict[str, Any] = {"limit": PAGE, "include_all_metadata": True}
    if cursor:
        paging["cursor"] = cursor
    if thread_ts is not None:
        return client.conversations_replies(channel=channel, ts=thread_ts, **paging)
    return client.conversations_history(channel=channel, oldest=f"{mark.at - CLOCK_MARGIN:.6f}", **paging)


def _is_post(message: Any, identity: str) -> bool:
    if not isinstance(message, dict) or not isinstance(message.get("ts"), str):
        return False
    meta = message.get("metadata")
    if not isinstance(meta, dict) or meta.get("event_type") != EVENT_TYPE:
        return False
    payload = meta.get("event_payload")
    return isinstance(payload, dict) and payload.get("post") == identity
