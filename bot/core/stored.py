"""What comes back from Redis: bytes (the clients here do not decode), turned into text in one place."""

from __future__ import annotations


def text(value: object) -> str:
    """A Redis reply (bytes, or already str) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)
