"""A Slack channel as plain text: what the demo prints while the bot talks to the emulator.

`message_lines` renders one message (its blocks when it has any, else its `text`) without Slack's
markup: bold, italics, code, links, mentions and escapes are resolved, emoji shortcodes become
characters, a table block becomes aligned columns, buttons become `[ label ]`. `ChannelWatcher`
turns successive looks at a channel into events: a new root message, a thread reply, an edit whose
rendered text changed (an edit that changes nothing visible is not news).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from lagbot.devkit import wording

_MENTION = re.compile(r"<([@#!])([A-Za-z0-9^_.-]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<([a-z][a-z0-9+.-]*:[^|>\s]*)(?:\|([^>]*))?>")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w])_([^_\n]+)_(?![\w])")
_STRIKE = re.compile(r"(?<![\w~])~([^~\n]+)~(?![\w~])")
_CODE = re.compile(r"`([^`\n]+)`")
_EMOJI = re.compile(r":([a-z0-9_+-]+):")


def plain(mrkdwn: str) -> str:
    """Slack mrkdwn as plain text (markup removed, escapes resolved, known emoji as characters)."""
    text = mrkdwn.replace("```", "")
    text = _MENTION.sub(lambda m: m.group(3) or f"{'@' if m.group(1) == '@' else '#'}{m.group(2)}", text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _CODE.sub(r"\1", text)
    text = _BOLD.sub(r"\1", text)
    text = _ITALIC.sub(r"\1", text)
    text = _STRIKE.sub(r"\1", text)
    text = _EMOJI.sub(lambda m: wording.TERMINAL_EMOJI.get(m.group(1), m.group(0)), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _text_of(obj: Any) -> str:
    if isinstance(obj, dict) and isinstance(obj.get("text"), str):
        return plain(obj["text"]) if obj.get("type") == "mrkdwn" else str(obj["text"])
    return ""


def _cell(cell: Any) -> str:
    if not isinstance(cell, dict):
        return ""
    if cell.get("type") == "rich_text":
        return plain(_rich_text(cell.get("elements") or []))
    return str(cell.get("text", ""))


def _rich_text(elements: Sequence[Any]) -> str:
    parts = []
    for element in elements:
        if isinstance(element, dict):
            parts.append(str(element.get("text", "")) or _rich_text(element.get("elements") or []))
    return "".join(parts)


def table_lines(block: dict[str, Any]) -> list[str]:
    """A table block as aligned columns: right-aligned where its column settings say so."""
    rows = [[_cell(c) for c in row] for row in block.get("rows") or [] if isinstance(row, list)]
    if not rows:
        return []
    columns = max(len(r) for r in rows)
    rows = [r + [""] * (columns - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(columns)]
    settings = list(block.get("column_settings") or [])
    right = [i < len(settings) and isinstance(settings[i], dict) and settings[i].get("align") == "right"
             for i in range(columns)]  # fmt: skip
    return [
        "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)).rstrip()
        for row in rows
    ]


def block_lines(block: Any) -> list[str]:
    """One block as lines of plain text ([] for what shows nothing, such as a divider's neighbours)."""
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind in ("section", "header"):
        text = _text_of(block.get("text"))
        fields = [_text_of(f) for f in block.get("fields") or []]
        return [line for part in (text, *fields) if part for line in part.splitlines()]
    if kind == "context":
        return [" · ".join(t for t in (_text_of(e) for e in block.get("elements") or []) if t)]
    if kind == "table":
        return table_lines(block)
    if kind == "actions":
        labels = [_text_of(e.get("text")) for e in block.get("elements") or [] if isinstance(e, dict)]
        return ["  ".join(f"[ {label} ]" for label in labels if label)]
    if kind == "divider":
        return ["-" * 20]
    if kind == "image":
        return [f"[image: {block.get('alt_text', '')}]"]
    if kind == "rich_text":
        return plain(_rich_text(block.get("elements") or [])).splitlines()
    return []


def message_lines(text: str, blocks: Sequence[Any], files: Sequence[dict[str, Any]] = ()) -> list[str]:
    """A message as plain-text lines: its blocks when it has any (its `text` is then their fallback),
    else its text; attached files by title."""
    lines = [line for block in blocks for line in block_lines(block)]
    if not lines:
        lines = plain(text).splitlines()
    lines += [f"[file: {f.get('title') or f.get('name', '')}]" for f in files]
    return [line.rstrip() for line in lines if line.strip()]


class ChannelMessage(Protocol):
    """What the watcher reads of a message (lagbot.devkit.emulator.Message has it)."""

    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None
    files: list[dict[str, Any]]


EventKind = Literal["posted", "reply", "edited"]


@dataclass(frozen=True)
class ChannelEvent:
    kind: EventKind
    ts: str
    thread_ts: str | None
    lines: tuple[str, ...]
    at: float


class ChannelWatcher:
    """Successive looks at one channel (`history`: every message, replies included, oldest first) as
    events, oldest first. Not thread-safe: one caller polls."""

    def __init__(self, history: Callable[[], Sequence[ChannelMessage]]) -> None:
        self._history = history
        self._shown: dict[str, tuple[str, ...]] = {}

    def poll(self, now: float) -> list[ChannelEvent]:
        events = []
        for message in self._history():
            lines = tuple(message_lines(message.text, message.blocks, message.files))
            before = self._shown.get(message.ts)
            if before == lines:
                continue
            kind: EventKind = "edited" if before is not None else "reply" if message.thread_ts else "posted"
            self._shown[message.ts] = lines
            events.append(ChannelEvent(kind, message.ts, message.thread_ts, lines, now))
        return events
