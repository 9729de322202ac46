"""Who may approve: a rule's Slack users, plus the members of its Slack user groups, looked up and cached.

User groups are resolved with Slack's `usergroups.users.list` and cached for `ttl` seconds, in memory (one
bot) or in Redis (several replicas share the answers; versioned JSON, reading refuses unknown versions).
The clock is passed in (`now`), so expiry is tested without waiting.

Failure is closed and loud: when a user group cannot be looked up and the user is not an approver by any
other entry, `ApproversUnavailable` says which group and why, rather than answering "not an approver".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.policies import wording
from lagbot.policies.model import Approvers, Rule

CACHE_VERSION = 1
DEFAULT_TTL = 300.0


@dataclass(frozen=True)
class CachedUsergroup:
    """A user group's members as the Redis cache keeps them, valid until `expires_at`."""

    expires_at: float
    users: tuple[str, ...]


CACHE_CODEC = codec.register(codec.Codec("cached user group", CachedUsergroup, CACHE_VERSION))


class ApproversUnavailable(Exception):
    """A user group could not be resolved, so whether someone may approve is not known."""


class UsergroupCache(Protocol):
    """Members of user groups, each entry valid until its expiry (`now` passed in)."""

    def get(self, usergroup: str, *, now: float) -> frozenset[str] | None:
        """The cached members, or None when absent or expired."""
        ...

    def put(self, usergroup: str, users: frozenset[str], *, now: float, ttl: float) -> None:
        """Keep `users` as the members of `usergroup` until now + ttl."""
        ...


class MemoryUsergroupCache:
    """A cache in this process."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, frozenset[str]]] = {}

    def get(self, usergroup: str, *, now: float) -> frozenset[str] | None:
        entry = self._entries.get(usergroup)
        if entry is None or now >= entry[0]:
            return None
        return entry[1]

    def put(self, usergroup: str, users: frozenset[str], *, now: float, ttl: float) -> None:
        self._entries[usergroup] = (now + ttl, users)


class RedisUsergroupCache:
    """A cache shared by bot replicas: `lagbot:usergroup:<id>` (lagbot.core.keys) -> {"v": 1, "expires_at", "users"}.

    The entry's own expiry (from `now`) decides; Redis also drops it after the ttl (and a second), so stale
    entries do not accumulate.
    """

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    @staticmethod
    def key(usergroup: str) -> str:
        return redis_keys.usergroup(usergroup)

    def get(self, usergroup: str, *, now: float) -> frozenset[str] | None:
        raw = self._redis.get(self.key(usergroup))
        if raw is None:
            return None
        entry = CACHE_CODEC.decode(raw)
        return None if now >= entry.expires_at else frozenset(entry.users)

    def put(self, usergroup: str, users: frozenset[str], *, now: float, ttl: float) -> None:
        entry = CachedUsergroup(expires_at=now + ttl, users=tuple(sorted(users)))
        self._redis.set(self.key(usergroup), CACHE_CODEC.encode(entry), ex=math.ceil(ttl) + 1)


class ApproverDirectory:
    """Answers "may this Slack user approve under this rule?", looking user groups up through Slack."""

    def __init__(self, client: WebClient, *, cache: UsergroupCache | None = None, ttl: float = DEFAULT_TTL) -> None:
        if ttl <= 0:
            raise ValueError("the cache needs a positive ttl")
        self._client = client
        self._cache: UsergroupCache = cache if cache is not None else MemoryUsergroupCache()
        self._ttl = ttl

    def members(self, usergroup: str, *, now: float) -> frozenset[str]:
        """The user ids in `usergroup`, from the cache or else from Slack (then cached)."""
        cached = self._cache.get(usergroup, now=now)
        if cached is not None:
            return cached
        try:
            response = self._client.usergroups_users_list(usergroup=usergroup)
        except SlackApiError as exc:
            raise ApproversUnavailable(
                wording.usergroup_lookup_failed(usergroup, str(exc.response.get("error")))
            ) from exc
        except (SlackClientError, OSError) as exc:
            raise ApproversUnavailable(wording.usergroup_lookup_failed(usergroup, str(exc))) from exc
        users = frozenset(str(u) for u in response.get("users") or ())
        self._cache.put(usergroup, users, now=now, ttl=self._ttl)
        return users

    def approvers(self, rule: Rule, *, now: float) -> frozenset[str]:
        """Every user id that may approve under `rule` (its users and its user groups' members)."""
        found = set(rule.approvers.users)
        for usergroup in rule.approvers.usergroups:
            found |= self.members(usergroup, now=now)
        return frozenset(found)

    def is_approver(self, rule: Rule, user_id: str, now: float) -> bool:
        """Whether `user_id` may approve under `rule`; a listed user needs no lookup.

        Raises:
            ApproversUnavailable: a user group could not be resolved and no other entry names the user.
        """
        return self.is_listed(rule.approvers, user_id, now)

    def is_listed(self, listed: Approvers, user_id: str, now: float) -> bool:
        """Whether `user_id` is one of `listed` (its users, or a member of its user groups).

        Raises:
            ApproversUnavailable: a user group could not be resolved and no other entry names the user.
        """
        if user_id in listed.users:
            return True
        failure: ApproversUnavailable | None = None
        for usergroup in listed.usergroups:
            try:
                if user_id in self.members(usergroup, now=now):
                    return True
            except ApproversUnavailable as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
        return False
