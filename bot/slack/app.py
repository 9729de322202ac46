"""The slack-bolt app: what Slack sends us (slash commands, and later button clicks) and how we answer.

Every request is verified by bolt (signature and a timestamp within 5 minutes) before a listener runs.
Listeners ack at once and do the work in lazy listeners, so Slack's 3-second limit always holds.
No exception reaches Slack: a failure becomes a short ephemeral message with an id to find it in the logs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot import messages

log = logging.getLogger(__name__)

CommandReply = tuple[str, list[dict[str, Any]], bool]
"""(fallback text, blocks, public): public replies go to the channel, others are ephemeral."""
CommandRunner = Callable[[str, str, str], CommandReply]
"""(command text, user id, channel id) -> the reply."""


def build_app(*, client: WebClient, signing_secret: str, run_command: CommandRunner) -> App:
    """The bolt app, using `client` (whose base_url may point at an emulator) for every Web API call."""
    app = App(client=client, signing_secret=signing_secret, process_before_response=False)

    def ack_command(ack: Ack) -> None:
        ack()

    def answer_command(body: dict[str, Any], respond: Respond) -> None:
        text, user, channel = (str(body.get(k, "")) for k in ("text", "user_id", "channel_id"))
        text, blocks, public = safely(lambda: run_command(text, user, channel))
        respond(text=text, blocks=blocks, response_type="in_channel" if public else "ephemeral")

    app.command("/lag")(ack=ack_command, lazy=[answer_command])

    @app.error
    def on_error(error: Exception) -> None:
        log.error("slack listener failed", exc_info=error)

    return app


def safely(work: Callable[[], CommandReply]) -> CommandReply:
    """Run a listener's work; an unexpected exception becomes an ephemeral apology with a log reference."""
    try:
        return work()
    except Exception:
        reference = uuid.uuid4().hex[:8]
        log.exception("command failed", extra={"reference": reference})
        return messages.slack_internal_error(reference), [], False
