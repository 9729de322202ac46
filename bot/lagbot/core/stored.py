"""Everything lagbot keeps in Redis goes through here: one versioned JSON codec, one error.

- Keys are built in lagbot.core.keys (`lagbot:<kind>:...`, names escaped), so that a shared Redis shows whose keys
  they are, a replica never reads another program's and no name makes another's key.
- Documents: JSON objects with their format version under "v". Every stored type is a frozen dataclass whose
  codec (lagbot.core.codec) writes and reads them, upgrading older versions; `encode` / `decode` here are what it
  and the window entries (lagbot.engine.window, built straight into arrays) use. Compact rows (the lag history,
  kept small for Redis's compact encodings) carry the version as their first item (`decode_row`).
- A document in another format version, or not one lagbot wrote, raises `StoredFormatError` naming what it was:
  stored state is never guessed at.
- Replies come back as bytes (the clients here do not decode): `text` turns them into text in one place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class StoredFormatError(ValueError):
    """Something stored in Redis is in a format version this lagbot does not read, or is not what it wrote."""


def text(value: object) -> str:
    """A Redis reply (bytes, or already str) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def encode(version: int, document: Mapping[str, Any], *, sort_keys: bool = True) -> str:
    """Compact JSON of `document` with its format version under "v"."""
    return json.dumps({"v": version, **document}, sort_keys=sort_keys, separators=(",", ":"))


def _loads(kind: str, raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        raise StoredFormatError(f"{kind} is not JSON") from None


def decode(kind: str, version: int, raw: bytes | str, *, also: tuple[object, ...] = ()) -> dict[str, Any]:
    """The document `encode` wrote, without its "v". `also`: older versions still read the same way."""
    document = _loads(kind, raw)
    found = document.pop("v", None) if isinstance(document, dict) else None
    if found != version and found not in also:
        raise StoredFormatError(f"{kind} has format version {found!r}; this lagbot reads {version}")
    assert isinstance(document, dict)
    return document


def decode_row(kind: str, version: int, raw: bytes | str) -> list[Any]:
    """A compact row whose first item is its format version, without it."""
    row = _loads(kind, raw)
    found = row[0] if isinstance(row, list) and row else None
    if found != version:
        raise StoredFormatError(f"{kind} has format version {found!r}; this lagbot reads {version}")
    return list(row[1:])


def check_version(kind: str, version: int, found: object) -> None:
    """For stores whose version is a field of a Redis hash (read back as text)."""
    if found != str(version):
        raise StoredFormatError(f"{kind} has format version {found!r}; this lagbot reads {version}")
