"""The words of an incident storm's one summary message (lagbot.slack.render, lagbot.service.storms)."""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import (
    count,
    duration,
    slack_escape,
    slack_name,
)
from lagbot.slack.wording.incidents import SEVERITY_EMOJI


def storm_headline(folded: int, still_open: int, threshold: int, window: float, ended: bool) -> str:
    open_now = f"*{count(still_open)}* still open" if still_open else "every one resolved"
    if not ended:
        return (
            f":cyclone: *Incident storm*: *{count(folded)}* new incidents in this channel past the limit of "
            f"{count(threshold)} in {duration(window)}, {open_now}. Each is tracked as usual; instead of a thread "
            "each, this one message shows them."
        )
    return (
        f":cyclone: *Incident storm over*: no more than {count(threshold)} new incidents in {duration(window)}. "
        f"*{count(folded)}* incidents were folded here, {open_now}"
        + (": they stay in this summary until they resolve." if still_open else ".")
    )


def storm_fallback(folded: int, still_open: int, ended: bool) -> str:
    state = "over" if ended else "on"
    return (
        f"Incident storm {state}: {count(folded)} new incidents folded into one summary, {count(still_open)} still open"
    )


def storm_member(cluster: str, group: str, severity: str, peak_lag: int | None, is_open: bool) -> str:
    emoji = SEVERITY_EMOJI.get(severity, "") if is_open else SEVERITY_EMOJI["ok"]
    state = f"*{severity.upper()}*" if is_open else "resolved"
    return f"{emoji} {slack_name(group)} on {slack_name(cluster)}: {state}, peak lag {count(peak_lag)}"


def storm_worst_title(shown: int, total: int) -> str:
    return f"*Worst first* ({shown} of {count(total)}):"


def storm_more(n: int) -> str:
    return f"… and {count(n)} more (`/lag top` lists every group in trouble)."


def storm_advice(clusters: Sequence[str], prefix_regex: str) -> str:
    """How to narrow the watch; the example is YAML a user can paste: the regex single-quoted (a backslash is literal
    there, a quote doubled), so `re.escape`'s backslashes parse."""
    where = ", ".join(slack_name(c) for c in clusters) or "the cluster"
    quoted = prefix_regex.replace("'", "''")
    example = f" (for these, e.g. `exclude: ['{slack_escape(quoted)}.*']`)" if prefix_regex else ""
    return (
        f":mag: *Narrow the watch* of {where}: in the configuration, `clusters[].groups.exclude` drops groups by "
        f"regex{example}, or `groups.include` lists only the groups you own (both whole-name matches). "
        "`/lag silence <group>` quiets one group."
    )


def storm_since(started: str) -> str:
    return f"storm since {started} UTC"
