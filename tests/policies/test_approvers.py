"""Approvers: a rule's users and its user groups' members, looked up in the Slack emulator and cached
(in memory and in a real Redis), with expiry driven by the `now` passed in."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from slack_sdk import WebClient

from lagbot.core.stored import StoredFormatError
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.approvers import (
    ApproverDirectory,
    ApproversUnavailable,
    MemoryUsergroupCache,
    RedisUsergroupCache,
    UsergroupCache,
)
from lagbot.policies.model import Rule

pytestmark = pytest.mark.integration

TOKEN = "xoxb-lagbot-test"
T0 = 1_800_000_000.0
RULE = Rule.model_validate(
    {"name": "payments", "approvers": {"users": ["U0LEAD"], "usergroups": ["S0ONCALL", "S0SRE"]}}
)


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN, usergroups={"S0ONCALL": ["U1", "U2"], "S0SRE": ["U3"]}).start() as running:
        yield running


def web(slack: SlackEmulator) -> WebClient:
    return WebClient(token=TOKEN, base_url=slack.api_url)


@pytest.fixture(params=["memory", "redis"])
def cache(request: pytest.FixtureRequest) -> UsergroupCache:
    if request.param == "memory":
        return MemoryUsergroupCache()
    client: redis.Redis = request.getfixturevalue("redis_client")
    return RedisUsergroupCache(client)


def lookups(slack: SlackEmulator) -> list[str]:
    return [c.args["usergroup"] for c in slack.calls_to("usergroups.users.list")]


def test_users_and_usergroup_members_may_approve(slack: SlackEmulator, cache: UsergroupCache) -> None:
    directory = ApproverDirectory(web(slack), cache=cache, ttl=300)
    assert directory.is_approver(RULE, "U0LEAD", T0)
    assert lookups(slack) == []  # a listed user needs no lookup
    assert directory.is_approver(RULE, "U2", T0)
    assert lookups(slack) == ["S0ONCALL"]  # found in the first group: the second is not asked
    assert directory.is_approver(RULE, "U3", T0)
    assert not directory.is_approver(RULE, "U9", T0)
    assert lookups(slack) == ["S0ONCALL", "S0SRE"]  # both cached since
    assert directory.approvers(RULE, now=T0) == {"U0LEAD", "U1", "U2", "U3"}
    assert lookups(slack) == ["S0ONCALL", "S0SRE"]


def test_cache_expires_and_sees_membership_changes(slack: SlackEmulator, cache: UsergroupCache) -> None:
    directory = ApproverDirectory(web(slack), cache=cache, ttl=300)
    assert not directory.is_approver(RULE, "U7", T0)
    slack.usergroups["S0ONCALL"] = ["U7"]  # U7 joins the on-call group in Slack
    assert not directory.is_approver(RULE, "U7", T0 + 299)  # still the cached answer
    assert directory.is_approver(RULE, "U7", T0 + 300)  # expired: looked up again
    assert not directory.is_approver(RULE, "U1", T0 + 301)  # U1 left; S0SRE (expired too) is asked again
    assert lookups(slack) == ["S0ONCALL", "S0SRE", "S0ONCALL", "S0SRE"]


def test_redis_cache_is_shared_and_versioned(slack: SlackEmulator, redis_client: redis.Redis) -> None:
    first = ApproverDirectory(web(slack), cache=RedisUsergroupCache(redis_client), ttl=60)
    second = ApproverDirectory(web(slack), cache=RedisUsergroupCache(redis_client), ttl=60)  # another replica
    assert first.members("S0ONCALL", now=T0) == {"U1", "U2"}
    assert second.members("S0ONCALL", now=T0 + 1) == {"U1", "U2"}
    assert lookups(slack) == ["S0ONCALL"]
    stored = json.loads(redis_client.get("lagbot:usergroup:S0ONCALL") or b"{}")
    assert stored == {"v": 1, "expires_at": T0 + 60, "users": ["U1", "U2"]}
    assert 0 < redis_client.ttl("lagbot:usergroup:S0ONCALL") <= 61
    redis_client.set("lagbot:usergroup:S0ONCALL", json.dumps({"v": 99, "expires_at": T0 + 60, "users": []}))
    with pytest.raises(StoredFormatError, match="format version 99; this lagbot reads 1"):
        second.members("S0ONCALL", now=T0 + 2)


def test_a_failed_lookup_is_loud_not_a_no(slack: SlackEmulator) -> None:
    rule = Rule.model_validate({"approvers": {"usergroups": ["S0GONE", "S0SRE"]}})
    directory = ApproverDirectory(web(slack), ttl=300)
    assert directory.is_approver(rule, "U3", T0)  # found in the group that resolves
    with pytest.raises(ApproversUnavailable) as error:
        directory.is_approver(rule, "U9", T0)
    assert str(error.value) == (
        "cannot tell who may approve: looking up the members of Slack user group S0GONE failed: no_such_subteam"
    )
    slack.fail("usergroups.users.list", status=500)
    with pytest.raises(ApproversUnavailable, match="S0ONCALL failed"):
        ApproverDirectory(web(slack), ttl=300).members("S0ONCALL", now=T0)


def test_nobody_may_approve_under_a_rule_without_approvers(slack: SlackEmulator) -> None:
    directory = ApproverDirectory(web(slack), ttl=300)
    assert not directory.is_approver(Rule(), "U1", T0)
    assert lookups(slack) == []
