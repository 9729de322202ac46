"""The slack-bolt app: what Slack sends us (slash commands, and later button clicks) and how we answer.

Every request is verified by bolt (signature and a timestamp within 5 minutes) before a listener runs.
Listeners ack at once and do the work in lazy listeners, so Slack's 3-second limit always holds.
No exception reaches Slack: the command runner turns a failure into a short ephemeral message with an id
to find it in the logs (bot.slack.commands.respond_safely).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.slack.commands import Reply

log = logging.getLogger(__name__)

CommandRunner = Callable[[str, str, str], Reply]
"""(command text, user id, channel id) -> the reply; never raises (bot.slack.commands.run_command)."""


def build_app(*, client: WebClient, signing_secret: str, run_command: CommandRunner) -> App:
    """The bolt app, using `client` (whose base_url may point at an emulator) for every Web API call."""
    app = App(client=client, signing_secret=signing_secret, process_before_response=False)

    def ack_command(ack: Ack) -> None:
        ack()

    def answer_command(body: dict[str, Any], respond: Respond) -> None:
        text, user, channel = (str(body.get(k, "")) for k in ("text", "user_id", "channel_id"))
        respond(**run_command(text, user, channel).to_response())

    app.command("/lag")(ack=ack_command, lazy=[answer_command])

    @app.error
    def on_error(error: Exception) -> None:
        log.error("slack listener failed", exc_info=error)

    return app
