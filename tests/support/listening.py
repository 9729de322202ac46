"""Which TCP addresses a process listens on, read from /proc (no tool needed)."""

from __future__ import annotations

import os
import re
from pathlib import Path


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket process `pid` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        match = re.fullmatch(r"socket:\[(\d+)\]", target)
        if match:
            inodes.add(match.group(1))
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.add((address_of(address), int(port, 16)))
    return found


def address_of(hex_address: str) -> str:
    """/proc's hex address as text: IPv4 dotted, an IPv4-mapped IPv6 as its IPv4, other IPv6 as hex."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]  # /proc prints IPv6 as four little-endian words
    joined = b"".join(words)
    if joined[:12] == b"\x00" * 10 + b"\xff\xff":
        return ".".join(str(b) for b in joined[12:])
    return joined.hex()
