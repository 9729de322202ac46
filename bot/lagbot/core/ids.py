"""Slack's ids of users and channels, checked before lagbot stores, mentions or posts to one."""

from __future__ import annotations

import re

USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")
CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,20}")


def valid_user(user: str) -> bool:
    """Whether `user` is a Slack user id (U... or W...), safe inside a `<@...>` mention."""
    return USER_ID.fullmatch(user) is not None
