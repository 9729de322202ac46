"""What `/lag` needs from the running bot: the `CommandDeps` of lagbot.slack.commands, on top of `Bot`, given
whole at construction (lagbot.app.assembly builds it).

Any replica can answer: verdicts come from the windows in Redis (shared by all replicas), and a fresh
check of one group samples only that group into a private copy of its window before judging it: a
`/lag` read never writes the window the scheduled checks judge (their rates and "behind" stay theirs).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from lagbot.core.config import Settings
from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import GroupSummary, GroupVerdict
from lagbot.engine.check import Checker
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.service.silences import SilenceStore
from lagbot.slack.commands import Reply
from lagbot.slack.guard import CommandGuard
from lagbot.slack.replies import audit_reply, remediate_reply
from lagbot.slack.subcommands import run_command

log = logging.getLogger(__name__)


def digest_config_for(settings: Settings, channel: str) -> DigestConfig:
    """The configured digest of `channel`, else a default one (what `/lag digest` posts there)."""
    return next((d for d in settings.digest.channels if d.channel == channel), DigestConfig(channel=channel))


class BotCommands:
    """Implements lagbot.slack.commands.CommandDeps for one replica.

    `remediator`: the bot's remediation side (`/lag remediate`; none: "not available"). `guard`: ids, rate limits
    and the policy's word in front of every command (none: commands run unguarded, as in tests of one handler).
    """

    def __init__(
        self,
        bot: Bot,
        silences: SilenceStore,
        *,
        remediator: Remediator | None = None,
        guard: CommandGuard | None = None,
    ) -> None:
        self.bot = bot
        self._silences = silences
        self.remediator = remediator
        self.guard = guard

    @property
    def silences(self) -> SilenceStore:
        return self._silences

    def known_groups(self) -> Mapping[str, Sequence[str]]:
        store = self.bot.checker.store
        return {cluster.name: sorted(store.groups(cluster.name)) for cluster in self.bot.settings.clusters}

    def latest_summaries(self) -> Sequence[GroupSummary]:
        return [s for c in self.bot.settings.clusters for s in self.bot.current_summaries(c.name)]

    def check_group(self, cluster: str, group: str) -> GroupVerdict:
        """A fresh check of the group, its causes with the owners' pods as the incident thread shows them."""
        return self._with_pods(self._fresh(cluster, group))

    def _fresh(self, cluster: str, group: str) -> GroupVerdict:
        settings = self.bot.settings
        only = settings.cluster(cluster).model_copy(
            update={"groups": settings.cluster(cluster).groups.model_copy(update={"include": [re.escape(group)]})}
        )
        narrowed = settings.model_copy(update={"clusters": [only]})
        checker = Checker(
            narrowed,
            self.bot.checker.store.private_copy(cluster, [group]),  # never writes the shared window
            clock=self.bot.clock,
            admin_factory=lambda config: self.bot.checker.admin(config.name),  # the bot's client, not a new one
            thresholds_for=self.bot.thresholds_for,  # the policy's thresholds, as the scheduled checks use
        )
        checker.sample([cluster])
        verdicts = checker.judge_stored(cluster, [group])
        if not verdicts:
            raise LookupError(f"group {group!r} has no window on cluster {cluster!r} after a fresh check")
        return verdicts[0]

    def _with_pods(self, verdict: GroupVerdict) -> GroupVerdict:
        """The verdict with what its blamed owners' pods show on its causes, as the incident thread shows them
        (lagbot.service.pod_causes, through the remediator's readings: a pod read within their time is not read
        again). No remediator, no workload, or pods that cannot be read: the verdict as the broker sees it."""
        if self.remediator is None:
            return verdict
        try:
            return self.remediator.explained(verdict, now=self.bot.clock())
        except Exception:  # the group's answer never fails for its pods
            log.exception("pod evidence failed", extra={"group": verdict.group, "cluster": verdict.cluster})
            return verdict

    def post_digest(self, channel: str) -> None:
        self.bot.digest(digest_config_for(self.bot.settings, channel))

    def audit(self, cluster: str, group: str) -> Reply:
        return audit_reply(self.bot, cluster, group)

    def remediate(self, cluster: str, group: str, action: str, user: str, *, args: Sequence[str]) -> Reply:
        if self.remediator is None:
            raise NotImplementedError  # a bot without remediations: "not available" (lagbot.slack.subcommands)
        verdict = self._fresh(cluster, group)  # its pods are read by the remediation that needs them
        return remediate_reply(self.remediator, verdict, action, user, args, now=self.bot.clock())

    def report(self, channel: str, days: int, *, public: bool) -> Reply:
        from lagbot.slack.history_replies import report_reply

        return report_reply(self.bot, channel, days, public=public, now=self.bot.clock())

    def history(self, cluster: str, group: str, days: int, *, public: bool) -> Reply:
        from lagbot.slack.history_replies import history_reply

        return history_reply(self.bot, cluster, group, days, public=public, now=self.bot.clock())

    def thresholds(self, cluster: str, group: str, days: int) -> Reply:
        from lagbot.slack.history_replies import thresholds_reply

        return thresholds_reply(self.bot, cluster, group, days, now=self.bot.clock())

    def run(self, text: str, user: str, channel: str) -> Reply:
        """One `/lag` text: behind the guard (ids, rate limits, the policy's word) when one is set."""
        if self.guard is not None:
            return self.guard.run(text, self, user=user, channel=channel, now=self.bot.clock())
        return run_command(text, self, user=user, channel=channel, now=self.bot.clock())
