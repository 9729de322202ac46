"""The pieces behind `/lag`'s guard on a real redis-server: rate windows, seen signatures, who may silence,
which drain sinks a policy allows, and how a settled proposal's message is rewritten."""

from __future__ import annotations

import pytest
import redis

from lagbot.core import messages
from lagbot.core.ids import valid_user
from lagbot.policies.model import Policy, Rule
from lagbot.remediations.drain.policy import sink_refusal
from lagbot.slack.guard import RateLimiter
from lagbot.slack.render import settled_blocks
from lagbot.slack.replay import SEEN_TTL, ReplayGuard

pytestmark = pytest.mark.integration

T0 = 1_800_000_000.0  # a multiple of 60: a fresh window starts here


def test_a_rate_window_counts_to_its_limit_then_says_how_long_to_wait(redis_client: redis.Redis) -> None:
    limiter = RateLimiter(redis_client)
    assert [limiter.hit("user", "U1", most=3, every=60, now=T0 + i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.hit("user", "U1", most=3, every=60, now=T0 + 15) == 45.0
    assert limiter.hit("user", "U2", most=3, every=60, now=T0 + 15) == 0.0  # another user, its own count
    assert limiter.hit("user", "U1", most=3, every=60, now=T0 + 60) == 0.0  # the next window
    key = f"lagbot:rate:user:U1:{int(T0 // 60)}"
    assert redis_client.get(key) == b"4" and 0 < redis_client.ttl(key) <= 61


def test_a_signature_is_accepted_once_and_forgotten_after_slacks_window(redis_client: redis.Redis) -> None:
    guard = ReplayGuard(redis_client)
    assert guard.first_time("v0=abc") is True
    assert guard.first_time("v0=abc") is False
    assert guard.first_time("v0=abd") is True
    assert SEEN_TTL - 5 <= redis_client.ttl("lagbot:seen:v0%3Dabc") <= SEEN_TTL


def test_user_ids_are_checked_before_use() -> None:
    assert [valid_user(u) for u in ("U0ABC", "W0ABC", "", "U", "u0abc", "<!channel>", "U0ABC ", "S0ABC")] == [
        True, True, False, False, False, False, False, False,
    ]  # fmt: skip


def test_silencers_default_to_the_approvers() -> None:
    rule = Rule.model_validate({"approvers": {"users": ["U0APPROVER"]}})
    assert rule.may_silence().users == ("U0APPROVER",)
    named = Rule.model_validate({"approvers": {"users": ["U0APPROVER"]}, "silencers": {"usergroups": ["S0ONCALL"]}})
    assert named.may_silence().users == () and named.may_silence().usergroups == ("S0ONCALL",)


def test_drain_sinks_a_user_names_come_from_the_allow_list_and_internal_topics_never() -> None:
    policy = Policy.model_validate(
        {"default": {"remediations": {"drain": {"sinks": {"paths": ["/srv/drains/", "s3a://b/d"], "topics": "dr-.*"}}}}}
    )
    rule = policy.default
    refusals = {
        sink: sink_refusal(rule.allows("drain"), sink, named_by_user=True)
        for sink in (
            "/srv/drains/orders", "/srv/drains", "/srv/drainsX", "/srv/drains/../../etc", "/etc", "s3a://b/d/x",
            "kafka:dr-orders", "kafka:orders", "kafka:__consumer_offsets", "/srv/drains/" + "x" * 200,
        )
    }  # fmt: skip
    assert {sink for sink, refused in refusals.items() if refused is None} == {
        "/srv/drains/orders", "/srv/drains", "s3a://b/d/x", "kafka:dr-orders",
    }  # fmt: skip
    assert refusals["/etc"] == (
        "`/etc` is not under an allowed drain sink prefix (the policy allows `/srv/drains`, `s3a://b/d`)"
    )
    assert refusals["kafka:__consumer_offsets"] == (
        "`__consumer_offsets` is an internal Kafka topic: a drain never writes there"
    )
    assert refusals["/srv/drains/" + "x" * 200] == "the sink is longer than 200 characters"
    # The configured default sink is the operator's: allowed, but never an internal topic.
    assert sink_refusal(rule.allows("drain"), "/anywhere", named_by_user=False) is None
    assert sink_refusal(rule.allows("drain"), "kafka:__transaction_state", named_by_user=False) is not None


def test_a_bad_sink_prefix_in_a_policy_is_named() -> None:
    with pytest.raises(ValueError, match="'relative/dir' is not a sink prefix"):
        Policy.model_validate({"default": {"remediations": {"drain": {"sinks": {"paths": ["relative/dir"]}}}}})


def test_a_settled_proposal_loses_only_its_own_buttons_and_gains_its_outcome() -> None:
    blocks = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "plans"}},
        {"type": "actions", "elements": [
            {"type": "button", "action_id": "approve:p1", "value": "p1"},
            {"type": "button", "action_id": "deny:p1", "value": "p1"},
            {"type": "button", "action_id": "approve:p2", "value": "p2"},
        ]},
    ]  # fmt: skip
    one = settled_blocks(blocks, "p1", "done")
    assert [e["action_id"] for e in one[1]["elements"]] == ["approve:p2"]
    assert one[-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": "done"}]}
    both = settled_blocks(one, "p2", "also done")
    assert [b["type"] for b in both] == ["section", "context", "context"]


def test_the_audit_view_mentions_only_valid_user_ids_and_escapes_the_rest() -> None:
    assert messages.audit_line("t", "refused", "U0ABC", "silence", "<!channel>") == (
        "`t` *refused* silence by <@U0ABC> &lt;!channel&gt;"
    )
    assert messages.audit_line("t", "approved", "<@U1> <!channel>", None, "") == (
        "`t` *approved*  by &lt;@U1&gt; &lt;!channel&gt;"
    )
    assert messages.audit_line("t", "approved", "", None, "") == "`t` *approved*  by (no user)"
