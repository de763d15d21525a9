"""Values on the wire: tensors, Python scalars, strings and lists/tuples/dicts of those, plus named references
and handles of trusted functions.

A value becomes a JSON tree (every JSON object is a tagged node) and a list of raw tensor buffers. Only exact
built-in types are accepted (``type(x) is float``, not isinstance): a subclass can carry student code (``__eq__``,
``__float__``, ``__torch_function__``) into the checker, so it is refused with a message the student understands.

A function handle (``{"t": "fn", "h": ...}``) is how the trusted side hands the child a function that stays on the
trusted side: only the random handle crosses, and the child turns it into an opaque callable whose calls are
reverse calls over the pipes (``child.TrustedCallable``). Only a sender with ``fn_of`` writes one and only a
receiver with ``resolve_fn`` accepts one: the trusted side never accepts a handle, so a callback's arguments or a
student's return value cannot carry one back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from graders.sandbox.errors import WireError

DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
EXPECTED = "expected tensors, numbers, strings or lists/tuples/dicts of those"
MAX_NDIM = 16
MAX_INT_BITS = 4096


class ValueRefused(WireError):
    """A value that may not cross the boundary; the message is meant for the student."""


@dataclass(frozen=True)
class Caps:
    max_depth: int = 32
    max_items: int = 100_000
    max_elements: int = 64 * 1024 * 1024
    max_bytes: int = 256 * 1024 * 1024


# Arguments and results of reverse calls (the child calling a trusted function): small by design, so that the
# trusted side never runs a trusted function on more than this, whatever the student passes.
CALLBACK_CAPS = Caps(max_depth=8, max_items=1000, max_elements=4 * 1024 * 1024, max_bytes=16 * 1024 * 1024)
MAX_HANDLE_CHARS = 64


@dataclass(frozen=True)
class WireRef:
    """A name resolved on the receiving side (the child's table of instructor-defined helpers)."""

    name: str


def _describe(value: Any) -> str:
    try:
        return repr(type(value))
    except Exception:
        return "an object of an unprintable type"


class _Encoder:
    def __init__(
        self, caps: Caps, ref_of: Callable[[Any], str | None] | None, fn_of: Callable[[Any], str | None] | None
    ) -> None:
        self.caps, self.ref_of, self.fn_of = caps, ref_of, fn_of
        self.buffers: list[Any] = []
        self.items = 0
        self.nbytes = 0

    def encode(self, v: Any, where: str, depth: int) -> Any:
        self.items += 1
        if self.items > self.caps.max_items:
            raise ValueRefused(f"more than {self.caps.max_items} values in total; that is too many")
        if depth > self.caps.max_depth:
            raise ValueRefused(f"a value nested deeper than {self.caps.max_depth} levels at {where or 'top level'}")
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            if v.bit_length() > MAX_INT_BITS:
                raise ValueRefused(f"an integer with more than {MAX_INT_BITS} bits at {where or 'top level'}")
            return v
        if t is float:
            return v if math.isfinite(v) else {"t": "float", "v": repr(v)}
        if t is list or t is tuple:
            items = [self.encode(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
            return {"t": "list" if t is list else "tuple", "v": items}
        if t is dict:
            return {"t": "dict", "v": [self._pair(k, x, where, depth) for k, x in v.items()]}
        if t is torch.Tensor:
            return self._tensor(v, where)
        if t is WireRef:
            return {"t": "ref", "n": v.name}
        name = self.ref_of(v) if self.ref_of is not None else None
        if name is not None:
            return {"t": "ref", "n": name}
        handle = self.fn_of(v) if self.fn_of is not None else None
        if handle is not None:
            return {"t": "fn", "h": handle}
        raise ValueRefused(f"a {_describe(v)}{' at ' + where if where else ''}; {EXPECTED}")

    def _pair(self, k: Any, x: Any, where: str, depth: int) -> list[Any]:
        if type(k) is not str:
            raise ValueRefused(f"a dict key of {_describe(k)} at {where or 'top level'}; dict keys must be strings")
        return [k, self.encode(x, f"{where}[{k!r}]", depth + 1)]

    def _tensor(self, v: torch.Tensor, where: str) -> dict[str, Any]:
        at = f" at {where}" if where else ""
        # Name the real reason: a meta, quantized or nested tensor has the strided layout too.
        kind = next(
            (name for name, bad in (("meta", v.device.type == "meta"), ("quantized", v.is_quantized),
                                    ("nested", v.is_nested)) if bad),
            None if v.layout == torch.strided else str(v.layout).replace("torch.", ""),
        )  # fmt: skip
        if kind is not None:
            raise ValueRefused(f"a {kind} tensor{at}; only dense tensors with data are accepted")
        if v.dtype not in _DTYPE_NAMES:
            raise ValueRefused(f"a tensor of dtype {v.dtype}{at}; that dtype is not supported")
        numel = v.numel()
        if numel > self.caps.max_elements:
            raise ValueRefused(f"a tensor with {numel} elements{at}; the limit is {self.caps.max_elements}")
        self.nbytes += numel * v.element_size()
        if self.nbytes > self.caps.max_bytes:
            raise ValueRefused(f"more than {self.caps.max_bytes // 2**20} MiB of tensor data; that is too much")
        flat = v.detach().resolve_conj().resolve_neg().to("cpu").contiguous().reshape(-1)
        raw = flat.view(torch.uint8) if numel else torch.empty(0, dtype=torch.uint8)
        self.buffers.append(raw.numpy())
        return {
            "t": "tensor",
            "dtype": _DTYPE_NAMES[v.dtype],
            "shape": list(v.shape),
            "b": len(self.buffers) - 1,
            "dev": v.device.type,
        }


def encode_value(
    value: Any,
    caps: Caps,
    *,
    ref_of: Callable[[Any], str | None] | None = None,
    fn_of: Callable[[Any], str | None] | None = None,
) -> tuple[Any, list[Any]]:
    """Turn a value into (JSON tree, raw buffers). Raises ValueRefused with a student-readable message.

    Args:
        ref_of: the name of a value to send as a reference, or None.
        fn_of: the handle of a value to send as a trusted function, or None (the trusted side's proxy only).
    """
    enc = _Encoder(caps, ref_of, fn_of)
    tree = enc.encode(value, "", 0)
    return tree, enc.buffers


class _Decoder:
    def __init__(
        self,
        buffers: list[bytearray],
        caps: Caps,
        resolve_ref: Callable[[str], Any] | None,
        device: Callable[[str], torch.device] | None,
        resolve_fn: Callable[[str], Any] | None = None,
    ) -> None:
        self.buffers, self.caps, self.resolve_ref, self.device = buffers, caps, resolve_ref, device
        self.resolve_fn = resolve_fn
        self.used: set[int] = set()
        self.items = 0

    def decode(self, node: Any, depth: int) -> Any:
        self.items += 1
        if self.items > self.caps.max_items or depth > self.caps.max_depth:
            raise WireError("value exceeds the nesting or size caps")
        if node is None or type(node) in (bool, str, float):
            return node
        if type(node) is int:
            if node.bit_length() > MAX_INT_BITS:
                raise WireError("integer too large")
            return node
        if type(node) is not dict:
            raise WireError(f"unexpected JSON node of type {type(node).__name__}")
        tag = node.get("t")
        if tag in ("list", "tuple"):
            items = node.get("v")
            if type(items) is not list:
                raise WireError(f"{tag} node without items")
            out = [self.decode(x, depth + 1) for x in items]
            return out if tag == "list" else tuple(out)
        if tag == "dict":
            return self._dict(node.get("v"), depth)
        if tag == "float":
            return _special_float(node.get("v"))
        if tag == "tensor":
            return self._tensor(node)
        if tag == "ref":
            return self._ref(node.get("n"))
        if tag == "fn":
            return self._fn(node.get("h"))
        raise WireError(f"unknown node tag {str(tag)[:40]!r}")

    def _dict(self, pairs: Any, depth: int) -> dict[str, Any]:
        if type(pairs) is not list:
            raise WireError("dict node without pairs")
        out: dict[str, Any] = {}
        for pair in pairs:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise WireError("dict pairs must be [str, value]")
            out[pair[0]] = self.decode(pair[1], depth + 1)
        return out

    def _ref(self, name: Any) -> Any:
        if type(name) is not str or self.resolve_ref is None:
            raise WireError("a reference is not allowed here")
        return self.resolve_ref(name)

    def _fn(self, handle: Any) -> Any:
        if self.resolve_fn is None:
            raise WireError("a function handle is not allowed here")
        if type(handle) is not str or not 0 < len(handle) <= MAX_HANDLE_CHARS:
            raise WireError("a function handle must be a short string")
        return self.resolve_fn(handle)

    def _tensor(self, node: dict[str, Any]) -> torch.Tensor:
        dtype = DTYPES.get(node.get("dtype"))  # type: ignore[arg-type]
        shape, index = node.get("shape"), node.get("b")
        if dtype is None or type(shape) is not list or len(shape) > MAX_NDIM:
            raise WireError("tensor node with a bad dtype or shape")
        if not all(type(d) is int and 0 <= d <= self.caps.max_elements for d in shape):
            raise WireError("tensor shape must hold small non-negative integers")
        numel = math.prod(shape)
        if numel > self.caps.max_elements:
            raise WireError("tensor has too many elements")
        if type(index) is not int or not 0 <= index < len(self.buffers) or index in self.used:
            raise WireError("tensor node points at a missing or reused buffer")
        self.used.add(index)
        raw = self.buffers[index]
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if len(raw) != numel * itemsize:
            raise WireError("tensor buffer length does not match its dtype and shape")
        if numel == 0:
            tensor = torch.empty(shape, dtype=dtype)
        elif dtype is torch.bool:  # any byte other than 0/1 would be undefined behaviour in a bool tensor
            tensor = torch.frombuffer(raw, dtype=torch.uint8).reshape(shape) != 0
        else:
            tensor = torch.frombuffer(raw, dtype=dtype).reshape(shape)
        dev = node.get("dev")
        if self.device is not None and type(dev) is str and dev != "cpu":
            tensor = tensor.to(self.device(dev))
        return tensor


def _special_float(text: Any) -> float:
    if text not in ("nan", "inf", "-inf"):
        raise WireError("bad special float")
    return float(text)


def decode_value(
    tree: Any,
    buffers: list[bytearray],
    caps: Caps,
    *,
    resolve_ref: Callable[[str], Any] | None = None,
    device: Callable[[str], torch.device] | None = None,
    resolve_fn: Callable[[str], Any] | None = None,
) -> Any:
    """Rebuild a value from (JSON tree, raw buffers). Raises WireError on anything malformed or over the caps.

    Args:
        resolve_ref: maps a reference name to its value; None refuses references (the trusted side does).
        device: maps a sender's device type ("cuda") to where the tensor goes here; None keeps tensors on the CPU.
        resolve_fn: maps a function handle to the callable standing for it; None refuses handles (the trusted side
            always does).
    """
    return _Decoder(buffers, caps, resolve_ref, device, resolve_fn).decode(tree, 0)
