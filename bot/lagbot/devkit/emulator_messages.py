"""The emulator's messages: how it keeps them, the message metadata chat.postMessage takes (checked as Slack
checks it), and the reading methods, as Slack answers them: conversations.history (a channel's messages, newest
first) and conversations.replies (a thread, its parent first), each paged by cursor, filtered by `oldest` and
`latest` (exclusive), with each message's metadata only when `include_all_metadata` is asked."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Message:
    """A message as the emulator keeps it: in a channel, maybe in a thread, maybe edited."""

    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None
    edits: int = 0
    files: list[dict[str, Any]] = field(default_factory=list)
    posted_at: float = field(default_factory=time.time)
    """When it was posted (epoch seconds): what Slack shows beside a message."""
    metadata: dict[str, Any] | None = None
    """The message metadata it was posted with (shown by the reading methods when asked for)."""


DEFAULT_LIMIT = 100
MAX_LIMIT = 1_000
_EVENT_TYPE = re.compile(r"[A-Za-z0-9_]+")


def metadata_problem(value: object) -> str | None:
    """Slack's error for a chat.postMessage `metadata` argument it refuses (None when absent or well formed)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return "invalid_metadata_format"
    if not isinstance(value, dict) or not isinstance(value.get("event_type"), str):
        return "invalid_metadata_format"
    if not _EVENT_TYPE.fullmatch(value["event_type"]) or not isinstance(value.get("event_payload", {}), dict):
        return "invalid_metadata_format"
    return None


def metadata_of(value: object) -> dict[str, Any] | None:
    """The metadata as kept (a JSON string decoded), once `metadata_problem` found nothing wrong."""
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value) if isinstance(value, dict) else None


def message_json(message: Message, user: str, *, with_metadata: bool = False) -> dict[str, Any]:
    """A message as the Web API shows it."""
    shown: dict[str, Any] = {"type": "message", "user": user, "text": message.text, "blocks": message.blocks,
                             "ts": message.ts}  # fmt: skip
    if message.thread_ts is not None:
        shown["thread_ts"] = message.thread_ts
    if with_metadata and message.metadata is not None:
        shown["metadata"] = message.metadata
    return shown


def history(messages: Sequence[Message], args: dict[str, Any], user: str) -> dict[str, Any]:
    """conversations.history: the channel's top-level messages, newest first."""
    channel = str(args.get("channel") or "")
    if not channel:
        return {"ok": False, "error": "channel_not_found"}
    top = [m for m in messages if m.channel == channel and m.thread_ts is None]
    return _paged(list(reversed(_between(top, args))), args, user)


def replies(messages: Sequence[Message], args: dict[str, Any], user: str) -> dict[str, Any]:
    """conversations.replies: the thread's parent, then its replies, oldest first."""
    channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
    if not channel:
        return {"ok": False, "error": "channel_not_found"}
    parent = next((m for m in messages if m.channel == channel and m.ts == ts), None)
    if parent is None:
        return {"ok": False, "error": "thread_not_found"}
    thread = [m for m in messages if m.channel == channel and m.thread_ts == ts]
    return _paged([parent, *_between(thread, args)], args, user)


def _between(messages: list[Message], args: dict[str, Any]) -> list[Message]:
    oldest, latest = float(args.get("oldest") or 0), float(args.get("latest") or "inf")
    return [m for m in messages if oldest < float(m.ts) < latest]


def _paged(messages: list[Message], args: dict[str, Any], user: str) -> dict[str, Any]:
    try:
        limit = min(int(args.get("limit") or DEFAULT_LIMIT), MAX_LIMIT)
        start = int(str(args.get("cursor") or "c0").removeprefix("c"))
    except ValueError:
        return {"ok": False, "error": "invalid_cursor"}
    page = messages[start : start + limit]
    with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
    more = start + limit < len(messages)
    return {
        "ok": True,
        "messages": [message_json(m, user, with_metadata=with_metadata) for m in page],
        "has_more": more,
        "response_metadata": {"next_cursor": f"c{start + limit}" if more else ""},
    }
