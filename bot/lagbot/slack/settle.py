"""Once a proposal can no longer be clicked (run, failed, denied, expired), its message says so.

The message that carried the buttons is edited: this proposal's buttons are removed and a line says
who approved it and how it ended. A message in a channel is edited with `chat.update`; an ephemeral one
through the click's response_url. A failure to edit is logged: the run and its thread are unaffected.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from slack_bolt import Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lagbot.slack.payloads import ShownMessage
from lagbot.slack.render import settled_blocks

log = logging.getLogger(__name__)

UPDATE_ELSEWHERE = frozenset({"message_not_found", "cant_update_message"})
"""chat.update's answers for a message that was posted through a response_url, not by the bot user."""


def settle_proposal_message(
    proposal_id: str,
    shown: ShownMessage | None,
    client: WebClient,
    respond: Respond,
    settled: Callable[[], str | None],
) -> None:
    """Edit the clicked message (`shown`, as the click carried it) when the proposal is settled (`settled()` gives
    its line, else None)."""
    try:
        line = settled()
    except Exception:
        log.exception("could not read the proposal's state")
        return
    if line is None:
        return
    if shown is None or not proposal_id or not shows_buttons(shown.blocks, proposal_id):
        return  # a message that no longer shows them was retired already (an expiry, an earlier click)
    blocks = list(settled_blocks(shown.blocks, proposal_id, line))
    try:
        if shown.channel and shown.ts and not shown.ephemeral:
            try:
                client.chat_update(channel=shown.channel, ts=shown.ts, text=shown.text, blocks=blocks)
                return
            except SlackApiError as exc:
                # A message the app posted through a response_url (a `/lag remediate` reply) is not the bot
                # user's to chat.update: it is edited the way it was posted.
                if exc.response.get("error") not in UPDATE_ELSEWHERE:
                    raise
        respond(text=shown.text, blocks=blocks, replace_original=True)
    except SlackApiError as exc:  # the edit is cosmetic: the outcome is in the thread and the audit trail
        error = exc.response.get("error")
        log.warning("could not edit the proposal message", extra={"proposal": proposal_id, "error": error})
    except Exception:
        log.exception("could not edit the proposal message", extra={"proposal": proposal_id})


def shows_buttons(blocks: Sequence[Mapping[str, object]], proposal_id: str) -> bool:
    """Whether the blocks still hold a button of the proposal (a block's action id is `<verb>:<proposal id>`)."""
    return any(
        isinstance(element, dict) and str(element.get("action_id", "")).split(":", 1)[-1] == proposal_id
        for block in blocks
        if block.get("type") == "actions"
        for element in _list(block.get("elements"))
    )


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
