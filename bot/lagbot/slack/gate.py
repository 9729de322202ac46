"""The gate in front of the bolt app: the signature first, then the shape of what Slack sent.

bolt parses a request's body before it verifies its signature, and fails on input Slack never sends (a
`payload` that is not a JSON object, a timestamp that is not an integer): such a request would get a 500 or
no answer at all. The gate refuses it first, with a 4xx and a short reason, so only a signed request of a
shape the app's listeners read ever reaches bolt. Pure functions of the request (and `now`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, parse_qsl

from slack_sdk.signature import Clock, SignatureVerifier

MAX_SKEW = 300
"""Slack's window: a request signed more than five minutes ago (or ahead) is refused."""
OBJECT_FIELDS = ("team", "enterprise", "channel", "container", "message", "event", "view", "user", "authorizations")
"""Fields bolt reads as objects (or, for authorizations, a list of objects) wherever they appear."""


@dataclass(frozen=True)
class Refusal:
    status: int
    reason: str


def verify_signature(headers: Mapping[str, str], body: bytes, secret: str, *, now: float) -> Refusal | None:
    """None when the request is signed with `secret` within Slack's window, else why not (401)."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if not timestamp or not signature:
        return Refusal(401, "missing signature headers")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return Refusal(401, "request timestamp is not an integer")
    if abs(now - int(timestamp)) > MAX_SKEW:
        return Refusal(401, "request timestamp outside the five-minute window")
    if not _signed_by(secret, timestamp, signature, body, now=now):
        return Refusal(401, "invalid signature")
    return None


class _At(Clock):
    """slack_sdk's clock, stopped at the request's `now` (pure: the caller says when it is)."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def _signed_by(secret: str, timestamp: str, signature: str, body: bytes, *, now: float) -> bool:
    """slack_sdk's SignatureVerifier on the request; False where it could not even compare (a body that is not UTF-8,
    a signature that is not ASCII: Slack signs neither)."""
    if not signature.isascii():
        return False
    try:
        return SignatureVerifier(secret, clock=_At(now)).is_valid(body.decode("utf-8"), timestamp, signature)
    except (UnicodeDecodeError, ValueError):
        return False


def check_shape(content_type: str, body: bytes) -> Refusal | None:
    """None when a (signed) body has a shape the app reads: a slash command, an interaction, or an event."""
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        return Refusal(400, "body is not UTF-8")
    if content_type.split(";")[0].strip().lower() == "application/json":
        return _event(decoded)
    try:
        form = parse_qs(decoded, keep_blank_values=True, strict_parsing=False, max_num_fields=200)
    except ValueError:
        return Refusal(400, "body is not a form")
    if "payload" in form:
        return _interaction(form["payload"])
    if "command" in form:
        return None if _single_strings(form) else Refusal(400, "repeated form fields")
    if "ssl_check" in form:
        return None
    return Refusal(400, "neither a command, an interaction nor an event")


def _single_strings(form: Mapping[str, list[str]]) -> bool:
    return all(len(values) == 1 for values in form.values())


def _json_object(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _objects_where_expected(body: dict[str, Any]) -> Refusal | None:
    for name in OBJECT_FIELDS:
        if name not in body:  # present means an object: bolt reads `body.get(name, {})`, so null would break it
            continue
        value = body[name]
        if name == "authorizations":
            if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
                return Refusal(400, "authorizations must be a list of objects")
        elif not isinstance(value, dict):
            return Refusal(400, f"field {name} must be an object")
    return None


def _event(raw: str) -> Refusal | None:
    body = _json_object(raw)
    if body is None:
        return Refusal(400, "body is not a JSON object")
    if (wrong := _objects_where_expected(body)) is not None:
        return wrong
    kind = body.get("type")
    if kind == "url_verification":
        return None if isinstance(body.get("challenge"), str) else Refusal(400, "url_verification without a challenge")
    if kind == "app_rate_limited":  # Slack tells the app it dropped events: bolt acknowledges it
        return None
    if kind != "event_callback":
        return Refusal(400, "unknown event envelope type")
    event = body.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return Refusal(400, "event_callback without an event")
    if not all(isinstance(body.get(k, ""), str) for k in ("team_id", "api_app_id", "event_id")):
        return Refusal(400, "event envelope fields must be strings")
    return None


def _interaction(payloads: list[str]) -> Refusal | None:
    if len(payloads) != 1:
        return Refusal(400, "more than one payload")
    body = _json_object(payloads[0])
    if body is None:
        return Refusal(400, "payload is not a JSON object")
    if (wrong := _objects_where_expected(body)) is not None:
        return wrong
    user = body.get("user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str):
        return Refusal(400, "interaction without a user id")
    if not all(isinstance(body.get(k, ""), str) for k in ("trigger_id", "response_url")):
        return Refusal(400, "interaction fields must be strings")
    kind = body.get("type")
    if kind == "block_actions":
        return _block_actions(body)
    if kind in ("view_submission", "view_closed"):
        return _view(body)
    return Refusal(400, "unsupported interaction type")


def _block_actions(body: dict[str, Any]) -> Refusal | None:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        return Refusal(400, "block_actions without actions")
    for action in actions:
        if not isinstance(action, dict) or not isinstance(action.get("action_id"), str):
            return Refusal(400, "an action without an action_id")
        if not all(isinstance(action.get(k, ""), str) for k in ("value", "block_id", "type")):
            return Refusal(400, "action fields must be strings")
    return None


def _view(body: dict[str, Any]) -> Refusal | None:
    view = body.get("view")
    if not isinstance(view, dict) or not isinstance(view.get("callback_id"), str):
        return Refusal(400, "view interaction without a view callback_id")
    if not all(isinstance(view.get(k, ""), str) for k in ("private_metadata", "id", "hash")):
        return Refusal(400, "view fields must be strings")
    state = view.get("state", {})
    if not isinstance(state, dict) or not isinstance(state.get("values", {}), dict):
        return Refusal(400, "view state must be an object")
    for block in state.get("values", {}).values():
        if not isinstance(block, dict) or not all(isinstance(v, dict) for v in block.values()):
            return Refusal(400, "view state values must be objects")
    return None


def form_body(content_type: str, raw: str) -> dict[str, Any] | None:
    """What a (checked) form body holds, as the app's listeners read it: an interaction's `payload` object, or a
    slash command's fields; None for a JSON body.

    bolt 1.30 (`slack_bolt.request.internals.parse_body`) takes any form body whose text holds the substring
    "payload" for an interaction and reads it as an empty one: `/lag payload-consumer`, a reason mentioning a
    payload, or any command from a channel whose name holds it got a 404. The edge gives bolt this instead.
    """
    if content_type.split(";")[0].strip().lower() == "application/json" or raw.startswith("{"):
        return None
    fields = dict(parse_qsl(raw, keep_blank_values=True))
    if "payload" in fields:
        payload = json.loads(fields["payload"])
        assert isinstance(payload, dict)  # check_shape refused anything else
        return payload
    return fields
