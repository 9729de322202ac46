"""What the Slack emulator received, counted as the storm tests read it."""

from __future__ import annotations

from lagbot.devkit.emulator import SlackEmulator


def posts(slack: SlackEmulator, channel: str, *, roots: bool) -> int:
    """chat.postMessage calls the emulator answered in `channel`: roots (no thread) or replies."""
    return sum(
        1
        for c in slack.calls_to("chat.postMessage")
        if c.args.get("channel") == channel and (c.args.get("thread_ts") is None) == roots
    )


def edits_of(slack: SlackEmulator, ts: str) -> list[str]:
    """The texts of the chat.update calls of one message, in order."""
    return [str(c.args["text"]) for c in slack.calls_to("chat.update") if c.args.get("ts") == ts]
