"""A deny submitted with a user id that is no Slack user id sends nobody a DM (it used to post to that "id").

The bot's real remediation coordinator (Redis, the Slack emulator, the Kubernetes fake), its bolt app behind the HTTP
edge, and the deny modal submitted as Slack submits it, correctly signed.
"""

from __future__ import annotations

import pytest
import redis

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.slack import render
from lagbot.slack.app import build_app
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, k8s, remediator, slack
from tests.support.waiting import wait_for

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

SECRET = "deny-secret"


@pytest.mark.parametrize("user", ["not-a-user", "U0<!channel>", "C0ALERTS", "#general"])
def test_fault_a_deny_from_an_invalid_user_id_sends_no_dm(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, user: str
) -> None:
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8}})
    found, skipped = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    assert skipped == [], skipped
    [proposal] = found
    app = build_app(client=r.bot.slack, signing_secret=SECRET, run_command=lambda *_: None, clicks=r)  # type: ignore[arg-type,return-value]
    view = {**render.deny_modal(proposal).to_dict(), "id": "V1"}
    with BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret=SECRET
    ).start() as server:
        url = f"http://127.0.0.1:{server.port}/slack/events"
        # an outsider with a real id is told why (a DM): the path works and is waited on
        assert slack.submit_view(url, SECRET, user="U0OUTSIDER", view=view, values={"reason": {"text": "no"}})[0] == 200
        wait_for("the outsider's DM", lambda: [c for c in slack.calls_to("chat.postMessage")
                                               if c.args.get("channel") == "U0OUTSIDER"], timeout=20)  # fmt: skip
        before = len(slack.calls)
        assert slack.submit_view(url, SECRET, user=user, view=view, values={"reason": {"text": "no"}})[0] == 200
        outsider = slack.submit_view(url, SECRET, user="U0OUTSIDER", view=view, values={"reason": {"text": "no"}})
        assert outsider[0] == 200
        wait_for("the second DM", lambda: len([c for c in slack.calls_to("chat.postMessage")
                                              if c.args.get("channel") == "U0OUTSIDER"]) == 2, timeout=20)  # fmt: skip
    later = slack.calls[before:]
    assert [c.args.get("channel") for c in later if c.method == "chat.postMessage"] == ["U0OUTSIDER"]
    assert r.proposals.get(proposal.id).state.value == "proposed"  # type: ignore[union-attr]
