"""The service's messages in Block Kit: lagbot.service.presenter.Presenter, implemented with lagbot.slack.render
and lagbot.slack.digest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from slack_sdk.models.blocks import SectionBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject

from lagbot.core.config import IncidentConfig
from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import GroupVerdict
from lagbot.service.approvals import Proposal
from lagbot.service.digest import ComposedDigest, IncidentSummary, RemediationSummary
from lagbot.service.history import HistoryStore
from lagbot.service.incidents import Change, Incident
from lagbot.service.slack_message import Block, SlackMessage
from lagbot.service.storms import StormSummary
from lagbot.slack import digest, render
from lagbot.slack.wording import incidents as wording


class SlackPresenter:
    """Stateless: every method is a pure function of its arguments."""

    def incident_root(
        self, incident: Incident, verdict: GroupVerdict, config: IncidentConfig, now: float
    ) -> SlackMessage:
        return render.incident_root(incident, verdict, config, now)

    def change_reply(
        self, change: Change, detail: str, incident: Incident, verdict: GroupVerdict, now: float
    ) -> SlackMessage:
        return render.change_reply(change, detail, incident, verdict, now)

    def proposal_blocks(self, proposals: list[Proposal], *, now: float) -> tuple[Block, ...]:
        return render.proposal_blocks(proposals, now=now)

    def settled(self, message: SlackMessage, proposal_id: str, line: str) -> SlackMessage:
        return render.settled(message, proposal_id, line)

    def with_blocks(self, message: SlackMessage, extra: Sequence[Block]) -> SlackMessage:
        return render.with_blocks(message, extra)

    def replaced_root(self, message: SlackMessage, cluster: str, group: str) -> SlackMessage:
        return render.replaced_root(message, cluster, group)

    def state_lost(self) -> SlackMessage:
        text = wording.state_lost()
        return render.message(text, [SectionBlock(text=MarkdownTextObject(text=text))])

    def storm_summary(self, summary: StormSummary) -> SlackMessage:
        return render.storm_summary(summary)

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
        return digest.compose_digest(
            config=config, verdicts=verdicts, history=history, incidents=incidents, remediations=remediations, now=now
        )
