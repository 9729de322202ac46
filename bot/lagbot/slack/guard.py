"""What stands between a signed `/lag` request and its work: a valid user, rate limits, the policy's word.

- The user and channel ids Slack sends are checked before anything uses them (a mention is built from them).
- Every command counts against its user's and its channel's rate limit (fixed windows in Redis, shared by
  the replicas); over the limit, the user is asked politely to wait and nothing runs.
- A command that changes something runs only for someone the matching policy rule lists: `silence` and
  `unsilence` its silencers (default: its approvers), `remediate` its approvers. A refusal is answered and
  written to the audit trail; nothing is changed.
- `/lag digest` posts in a channel only where a digest (or the default channel) is configured; anywhere
  else it is sent to the caller alone. Each target gets at most `digests` per `digest_every`.
"""

from __future__ import annotations

import math
from collections.abc import Collection

import redis

from lagbot.core import keys, messages
from lagbot.core.config import CommandLimits
from lagbot.core.ids import CHANNEL_ID, valid_user
from lagbot.policies.approvers import ApproverDirectory, ApproversUnavailable
from lagbot.policies.model import Policy
from lagbot.service.audit import AuditEntry, AuditTrail
from lagbot.slack.command_parse import Command, CommandError, Digest, NamesGroup, resolve_group
from lagbot.slack.commands import CommandDeps, Reply, respond_safely, text_reply
from lagbot.slack.subcommands import Permission, parse, run_command, subcommand_of
from lagbot.slack.wording import commands as wording


class RateLimiter:
    """Fixed-window counters in Redis: `lagbot:rate:<scope>:<id>:<window>`, expiring with their window."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def hit(self, scope: str, ident: str, *, most: int, every: float, now: float) -> float:
        """Count one use; 0.0 when within the limit, else the seconds until the window ends."""
        window = math.floor(now / every)
        key = keys.rate(scope, ident, window)
        pipe = self._redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, math.ceil(every) + 1)
        used = int(pipe.execute()[0])
        return 0.0 if used <= most else (window + 1) * every - now


class Refusal(Exception):
    """A command not admitted; `reply` says why."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.text)
        self.reply = reply


class CommandGuard:
    """Runs `/lag` commands for one replica behind the checks above (see the module's docstring)."""

    def __init__(
        self,
        *,
        client: redis.Redis,
        policy: Policy,
        directory: ApproverDirectory,
        audit: AuditTrail,
        limits: CommandLimits,
        digest_channels: Collection[str],
    ) -> None:
        self.limiter = RateLimiter(client)
        self.policy = policy
        self.directory = directory
        self.audit = audit
        self.limits = limits
        self.digest_channels = frozenset(digest_channels)

    def run(self, text: str, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
        """The reply to one `/lag` text: a refusal, or what lagbot.slack.subcommands.run_command answers."""

        def work() -> Reply:
            try:
                target = self._admit(text, deps, user=user, channel=channel, now=now)
            except Refusal as refused:
                return refused.reply
            return run_command(text, deps, user=user, channel=target, now=now)

        return respond_safely(work, command_text=text, user=user, channel=channel)

    def _admit(self, text: str, deps: CommandDeps, *, user: str, channel: str, now: float) -> str:
        """The channel the command works in, once admitted. Raises Refusal."""
        if not valid_user(user) or CHANNEL_ID.fullmatch(channel) is None:
            raise Refusal(text_reply(messages.command_bad_user(user)))
        limits = self.limits
        self._limit("user", user, limits.per_user, limits.every, now)
        self._limit("channel", channel, limits.per_channel, limits.every, now)
        try:
            command = parse(text)
        except CommandError:
            return channel  # run_command answers with the error and its usage
        if isinstance(command, Digest):
            target = channel if channel in self.digest_channels else user
            self._limit("digest", target, limits.digests, limits.digest_every, now)
            return target
        self._authorise(command, deps, user=user, now=now)
        return channel

    def _limit(self, scope: str, ident: str, most: int, every: float, now: float) -> None:
        wait = self.limiter.hit(scope, ident, most=most, every=every, now=now)
        if wait > 0:
            raise Refusal(text_reply(wording.command_rate_limited(scope, wait)))

    def _authorise(self, command: Command, deps: CommandDeps, *, user: str, now: float) -> None:
        """Refuse (and audit) a command by someone its subcommand's permission does not admit; reads pass."""
        subcommand = subcommand_of(command)
        if subcommand.permission is Permission.ANYONE:
            return
        if not isinstance(command, NamesGroup):
            raise TypeError(f"/lag {subcommand.name} is for {subcommand.permission.value} but names no group")
        what, silencing = subcommand.name, subcommand.permission is Permission.SILENCERS
        for cluster, group in self._targets(command, deps, now=now):
            rule = self.policy.match(cluster, group)
            try:
                allowed = self.directory.is_listed(rule.may_silence() if silencing else rule.approvers, user, now)
            except ApproversUnavailable as exc:
                raise Refusal(text_reply(wording.command_cannot_check(what, str(exc)))) from None
            if not allowed:
                reason = f"not listed by policy rule {rule.name}"
                self.audit.record(AuditEntry(now, "refused", cluster, group, user, what, None, {"reason": reason}))
                raise Refusal(text_reply(wording.command_not_allowed(what, rule.name, group)))

    def _targets(self, command: NamesGroup, deps: CommandDeps, *, now: float) -> list[tuple[str, str]]:
        """The (cluster, group) the command would change; when the name does not resolve, every cluster it
        could mean (the command then fails on the name, but never passes for lack of a rule to ask)."""
        known = {cluster: list(groups) for cluster, groups in deps.known_groups().items()}
        for s in deps.silences.all_active(now):  # unsilence also lifts silences of vanished groups
            known.setdefault(s.cluster, [])
            if s.group not in known[s.cluster]:
                known[s.cluster].append(s.group)
        try:
            return [resolve_group(command.group, command.cluster, known)]
        except CommandError:
            clusters = [command.cluster] if command.cluster is not None else sorted(known)
            return [(cluster, command.group) for cluster in clusters]
