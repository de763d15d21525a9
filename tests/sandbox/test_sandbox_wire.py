"""The wire protocol: round trips, and decoding that survives a hostile child."""

from __future__ import annotations

import json
import math
import os
import struct
import threading

import pytest
import torch

from graders.sandbox import codec, wire
from graders.sandbox.errors import WireError

CAPS = codec.Caps(max_elements=1000, max_bytes=64 * 1024)


def roundtrip(value, caps=CAPS):
    tree, buffers = codec.encode_value(value, caps)
    reader = wire.FrameReader(caps.max_bytes)
    reader.feed(wire.encode_frame({"value": tree}, buffers))
    frame = reader.pop()
    assert frame is not None
    return codec.decode_value(frame.msg["value"], frame.buffers, caps)


def test_values_round_trip_exactly():
    value = {
        "t": torch.arange(6, dtype=torch.float64).reshape(2, 3).t(),  # non-contiguous
        "b": torch.tensor([True, False]),
        "h": torch.ones(2, dtype=torch.bfloat16),
        "e": torch.empty(0, 5),
        "s": torch.tensor(3.5),
        "nums": [1, 2.5, float("nan"), float("inf"), True, None, "x", 10**30],
        "tup": (1, (2,)),
    }
    got = roundtrip(value)
    assert torch.equal(got["t"], value["t"]) and got["t"].dtype == torch.float64
    assert got["b"].dtype == torch.bool and got["b"].tolist() == [True, False]
    assert got["h"].dtype == torch.bfloat16 and got["e"].shape == (0, 5) and got["s"].shape == ()
    assert math.isnan(got["nums"][2]) and got["nums"][3] == math.inf and got["nums"][7] == 10**30
    assert got["tup"] == (1, (2,)) and type(got["nums"]) is list


@pytest.mark.parametrize(
    "value",
    [torch.ones(2).as_subclass(type("Sub", (torch.Tensor,), {})), type("S", (str,), {})("x"), object(), b"bytes"],
)
def test_non_plain_values_are_refused(value):
    with pytest.raises(codec.ValueRefused, match="expected tensors, numbers, strings"):
        codec.encode_value(value, CAPS)


def test_caps_are_enforced_when_encoding():
    with pytest.raises(codec.ValueRefused, match="elements"):
        codec.encode_value(torch.zeros(1001), CAPS)
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(codec.ValueRefused, match="nested deeper"):
        codec.encode_value(deep, CAPS)


def _frame(header: bytes, payload: bytes = b"") -> bytes:
    return struct.pack("<I", len(header)) + header + payload


HOSTILE = {
    "giant_header": struct.pack("<I", 0xFFFFFFFF),
    "not_json": _frame(b"\xff\xfe{"),
    "not_object": _frame(b"[1,2]"),
    "negative_buffer": _frame(b'{"msg":{},"bufs":[-1]}'),
    "giant_payload": _frame(b'{"msg":{},"bufs":[1099511627776]}'),
    "deep_json": _frame(b'{"msg":' + b"[" * 100000 + b"]" * 100000 + b"}"),
}


@pytest.mark.parametrize("data", HOSTILE.values(), ids=HOSTILE.keys())
def test_malformed_frames_raise_wire_error(data):
    reader = wire.FrameReader(CAPS.max_bytes)
    reader.feed(data)
    with pytest.raises(WireError):
        reader.pop()


BAD_TREES = {
    "bad_dtype": ({"t": "tensor", "dtype": "object", "shape": [1], "b": 0}, [bytearray(8)]),
    "short_buffer": ({"t": "tensor", "dtype": "float64", "shape": [2], "b": 0}, [bytearray(8)]),
    "missing_buffer": ({"t": "tensor", "dtype": "float64", "shape": [1], "b": 3}, []),
    "reused_buffer": (
        {"t": "list", "v": [{"t": "tensor", "dtype": "uint8", "shape": [1], "b": 0}] * 2},
        [bytearray(1)],
    ),
    "huge_shape": ({"t": "tensor", "dtype": "float64", "shape": [0, 2**62], "b": 0}, [bytearray()]),
    "too_many_elements": ({"t": "tensor", "dtype": "uint8", "shape": [2000], "b": 0}, [bytearray(2000)]),
    "bool_shape": ({"t": "tensor", "dtype": "uint8", "shape": [True], "b": 0}, [bytearray(1)]),
    "unknown_tag": ({"t": "pickle", "v": "..."}, []),
    "raw_list": ([1, 2], []),
    "ref_refused": ({"t": "ref", "n": "x"}, []),
    "function_handle_refused": ({"t": "fn", "h": "0123456789abcdef"}, []),
    "dict_non_str_key": ({"t": "dict", "v": [[1, 2]]}, []),
}


@pytest.mark.parametrize(("tree", "buffers"), BAD_TREES.values(), ids=BAD_TREES.keys())
def test_malformed_values_raise_wire_error(tree, buffers):
    with pytest.raises(WireError):
        codec.decode_value(json.loads(json.dumps(tree)), buffers, CAPS)


def test_function_handles_cross_only_where_both_sides_ask_for_them():
    sent: dict[str, object] = {}

    def fn_of(value):
        if callable(value):
            sent["h"] = "0123456789abcdef"
            return sent["h"]
        return None

    tree, buffers = codec.encode_value((len, torch.ones(2)), CAPS, fn_of=fn_of)
    assert tree["v"][0] == {"t": "fn", "h": "0123456789abcdef"}
    got = codec.decode_value(tree, buffers, CAPS, resolve_fn=lambda h: ("handle", h))
    assert got[0] == ("handle", sent["h"]) and torch.equal(got[1], torch.ones(2))
    with pytest.raises(codec.ValueRefused):  # no fn_of: a function is refused like any other object
        codec.encode_value(len, CAPS)
    for handle in (None, 5, "", "h" * 65, ["x"]):
        with pytest.raises(WireError, match="handle"):
            codec.decode_value({"t": "fn", "h": handle}, [], CAPS, resolve_fn=lambda h: h)


def test_bool_bytes_are_sanitised():
    tree = {"t": "tensor", "dtype": "bool", "shape": [3], "b": 0}
    got = codec.decode_value(tree, [bytearray([0, 1, 7])], CAPS)
    assert got.tolist() == [False, True, True]


def test_frames_split_across_reads():
    data = wire.encode_frame({"a": 1}, [b"xyz"]) * 2
    reader = wire.FrameReader(100)
    frames = []
    for byte in data:
        reader.feed(bytes([byte]))
        frame = reader.pop()
        if frame is not None:
            frames.append(frame)
    assert [(f.msg, bytes(f.buffers[0])) for f in frames] == [({"a": 1}, b"xyz")] * 2


def test_read_from_fills_preallocated_buffers_without_a_growing_read_buffer():

    payload = [bytes(range(256)) * 16384, b"", b"tail"]  # 4 MiB, an empty buffer, 4 bytes
    data = wire.encode_frame({"op": "x"}, payload) + wire.encode_frame({"op": "y"})
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (wire.write_all(w, data), os.close(w)))
    writer.start()
    reader = wire.FrameReader(8 * 2**20)
    frames, staged = [], 0
    while True:
        frame = reader.pop()
        if frame is not None:
            frames.append(frame)
            continue
        staged = max(staged, len(reader._buf))
        if reader.read_from(r, 1 << 20) == 0:
            break
    writer.join()
    os.close(r)
    assert [f.msg for f in frames] == [{"op": "x"}, {"op": "y"}]
    assert [bytes(b) for b in frames[0].buffers] == payload
    assert staged <= 65536 + 64  # never more than one small read beyond a header


def test_feed_byte_by_byte_across_frames():
    data = wire.encode_frame({"a": 1}, [b"xyz", b""]) + wire.encode_frame({"b": 2}, [b"q"])
    reader = wire.FrameReader(100)
    frames = []
    for byte in data:
        reader.feed(bytes([byte]))
        frame = reader.pop()
        if frame is not None:
            frames.append(frame)
    assert [(f.msg, [bytes(b) for b in f.buffers]) for f in frames] == [({"a": 1}, [b"xyz", b""]), ({"b": 2}, [b"q"])]


def test_a_lone_surrogate_half_arrives_as_a_replacement_character():
    """A child can write "\\ud800" in a header (chr(0xD800) in an exception message): the trusted side gets U+FFFD,
    so what it stores can be encoded as UTF-8; a whole pair and a written-out backslash stay as they are."""
    msg = {"error": "bad " + chr(0xD800) + " and " + chr(0xDFFF), "ok": "😀 \\ud800", chr(0xDC00): [chr(0xD83D)]}
    reader = wire.FrameReader(1024)
    reader.feed(wire.encode_frame(msg))
    frame = reader.pop()
    assert frame is not None
    assert frame.msg == {"error": "bad \ufffd and \ufffd", "ok": "😀 \\ud800", "\ufffd": ["\ufffd"]}
    json.dumps(frame.msg, ensure_ascii=False).encode("utf-8")  # encodable: no surrogate is left
