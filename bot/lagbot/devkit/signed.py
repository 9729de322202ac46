"""Requests signed as Slack signs them (`X-Slack-Signature` over the timestamp and the body): how the tests and
the demos talk to the app, as Slack does."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from slack_sdk.signature import SignatureVerifier


def signature(secret: str, timestamp: int, body: str) -> str:
    """Slack's request signature: v0=HMAC-SHA256(secret, "v0:<timestamp>:<body>"), hex."""
    signed = SignatureVerifier(secret).generate_signature(timestamp=str(timestamp), body=body)
    assert signed is not None  # None only without a timestamp
    return signed


def post_signed(
    url: str,
    body: str,
    secret: str | None,
    *,
    timestamp: int | None = None,
    content_type: str = "application/x-www-form-urlencoded",
) -> tuple[int, str]:
    """POST `body` to `url` with Slack's signature headers (none when `secret` is None). (status, body)."""
    ts = int(time.time()) if timestamp is None else timestamp
    headers = {"Content-Type": content_type}
    if secret is not None:
        headers |= {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": signature(secret, ts, body)}
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
