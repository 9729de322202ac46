"""The slack-bolt app: what Slack sends us (slash commands, and later button clicks) and how we answer.

Every request is verified by bolt (signature and a timestamp within 5 minutes) before a listener runs.
Listeners ack at once and do the work in lazy listeners, so Slack's 3-second limit always holds.
No exception reaches Slack: the command runner turns a failure into a short ephemeral message with an id
to find it in the logs (lagbot.slack.commands.respond_safely).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from lagbot.core import messages
from lagbot.core.ids import valid_user
from lagbot.service.approvals import ClickAnswer, Proposal
from lagbot.service.slack_message import SlackMessage
from lagbot.slack import render
from lagbot.slack.commands import Reply
from lagbot.slack.render import DENY_CALLBACK
from lagbot.slack.settle import settle_proposal_message
from lagbot.slack.wording import proposals as wording

log = logging.getLogger(__name__)

CommandRunner = Callable[[str, str, str], Reply]
"""(command text, user id, channel id) -> the reply; never raises (lagbot.slack.subcommands.run_command)."""


ClickLimit = Callable[[str, float], float]
"""(user id, now) -> seconds the user must wait before another click counts (0.0: none); counts this one."""


class Clicks(Protocol):
    """What approval buttons need (lagbot.service.remediate.Remediator implements it)."""

    def click(self, proposal_id: str, user: str, *, now: float) -> ClickAnswer: ...

    def deny(self, proposal_id: str, user: str, reason: str, *, now: float) -> ClickAnswer: ...

    def proposal(self, proposal_id: str) -> Proposal | None: ...

    def settled(self, proposal_id: str, *, now: float) -> str | None: ...

    def shown(self, proposal_ids: Sequence[str], response_url: str, message: SlackMessage) -> None: ...


def build_app(
    *,
    client: WebClient,
    signing_secret: str,
    run_command: CommandRunner,
    clicks: Clicks | None = None,
    clock: Callable[[], float] = time.time,
    click_limit: ClickLimit | None = None,
) -> App:
    """The bolt app, using `client` (whose base_url may point at an emulator) for every Web API call. `click_limit`
    counts each approve or deny a user submits and says how long they must wait (0 when they need not).

    bolt asks Slack who the token is (auth.test) as it starts: a refused token raises bolt's BoltError, an unreachable
    Slack the client's network error (lagbot.app.runner names either).
    """
    bolt_log = logging.getLogger("slack_bolt.App")
    bolt_log.addFilter(_client_token_notice)
    try:
        app = App(client=client, signing_secret=signing_secret, process_before_response=False)
    finally:
        bolt_log.removeFilter(_client_token_notice)
    if clicks is not None:
        _approval_listeners(app, clicks, clock, click_limit or (lambda _user, _now: 0.0))

    def ack_command(ack: Ack) -> None:
        ack()

    def answer_command(body: dict[str, Any], respond: Respond) -> None:
        text, user, channel = (str(body.get(k, "")) for k in ("text", "user_id", "channel_id"))
        reply = run_command(text, user, channel)
        respond(**reply.to_response())
        if reply.proposals and clicks is not None and respond.response_url:
            _keep_shown(clicks, reply, respond.response_url)

    app.command("/lag")(ack=ack_command, lazy=[answer_command])

    @app.error
    def on_error(error: Exception) -> None:
        log.error("slack listener failed", exc_info=error)

    return app


def _client_token_notice(record: logging.LogRecord) -> bool:
    """Drop bolt's notice that the SLACK_BOT_TOKEN it found in the environment "will be unused" since a client is
    given: the client holds that very token (lagbot.app.runner makes it from the same variable)."""
    return "will be unused" not in record.getMessage()


def _approval_listeners(app: App, clicks: Clicks, clock: Callable[[], float], click_limit: ClickLimit) -> None:
    """Approve and deny buttons, and the deny modal. The button value is only a proposal id. A user over the click
    limit is asked to wait, and nothing is done or audited."""

    def ack_only(ack: Ack) -> None:
        ack()

    def approve(body: dict[str, Any], client: WebClient, respond: Respond) -> None:
        wait = _wait(click_limit, _user(body), clock())
        if wait > 0:
            if body.get("response_url"):
                respond(text=wording.click_rate_limited(wait), response_type="ephemeral", replace_original=False)
            return
        answer = _safely(lambda: clicks.click(_value(body), _user(body), now=clock()))
        if answer.ephemeral and body.get("response_url"):
            respond(text=answer.ephemeral, response_type="ephemeral", replace_original=False)
        settle_proposal_message(body, client, respond, lambda: clicks.settled(_value(body), now=clock()))

    def open_deny(ack: Ack, body: dict[str, Any], client: WebClient, respond: Respond) -> None:
        ack()
        proposal = clicks.proposal(_value(body))
        trigger = body.get("trigger_id")
        if proposal is None or not trigger:
            if body.get("response_url"):
                respond(text=messages.approval_unknown(), response_type="ephemeral", replace_original=False)
            return
        view = render.deny_modal(proposal, deny_metadata(_value(body), body))
        client.views_open(trigger_id=str(trigger), view=view)

    def check_reason(ack: Ack, body: dict[str, Any]) -> None:
        """A reason is required: an empty (or blank) one is refused in the modal, which stays open."""
        if _reason(body).strip():
            ack()
        else:
            ack(response_action="errors", errors={"reason": wording.deny_reason_required()})

    def deny(body: dict[str, Any], client: WebClient) -> None:
        reason = _reason(body).strip()
        if not reason:
            return
        user = _user(body)
        clicked = clicked_message(_metadata(body))
        proposal_id = _value(clicked)
        wait = _wait(click_limit, user, clock())
        if wait > 0:
            answer = ClickAnswer(wording.click_rate_limited(wait))
        else:
            answer = _safely(lambda: clicks.deny(proposal_id, user, reason, now=clock()))
        if answer.ephemeral and valid_user(user):  # never a DM to whatever a request names as its user
            client.chat_postMessage(channel=user, text=answer.ephemeral)
        if "message" in clicked:  # the message whose Deny was clicked: retired as an approval retires it
            respond = Respond(response_url=str(clicked.get("response_url") or "") or None)
            settle_proposal_message(clicked, client, respond, lambda: clicks.settled(proposal_id, now=clock()))

    app.action(re.compile(r"^approve:"))(ack=ack_only, lazy=[approve])
    app.action(re.compile(r"^deny:"))(open_deny)
    app.view(DENY_CALLBACK)(ack=check_reason, lazy=[deny])


MAX_PRIVATE_METADATA = 3_000
"""Slack's limit on a view's private_metadata, in characters."""


def deny_metadata(proposal_id: str, body: dict[str, Any]) -> str:
    """The deny modal's private_metadata: the proposal id and, when they fit Slack's 3,000 characters, the clicked
    message (its channel, ts, text and blocks, and the click's response_url), which the denial then retires: the
    modal's submission carries no message of its own. JSON, read back by `clicked_message`."""
    found, where = body.get("message"), body.get("container")
    message: dict[str, Any] | None = found if isinstance(found, dict) else None
    container: dict[str, Any] = where if isinstance(where, dict) else {}
    whole = {
        "actions": [{"value": proposal_id}],
        "container": {k: container[k] for k in ("channel_id", "is_ephemeral") if k in container},
        "response_url": body.get("response_url"),
        "message": None
        if message is None
        else {"ts": message.get("ts"), "text": message.get("text"), "blocks": message.get("blocks") or []},
    }
    text = json.dumps(whole, separators=(",", ":"))
    if message is not None and len(text) <= MAX_PRIVATE_METADATA:
        return text
    return json.dumps({"actions": [{"value": proposal_id}]}, separators=(",", ":"))


def clicked_message(metadata: object) -> dict[str, Any]:
    """`deny_metadata` read back: a click's body ({actions, container, message, response_url}); a bare proposal id
    (a modal opened before this form) gives a body with that id alone."""
    text = str(metadata or "")
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("actions"), list) or not found["actions"]:
        return {"actions": [{"value": text}]}
    if not isinstance(found.get("message"), dict):
        found.pop("message", None)
    return found


def _reason(body: dict[str, Any]) -> str:
    """The reason typed in the deny modal ('' when missing, whatever shape the submission has)."""
    value: Any = body
    for key in ("view", "state", "values", "reason", "text", "value"):
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


def _metadata(body: dict[str, Any]) -> object:
    view = body.get("view")
    return view.get("private_metadata") if isinstance(view, dict) else None


def _wait(click_limit: ClickLimit, user: str, now: float) -> float:
    """Seconds `user` must wait before another click counts; 0 when the limit cannot be read (the click then meets
    the same store's failure, answered as any other). A request naming no valid user id is not counted: the click
    refuses it without writing, and a counter keyed on what it names would store a key the request chose."""
    if not valid_user(user):
        return 0.0
    try:
        return click_limit(user, now)
    except Exception:
        log.warning("click limit unavailable", exc_info=True)
        return 0.0


def _keep_shown(clicks: Clicks, reply: Reply, response_url: str) -> None:
    """Say where a command's answer showed proposals' buttons (so that they are retired when they expire); a
    failure is logged: the buttons then stay until clicked, and a click is answered "expired"."""
    try:
        clicks.shown(reply.proposals, response_url, reply.message)
    except Exception:
        log.exception("could not keep where a command showed proposals", extra={"proposals": list(reply.proposals)})


def _value(body: dict[str, Any]) -> str:
    actions = body.get("actions") or [{}]
    first = actions[0] if isinstance(actions, list) else {}
    return str(first.get("value", "")) if isinstance(first, dict) else ""


def _user(body: dict[str, Any]) -> str:
    return str((body.get("user") or {}).get("id", ""))


def _safely(work: Callable[[], ClickAnswer]) -> ClickAnswer:
    """A click's work; an unexpected exception becomes an apology with a log reference, never a trace."""
    try:
        return work()
    except Exception:
        reference = uuid.uuid4().hex[:12]
        log.exception("click failed", extra={"error_id": reference})
        return ClickAnswer(wording.click_failed(reference))
