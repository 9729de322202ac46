"""The stores of proposals (lagbot.service.approvals `Proposals`): in Redis, and their twin in this process.

`ProposalStore` keeps each proposal in a Redis hash: its fields that change one by one (state, approvals, detail),
and the ones that never change as one versioned document (`ProposalDocument`). Every transition is one Lua script on
the proposal's hash, so replicas racing each other get exactly one "run"; the cooldown of (cluster, group, action)
and the group's "an action is running" hold are taken in the same script. `MemoryProposals` does the same under one
lock, for a bot without Redis (lagbot.service.stores `memory_stores`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.stored import StoredFormatError, check_version, text
from lagbot.remediations.base import Plan
from lagbot.service.approvals import Approval, Proposal, Proposals, State, Verdict, new_proposal

PROPOSAL_VERSION = 1
"""A proposal is a Redis hash (its fields change one by one, atomically): the version is its field "v", which the
approve script (_APPROVE) checks too."""
KEEP_AFTER_EXPIRY = 7 * 86_400
"""Proposals stay readable this long after they expire (the audit stream keeps them for good)."""


@dataclass(frozen=True)
class ProposalDocument:
    """The fields of a proposal that never change, kept as one document in its hash (field "doc")."""

    cluster: str
    group: str
    action: str
    plan: str
    """The plan's own stored document (lagbot.remediations.base.Plan.to_json)."""
    created_at: float
    cooldown: float
    channel: str | None = None
    incident_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


PROPOSAL_DOC_CODEC = codec.register(
    codec.Codec("stored proposal", ProposalDocument, 1, {codec.UNVERSIONED: lambda document: document})
)
"""Version 0: the same fields, written before the document carried its own version (the hash's "v" was 1)."""


# KEYS[1] = proposal hash, KEYS[2] = its approvals set, KEYS[3] = cooldown key, KEYS[4] = approvals in order,
# KEYS[5] = the group's "an action is running" lease, KEYS[6] = running proposals by deadline
# ARGV = user, now, cooldown (ms), proposal id, longest run (ms), deadline (now + longest run)
_APPROVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing', ''} end
if redis.call('HGET', KEYS[1], 'v') ~= '1' then return {'version', ''} end
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'expired' then return {'expired', ''} end
if state ~= 'proposed' then return {'not_proposed', state} end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[1], 'expires_at')) then return {'expired', ''} end
local required = tonumber(redis.call('HGET', KEYS[1], 'approvals_required'))
if required >= 2 and redis.call('HGET', KEYS[1], 'requested_by') == ARGV[1] then return {'requester', ''} end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return {'again', ''} end
if redis.call('SCARD', KEYS[2]) + 1 >= required then
    if redis.call('EXISTS', KEYS[3]) == 1 then return {'cooldown', tostring(redis.call('PTTL', KEYS[3]))} end
    local busy = redis.call('GET', KEYS[5])
    if busy then return {'busy', busy} end
end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[4], ARGV[1])
redis.call('EXPIRE', KEYS[2], redis.call('TTL', KEYS[1]))
redis.call('EXPIRE', KEYS[4], redis.call('TTL', KEYS[1]))
if redis.call('SCARD', KEYS[2]) < required then return {'recorded', ''} end
redis.call('HSET', KEYS[1], 'state', 'running', 'started_at', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3]) end
redis.call('SET', KEYS[5], ARGV[4], 'PX', ARGV[5])
redis.call('ZADD', KEYS[6], ARGV[6], ARGV[4])
return {'run', ''}
"""
# KEYS[1] = proposal hash, KEYS[2] = the group's running lease, KEYS[3] = running proposals by deadline
# ARGV = new state, detail, finished at, proposal id. Only a running proposal finishes, once; its lease goes.
_FINISH = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'detail', ARGV[2], 'finished_at', ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
redis.call('ZREM', KEYS[3], ARGV[4])
return 1
"""
# KEYS[1] = proposal hash, KEYS[2] = proposals by expiry; ARGV = now, proposal id. A proposal still proposed and
# past its expiry becomes expired (finished at its expiry), once: 1 to the one caller that did it. Whatever it
# returns, the proposal leaves the expiry set unless it is still proposed and not yet due.
_EXPIRE = """
local state = redis.call('HGET', KEYS[1], 'state')
local expires = redis.call('HGET', KEYS[1], 'expires_at')
if state == 'proposed' and expires and tonumber(ARGV[1]) <= tonumber(expires) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[2])
if state ~= 'proposed' or redis.call('HGET', KEYS[1], 'v') ~= '1' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'expired', 'finished_at', expires)
return 1
"""
# KEYS[1] = proposal hash; ARGV = expected state, new state, field, value, field, value ...
_MOVE = """
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[2])
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""


class MemoryProposals(Proposals):
    """Proposals in this process (one lock makes each step atomic, as a script is in Redis); `clock` runs the
    cooldowns and the groups' holds, as Redis's expiry does."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._proposals: dict[str, Proposal] = {}
        self._expiring: dict[str, float] = {}
        self._running: dict[str, float] = {}
        self._cooldowns: dict[tuple[str, str, str], float] = {}
        """(cluster, group, action) -> when its cooldown ends, on the clock."""
        self._busy: dict[tuple[str, str], tuple[str, float]] = {}
        """(cluster, group) -> the running proposal holding it, until when on the clock."""

    def create(
        self,
        plan: Plan,
        *,
        requested_by: str,
        now: float,
        expires_in: float,
        approvals_required: int,
        cooldown: float,
        channel: str | None = None,
        incident_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Proposal:
        proposal = new_proposal(plan, requested_by=requested_by, now=now, expires_in=expires_in,
                                approvals_required=approvals_required, cooldown=cooldown, channel=channel,
                                incident_id=incident_id, extra=extra)  # fmt: skip
        with self._lock:
            self._proposals[proposal.id] = proposal
            self._expiring[proposal.id] = proposal.expires_at
        return proposal

    def get(self, proposal_id: str) -> Proposal | None:
        with self._lock:
            return self._proposals.get(proposal_id)

    def approve(self, proposal_id: str, user: str, *, now: float, longest_run: float = 3600.0) -> Approval:
        with self._lock:
            verdict, detail = self._approve(proposal_id, user, now, longest_run)
            return Approval(verdict, self._proposals.get(proposal_id), detail)

    def _approve(self, proposal_id: str, user: str, now: float, longest_run: float) -> tuple[Verdict, str]:
        current = self._proposals.get(proposal_id)
        if current is None:
            return Verdict.MISSING, ""
        if current.state is State.EXPIRED:
            return Verdict.EXPIRED, ""
        if current.state is not State.PROPOSED:
            return Verdict.NOT_PROPOSED, current.state.value
        if now > current.expires_at:
            return Verdict.EXPIRED, ""
        if current.approvals_required >= 2 and current.requested_by == user:
            return Verdict.REQUESTER, ""
        if user in current.approvals:
            return Verdict.AGAIN, ""
        clock, group = self._clock(), (current.cluster, current.group)
        if len(current.approvals) + 1 >= current.approvals_required:
            cooldown_until = self._cooldowns.get((*group, current.action), 0.0)
            if cooldown_until > clock:
                return Verdict.COOLDOWN, str(int((cooldown_until - clock) * 1000))
            holder, held_until = self._busy.get(group, ("", 0.0))
            if held_until > clock:
                return Verdict.BUSY, holder
        approved = replace(current, approvals=(*current.approvals, user))
        self._proposals[proposal_id] = approved
        if len(approved.approvals) < approved.approvals_required:
            return Verdict.RECORDED, ""
        self._proposals[proposal_id] = replace(approved, state=State.RUNNING)
        if approved.cooldown > 0:
            self._cooldowns[(*group, approved.action)] = clock + approved.cooldown
        self._busy[group] = (proposal_id, clock + longest_run)
        self._running[proposal_id] = now + longest_run
        return Verdict.RUN, ""

    def finish(self, proposal_id: str, *, ok: bool, detail: str, now: float) -> bool:
        with self._lock:
            current = self._proposals.get(proposal_id)
            if current is None or current.state is not State.RUNNING:
                return False
            state = State.SUCCEEDED if ok else State.FAILED
            self._proposals[proposal_id] = replace(current, state=state, detail=detail, finished_at=now)
            group = (current.cluster, current.group)
            if self._busy.get(group, ("", 0.0))[0] == proposal_id:
                del self._busy[group]
            self._running.pop(proposal_id, None)
            return True

    def overdue(self, *, now: float) -> list[str]:
        with self._lock:
            return [i for i, deadline in sorted(self._running.items(), key=_by_score) if deadline <= now]

    def deny(self, proposal_id: str, *, user: str, reason: str, now: float) -> bool:
        with self._lock:
            current = self._proposals.get(proposal_id)
            if current is None or current.state_at(now) is not State.PROPOSED:
                return False
            self._proposals[proposal_id] = replace(
                current, state=State.DENIED, detail=reason, denied_by=user, finished_at=now
            )
            return True

    def expiring(self, *, now: float) -> list[str]:
        with self._lock:
            return [i for i, expires in sorted(self._expiring.items(), key=_by_score) if expires <= now]

    def retire(self, proposal_id: str, *, now: float) -> bool:
        with self._lock:
            current = self._proposals.get(proposal_id)
            if current is not None and current.state is State.PROPOSED and now <= current.expires_at:
                return False
            self._expiring.pop(proposal_id, None)
            if current is None or current.state is not State.PROPOSED:
                return False
            self._proposals[proposal_id] = replace(current, state=State.EXPIRED, finished_at=current.expires_at)
            return True

    def in_cooldown(self, cluster: str, group: str, action: str) -> float:
        with self._lock:
            return max(0.0, self._cooldowns.get((cluster, group, action), 0.0) - self._clock())


def _by_score(item: tuple[str, float]) -> tuple[float, str]:
    """A sorted set's order: by score, then by member."""
    return item[1], item[0]


class ProposalStore(Proposals):
    """Proposals in Redis: one hash each (versioned), their approvers in a set, cooldowns as keys."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._approve = client.register_script(_APPROVE)
        self._move = client.register_script(_MOVE)
        self._finish = client.register_script(_FINISH)
        self._expire = client.register_script(_EXPIRE)
        self._running = redis_keys.PROPOSALS_RUNNING
        self._expiring = redis_keys.PROPOSALS_EXPIRING

    @staticmethod
    def _key(proposal_id: str) -> str:
        return redis_keys.proposal(proposal_id)

    @staticmethod
    def cooldown_key(cluster: str, group: str, action: str) -> str:
        return redis_keys.cooldown(cluster, group, action)

    def create(
        self,
        plan: Plan,
        *,
        requested_by: str,
        now: float,
        expires_in: float,
        approvals_required: int,
        cooldown: float,
        channel: str | None = None,
        incident_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Proposal:
        proposal = new_proposal(plan, requested_by=requested_by, now=now, expires_in=expires_in,
                                approvals_required=approvals_required, cooldown=cooldown, channel=channel,
                                incident_id=incident_id, extra=extra)  # fmt: skip
        document = ProposalDocument(
            cluster=proposal.cluster,
            group=proposal.group,
            action=proposal.action,
            plan=plan.to_json(),
            created_at=now,
            cooldown=cooldown,
            channel=channel,
            incident_id=incident_id,
            extra=proposal.extra,
        )
        key = self._key(proposal.id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(
            key,
            mapping={
                "v": str(PROPOSAL_VERSION),
                "state": State.PROPOSED.value,
                "expires_at": repr(proposal.expires_at),
                "approvals_required": str(approvals_required),
                "requested_by": requested_by,
                "doc": PROPOSAL_DOC_CODEC.encode(document),
            },
        )
        pipe.expire(key, int(expires_in + KEEP_AFTER_EXPIRY))
        pipe.zadd(self._expiring, {proposal.id: proposal.expires_at})
        pipe.execute()
        return proposal

    def get(self, proposal_id: str) -> Proposal | None:
        data = {text(k): text(v) for k, v in self._redis.hgetall(self._key(proposal_id)).items()}
        if not data:
            return None
        kind = f"stored proposal {proposal_id}"
        check_version(kind, PROPOSAL_VERSION, data.get("v"))
        document = PROPOSAL_DOC_CODEC.decode(data.get("doc", ""), kind=kind)
        approvals = tuple(text(u) for u in self._redis.lrange(redis_keys.proposal_approval_order(proposal_id), 0, -1))
        try:
            return Proposal(
                id=proposal_id,
                cluster=document.cluster,
                group=document.group,
                action=document.action,
                plan=Plan.from_json(document.plan),
                requested_by=data["requested_by"],
                created_at=document.created_at,
                expires_at=float(data["expires_at"]),
                approvals_required=int(data["approvals_required"]),
                cooldown=document.cooldown,
                channel=document.channel,
                incident_id=document.incident_id,
                state=State(data["state"]),
                approvals=approvals,
                detail=data.get("detail", ""),
                denied_by=data.get("denied_by"),
                finished_at=float(data["finished_at"]) if "finished_at" in data else None,
                extra=dict(document.extra),
            )
        except (KeyError, ValueError) as exc:  # a field of the hash missing or not a number or state
            raise StoredFormatError(f"{kind} is not one lagbot wrote: {exc}") from None

    @staticmethod
    def busy_key(cluster: str, group: str) -> str:
        return redis_keys.busy(cluster, group)

    def approve(self, proposal_id: str, user: str, *, now: float, longest_run: float = 3600.0) -> Approval:
        """Count `user`'s approval atomically. Verdict RUN means: the caller executes the plan, now.

        A run holds its group for at most `longest_run` seconds: no other remediation of that group starts
        meanwhile (BUSY), and past it `overdue` reports the run as interrupted (its process died).
        """
        current = self.get(proposal_id)
        if current is None:
            return Approval(Verdict.MISSING, None)
        key = self._key(proposal_id)
        cooldown = self.cooldown_key(current.cluster, current.group, current.action)
        busy = self.busy_key(current.cluster, current.group)
        result = self._approve(
            keys=[
                key,
                redis_keys.proposal_approvals(proposal_id),
                cooldown,
                redis_keys.proposal_approval_order(proposal_id),
                busy,
                self._running,
            ],
            args=[
                user,
                repr(now),
                int(current.cooldown * 1000),
                proposal_id,
                int(longest_run * 1000),
                repr(now + longest_run),
            ],
        )
        outcome, detail = (text(x) for x in result)
        if outcome == "version":
            raise StoredFormatError(f"stored proposal {proposal_id} has an unknown format version")
        return Approval(Verdict(outcome), self.get(proposal_id), detail)

    def finish(self, proposal_id: str, *, ok: bool, detail: str, now: float) -> bool:
        """running -> succeeded / failed, releasing the group. False when it was not running (finished already)."""
        current = self.get(proposal_id)
        if current is None:
            return False
        state = State.SUCCEEDED if ok else State.FAILED
        moved = self._finish(
            keys=[self._key(proposal_id), self.busy_key(current.cluster, current.group), self._running],
            args=[state.value, detail, repr(now), proposal_id],
        )
        return bool(moved)

    def overdue(self, *, now: float) -> list[str]:
        """Running proposals past their longest run: their process died or hung without finishing them."""
        return [text(i) for i in self._redis.zrangebyscore(self._running, "-inf", repr(now))]

    def deny(self, proposal_id: str, *, user: str, reason: str, now: float) -> bool:
        """proposed -> denied (not when expired: it can no longer run anyway). False otherwise."""
        current = self.get(proposal_id)
        if current is None or current.state_at(now) is not State.PROPOSED:
            return False
        moved = self._move(
            keys=[self._key(proposal_id)],
            args=[
                State.PROPOSED.value,
                State.DENIED.value,
                "detail",
                reason,
                "denied_by",
                user,
                "finished_at",
                repr(now),
            ],
        )
        return bool(moved)

    def expiring(self, *, now: float) -> list[str]:
        """Proposals whose expiry is not after `now` and that were not retired yet (some were approved or denied
        meanwhile, or are gone from Redis: `retire` drops them too)."""
        return [text(i) for i in self._redis.zrangebyscore(self._expiring, "-inf", repr(now))]

    def retire(self, proposal_id: str, *, now: float) -> bool:
        """proposed and past its expiry -> expired, atomically: True for the one caller that did it (it then
        retires the proposal's message). A proposal in any other state just leaves the expiry set."""
        return bool(self._expire(keys=[self._key(proposal_id), self._expiring], args=[repr(now), proposal_id]))

    def in_cooldown(self, cluster: str, group: str, action: str) -> float:
        """Seconds of cooldown left for this action on this group (0 when none)."""
        ms = int(self._redis.pttl(self.cooldown_key(cluster, group, action)))
        return max(0, ms) / 1000.0
