"""What a policy rule sets for a drain: the sinks a user may name (`/lag remediate <group> drain <sink>`).

The configured default sink is the operator's choice and needs no allow-list; a sink a user names must be
on the rule's, and an internal topic (a name starting with `__`) is never written, whoever names it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lagbot.core import messages, patterns
from lagbot.remediations.base import PolicyParams
from lagbot.remediations.drain import wording
from lagbot.remediations.drain.sinks import parse_sink

MAX_SINK = 200
"""The longest sink a user may name: it must fit, whole, in the approve button's confirm dialog."""


class DrainSinks(BaseModel):
    """Where a user may ask a drain to write (`/lag remediate <group> drain <sink>`): Parquet paths or
    URLs under one of `paths`, Kafka topics whose whole name matches `topics`. Empty: only the default
    sink of lagbot's configuration. Internal topics (a name starting with `__`) are never allowed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: tuple[str, ...] = ()
    topics: str | None = None

    @field_validator("paths")
    @classmethod
    def _prefixes(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            if not (path.startswith("/") or "://" in path) or ".." in path.split("/"):
                raise ValueError(wording.policy_bad_sink_prefix(path))
        return tuple(p.rstrip("/") or "/" for p in paths)

    @field_validator("topics")
    @classmethod
    def _topic_regex(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            return patterns.check(pattern)
        except patterns.UnsafePattern as exc:
            raise ValueError(messages.refused_regex(pattern, exc)) from None

    def refusal(self, url: str, kind: str) -> str | None:
        """Why a parsed sink (`url`, `kind` "parquet" or "replay") may not be written; None when it may."""
        if len(url) > MAX_SINK:
            return wording.sink_too_long(MAX_SINK)
        if kind == "replay":
            topic = url.removeprefix("kafka:")
            if topic.startswith("__"):
                return wording.sink_internal_topic(topic)
            if self.topics is None or not patterns.fullmatch(self.topics, topic):
                return wording.sink_topic_not_allowed(topic, self.topics)
            return None
        if ".." in url.split("/") or not any(url == p or url.startswith(p.rstrip("/") + "/") for p in self.paths):
            return wording.sink_path_not_allowed(url, self.paths)
        return None


class DrainPolicy(PolicyParams):
    """What a policy rule sets for a drain."""

    sinks: DrainSinks = Field(default_factory=DrainSinks)


def sink_refusal(policy: PolicyParams | None, sink: str, *, named_by_user: bool) -> str | None:
    """Why a drain may not write to `sink` (already parsed) under the rule's drain policy (None: the rule does not
    allow drains): a sink a user named must be on the rule's allow-list; the configured default sink is the
    operator's choice, but never an internal topic."""
    parsed = parse_sink(sink)
    if named_by_user and isinstance(policy, DrainPolicy):
        return policy.sinks.refusal(parsed.url, parsed.kind)
    if parsed.kind == "replay" and sink.removeprefix("kafka:").startswith("__"):
        return wording.sink_internal_topic(sink.removeprefix("kafka:"))
    return None
