"""An incident's effects queued as Slack messages, and the outbox delivered by one deliverer at a time.

`Delivery.enqueue` draws an effect's message through the presenter and queues it in the outbox (lagbot.service.
outbox): a reply always, a root post always, a root edit only when it says something new (lagbot.service.edits).
`Delivery.deliver` sends what the outbox holds under the fenced outbox lock (lagbot.service.lease), never waited for.
Which effects a check makes is the bot's (lagbot.service.bot); the calls made to Slack outside the outbox are
lagbot.service.slack_api's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

import redis
from slack_sdk import WebClient

from lagbot.core.config import Settings
from lagbot.core.model import GroupVerdict
from lagbot.service import edits
from lagbot.service.incidents import REPLY, UPDATE_ROOT, Change, Effect, Incident
from lagbot.service.lease import FencedLock
from lagbot.service.outbox import DeliveryReport, ErrorSeen, Fence, Operation, Outbox
from lagbot.service.presenter import Presenter
from lagbot.service.slack_message import Block, SlackMessage

DELIVERY_ROUNDS = 3
"""A deliverer that emptied the outbox looks again this many times (work queued while it held the lock)."""


class Delivery:
    """What one replica queues for Slack and how it delivers it (thread-safe: the outbox and its lock are)."""

    def __init__(
        self,
        settings: Settings,
        outbox: Outbox,
        lock: FencedLock,
        shown: edits.ShownStore,
        presenter: Presenter,
        slack: WebClient,
        *,
        on_error: ErrorSeen,
    ) -> None:
        """`shown` keeps what each root last showed; `on_error` is told each call Slack refused."""
        self.settings = settings
        self.outbox = outbox
        self.lock = lock
        self.shown = shown
        self.presenter = presenter
        self.slack = slack
        self.on_error = on_error

    def enqueue(
        self,
        effect: Effect,
        incident: Incident,
        verdict: GroupVerdict,
        *,
        now: float,
        extra: Sequence[Block] = (),
        proposals: tuple[str, ...] = (),
    ) -> None:
        """Queue the effect's message of `incident` (as its root shows it, its remediation joined); `proposals`: those
        whose buttons `extra` holds (a reply's)."""
        if effect.kind == REPLY:
            rendered = self.presenter.change_reply(effect.change, effect.detail, incident, verdict, now)
        else:
            rendered = self.presenter.incident_root(incident, verdict, self.settings.incidents, now)
        message = self.presenter.with_blocks(rendered, extra)
        table = None
        if effect.kind == UPDATE_ROOT and verdict.partitions:  # the table reply follows the root
            table = self.presenter.change_reply(Change.OPENED, "", incident, verdict, now)
        if effect.kind != REPLY and not self._root_news(effect, incident, verdict, (message, table), now=now):
            return
        operation = Operation(
            op=effect.kind,
            incident_id=incident.id,
            cluster=incident.cluster,
            group=incident.group,
            channel=incident.channel,
            message=message,
            proposals=proposals if effect.kind == REPLY else (),
            is_table=effect.kind == REPLY and effect.change is Change.OPENED,
            table=table,
        )
        self.outbox.enqueue(operation, now=now)

    def _root_news(
        self,
        effect: Effect,
        incident: Incident,
        verdict: GroupVerdict,
        shown: tuple[SlackMessage, SlackMessage | None],
        *,
        now: float,
    ) -> bool:
        """Whether this root post or edit goes out (lagbot.service.edits: a post always does, an edit when its story
        changed or its counters are older than the refresh, never when identical); what it shows is kept if so."""
        message, table = shown
        showing = edits.Shown(edits.story(incident, verdict), edits.digest(message, table), now)
        every = self.settings.incidents.refresh_every
        if effect.kind == UPDATE_ROOT and not edits.due(self.shown.get(incident.id), showing, every=every):
            return False
        self.shown.put(incident.id, showing)
        return True

    def deliver(self) -> DeliveryReport:
        """Send what the outbox holds (this cycle's effects and what earlier cycles could not send).

        One deliverer at a time across threads and replicas (a click answered by a follower enqueues and
        delivers too): a fenced lock with a short lease, renewed while delivering, never waited for. When
        another deliverer holds it, this returns at once (that one, or the next attempt, sends what was
        queued); a dead holder's lock expires within one lease and the next attempt takes it over.
        """
        report = DeliveryReport(pending=self.outbox.pending())
        for _ in range(DELIVERY_ROUNDS):
            value = self.lock.acquire()
            if value is None:
                return report
            try:
                with self.lock.renewing(value):
                    report = self.outbox.deliver(
                        self.slack,
                        replaced_root=self.presenter.replaced_root,
                        on_error=self.on_error,
                        deadline=time.monotonic() + self.settings.leader.lease_ttl,
                        fence=Fence(self.lock.key, value),
                    )
            finally:
                with contextlib.suppress(redis.RedisError):
                    self.lock.release(value)
            # Released first, then looked again: whatever was queued while we held the lock is seen now.
            if report.failed_transient or not self.outbox.pending():
                break
        report.pending = self.outbox.pending()
        return report
