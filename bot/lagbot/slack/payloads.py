"""What Slack sends a listener, read into typed inputs: one small pure reader per kind.

bolt hands each listener the part of the request its kind is about (`command` for a slash command, `action` for a
block action, `view` for a view submission); these readers turn that part into the app's own types, once. What Slack
sends is input like any other: a field missing or of another type reads as empty (a user '' is refused by the
approvals, a proposal id '' is unknown), never as an exception.

The deny modal's private_metadata carries the clicked message (a submission carries none of its own): `deny_metadata`
writes it, `clicked_message` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

MAX_PRIVATE_METADATA = 3_000
"""Slack's limit on a view's private_metadata, in characters."""

Json = Mapping[str, object]
"""One JSON object of what Slack sent, read with `_object`, `_text` and `_first` only."""


@dataclass(frozen=True)
class SlashCommand:
    """A slash command: its text after the command, who typed it and where."""

    text: str
    user: str
    channel: str


@dataclass(frozen=True)
class ShownMessage:
    """The message whose button was clicked, as the click carries it: where it is and what it shows."""

    ts: str
    """'' when the click names none."""
    text: str
    blocks: tuple[Json, ...]
    """Its blocks as Slack's JSON (those that are objects)."""
    channel: str
    """The container's channel id ('' when none)."""
    ephemeral: bool
    response_url: str
    """The click's response_url ('' when none): an ephemeral message is edited through it."""


@dataclass(frozen=True)
class Click:
    """A click of an approve or deny button: the button's value is only a proposal id."""

    proposal_id: str
    user: str
    trigger_id: str
    """'' when none (a modal cannot be opened without it)."""
    response_url: str
    shown: ShownMessage | None
    """None when the click carries no message."""


@dataclass(frozen=True)
class Denial:
    """A submitted deny modal: the reason (stripped; '' when missing) and the click it answers."""

    reason: str
    user: str
    proposal_id: str
    shown: ShownMessage | None
    """The clicked message, when it fitted in the modal's private_metadata."""


def read_command(command: Json) -> SlashCommand:
    """A slash command's fields (form fields: strings; any other value reads as '')."""
    return SlashCommand(_text(command, "text"), _text(command, "user_id"), _text(command, "channel_id"))


def read_click(action: Json, body: Json) -> Click:
    """A button click: `action` the clicked button, `body` the request (who clicked, on which message)."""
    return Click(
        proposal_id=_text(action, "value"),
        user=user_of(body),
        trigger_id=_text(body, "trigger_id"),
        response_url=_text(body, "response_url"),
        shown=read_shown(body),
    )


def read_denial(view: Json, body: Json) -> Denial:
    """A deny modal's submission: `view` the submitted modal, `body` the request (who submitted it)."""
    clicked = clicked_message(view.get("private_metadata"))
    return Denial(
        reason=reason(view).strip(), user=user_of(body), proposal_id=action_value(clicked), shown=read_shown(clicked)
    )


def read_shown(body: Json) -> ShownMessage | None:
    """The clicked message of a click's body (or of `clicked_message`'s): None when it carries none."""
    message = _object(body, "message")
    if message is None:
        return None
    container = _object(body, "container") or {}
    blocks = message.get("blocks")
    return ShownMessage(
        ts=_text(message, "ts"),
        text=_text(message, "text"),
        blocks=tuple(_objects(blocks)),
        channel=_text(container, "channel_id"),
        ephemeral=bool(container.get("is_ephemeral")),
        response_url=_text(body, "response_url"),
    )


def reason(view: object) -> str:
    """The reason typed in the deny modal ('' when missing, whatever shape the submission has)."""
    value = view
    for key in ("state", "values", "reason", "text", "value"):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) else ""


def user_of(body: Json) -> str:
    """Who clicked or submitted: the request's user id ('' when none). bolt's `context.user_id` is not used: for a
    request without a user it falls back to the message's author."""
    user = _object(body, "user")
    return "" if user is None else _text(user, "id")


def action_value(body: Json) -> str:
    """The first action's value of a click's body ('' when none)."""
    first = _first(body.get("actions"))
    return "" if first is None else _text(first, "value")


def deny_metadata(proposal_id: str, body: Json) -> str:
    """The deny modal's private_metadata: the proposal id and, when they fit Slack's 3,000 characters, the clicked
    message (its channel, ts, text and blocks, and the click's response_url), which the denial then retires: the
    modal's submission carries no message of its own. JSON, read back by `clicked_message`."""
    message = _object(body, "message")
    container = _object(body, "container") or {}
    whole = {
        "actions": [{"value": proposal_id}],
        "container": {k: container[k] for k in ("channel_id", "is_ephemeral") if k in container},
        "response_url": body.get("response_url"),
        "message": None
        if message is None
        else {"ts": message.get("ts"), "text": message.get("text"), "blocks": message.get("blocks") or []},
    }
    text = json.dumps(whole, separators=(",", ":"))
    if message is not None and len(text) <= MAX_PRIVATE_METADATA:
        return text
    return json.dumps({"actions": [{"value": proposal_id}]}, separators=(",", ":"))


def clicked_message(metadata: object) -> dict[str, object]:
    """`deny_metadata` read back: a click's body ({actions, container, message, response_url}); a bare proposal id
    (a modal opened before this form) gives a body with that id alone."""
    text = str(metadata or "")
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("actions"), list) or not found["actions"]:
        return {"actions": [{"value": text}]}
    if not isinstance(found.get("message"), dict):
        found.pop("message", None)
    return found


def _object(body: Json, key: str) -> Json | None:
    value = body.get(key)
    return value if isinstance(value, Mapping) else None


def _objects(value: object) -> list[Json]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _first(value: object) -> Json | None:
    return value[0] if isinstance(value, list) and value and isinstance(value[0], Mapping) else None


def _text(body: Json, key: str) -> str:
    value = body.get(key)
    return value if isinstance(value, str) else ""
