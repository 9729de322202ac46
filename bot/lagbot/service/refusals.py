"""The actions the live system refused at a check, said once in the incident's thread.

A remediation the causes suggest may be refused by what the live system shows (`EvidenceRefusal`: a restart of an
owner OOM-killed again and again). The remediator notes each refusal of a check (`Refusals.note`) while the check
runs; once the check's own messages are queued (its root first), `Refusals.say` tells the rule's approvers in the
incident's thread, each action once per incident across replicas (lagbot.service.remediation_stores `OfferBook`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping

from lagbot.core.model import GroupVerdict
from lagbot.policies.model import Rule
from lagbot.service import wording
from lagbot.service.audit import BOT_USER, AuditEntry
from lagbot.service.bot import Bot
from lagbot.service.incidents import REPLY, Change, Effect, Incident
from lagbot.service.remediation_stores import OfferBook


@dataclasses.dataclass(frozen=True)
class Refusal:
    """An action the causes suggest that the live system refused (EvidenceRefusal), to say in the incident's thread
    once the check's own messages are queued (its root first)."""

    incident: Incident
    verdict: GroupVerdict
    action: str
    reason: str


class Refusals:
    """The refusals of the last check on this replica, waiting to be said (thread-safe)."""

    def __init__(self, bot: Bot, offer_book: OfferBook, rule: Callable[[str, str], Rule]) -> None:
        self.bot = bot
        self.offer_book = offer_book
        self.rule = rule
        self._refused: dict[tuple[str, str], Refusal] = {}
        """(incident id, action) -> its refusal of this check, to say once the check has queued its messages."""
        self._lock = threading.Lock()

    def note(self, incident: Incident, verdict: GroupVerdict, refused: Mapping[str, str]) -> None:
        """Keep the actions the live system refused in this check of `incident` (action -> its evidence)."""
        with self._lock:
            for action, reason in refused.items():
                self._refused[(incident.id, action)] = Refusal(incident, verdict, action, reason)

    def say(self, *, now: float) -> int:
        """Say in each incident's thread the actions the live system refused at the last check (a restart of an owner
        OOM-killed again and again, with that evidence), to the rule's approvers: each action once per incident,
        across replicas (the offer book's atomic claim comes before the reply is queued in the outbox; a crash between
        the two loses that one reply rather than saying it twice). Returns how many were queued (and delivered)."""
        with self._lock:
            refusals, self._refused = list(self._refused.values()), {}
        queued = 0
        for refusal in refusals:
            incident = self.bot.incidents.get(refusal.incident.cluster, refusal.incident.group)
            if incident is None or incident.id != refusal.incident.id or not incident.is_open or incident.storm:
                continue  # resolved, replaced or folded into a storm meanwhile: no thread to escalate in
            if not self.offer_book.claim_refusal(incident.id, refusal.action, refusal.reason):
                continue  # said already (by this replica or another)
            mentions = self.rule(incident.cluster, incident.group).approvers.mentions()
            line = wording.remediation_refused_by_evidence(refusal.action, refusal.reason, mentions)
            said = {"not_offered": refusal.reason}
            self.bot.audit.record(
                AuditEntry(now, "escalated", incident.cluster, incident.group, BOT_USER, refusal.action, None, said)
            )
            self.bot.enqueue(Effect(REPLY, Change.REMEDIATION, line), incident, refusal.verdict, now=now)
            queued += 1
        if queued:
            self.bot.deliver()
        return queued
