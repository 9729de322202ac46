"""Replays of a signed request are refused: each signature is accepted once.

Slack signs every HTTP request (`X-Slack-Signature`, over its timestamp and body) and bolt refuses a
timestamp more than 5 minutes away from now, so a captured request can be sent again only within that
window. Each signature the app accepts is kept in Redis (`lagbot:seen:<signature>`, SET NX) for longer
than the window, shared by the replicas; a second request with it gets a 409 and runs nothing.

This runs after bolt's own signature check (the app's middleware comes after its built-in ones), so an
unsigned or badly signed request is still a 401 and never reaches Redis. Socket Mode requests carry no
signature (the WebSocket is the authenticated channel) and pass. When Redis cannot answer, the request
is refused with a 503 (fail closed: a replay cannot be ruled out) and Slack may send it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from lagbot.core import keys as redis_keys
from lagbot.slack.wording import commands as wording

log = logging.getLogger(__name__)

SEEN_TTL = 660
"""Seconds a signature is kept: a timestamp bolt accepts is at most 5 minutes from now, either way."""


class ReplayGuard:
    """Signatures seen, in Redis with a TTL."""

    def __init__(self, client: redis.Redis, *, ttl: int = SEEN_TTL) -> None:
        self._redis = client
        self._ttl = ttl

    def first_time(self, signature: str) -> bool:
        """Record `signature`; True when it was not seen before (atomic across replicas)."""
        return bool(self._redis.set(redis_keys.seen(signature), b"1", nx=True, ex=self._ttl))


def refuse_replays(app: App, guard: ReplayGuard) -> None:
    """Add the replay check to `app` (after its signature check)."""

    def no_replays(req: BoltRequest, next: Callable[[], BoltResponse]) -> BoltResponse:
        signature = (req.headers.get("x-slack-signature") or [""])[0]
        if not signature:  # Socket Mode: nothing signed, nothing to replay over HTTP
            return next()
        try:
            first = guard.first_time(signature)
        except redis.RedisError as exc:
            log.warning("replay check unavailable", extra={"error": str(exc)})
            return BoltResponse(status=503, body=wording.replay_check_failed())
        if not first:
            log.warning("replayed request refused", extra={"signature": signature[:16]})
            return BoltResponse(status=409, body=wording.replay_refused())
        return next()

    app.middleware(no_replays)
