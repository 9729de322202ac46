"""The slack-bolt app: what Slack sends us (slash commands, button clicks, the deny modal) and how we answer.

Every request is verified by bolt (signature and a timestamp within 5 minutes) before a listener runs.
Each listener takes the argument bolt gives for its kind (`command`, `action`, `view`), read into the app's own types
by lagbot.slack.payloads.
Listeners ack at once and do the work in lazy listeners, so Slack's 3-second limit always holds.
No exception reaches Slack: the command runner turns a failure into a short ephemeral message with an id
to find it in the logs (lagbot.slack.commands.respond_safely).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from lagbot.core import messages
from lagbot.core.ids import valid_user
from lagbot.service.approvals import ClickAnswer, Proposal
from lagbot.service.slack_message import SlackMessage
from lagbot.slack import payloads, render
from lagbot.slack.commands import Reply
from lagbot.slack.payloads import MAX_PRIVATE_METADATA, Json, clicked_message, deny_metadata
from lagbot.slack.render import DENY_CALLBACK
from lagbot.slack.settle import settle_proposal_message
from lagbot.slack.wording import proposals as wording

log = logging.getLogger(__name__)

__all__ = [  # clicked_message, deny_metadata: the deny modal's metadata, read and written by lagbot.slack.payloads
    "MAX_PRIVATE_METADATA",
    "ClickLimit",
    "Clicks",
    "CommandRunner",
    "build_app",
    "clicked_message",
    "deny_metadata",
]

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

    def answer_command(command: Json, respond: Respond) -> None:
        typed = payloads.read_command(command)
        reply = run_command(typed.text, typed.user, typed.channel)
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
    limit is asked to wait, and nothing is done or audited.

    A click's listeners take bolt's `action` (the clicked button) and also the request's `body`: who clicked, the
    message the button is on, its container and the trigger_id are in no narrower argument (bolt's `context.user_id`
    falls back to the message's author for a request that names no user). A submission's take `view`, and `body` for
    who submitted it.
    """

    def ack_only(ack: Ack) -> None:
        ack()

    def approve(action: Json, body: Json, client: WebClient, respond: Respond) -> None:
        click = payloads.read_click(action, body)
        wait = _wait(click_limit, click.user, clock())
        if wait > 0:
            if click.response_url:
                respond(text=wording.click_rate_limited(wait), response_type="ephemeral", replace_original=False)
            return
        answer = _safely(lambda: clicks.click(click.proposal_id, click.user, now=clock()))
        if answer.ephemeral and click.response_url:
            respond(text=answer.ephemeral, response_type="ephemeral", replace_original=False)
        settle_proposal_message(
            click.proposal_id, click.shown, client, respond, lambda: clicks.settled(click.proposal_id, now=clock())
        )

    def open_deny(ack: Ack, action: Json, body: Json, client: WebClient, respond: Respond) -> None:
        ack()
        click = payloads.read_click(action, body)
        proposal = clicks.proposal(click.proposal_id)
        if proposal is None or not click.trigger_id:
            if click.response_url:
                respond(text=messages.approval_unknown(), response_type="ephemeral", replace_original=False)
            return
        view = render.deny_modal(proposal, payloads.deny_metadata(click.proposal_id, body))
        client.views_open(trigger_id=click.trigger_id, view=view)

    def check_reason(ack: Ack, view: Json) -> None:
        """A reason is required: an empty (or blank) one is refused in the modal, which stays open."""
        if payloads.reason(view).strip():
            ack()
        else:
            ack(response_action="errors", errors={"reason": wording.deny_reason_required()})

    def deny(view: Json, body: Json, client: WebClient) -> None:
        denial = payloads.read_denial(view, body)
        if not denial.reason:
            return
        wait = _wait(click_limit, denial.user, clock())
        if wait > 0:
            answer = ClickAnswer(wording.click_rate_limited(wait))
        else:
            answer = _safely(lambda: clicks.deny(denial.proposal_id, denial.user, denial.reason, now=clock()))
        if answer.ephemeral and valid_user(denial.user):  # never a DM to whatever a request names as its user
            client.chat_postMessage(channel=denial.user, text=answer.ephemeral)
        if denial.shown is not None:  # the message whose Deny was clicked: retired as an approval retires it
            respond = Respond(response_url=denial.shown.response_url or None)
            proposal_id = denial.proposal_id
            settle_proposal_message(
                proposal_id, denial.shown, client, respond, lambda: clicks.settled(proposal_id, now=clock())
            )

    app.action(re.compile(r"^approve:"))(ack=ack_only, lazy=[approve])
    app.action(re.compile(r"^deny:"))(open_deny)
    app.view(DENY_CALLBACK)(ack=check_reason, lazy=[deny])


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


def _safely(work: Callable[[], ClickAnswer]) -> ClickAnswer:
    """A click's work; an unexpected exception becomes an apology with a log reference, never a trace."""
    try:
        return work()
    except Exception:
        reference = uuid.uuid4().hex[:12]
        log.exception("click failed", extra={"error_id": reference})
        return ClickAnswer(wording.click_failed(reference))
