"""What the service needs shown in Slack, and nothing about how: lagbot.slack.presenter implements it.

The service decides what to say and when (an incident's root, a reply on a change, the proposals awaiting a click,
the notice that stored state was lost, a channel's digest); the Slack layer turns those typed inputs into Block
Kit, a `SlackMessage` (lagbot.service.slack_message) whose blocks the service holds without reading them. The
service then queues the messages in its outbox and delivers them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from lagbot.core.config import IncidentConfig
from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import GroupVerdict
from lagbot.service.approvals import Proposal
from lagbot.service.digest import ComposedDigest, IncidentSummary, RemediationSummary
from lagbot.service.history import HistoryStore
from lagbot.service.incidents import Change, Incident
from lagbot.service.slack_message import Block, SlackMessage
from lagbot.service.storms import StormSummary


class Presenter(Protocol):
    def incident_root(
        self, incident: Incident, verdict: GroupVerdict, config: IncidentConfig, now: float
    ) -> SlackMessage:
        """The incident's root message: the group's state, its table and causes, its remediation."""
        ...

    def change_reply(
        self, change: Change, detail: str, incident: Incident, verdict: GroupVerdict, now: float
    ) -> SlackMessage:
        """A reply in the incident's thread saying what changed."""
        ...

    def proposal_blocks(self, proposals: list[Proposal], *, now: float) -> tuple[Block, ...]:
        """The blocks of proposals awaiting a click: the plan and its buttons."""
        ...

    def settled(self, message: SlackMessage, proposal_id: str, line: str) -> SlackMessage:
        """A proposal's message without that proposal's buttons, and the line that says how it ended."""
        ...

    def with_blocks(self, message: SlackMessage, extra: Sequence[Block]) -> SlackMessage:
        """A message with more blocks appended, within Slack's limits."""
        ...

    def replaced_root(self, message: SlackMessage, cluster: str, group: str) -> SlackMessage:
        """The root that replaces a lost one (deleted, or lost by Slack): `message`, the newest root, under the note
        that it replaces the lost one. `group` empty: a thread of no one group (a storm's summary)."""
        ...

    def state_lost(self) -> SlackMessage:
        """The notice that Redis lost lagbot's stored state."""
        ...

    def storm_summary(self, summary: StormSummary) -> SlackMessage:
        """A storm's one summary message (lagbot.service.storms): counts, the worst groups, how to narrow the watch."""
        ...

    def digest(
        self,
        *,
        config: DigestConfig,
        verdicts: Sequence[GroupVerdict],
        history: HistoryStore,
        incidents: Iterable[IncidentSummary],
        remediations: Iterable[RemediationSummary],
        now: float,
    ) -> ComposedDigest:
        """A channel's digest: the message and its chart."""
        ...
