"""Socket Mode for the Slack emulator: the WebSocket side of Slack, over plain TCP on 127.0.0.1.

Slack's Socket Mode: the app calls apps.connections.open with its app token, opens the WebSocket URL it
gets, receives `hello`, then envelopes (`slash_commands`, `interactive`, ...) that it must acknowledge
with their `envelope_id` (optionally with a response payload). This module holds the WebSocket framing
(RFC 6455: server frames unmasked, client frames masked) and one connection's read loop; the emulator
hands it the socket of an upgraded HTTP request.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import struct
import threading
from typing import Any, BinaryIO

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a client's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def frame(opcode: int, payload: bytes) -> bytes:
    """One final, unmasked frame (server to client)."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


def read_frame(stream: BinaryIO) -> tuple[int, bytes] | None:
    """(opcode, payload) of the next frame, unmasked; None at end of stream."""
    head = stream.read(2)
    if len(head) < 2:
        return None
    opcode, masked, n = head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", stream.read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", stream.read(8))[0]
    mask = stream.read(4) if masked else b""
    data = stream.read(n)
    if masked:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return opcode, data


class SocketConnection:
    """One app connection: send envelopes, collect the acknowledgements the app sends back."""

    def __init__(self, sock: socket.socket, stream: BinaryIO, app_id: str) -> None:
        self._sock = sock
        self._stream = stream
        self._lock = threading.Lock()
        self.acks: dict[str, dict[str, Any]] = {}
        self.closed = threading.Event()
        self.app_id = app_id

    def send_json(self, document: dict[str, Any]) -> None:
        with self._lock:
            self._sock.sendall(frame(TEXT, json.dumps(document).encode()))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self.closed.set()

    def hello(self) -> None:
        self.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": self.app_id}})

    def serve(self) -> None:
        """Read frames until the app closes: answer pings, record envelope acknowledgements."""
        try:
            while (got := read_frame(self._stream)) is not None:
                opcode, data = got
                if opcode == PING:
                    with self._lock:
                        self._sock.sendall(frame(PONG, data))
                elif opcode == TEXT:
                    message = json.loads(data)
                    if "envelope_id" in message:
                        self.acks[str(message["envelope_id"])] = message
                elif opcode == CLOSE:
                    with self._lock:
                        self._sock.sendall(frame(CLOSE, data[:2]))
                    break
        except (OSError, ValueError):
            pass
        finally:
            self.closed.set()
