"""The state epoch in Redis: what it keeps and for how long (the contract itself: test_bot_store_contracts)."""

from __future__ import annotations

import pytest
import redis

from lagbot.core import keys as redis_keys
from lagbot.service.state_epoch import EPOCH_KEY, TOLD_TTL, RedisStateEpoch

pytestmark = pytest.mark.integration


def test_the_marker_has_no_expiry_and_the_channels_told_expire_after_a_day(redis_client: redis.Redis) -> None:
    first, second = RedisStateEpoch(redis_client), RedisStateEpoch(redis_client)
    assert first.observe() is None and second.observe() is None
    assert redis_client.ttl(EPOCH_KEY) == -1  # the marker must outlive everything it marks
    redis_client.flushdb()  # Redis restarted empty
    epoch = second.observe()
    assert epoch is not None and first.observe() == epoch and redis_client.get(EPOCH_KEY) == epoch.encode()
    assert first.claim(epoch, "C1") and not second.claim(epoch, "C1")
    told = redis_keys.state_epoch_told(epoch)
    assert redis_client.smembers(told) == {b"C1"}
    assert 0 < redis_client.ttl(told) <= TOLD_TTL
