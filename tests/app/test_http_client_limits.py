"""Per-client limits on the HTTP edge (lagbot.app.client_limits): a client over its requests in flight or its rate
gets a 429 with a clear body, and other clients are answered as before. The bucket arithmetic is pure (`now` passed
in); the limits are asserted on a real server with requests from distinct loopback addresses."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from lagbot.app.client_limits import Bucket, ClientLimits, take, too_fast, too_many_in_flight
from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.signed import signature
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET = "limits-secret"


def get(port: int, path: str, source: str) -> tuple[int, bytes, str | None]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read(), response.getheader("Retry-After")
    finally:
        connection.close()


def post_command(port: int, text: str, source: str, *, secret: str | None, response_url: str = "") -> tuple[int, bytes]:
    """A slash command POSTed from `source`, signed with `secret` (unsigned when None)."""
    fields = {"command": "/lag", "text": text, "user_id": "U1", "channel_id": "C1", "team_id": "T1"}
    body = urlencode(fields | ({"response_url": response_url} if response_url else {}))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if secret is not None:
        now = int(time.time())
        headers |= {"X-Slack-Request-Timestamp": str(now), "X-Slack-Signature": signature(secret, now, body)}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_bucket_allows_its_burst_then_refills_at_its_rate() -> None:
    bucket: Bucket | None = None
    allowed = []
    for _ in range(4):
        ok, bucket = take(bucket, 100.0, rate=2.0, burst=3)
        allowed.append(ok)
    assert allowed == [True, True, True, False]
    assert bucket == Bucket(0.0, 100.0)
    assert take(bucket, 100.4, rate=2.0, burst=3)[0] is False  # 0.8 of a token
    ok, refilled = take(bucket, 100.5, rate=2.0, burst=3)
    assert (ok, refilled) == (True, Bucket(0.0, 100.5))
    ok, full = take(Bucket(0.0, 0.0), 1_000.0, rate=2.0, burst=3)  # a long quiet spell refills up to the burst only
    assert (ok, full) == (True, Bucket(2.0, 1_000.0))


def test_bad_limits_are_refused_with_what_is_wrong() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        return []

    with pytest.raises(ValueError, match="max_in_flight must be at least 1, not 0"):
        ClientLimits(app, max_in_flight=0)
    with pytest.raises(ValueError, match="rate must be above 0, not -1"):
        ClientLimits(app, rate=-1)


def test_remembered_clients_are_bounded() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [b"ok"]

    limits = ClientLimits(app, rate=1.0, burst=1, max_clients=100, clock=lambda: 0.0)
    for i in range(1_000):
        assert limits({"REMOTE_ADDR": f"10.0.{i // 256}.{i % 256}"}, lambda status, headers: None) == [b"ok"]
    assert limits.clients_kept() == 100
    refused: list[str] = []
    assert limits({"REMOTE_ADDR": "10.0.3.231"}, lambda status, headers: refused.append(status)) == [
        too_fast(1.0, 1).encode()
    ]
    assert refused == ["429 Too Many Requests"]


@pytest.fixture
def slow_health() -> Iterator[tuple[BotHTTPServer, threading.Event, list[int]]]:
    """A server whose readiness check waits until released: requests to /healthz stay in flight."""
    release = threading.Event()
    waiting: list[int] = []

    def health() -> tuple[bool, dict[str, Any]]:
        waiting.append(1)
        return release.wait(30), {"ok": True}

    with BotHTTPServer(
        host="127.0.0.1", port=0, app=None, health=health, metrics=lambda: b"m\n", workers=6, max_per_client=2
    ) as server:
        yield server.start(), release, waiting
        release.set()


def test_a_client_over_its_requests_in_flight_gets_429_and_others_are_answered(
    slow_health: tuple[BotHTTPServer, threading.Event, list[int]],
) -> None:
    server, release, waiting = slow_health
    answers: list[tuple[int, bytes, str | None]] = []
    held = [threading.Thread(target=lambda: answers.append(get(server.port, "/healthz", "127.0.0.5"))) for _ in "ab"]
    for thread in held:
        thread.start()
    wait_for("two requests of one client in flight", lambda: server.limits.in_flight("127.0.0.5") == 2, 10)
    assert get(server.port, "/livez", "127.0.0.5") == (429, too_many_in_flight(2).encode(), "1")
    assert get(server.port, "/livez", "127.0.0.6") == (200, b'{"live": true}', None)
    assert len(waiting) == 2  # the refused request never reached the app
    release.set()
    for thread in held:
        thread.join(timeout=10)
    assert answers == [(200, b'{"ok": true}', None)] * 2
    assert server.limits.in_flight("127.0.0.5") == 0
    assert get(server.port, "/livez", "127.0.0.5") == (200, b'{"live": true}', None)


def test_a_client_over_its_rate_gets_429_and_others_are_answered() -> None:
    with BotHTTPServer(
        host="127.0.0.1", port=0, app=None, health=lambda: (True, {}), metrics=lambda: b"m\n", rate_per_client=0.001
    ) as server:
        server.start()
        burst = server.limits.burst
        assert [get(server.port, "/metrics", "127.0.0.7")[0] for _ in range(burst)] == [200] * burst
        assert get(server.port, "/metrics", "127.0.0.7") == (429, too_fast(0.001, burst).encode(), "1")
        assert get(server.port, "/metrics", "127.0.0.8") == (200, b"m\n", None)


def test_one_client_never_holds_every_thread_whatever_its_limit() -> None:
    release = threading.Event()

    def health() -> tuple[bool, dict[str, Any]]:
        return release.wait(30), {"ok": True}

    with BotHTTPServer(
        host="127.0.0.1", port=0, app=None, health=health, metrics=lambda: b"m\n", workers=3, max_per_client=64
    ) as server:
        server.start()
        answers: list[tuple[int, bytes, str | None]] = []
        held = [
            threading.Thread(target=lambda: answers.append(get(server.port, "/healthz", "127.0.0.9"))) for _ in "ab"
        ]
        for thread in held:
            thread.start()
        wait_for("two of the three threads on one client", lambda: server.limits.in_flight("127.0.0.9") == 2, 10)
        assert get(server.port, "/livez", "127.0.0.9") == (429, too_many_in_flight(2).encode(), "1")
        assert get(server.port, "/livez", "127.0.0.10") == (200, b'{"live": true}', None)  # the thread left over
        release.set()
        for thread in held:
            thread.join(timeout=10)
        assert answers == [(200, b'{"ok": true}', None)] * 2


def test_slack_signed_requests_are_never_refused_per_client_and_others_from_that_address_are() -> None:
    """Behind an ingress every Slack request comes from one address: a burst of clicks must not meet a 429 (Slack
    shows the clicker an error). A signed request passes the client's limits uncounted; an unsigned one from the same
    address at its limit still gets 429."""
    release = threading.Event()

    def health() -> tuple[bool, dict[str, Any]]:
        return release.wait(30), {"ok": True}

    with SlackEmulator(token="xoxb-limits").start() as slack:
        app = build_app(
            client=slack_client("xoxb-limits", slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: Reply(text=f"echo {text}"),
        )
        with BotHTTPServer(
            host="127.0.0.1", port=0, app=app, health=health, metrics=lambda: b"m\n", signing_secret=SECRET,
            workers=3, max_per_client=2, rate_per_client=0.001,
        ) as server:  # fmt: skip
            server.start()
            answers: list[tuple[int, bytes, str | None]] = []
            held = [
                threading.Thread(target=lambda: answers.append(get(server.port, "/healthz", "127.0.0.11")))
                for _ in "ab"
            ]
            for thread in held:
                thread.start()
            wait_for("the client at its limit", lambda: server.limits.in_flight("127.0.0.11") == 2, 10)
            count = server.limits.burst + 5  # past the rate's burst too
            urls = [slack.response_url(f"R{i}") for i in range(count)]
            signed = [
                post_command(server.port, f"g{i}", "127.0.0.11", secret=SECRET, response_url=urls[i])
                for i in range(count)
            ]
            assert signed == [(200, b"")] * count
            # Each command is acknowledged first and answered through its response_url after: wait for the answers.
            wait_for("every command's answer", lambda: all(slack.responses[f"R{i}"] for i in range(count)), 30)
            texts = [[reply["text"] for reply in slack.responses[f"R{i}"]] for i in range(count)]
            assert texts == [[f"echo g{i}"] for i in range(count)]
            assert post_command(server.port, "g", "127.0.0.11", secret=None) == (429, too_many_in_flight(2).encode())
            assert post_command(server.port, "g", "127.0.0.11", secret="not-the-secret") == (
                429,
                too_many_in_flight(2).encode(),
            )
            release.set()
            for thread in held:
                thread.join(timeout=10)
            assert answers == [(200, b'{"ok": true}', None)] * 2
            assert server.limits.in_flight("127.0.0.11") == 0
            assert post_command(server.port, "g", "127.0.0.11", secret=None) == (401, b"missing signature headers\n")
