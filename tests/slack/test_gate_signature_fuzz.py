"""The edge checks Slack's signature with slack_sdk's SignatureVerifier (no HMAC written by hand): what it accepts and
what it refuses, with the reason, whatever bytes come in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lagbot.devkit.signed import signature
from lagbot.slack.gate import Refusal, verify_signature

SECRET = "gate-secret"
NOW = 1_790_000_000


def headers(ts: int | str, sig: str) -> dict[str, str]:
    return {"x-slack-request-timestamp": str(ts), "x-slack-signature": sig}


def test_a_signed_body_passes_and_any_change_is_refused() -> None:
    body = "command=%2Flag&text=payload-consumer"
    assert verify_signature(headers(NOW, signature(SECRET, NOW, body)), body.encode(), SECRET, now=NOW) is None
    assert (
        verify_signature(headers(NOW - 299, signature(SECRET, NOW - 299, body)), body.encode(), SECRET, now=NOW) is None
    )
    invalid = Refusal(401, "invalid signature")
    assert (
        verify_signature(headers(NOW, signature(SECRET, NOW, body)), body.encode() + b"x", SECRET, now=NOW) == invalid
    )
    assert verify_signature(headers(NOW, signature("other", NOW, body)), body.encode(), SECRET, now=NOW) == invalid
    late = Refusal(401, "request timestamp outside the five-minute window")
    assert (
        verify_signature(headers(NOW - 301, signature(SECRET, NOW - 301, body)), body.encode(), SECRET, now=NOW) == late
    )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.text(max_size=80))
def test_fuzz_no_body_or_signature_raises_and_only_the_right_one_passes(body: bytes, sig: str) -> None:
    found = verify_signature(headers(NOW, sig), body, SECRET, now=NOW)
    if not sig:
        assert found == Refusal(401, "missing signature headers")
    else:
        assert found == Refusal(401, "invalid signature")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert verify_signature(headers(NOW, signature(SECRET, NOW, text)), body, SECRET, now=NOW) is None
