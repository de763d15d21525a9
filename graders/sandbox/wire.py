"""Frames on the pipes between the trusted side and the jailed child.

A frame is ``u32 header length | JSON header | raw buffers``. The header is ``{"msg": {...}, "bufs": [n0, n1, ...]}``
where ``bufs`` lists the byte length of each raw buffer that follows. No pickle, ever: a hostile child can only
send JSON and bytes, and every length is checked against a cap before anything is read or allocated.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

from graders.sandbox.errors import WireError

MAX_HEADER_BYTES = 4 * 1024 * 1024
_LEN = struct.Struct("<I")


@dataclass
class Frame:
    msg: dict[str, Any]
    buffers: list[bytearray] = field(default_factory=list)


def encode_frame(msg: dict[str, Any], buffers: list[Any] | None = None) -> bytes:
    """Serialise one frame; ``buffers`` are bytes-like objects (bytes, memoryview, numpy arrays)."""
    views = [memoryview(b).cast("B") for b in buffers or []]
    header = json.dumps({"msg": msg, "bufs": [v.nbytes for v in views]}, separators=(",", ":")).encode()
    if len(header) > MAX_HEADER_BYTES:
        raise WireError(f"frame header of {len(header)} bytes exceeds {MAX_HEADER_BYTES}")
    return b"".join([_LEN.pack(len(header)), header, *views])


class FrameReader:
    """Incremental, cap-checked frame parser: feed it bytes as they arrive, pop complete frames.

    Built to survive a hostile writer: a giant declared length is refused before it is buffered, a header that is
    not the expected JSON shape is refused, and nothing is ever evaluated.
    """

    def __init__(self, max_payload_bytes: int) -> None:
        self.max_payload_bytes = max_payload_bytes
        self._buf = bytearray()
        self._header: tuple[dict[str, Any], list[int], int] | None = None

    def feed(self, data: bytes) -> None:
        self._buf += data

    def wanted(self) -> int:
        """How many more bytes the current frame needs (at least 1 when nothing is pending)."""
        if self._header is None:
            if len(self._buf) < _LEN.size:
                return _LEN.size - len(self._buf)
            (hlen,) = _LEN.unpack_from(self._buf)
            return max(1, _LEN.size + hlen - len(self._buf)) if hlen <= MAX_HEADER_BYTES else 1
        _, sizes, start = self._header
        return max(1, start + sum(sizes) - len(self._buf))

    def pop(self) -> Frame | None:
        """The next complete frame, or None if more bytes are needed. Raises WireError on a malformed frame."""
        if self._header is None and not self._parse_header():
            return None
        assert self._header is not None
        msg, sizes, start = self._header
        if len(self._buf) < start + sum(sizes):
            return None
        buffers, pos = [], start
        for n in sizes:
            buffers.append(bytearray(self._buf[pos : pos + n]))
            pos += n
        del self._buf[:pos]
        self._header = None
        return Frame(msg, buffers)

    def _parse_header(self) -> bool:
        if len(self._buf) < _LEN.size:
            return False
        (hlen,) = _LEN.unpack_from(self._buf)
        if hlen > MAX_HEADER_BYTES:
            raise WireError(f"frame header of {hlen} bytes exceeds {MAX_HEADER_BYTES}")
        if len(self._buf) < _LEN.size + hlen:
            return False
        msg, sizes = _parse_header_json(bytes(self._buf[_LEN.size : _LEN.size + hlen]))
        if sum(sizes) > self.max_payload_bytes:
            raise WireError(f"frame payload of {sum(sizes)} bytes exceeds {self.max_payload_bytes}")
        self._header = (msg, sizes, _LEN.size + hlen)
        return True


def _parse_header_json(raw: bytes) -> tuple[dict[str, Any], list[int]]:
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise WireError(f"frame header is not valid JSON: {type(exc).__name__}") from None
    if not isinstance(header, dict) or not isinstance(header.get("msg"), dict):
        raise WireError("frame header must be an object with a 'msg' object")
    sizes = header.get("bufs", [])
    if not isinstance(sizes, list) or len(sizes) > 100_000:
        raise WireError("frame header 'bufs' must be a list of byte lengths")
    if not all(type(n) is int and n >= 0 for n in sizes):
        raise WireError("frame header 'bufs' must hold non-negative integers")
    return header["msg"], sizes


def read_frame_blocking(fd: int, reader: FrameReader) -> Frame | None:
    """Read one frame from a blocking fd (used inside the child). None at end of file."""
    while True:
        frame = reader.pop()
        if frame is not None:
            return frame
        chunk = os.read(fd, min(max(reader.wanted(), 65536), 1 << 22))
        if not chunk:
            return None
        reader.feed(chunk)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a blocking fd."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
