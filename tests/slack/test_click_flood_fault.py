"""Clicks are rate limited like commands: 60 approve clicks by a non-approver in a burst wrote 60 audit entries.

The real remediation coordinator (Redis, the Slack emulator, the Kubernetes fake), the bolt app behind the HTTP edge
with the click limit `lagbot run` wires (the user's command limit, a scope of its own), correctly signed clicks.
"""

from __future__ import annotations

import redis

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.service.approvals import Proposal
from lagbot.service.remediate import Remediator
from lagbot.slack import render
from lagbot.slack.app import build_app
from lagbot.slack.guard import RateLimiter
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.waiting import wait_for

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

SECRET = "click-secret"
LIMIT = 5
CLICKS = 30


def clicked(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, users: list[str]
) -> tuple[Remediator, Proposal, list[str]]:
    """One proposed scale behind the bolt app with the click limit `lagbot run` wires; a correctly signed approve click
    by each of `users`, in turn; the texts answered, once all are."""
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8}})
    found, skipped = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    assert skipped == []
    [proposal] = found
    limiter = RateLimiter(redis_client)
    app = build_app(
        client=r.bot.slack,
        signing_secret=SECRET,
        run_command=lambda *_: None,  # type: ignore[arg-type,return-value]
        clicks=r,
        click_limit=lambda user, now: limiter.hit("click", user, most=LIMIT, every=3600.0, now=now),
    )
    message = Message("C0ALERTS", "1.000001", proposal.plan.summary, list(render.proposal_blocks([proposal], now=NOW)))
    answers: list[str] = []
    with BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret=SECRET
    ).start() as server:
        url = f"http://127.0.0.1:{server.port}/slack/events"
        for user in users:
            status, _, key = slack.click_button(url, SECRET, user=user, message=message, action_prefix="approve:")
            assert status == 200
            answers.append(key)
        wait_for("every click answered", lambda: all(slack.responses.get(k) for k in answers), timeout=60)
    return r, proposal, [slack.responses[k][0]["text"] for k in answers]


def test_fault_a_click_flood_by_a_non_approver_is_cut_at_the_limit(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r, proposal, texts = clicked(redis_client, slack, k8s, ["U0OUTSIDER"] * CLICKS)
    limited = [t for t in texts if t.startswith(":hourglass: You have clicked a lot in a short time")]
    assert len(limited) == CLICKS - LIMIT
    assert [e for e in events(r) if e[0] == "refused"] == [("refused", "U0OUTSIDER")] * LIMIT
    assert r.proposals.get(proposal.id).state.value == "proposed"  # type: ignore[union-attr]


def test_a_click_naming_no_valid_user_is_refused_and_counts_nowhere(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """A counter keyed on what a request names as its user would store a key the request chose: such clicks are
    refused by the click itself, and no `lagbot:rate:` key is written, however many come."""
    redis_client.flushdb()
    r, proposal, texts = clicked(redis_client, slack, k8s, ["", "<!channel>", "U0\nX"] * (LIMIT + 1))
    assert not any(t.startswith(":hourglass:") for t in texts)
    assert list(redis_client.scan_iter("lagbot:rate:*")) == []
    assert [e for e in events(r) if e[0] == "refused"] == []
    assert r.proposals.get(proposal.id).state.value == "proposed"  # type: ignore[union-attr]
