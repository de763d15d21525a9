"""What the walk knows about a value (``Val``), the products and loops it records, and the findings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from checklibs.attention.source_rules.vocabulary import MATMUL_OPS

Q, K, V, MASK = "q", "k", "v", "key_valid"
Q_ROW = "q_row"  # derived from one query of q (q indexed at its query axis by a loop variable)
RANDOM, PERM, LAYER = "random", "perm", "layer"
# The dtype family of each input the rules know (prompts/q5.md: a bool key_valid, floating q, k, v).
INPUT_KIND = {MASK: "bool", Q: "float", K: "float", V: "float", Q_ROW: "float"}

AxisRef = tuple[str, int]  # (input, axis of that input); input "?" = a tensor whose layout is not tracked
Layout = tuple["AxisRef | None", ...]

ROLES: dict[str, tuple[str, ...]] = {
    Q: ("batch", "head", "query", "feature"),
    K: ("batch", "head", "key", "feature"),
    V: ("batch", "head", "key", "feature"),
    MASK: ("batch", "key"),
    "?": ("batch", "head", "position", "position"),
}

# Bounds on the walk of untrusted source in the trusted process (nothing interrupts trusted-side CPU time): function
# analyses, call depth, evaluation steps, and the size of one abstract value (nested tuples are collapsed, so
# hashing and joining a value stay cheap). Beyond them the findings are marked incomplete.
MAX_FUNCTION_RUNS, MAX_DEPTH, MAX_STEPS = 400, 24, 20_000
MAX_ITEMS, MAX_WEIGHT = 32, 256


@dataclass(frozen=True)
class Val:
    """What the analysis knows about one value (immutable, hashable: used as a memo key)."""

    src: frozenset[str] = frozenset()  # inputs / markers this value's data derives from
    alias: frozenset[str] = frozenset()  # inputs whose storage this value may share (views, may-return-self casts)
    layout: Layout | None = None  # per axis: which input axis it is (None: unknown layout)
    size: AxisRef | None = None  # an int that is the size of this input axis
    is_shape: bool = False  # this value is ``x.shape`` of a tensor with ``layout``
    loops: frozenset[int] = frozenset()  # loops whose variable this (index) value depends on
    items: tuple[Val, ...] | None = None  # the elements of a tuple / list of known length
    const: Any = None  # a str / int / float / bool constant, when ``has_const``
    has_const: bool = False
    dotted: str | None = None  # a library object: "torch.nn.functional.softmax"
    funcs: frozenset[int] = frozenset()  # user functions (indices into Analysis.functions)
    refs: frozenset[str] = frozenset()  # library names a module-level value was made from
    shared: bool = False  # persists across calls (module-level object, default argument)
    container: bool = False  # a Python list / tuple / dict / set (iterating it walks no tensor axis)
    weight: int = 1  # how many values this one holds (itself, its items, what iterating it yields)
    it: tuple[Any, ...] | None = None  # what iterating yields: ("range", size) / ("enumerate", v) / ("zip", vs) /
    # ("along", base, position)
    classes: frozenset[int] = frozenset()  # classes of the file this value is (indices into Analysis.classes)
    instances: frozenset[int] = frozenset()  # classes of the file this value is an instance of
    bound: tuple[Val, ...] = ()  # arguments a call of this callable receives first (self, functools.partial)


EMPTY = Val()


def join(*values: Val) -> Val:
    """The least value covering all of ``values`` (union of labels; shape facts kept only where they agree)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return EMPTY
    first = vals[0]
    if all(v is first or v == first for v in vals[1:]):
        return first

    def same(attr: str) -> Any:
        value = getattr(first, attr)
        return value if all(getattr(v, attr) == value for v in vals[1:]) else None

    items = None
    if all(v.items is not None and len(v.items) == len(first.items or ()) for v in vals):
        items = tuple(join(*parts) for parts in zip(*(v.items or () for v in vals), strict=True))
    weight = 1 + sum(v.weight for v in items) if items is not None else 1
    const = same("const")
    return Val(
        src=frozenset().union(*(v.src for v in vals)),
        alias=frozenset().union(*(v.alias for v in vals)),
        layout=same("layout"),
        size=same("size"),
        is_shape=all(v.is_shape for v in vals),
        loops=frozenset().union(*(v.loops for v in vals)),
        items=items,
        const=const,
        has_const=all(v.has_const for v in vals) and const is not None,
        dotted=same("dotted"),
        funcs=frozenset().union(*(v.funcs for v in vals)),
        refs=frozenset().union(*(v.refs for v in vals)),
        shared=any(v.shared for v in vals),
        container=all(v.container for v in vals),
        it=same("it"),
        classes=frozenset().union(*(v.classes for v in vals)),
        instances=frozenset().union(*(v.instances for v in vals)),
        bound=same("bound") or (),
        weight=max(weight, max(v.weight for v in vals) if same("it") is not None else 1),
    )


def data(*values: Val) -> Val:
    """A new value computed from ``values``: their data labels, nothing else (no alias, layout or size)."""
    vals = [v for v in values if v is not None]
    src = frozenset().union(*(v.src for v in vals)) if vals else frozenset()
    for v in vals:
        if v.items:
            src |= data(*v.items).src
    return Val(src=src)


def pack(items: Iterable[Val], **fields: Any) -> Val:
    """A tuple / list of known elements, collapsed to its data labels when it is too long or too deep."""
    values = tuple(items)
    weight = 1 + sum(v.weight for v in values)
    src = data(*values).src | fields.pop("src", frozenset())
    if len(values) > MAX_ITEMS or weight > MAX_WEIGHT:
        return Val(src=src, **{**fields, "container": True})
    return Val(items=values, src=src, weight=weight, **fields)


def iterating(kind: str, *parts: Val, extra: Any = None) -> Val:
    """What ``enumerate`` / ``zip`` / ``unbind`` return: iterating it yields elements built from ``parts``."""
    weight = 1 + sum(p.weight for p in parts)
    src = data(*parts).src
    if weight > MAX_WEIGHT:
        return Val(src=src)
    if kind == "zip":
        return Val(it=("zip", parts), src=src, weight=weight)
    if kind == "along":
        return Val(it=("along", parts[0], extra), src=src, alias=parts[0].alias, weight=weight)
    return Val(it=(kind, parts[0]), src=src, weight=weight)


def role(ref: AxisRef | None) -> str | None:
    if ref is None:
        return None
    roles = ROLES.get(ref[0], ROLES["?"])
    return roles[ref[1]] if 0 <= ref[1] < len(roles) else "position"


@dataclass(frozen=True)
class Product:
    op: str
    operands: tuple[Val, ...]
    loops: tuple[int, ...]  # the loops it runs inside (innermost last), including the callers' loops
    line: int

    @property
    def matmul(self) -> bool:
        return self.op in MATMUL_OPS

    def _pair(self, a: str, b: str) -> bool:
        ops = self.operands
        return any(a in x.src and b in y.src for i, x in enumerate(ops) for j, y in enumerate(ops) if i != j)

    @property
    def row_scores(self) -> bool:
        """One query's scores: a product of q_row (one query) with k."""
        return self._pair(Q_ROW, K)

    @property
    def full_scores(self) -> bool:
        """The whole score matrix: a product of all of q with k."""
        return not self.row_scores and self._pair(Q, K)

    @property
    def scores(self) -> bool:
        return self._pair(Q_ROW, K) or self._pair(Q, K)

    @property
    def row_values(self) -> bool:
        """One query's weights (derived from q_row) times the values v."""
        return self._pair(V, Q_ROW)

    @property
    def values(self) -> bool:
        """Weights (derived from q and k) times the values v."""
        return self._pair(V, K) and (self._pair(V, Q) or self._pair(V, Q_ROW))


@dataclass
class LoopInfo:
    line: int
    kind: str  # "for", "while", "comprehension"
    roles: set[str] = field(default_factory=set)


@dataclass
class Findings:
    """What the walk of one entry function (and everything it calls) found."""

    entry_found: bool = True
    incomplete: bool = False  # the analysis budget ran out: the findings are partial
    refs: list[tuple[str, int]] = field(default_factory=list)
    products: list[Product] = field(default_factory=list)
    loops: dict[int, LoopInfo] = field(default_factory=dict)
    inplace: list[tuple[frozenset[str], int, str]] = field(default_factory=list)
    state: list[tuple[str, int]] = field(default_factory=list)
    dynamic: list[tuple[str, int]] = field(default_factory=list)
    layer_calls: list[tuple[tuple[Val, ...], int]] = field(default_factory=list)

    def refs_matching(self, predicate: Any) -> list[tuple[str, int]]:
        seen: dict[str, int] = {}
        for name, line in self.refs:
            if predicate(name) and name not in seen:
                seen[name] = line
        return sorted(seen.items(), key=lambda item: item[1])


class SourceUnreadable(Exception):
    """The source cannot be parsed or is too deeply nested to analyse."""


def last_name(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]
