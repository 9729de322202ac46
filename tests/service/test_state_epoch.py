"""Noticing a Redis that came back empty: said once, by one replica, never on a first start."""

from __future__ import annotations

import pytest
import redis

from lagbot.service.state_epoch import EPOCH_KEY, RedisStateEpoch

pytestmark = pytest.mark.integration


def test_a_lost_state_is_noticed_once_by_one_replica_and_a_first_start_is_not_a_loss(redis_client: redis.Redis) -> None:
    first, second = RedisStateEpoch(redis_client), RedisStateEpoch(redis_client)
    assert not first.lost()  # a first start: nothing to lose
    assert not second.lost() and not first.lost()
    redis_client.flushdb()  # Redis restarted empty
    assert [first.lost(), second.lost()] == [True, False]  # the first to notice says it, once
    assert not first.lost() and not second.lost()
    assert redis_client.exists(EPOCH_KEY) == 1
    redis_client.flushdb()
    assert [second.lost(), first.lost()] == [True, False]
