"""Frames on the pipes between the trusted side and the jailed child.

A frame is ``u32 header length | JSON header | raw buffers``. The header is ``{"msg": {...}, "bufs": [n0, n1, ...]}``
where ``bufs`` lists the byte length of each raw buffer that follows. No pickle, ever: a hostile child can only
send JSON and bytes, and every length is checked against a cap before anything is read or allocated.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from graders.sandbox.errors import WireError

MAX_HEADER_BYTES = 4 * 1024 * 1024
_LEN = struct.Struct("<I")

# Reverse calls (docs/sandbox.md, "Trusted functions"). While it serves a request, the child may send
#   {"op": CALLBACK, "id": <that request's id>, "seq": 1, 2, ..., "h": <handle>, "args": [...], "kwargs": {...}}
# and then waits; the trusted side answers each with
#   {"op": CALLBACK_REPLY, "id": ..., "seq": ..., "ok": true, "value": ...}  or  {..., "error": ..., "message": ...}
# and goes on waiting for the request's own reply. Nothing else may come in between.
CALLBACK, CALLBACK_REPLY = "callback", "callback_reply"


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
    """Incremental, cap-checked frame parser: feed it bytes as they arrive (or let it read an fd), pop frames.

    Built to survive a hostile writer: a giant declared length is refused before it is buffered, a header that is
    not the expected JSON shape is refused, and nothing is ever evaluated. Once a header is parsed, each raw buffer
    is allocated once at its declared size and filled in place (``read_from`` reads the fd straight into it): a
    payload is never held twice, nor copied out of a growing read buffer.
    """

    def __init__(self, max_payload_bytes: int) -> None:
        self.max_payload_bytes = max_payload_bytes
        self._buf = bytearray()  # received, not yet placed: length prefix, header, or bytes after the frame
        self._header: dict[str, Any] | None = None
        self._bufs: list[bytearray] = []
        self._index = 0  # the buffer being filled
        self._offset = 0  # bytes already in it

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        if self._header is not None and not self._buf:
            view = self._fill(view)
        if view.nbytes:
            self._buf += view

    def read_from(self, fd: int, limit: int) -> int:
        """Read at most ``limit`` bytes from ``fd``, into the pending buffer itself when a payload is due.

        Returns the number of bytes read, 0 at end of file. OSError (BlockingIOError included) propagates.
        """
        if self._header is not None and not self._buf and not self._complete():
            target = memoryview(self._bufs[self._index])[self._offset : self._offset + limit]
            n = os.readv(fd, [target])
            self._fill(memoryview(b""), advance=n)
            return n
        chunk = os.read(fd, min(limit, max(self.wanted(), 65536)))
        self.feed(chunk)
        return len(chunk)

    def wanted(self) -> int:
        """How many more bytes the current frame needs (at least 1 when nothing is pending)."""
        if self._header is None:
            if len(self._buf) < _LEN.size:
                return _LEN.size - len(self._buf)
            (hlen,) = _LEN.unpack_from(self._buf)
            return max(1, _LEN.size + hlen - len(self._buf)) if hlen <= MAX_HEADER_BYTES else 1
        placed = sum(len(b) for b in self._bufs[: self._index]) + self._offset
        return max(1, sum(len(b) for b in self._bufs) - placed - len(self._buf))

    def pop(self) -> Frame | None:
        """The next complete frame, or None if more bytes are needed. Raises WireError on a malformed frame."""
        if self._header is None:
            if not self._parse_header():
                return None
            if self._buf:  # bytes that arrived with the header: place them
                rest = self._fill(memoryview(self._buf))
                self._buf = bytearray(rest)
        if not self._complete():
            return None
        assert self._header is not None
        frame = Frame(self._header, self._bufs)
        self._header, self._bufs, self._index, self._offset = None, [], 0, 0
        return frame

    def _complete(self) -> bool:
        while self._index < len(self._bufs) and self._offset == len(self._bufs[self._index]):
            self._index, self._offset = self._index + 1, 0
        return self._index == len(self._bufs)

    def _fill(self, view: memoryview, advance: int = 0) -> memoryview:
        """Copy ``view`` into the pending buffers (or count ``advance`` bytes read in place); return the rest."""
        if advance:
            self._offset += advance
            self._complete()
        while view.nbytes and not self._complete():
            buf = self._bufs[self._index]
            n = min(view.nbytes, len(buf) - self._offset)
            buf[self._offset : self._offset + n] = view[:n]
            view, self._offset = view[n:], self._offset + n
        return view

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
        del self._buf[: _LEN.size + hlen]
        self._header, self._bufs, self._index, self._offset = msg, [bytearray(n) for n in sizes], 0, 0
        return True


# JSON may spell half of a surrogate pair alone ("\ud800"): json.loads keeps it in the string (a whole pair becomes
# one character), and a text holding one cannot be encoded as UTF-8: a student's exception message with one made
# the stored feedback a 500 on every page and API answer that showed it. UTF-8 bytes cannot hold a surrogate, so
# a header without such an escape has none; with one, each lone half becomes U+FFFD.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: Any) -> Any:
    """``value`` (a JSON tree) with each lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    return value


def _parse_header_json(raw: bytes) -> tuple[dict[str, Any], list[int]]:
    try:
        header = json.loads(raw)
        if _SURROGATE_ESCAPE.search(raw):
            header = scrub_surrogates(header)
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
        if reader.read_from(fd, 1 << 22) == 0:
            return None


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a blocking fd."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
