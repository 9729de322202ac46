"""Every Redis key lagbot uses, built here and nowhere else.

The scheme, stated once:

- A key is `lagbot:<kind>:<part>:<part>...`. The kinds are fixed words chosen here (`window`, `incident`, ...), and
  each kind has a fixed number of parts, so the number of ':' in a key says which kind and form it is.
- Every part that comes from outside (a cluster from the config; a group name, which any Kafka client can create
  with one offset commit; an incident or proposal id; a Slack user or usergroup id) goes through `part`, which
  writes ASCII letters, digits, '.', '_' and '-' as they are and every other character as '%XX' per byte of its
  UTF-8 (so '%' itself, ':', the glob characters `*?[]`, Redis Cluster's hash-tag braces, spaces, newlines,
  control and bidi characters never reach a key as themselves).
- `part` is injective and its output never holds ':', so two different (kind, parts) never make the same key:
  a group named `billing:seq` is `lagbot:window:<cluster>:billing%3Aseq`, never the sequence key
  `lagbot:window:<cluster>:billing:seq` of the group `billing`.

The names every lagbot already used for ordinary names (letters, digits, `._-`) are unchanged, so the stored state
of a running deployment is found again after an upgrade.
"""

from __future__ import annotations

import re

PREFIX = "lagbot"

_PLAIN = re.compile(r"[A-Za-z0-9._-]*")


def part(value: str) -> str:
    """`value` as one part of a key: see the module's scheme."""
    if _PLAIN.fullmatch(value):
        return value
    return "".join(
        char if _PLAIN.fullmatch(char) else "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        for char in value
    )


def unpart(value: str) -> str:
    """The value `part` wrote (the inverse of `part`)."""
    if "%" not in value:
        return value
    data = bytearray()
    i = 0
    while i < len(value):
        if value[i] == "%":
            data.append(int(value[i + 1 : i + 3], 16))
            i += 3
        else:
            data += value[i].encode()
            i += 1
    return data.decode("utf-8", "surrogatepass")


def _key(kind: str, *parts: str) -> str:
    return ":".join((PREFIX, kind, *(part(p) for p in parts)))


# -- the windows (lagbot.engine.window) -------------------------------------------------------------------------


def window(cluster: str, group: str) -> str:
    """The group's bounded list of observations."""
    return _key("window", cluster, group)


def window_seq(cluster: str, group: str) -> str:
    """The sequence number of the group's list."""
    return window_seq_of(window(cluster, group))


def window_seq_of(window_key: str) -> str:
    """`window_seq` from the list's key."""
    return window_key + ":seq"


def window_groups(cluster: str) -> str:
    """The cluster's groups with a window, scored by their last append."""
    return _key("window-groups", cluster)


# -- the lag history (lagbot.service.history) -------------------------------------------------------------------


def history_chunk(cluster: str, chunk: int, group: str) -> str:
    before, after = history_chunk_affixes(cluster, group)
    return f"{before}{chunk}{after}"


def history_chunk_affixes(cluster: str, group: str) -> tuple[str, str]:
    """What comes before and after the chunk number in `history_chunk` (a script builds chunk keys from them)."""
    return f"{_key('history', cluster)}:", f":{part(group)}"


def history_chunks(cluster: str, group: str) -> str:
    return _key("history-chunks", cluster, group)


def history_groups(cluster: str) -> str:
    return _key("history-groups", cluster)


# -- the history's rollups (lagbot.service.rollups) ---------------------------------------------------------------


def rollup_day_affixes(cluster: str, group: str) -> tuple[str, str]:
    """What comes before and after the day number in a day's rollups of a group (a script builds the keys)."""
    return f"{_key('rollup', cluster)}:", f":{part(group)}"


def rollup_days(cluster: str, group: str) -> str:
    return _key("rollup-days", cluster, group)


def rollup_groups(cluster: str) -> str:
    return _key("rollup-groups", cluster)


# -- incidents, silences, the audit trail, the summary ----------------------------------------------------------


def incident(cluster: str, group: str) -> str:
    return _key("incident", cluster, group)


INCIDENTS_PATTERN = f"{PREFIX}:incident:*"
"""SCAN pattern of every `incident` key (its parts hold no glob character: they are escaped)."""

INCIDENTS_CHANGED = f"{PREFIX}:incidents:changed"
INCIDENTS_BY_ID = f"{PREFIX}:incidents:by-id"


def silence(cluster: str, group: str) -> str:
    return _key("silence", cluster, group)


SILENCES = f"{PREFIX}:silences"

AUDIT = f"{PREFIX}:audit"


def audit(cluster: str, group: str) -> str:
    return _key("audit", cluster, group)


def summary(cluster: str) -> str:
    return _key("summary", cluster)


# -- incident storms (lagbot.service.storms) ---------------------------------------------------------------------


def storm_channel(channel: str) -> str:
    """A channel's newest incident openings and its storm, if one is on."""
    return _key("storm-channel", channel)


def storm(storm_id: str) -> str:
    """One storm's summary state (its summary thread is the outbox's, under the storm id)."""
    return _key("storm", storm_id)


def storm_members(storm_id: str) -> str:
    """The incidents folded into one storm's summary, by incident id."""
    return _key("storm-members", storm_id)


STORMS = f"{PREFIX}:storms:live"
"""The storms whose summary may still change (on, or with incidents still open)."""


# -- proposals, approvals and runs --------------------------------------------------------------------------------


def proposal(proposal_id: str) -> str:
    return _key("proposal", proposal_id)


def proposal_approvals(proposal_id: str) -> str:
    return proposal(proposal_id) + ":approvals"


def proposal_approval_order(proposal_id: str) -> str:
    return proposal(proposal_id) + ":approvals:order"


def proposal_message(proposal_id: str) -> str:
    """Where the proposal's buttons were posted (channel, ts) and what that message held."""
    return proposal(proposal_id) + ":message"


PROPOSALS_RUNNING = f"{PREFIX}:proposals:running"
PROPOSALS_HEARTBEAT = f"{PREFIX}:proposals:heartbeat"
PROPOSALS_EXPIRING = f"{PREFIX}:proposals:expiring"
"""Sorted set: proposal id -> its expiry, until the proposal is retired (expired, approved, denied)."""
PROPOSALS_UNRETIRED = f"{PREFIX}:proposals:unretired"
"""Sorted set: proposal id -> when it expired, for an expired proposal whose message was not yet posted (its reply
still in the outbox): the sweep retires the message once it is there."""


def cooldown(cluster: str, group: str, action: str) -> str:
    return _key("cooldown", cluster, group, action)


def busy(cluster: str, group: str) -> str:
    return _key("busy", cluster, group)


def offered(incident_id: str) -> str:
    return _key("offered", incident_id)


def refused(incident_id: str) -> str:
    """Hash: action -> why the live system refused it (a pod's evidence), once said in the incident's thread."""
    return _key("refused", incident_id)


def remediation(incident_id: str) -> str:
    return _key("remediation", incident_id)


def root_shown(incident_id: str) -> str:
    """What an incident's root last showed (lagbot.service.edits): whether the next edit is news."""
    return _key("root-shown", incident_id)


RESTORES = f"{PREFIX}:restores"
RESTORES_PREVIOUS = f"{PREFIX}:restores:previous"


# -- delivery to Slack (lagbot.service.outbox) --------------------------------------------------------------------

OUTBOX_PENDING = f"{PREFIX}:outbox:pending"
OUTBOX_DEAD = f"{PREFIX}:outbox:dead"
OUTBOX_PROGRESS = f"{PREFIX}:outbox:progress"
OUTBOX_LOCK = f"{PREFIX}:outbox:lock"


def outbox_root(incident_id: str) -> str:
    return _key("outbox", "root", incident_id)


def outbox_root_replaced(incident_id: str) -> str:
    return outbox_root(incident_id) + ":replaced"


def outbox_root_body(incident_id: str) -> str:
    return _key("outbox", "rootbody", incident_id)


def outbox_table(incident_id: str) -> str:
    """Where the incident's first reply (its per-partition table) is: edited with the root."""
    return _key("outbox", "table", incident_id)


def outbox_queue(incident_id: str) -> str:
    return _key("outbox", "queue", incident_id)


def outbox_sending(incident_id: str) -> str:
    """The incident's newest posts begun (lagbot.service.sent_marks): one still queued may have landed."""
    return _key("outbox", "sending", incident_id)


# -- replicas ---------------------------------------------------------------------------------------------------


def lease(name: str) -> str:
    return _key("lease", name)


def fence_of(lock_key: str) -> str:
    """The fencing counter of a lock (lagbot.service.lease.FencedLock) kept at `lock_key`."""
    return lock_key + ":fence"


STATE_EPOCH = f"{PREFIX}:state:epoch"


def state_epoch_told(epoch: str) -> str:
    """The channels told that the stored state was lost, in the epoch that followed the loss."""
    return _key("state", "epoch", "told", epoch)


# -- the Slack edge -------------------------------------------------------------------------------------------------


def seen(signature: str) -> str:
    """A request signature already answered (replays)."""
    return _key("seen", signature)


def rate(scope: str, ident: str, window: int) -> str:
    """A fixed-window use counter of one user (or channel) in one scope."""
    return _key("rate", scope, ident, str(window))


def usergroup(usergroup_id: str) -> str:
    """A Slack usergroup's members, cached."""
    return _key("usergroup", usergroup_id)
