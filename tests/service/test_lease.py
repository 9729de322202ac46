"""Leases on a real redis-server: single holder, renew only by the holder, takeover by a second process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
import redis

from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.service.lease import RedisLease

pytestmark = pytest.mark.integration


def test_one_holder_renew_and_release(redis_client: redis.Redis) -> None:
    a = RedisLease(redis_client, "leader", holder="a", ttl=5)
    b = RedisLease(redis_client, "leader", holder="b", ttl=5)
    assert a.acquire() is True
    assert b.acquire() is False and b.renew() is False and b.release() is False
    assert a.current_holder() == "a"
    assert a.acquire() is True  # held already: renewed
    assert 0 < redis_client.pttl(a.key) <= 5_000
    assert a.release() is True and a.current_holder() is None
    assert b.acquire() is True and b.current_holder() == "b"


def test_an_expired_holder_cannot_renew_a_lease_taken_since(redis_client: redis.Redis) -> None:
    a = RedisLease(redis_client, "leader", holder="a", ttl=0.2)
    b = RedisLease(redis_client, "leader", holder="b", ttl=5)
    assert a.acquire()
    time.sleep(0.3)  # a was paused past its expiry
    assert b.acquire()
    assert a.renew() is False and a.release() is False
    assert b.current_holder() == "b"


REPLICA = textwrap.dedent(
    """
    import sys, time, redis
    from lagbot.service.lease import RedisLease
    url, name, ttl, until = sys.argv[1], sys.argv[2], float(sys.argv[3]), time.time() + float(sys.argv[4])
    client = redis.Redis.from_url(url)
    lease = RedisLease(client, "leader", holder=name, ttl=ttl)
    while time.time() < until:  # bounded: the test's own deadline
        if lease.acquire():
            client.rpush("lease-test:log", f"{name} {time.time():.3f}")
        time.sleep(ttl / 3)
    """
)


def replica(url: str, name: str, ttl: float, seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", REPLICA, url, name, str(ttl), str(seconds)])


def leaders(client: redis.Redis) -> list[tuple[str, float]]:
    entries = [raw.decode().split() for raw in client.lrange("lease-test:log", 0, -1)]
    return [(name, float(at)) for name, at in entries]


def test_two_replicas_one_leader_and_takeover_within_two_periods(redis_server: EmbeddedRedis) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    ttl = 1.0
    first = replica(redis_server.url, "first", ttl, 30)
    try:
        deadline = time.time() + 10
        while not leaders(client) and time.time() < deadline:
            time.sleep(0.05)
        second = replica(redis_server.url, "second", ttl, 30)
        try:
            time.sleep(3 * ttl)
            assert {name for name, _ in leaders(client)} == {"first"}  # the second never led meanwhile
            first.kill()
            first.wait(5)
            killed_at = time.time()
            deadline = killed_at + 4 * ttl
            while time.time() < deadline and not any(n == "second" for n, _ in leaders(client)):
                time.sleep(0.05)
            took_over = next(at for n, at in leaders(client) if n == "second")
            assert took_over - killed_at <= 2 * ttl
            # One leader at a time: after the takeover only the second holds it.
            assert all(n == "first" for n, at in leaders(client) if at < took_over)
        finally:
            second.kill()
            second.wait(5)
    finally:
        first.kill()
        first.wait(5)
        client.flushdb()
        client.close()
