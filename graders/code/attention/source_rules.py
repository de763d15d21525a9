"""Reading a submission's source on the trusted side: how its functions compute, from the syntax tree alone.

The source (``StudentProxy.source``) is parsed with ``ast.parse`` and walked; it is NEVER executed, compiled or
evaluated here. The walk is a small abstract interpretation of the entry function and of every plain function of
the file that it calls (each call analysed with what its arguments carry), recording:

- ``refs``: library names the code touches, resolved through aliases (``import torch.nn.functional as F``,
  ``from torch import softmax as sm``, ``sm = torch.softmax`` at module level, ``getattr(torch, "softmax")``, a
  default argument, a patched ``torch.exp = torch.softmax``); attributes of other objects appear as ``.name``
  (``x.softmax(-1)``).
- ``products``: every ``@`` / ``*`` and matrix-product call (``matmul``, ``einsum``, ``bmm``, ...) with what its
  operands derive from. Values carry labels of the inputs they derive from (``q``, ``k``, ``v``, ``key_valid``);
  indexing q at its query axis with a loop variable turns ``q`` into ``q_row`` (one query), so a product of
  ``q_row`` with ``k`` computes one query's scores and a product of ``q`` with ``k`` the whole score matrix.
- ``loops``: every for / while loop and comprehension, with the roles of the axes it iterates (batch, head,
  query, key, feature), found from its bound (``range(q.shape[2])``, ``b, h, t, d = q.shape``) and from where its
  variable indexes a tensor (``x[..., i, :]``); tensors whose layout is not tracked are read as (B, H, T, D).
- ``inplace``: in-place changes of a value that may share storage with an input (``q /= s``, ``q[...] = 0``,
  ``q.div_(s)``, ``out=q``, ``inplace=True``, also through views, aliases and helper functions).
- ``state``: state kept between calls (``global``, mutating a module-level or default-argument object, attributes
  set on functions or modules, ``functools.lru_cache``).
- ``layer_calls``: calls of a callable argument (q7's ``layer``) with what their arguments derive from (random
  values, a random permutation).

What it cannot see, by construction: code that exists only at run time (``exec``/``eval`` of strings, ``getattr``
with a computed name, ``importlib`` with a computed name, ``sys.modules`` tricks, methods of classes, monkey
patches made by another module). Those appear in ``dynamic`` but are not judged (the prompts do not forbid them);
the behavioural checks still judge what such code computes. Where a value's layout is lost (after ``reshape``,
products, ...) axis roles are guessed from index positions in a (B, H, T, D) tensor, and an unresolvable loop bound
gives the loop no role, so the rules err towards accepting code they cannot read.

The walk is bounded (``MAX_STEPS`` evaluation steps, ``MAX_FUNCTION_RUNS`` function analyses, ``MAX_DEPTH`` calls
deep, values of at most ``MAX_WEIGHT`` parts): the shipped solutions need a few hundred steps, a 256 KiB source
costs well under a second; beyond a bound the findings are marked ``incomplete`` and the rules are not judged as
passed. Each ``analyse`` call parses anew and keeps nothing afterwards.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

Q, K, V, MASK = "q", "k", "v", "key_valid"
Q_ROW = "q_row"  # derived from one query of q (q indexed at its query axis by a loop variable)
RANDOM, PERM, LAYER = "random", "perm", "layer"

AxisRef = tuple[str, int]  # (input, axis of that input); input "?" = a tensor whose layout is not tracked
Layout = tuple["AxisRef | None", ...]

ROLES: dict[str, tuple[str, ...]] = {
    Q: ("batch", "head", "query", "feature"),
    K: ("batch", "head", "key", "feature"),
    V: ("batch", "head", "key", "feature"),
    MASK: ("batch", "key"),
    "?": ("batch", "head", "position", "position"),
}

MATMUL_OPS = frozenset(
    {
        "@", "matmul", "mm", "bmm", "einsum", "tensordot", "inner", "dot", "mv", "vdot", "baddbmm", "addmm",
        "addbmm", "addmv", "linear", "bilinear", "chain_matmul", "multi_dot", "__matmul__", "__rmatmul__",
        "scaled_dot_product_attention",
    }
)  # fmt: skip
MULT_OPS = frozenset({"*", "mul", "multiply", "__mul__", "__rmul__", "outer", "ger", "kron"})
PRODUCT_OPS = MATMUL_OPS | MULT_OPS
META_ATTRS = frozenset(
    {"ndim", "dtype", "device", "is_cuda", "requires_grad", "layout", "is_leaf", "grad_fn", "names", "itemsize"}
)
META_METHODS = frozenset(
    {"dim", "ndimension", "numel", "nelement", "element_size", "stride", "is_contiguous", "data_ptr",
     "is_floating_point", "is_complex", "get_device", "storage_offset"}
)  # fmt: skip
SAME_LAYOUT = frozenset(
    {"float", "double", "half", "bfloat16", "to", "type", "type_as", "contiguous", "cpu", "cuda", "detach",
     "clone", "requires_grad_", "conj", "resolve_conj", "resolve_neg", "data"}
)  # fmt: skip
VIEWS = SAME_LAYOUT - {"clone"} | frozenset(
    {"view", "view_as", "reshape", "reshape_as", "transpose", "swapaxes", "swapdims", "permute", "t", "unsqueeze",
     "squeeze", "expand", "expand_as", "narrow", "select", "flatten", "unflatten", "movedim", "moveaxis",
     "as_strided", "diagonal", "unfold", "view_as_real", "view_as_complex", "real", "imag", "split", "chunk",
     "unbind", "tensor_split", "hsplit", "vsplit", "dsplit", "T", "mT", "H", "mH", "adjoint", "broadcast_to",
     "atleast_1d", "atleast_2d", "atleast_3d", "squeeze_", "unsqueeze_", "transpose_", "t_", "as_strided_"}
)  # fmt: skip
ALONG = frozenset({"unbind", "split", "chunk", "tensor_split"})
NOT_INPLACE = frozenset({"requires_grad_", "retain_grad", "share_memory_", "squeeze_", "unsqueeze_"})
INPLACE_DUNDERS = frozenset(
    {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imatmul__",
     "__ipow__", "__iand__", "__ior__", "__ixor__", "__delitem__", "__setattr__"}
)  # fmt: skip
MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add", "discard", "remove",
     "appendleft", "extendleft", "popleft", "put", "__setitem__", "__delitem__", "sort", "reverse"}
)  # fmt: skip
NEW_TENSOR = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like",
     "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "tril_indices", "triu_indices"}
)  # fmt: skip
RANDOM_NAMES = frozenset(
    {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "normal_", "uniform",
     "uniform_", "random", "random_", "bernoulli", "bernoulli_", "multinomial", "poisson", "exponential_",
     "geometric_", "cauchy_", "log_normal_", "standard_normal", "integers", "choice", "choices", "sample",
     "permutation", "randperm", "shuffle", "randrange", "gauss", "betavariate", "triangular", "binomial",
     "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "Dropout",
     "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "rrelu", "gumbel_softmax"}
)  # fmt: skip
PERMUTING = frozenset({"randperm", "permutation", "shuffle", "sample", "choice", "choices"})
SORTING = frozenset({"argsort", "sort", "topk", "argmax", "argmin", "msort"})
DYNAMIC = frozenset(
    {"builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__", "builtins.globals",
     "builtins.locals", "builtins.vars", "builtins.setattr", "builtins.delattr", "importlib.import_module",
     "importlib.__import__"}
)  # fmt: skip
CACHING = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})
BUILTINS = frozenset(
    {"range", "len", "enumerate", "zip", "map", "getattr", "setattr", "delattr", "exec", "eval", "compile",
     "__import__", "globals", "locals", "vars", "min", "max", "abs", "int", "float", "round", "sum", "list",
     "tuple", "dict", "set", "reversed", "sorted", "iter", "next", "isinstance", "print", "any", "all", "bool",
     "str", "type", "filter", "open", "callable", "hasattr", "id", "hash", "super", "object", "ValueError",
     "TypeError", "AssertionError", "RuntimeError", "Exception"}
)  # fmt: skip

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


@dataclass
class _Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    scope: _Scope


class _Scope:
    def __init__(self, parent: _Scope | None, *, module: bool = False) -> None:
        self.vars: dict[str, Val] = {}
        self.parent = parent
        self.module = module
        self.globals: set[str] = set()
        self.returns: list[Val] = []

    def lookup(self, name: str) -> tuple[Val, _Scope] | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name], scope
            scope = scope.parent
        return None


class _Budget(Exception):
    pass


class Analysis:
    """The parsed module; ``run(entry, args)`` walks one entry function with the given argument values."""

    def __init__(self, source: str) -> None:
        try:
            self.tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise SourceUnreadable(f"the source could not be parsed ({type(exc).__name__})") from None
        self.functions: list[_Function] = []
        self.patches: dict[str, Val] = {}
        self.star_imports: list[str] = []
        self.module = _Scope(None, module=True)
        self.findings = Findings()
        self._recording = False
        self._sink: set[str] = set()
        self._loops: list[int] = []
        self._next_loop = 0
        self._runs = 0
        self._stack: list[tuple[Any, ...]] = []
        self._memo: dict[tuple[Any, ...], Val] = {}
        self._steps = 0
        self._module_incomplete = False
        try:
            self._exec_block(self.tree.body, self.module)
        except (RecursionError, MemoryError):
            raise SourceUnreadable("the source is too deeply nested to analyse") from None
        except _Budget:
            self._module_incomplete = True

    # ----------------------------------------------------------------------------------------------- entry point
    def run(self, entry: str, args: list[Val]) -> Findings:
        """Walk ``entry`` (a module-level function) called with ``args``; the findings of this walk only."""
        self.findings = Findings()
        if self._module_incomplete:
            self.findings.incomplete = True
            return self.findings
        self._recording, self._memo, self._runs, self._loops, self._steps, self._stack = True, {}, 0, [], 0, []
        found = self.module.vars.get(entry)
        if found is None or not found.funcs:
            self.findings.entry_found = False
            return self.findings
        try:
            for index in sorted(found.funcs):
                self._call_function(index, args, {}, line=0)
        except _Budget:
            self.findings.incomplete = True
        except (RecursionError, MemoryError):
            self.findings.incomplete = True
        self._recording = False
        return self.findings

    # ------------------------------------------------------------------------------------------------- recording
    def _line(self, node: ast.AST) -> int:
        return int(getattr(node, "lineno", 0) or 0)

    def _ref(self, name: str, node: ast.AST) -> None:
        if self._recording:
            self.findings.refs.append((name, self._line(node)))
            patch = self.patches.get(name)
            if patch is not None:
                for ref in patch.refs:
                    self.findings.refs.append((ref, self._line(node)))
        else:
            self._sink.add(name)

    def _use(self, loops: Iterable[int], ref: AxisRef | None) -> None:
        r = role(ref)
        if r is None or not self._recording:
            return
        for loop in loops:
            info = self.findings.loops.get(loop)
            if info is not None:
                info.roles.add(r)

    def _product(self, op: str, operands: Iterable[Val], node: ast.AST) -> None:
        if self._recording:
            self.findings.products.append(Product(op, tuple(operands), tuple(self._loops), self._line(node)))

    def _inplace(self, target: Val, node: ast.AST, how: str) -> None:
        if self._recording and target.alias:
            self.findings.inplace.append((target.alias, self._line(node), how))

    def _state(self, what: str, node: ast.AST) -> None:
        if self._recording:
            self.findings.state.append((what, self._line(node)))

    def _dynamic(self, what: str, node: ast.AST) -> None:
        if self._recording:
            self.findings.dynamic.append((what, self._line(node)))

    def _new_loop(self, node: ast.AST, kind: str) -> int:
        self._next_loop += 1
        if self._recording:
            self.findings.loops[self._next_loop] = LoopInfo(self._line(node), kind)
        return self._next_loop

    # ------------------------------------------------------------------------------------------------ statements
    def _step(self, cost: int = 1) -> None:
        self._steps += cost
        if self._steps > MAX_STEPS:
            raise _Budget

    def _exec_block(self, body: list[ast.stmt], scope: _Scope) -> None:
        for stmt in body:
            self._exec(stmt, scope)

    def _branches(self, blocks: list[list[ast.stmt]], scope: _Scope) -> None:
        """Run alternative blocks from the same state and merge what each bound (flow-insensitive join)."""
        before = dict(scope.vars)
        self._step(len(before) * len(blocks))
        results = []
        for block in blocks:
            scope.vars = dict(before)
            self._exec_block(block, scope)
            results.append(scope.vars)
        merged: dict[str, Val] = {}
        for name in set().union(*results):
            found = [r[name] for r in results if name in r]
            same = len(found) == len(results) and all(v is found[0] for v in found)
            merged[name] = found[0] if same else join(*found)
        scope.vars = merged

    def _exec(self, stmt: ast.stmt, scope: _Scope) -> None:
        self._step()
        if not self._recording and scope.module:
            self._sink = set()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.functions.append(_Function(stmt, scope))
            self._bind_name(stmt.name, Val(funcs=frozenset({len(self.functions) - 1})), scope, stmt)
        elif isinstance(stmt, ast.ClassDef):
            for part in [*stmt.bases, *stmt.decorator_list]:
                self._eval(part, scope)
            inner = _Scope(scope)
            self._exec_block(stmt.body, inner)
            self._bind_name(stmt.name, Val(refs=frozenset(self._sink)), scope, stmt)
        elif isinstance(stmt, ast.Assign):
            value = self._eval(stmt.value, scope)
            for target in stmt.targets:
                self._assign(target, value, scope, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign(stmt.target, self._eval(stmt.value, scope), scope, stmt)
        elif isinstance(stmt, ast.AugAssign):
            self._aug_assign(stmt, scope)
        elif isinstance(stmt, ast.Expr):
            self._eval(stmt.value, scope)
        elif isinstance(stmt, ast.Return):
            scope.returns.append(self._eval(stmt.value, scope) if stmt.value is not None else EMPTY)
        elif isinstance(stmt, ast.If):
            self._eval(stmt.test, scope)
            self._branches([stmt.body, stmt.orelse], scope)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._for(stmt, scope)
        elif isinstance(stmt, ast.While):
            self._while(stmt, scope)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                value = self._eval(item.context_expr, scope)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, value, scope, stmt)
            self._exec_block(stmt.body, scope)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            self._exec_block(stmt.body, scope)
            for handler in stmt.handlers:
                if handler.type is not None:
                    self._eval(handler.type, scope)
                self._exec_block(handler.body, scope)
            self._exec_block(stmt.orelse, scope)
            self._exec_block(stmt.finalbody, scope)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    self._bind_name(alias.asname, Val(dotted=alias.name), scope, stmt)
                else:
                    top = alias.name.split(".")[0]
                    self._bind_name(top, Val(dotted=top), scope, stmt)
        elif isinstance(stmt, ast.ImportFrom):
            base = ("." * stmt.level) + (stmt.module or "")
            for alias in stmt.names:
                if alias.name == "*":
                    self.star_imports.append(base)
                    continue
                self._bind_name(alias.asname or alias.name, Val(dotted=f"{base}.{alias.name}"), scope, stmt)
        elif isinstance(stmt, ast.Global | ast.Nonlocal):
            scope.globals |= set(stmt.names)
            if not scope.module:
                self._state(f"{'global' if isinstance(stmt, ast.Global) else 'nonlocal'} {', '.join(stmt.names)}", stmt)
        elif isinstance(stmt, ast.Assert):
            self._eval(stmt.test, scope)
            if stmt.msg is not None:
                self._eval(stmt.msg, scope)
        elif isinstance(stmt, ast.Raise):
            if stmt.exc is not None:
                self._eval(stmt.exc, scope)
        elif isinstance(stmt, ast.Match):
            self._eval(stmt.subject, scope)
            self._branches([case.body for case in stmt.cases] + [[]], scope)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript | ast.Attribute):
                    deleted = self._eval(target.value, scope)
                    self._mutate(deleted, target, "del")
        # Pass, Break, Continue: nothing to do

    def _bind_name(self, name: str, value: Val, scope: _Scope, node: ast.AST) -> None:
        if scope.module:
            value = replace(value, shared=True, refs=value.refs | frozenset(self._sink))
            scope.vars[name] = value
            return
        if name in scope.globals:
            self._state(f"assigns the module-level name {name}", node)
            self.module.vars[name] = join(self.module.vars.get(name, EMPTY), value)
            return
        scope.vars[name] = value

    def _assign(self, target: ast.expr, value: Val, scope: _Scope, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._bind_name(target.id, value, scope, node)
        elif isinstance(target, ast.Tuple | ast.List):
            elts = target.elts
            starred = any(isinstance(e, ast.Starred) for e in elts)
            parts = self._unpack(value, len(elts)) if not starred else None
            for i, elt in enumerate(elts):
                if isinstance(elt, ast.Starred):
                    self._assign(elt.value, replace(value, items=None, is_shape=False), scope, node)
                else:
                    self._assign(elt, parts[i] if parts is not None else self._element(value), scope, node)
        elif isinstance(target, ast.Subscript):
            base = self._eval(target.value, scope)
            self._subscript_parts(target, scope, base)  # records the loops that index it
            self._inplace(base, node, f"assigns to {ast.unparse(target)[:60]}")
            self._mutate(base, node, f"assigns to {ast.unparse(target)[:60]}")
            if isinstance(target.value, ast.Name):
                self._widen(target.value.id, value, scope)
        elif isinstance(target, ast.Attribute):
            base = self._eval(target.value, scope)
            self._inplace(base, node, f"assigns to {ast.unparse(target)[:60]}")
            if base.dotted is not None:
                self.patches[f"{base.dotted}.{target.attr}"] = replace(value, refs=value.refs | self._refs_of(value))
                self._state(f"assigns to the library attribute {base.dotted}.{target.attr}", node)
            elif base.funcs or base.shared:
                self._state(f"sets the attribute {ast.unparse(target)[:60]}", node)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, value, scope, node)

    def _refs_of(self, value: Val) -> frozenset[str]:
        return frozenset({value.dotted}) if value.dotted else frozenset()

    def _widen(self, name: str, value: Val, scope: _Scope) -> None:
        """``name`` (a container or tensor written into) now also holds what ``value`` carries."""
        found = scope.lookup(name)
        if found is None:
            return
        old, owner = found
        if owner is scope and not owner.module:
            owner.vars[name] = replace(old, src=old.src | value.src | data(value).src, items=None)

    def _mutate(self, base: Val, node: ast.AST, how: str) -> None:
        if base.shared or base.funcs:
            self._state(f"changes an object that outlives the call ({how})", node)

    def _aug_assign(self, stmt: ast.AugAssign, scope: _Scope) -> None:
        value = self._eval(stmt.value, scope)
        target = stmt.target
        op = type(stmt.op).__name__
        if isinstance(target, ast.Name):
            found = scope.lookup(target.id)
            old = found[0] if found else self._lookup(target.id, scope, target)
            if isinstance(stmt.op, ast.MatMult | ast.Mult):
                self._product("@" if isinstance(stmt.op, ast.MatMult) else "*", (old, value), stmt)
            self._inplace(old, stmt, f"{target.id} {_OPS.get(op, op)}= ...")
            new = replace(old, src=old.src | value.src | data(value).src, size=old.size if not value.src else None)
            self._bind_name(target.id, new if old.alias else replace(new, alias=frozenset()), scope, stmt)
        else:
            base_node = target.value if isinstance(target, ast.Subscript | ast.Attribute) else target
            base = self._eval(base_node, scope)
            if isinstance(target, ast.Subscript):
                self._subscript_parts(target, scope, base)
            self._inplace(base, stmt, f"{ast.unparse(target)[:60]} {_OPS.get(op, op)}= ...")
            self._mutate(base, stmt, f"{ast.unparse(target)[:60]} {_OPS.get(op, op)}= ...")
            if isinstance(base_node, ast.Name):
                self._widen(base_node.id, value, scope)

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: _Scope) -> None:
        iterable = self._eval(stmt.iter, scope)
        loop = self._new_loop(stmt, "for")
        self._loops.append(loop)
        try:
            self._assign(stmt.target, self._iterate(iterable, loop), scope, stmt)
            self._branches([stmt.body, []], scope)
        finally:
            self._loops.pop()
        self._exec_block(stmt.orelse, scope)

    def _while(self, stmt: ast.While, scope: _Scope) -> None:
        loop = self._new_loop(stmt, "while")
        names = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}
        for name in names:
            found = scope.lookup(name)
            if found is not None and found[1] is scope and not scope.module:
                scope.vars[name] = replace(found[0], loops=found[0].loops | {loop})
        test = self._eval(stmt.test, scope)
        self._use([loop], test.size)
        self._loops.append(loop)
        try:
            self._branches([stmt.body, []], scope)
        finally:
            self._loops.pop()
        self._exec_block(stmt.orelse, scope)

    # ----------------------------------------------------------------------------------------------- iteration
    def _iterate(self, it: Val, loop: int) -> Val:
        """The value of the loop variable when iterating ``it`` in ``loop``."""
        index = Val(loops=frozenset({loop}))
        if it.it is not None:
            kind = it.it[0]
            if kind == "range":
                self._use([loop], it.it[1])
                return index
            if kind == "enumerate":
                return pack((index, self._iterate(it.it[1], loop)))
            if kind == "zip":
                return pack(self._iterate(v, loop) for v in it.it[1])
            if kind == "along":
                base, position = it.it[1], it.it[2]
                return self._index_axis(base, position, index)
        if it.items is not None:
            return replace(join(*it.items), loops=frozenset({loop})) if it.items else index
        if it.is_shape or it.container:
            return replace(data(it), loops=frozenset({loop}))
        if it.src or it.alias:
            return self._index_axis(it, 0, index)
        return replace(data(it), loops=frozenset({loop}))

    def _element(self, value: Val) -> Val:
        if value.items:
            return join(*value.items)
        return replace(data(value), alias=value.alias)

    def _unpack(self, value: Val, n: int) -> list[Val] | None:
        if value.items is not None:
            return list(value.items) if len(value.items) == n else None
        if value.is_shape:
            return [Val(size=ref) for ref in self._shape_refs(value, n)][:MAX_ITEMS]
        if value.it is not None and value.it[0] == "along":
            base, position = value.it[1], value.it[2]
            return [self._index_axis(base, position, EMPTY) for _ in range(n)]
        if value.src or value.alias:
            return [self._index_axis(value, 0, EMPTY) for _ in range(n)]
        return None

    def _shape_refs(self, shape: Val, n: int) -> list[AxisRef | None]:
        if shape.layout is not None and len(shape.layout) == n:
            return list(shape.layout)
        start = max(4 - n, 0)
        return [("?", start + i) for i in range(n)]

    # --------------------------------------------------------------------------------------------- expressions
    def _eval(self, node: ast.expr | None, scope: _Scope) -> Val:
        if node is None:
            return EMPTY
        self._step()
        method = getattr(self, f"_e_{type(node).__name__}", None)
        if method is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._eval(child, scope)
            return EMPTY
        result: Val = method(node, scope)
        return result

    def _e_Constant(self, node: ast.Constant, scope: _Scope) -> Val:
        if isinstance(node.value, str | int | float | bool) and not (
            isinstance(node.value, str) and len(node.value) > 200
        ):
            return Val(const=node.value, has_const=True)
        return EMPTY

    def _e_Name(self, node: ast.Name, scope: _Scope) -> Val:
        return self._lookup(node.id, scope, node)

    def _lookup(self, name: str, scope: _Scope, node: ast.AST) -> Val:
        found = scope.lookup(name)
        if found is not None:
            value, owner = found
            if value.dotted is not None:
                self._ref(value.dotted, node)
            if owner.module and self._recording:
                for ref in value.refs:
                    self._ref(ref, node)
                    if ref in CACHING:
                        self._state(f"{name} is made with {ref}, which keeps results between calls", node)
            return value
        if name in BUILTINS:
            return Val(dotted=f"builtins.{name}")
        for module in self.star_imports:
            self._ref(f"{module}.{name}", node)
            return Val(dotted=f"{module}.{name}")
        return EMPTY

    def _e_Attribute(self, node: ast.Attribute, scope: _Scope) -> Val:
        base = self._eval(node.value, scope)
        return self._attribute(base, node.attr, node)

    def _attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        if base.dotted is not None:
            dotted = f"{base.dotted}.{attr}"
            self._ref(dotted, node)
            if attr in ("__dict__",):
                self._dynamic(f"{dotted}", node)
            return Val(dotted=dotted)
        self._ref(f".{attr}", node)
        if attr == "shape":
            return Val(layout=base.layout, is_shape=True)
        if attr in META_ATTRS:
            return EMPTY
        if attr in ("T", "mT", "H", "mH", "real", "imag", "data"):
            layout = base.layout
            if layout is not None and attr in ("T", "H"):
                layout = tuple(reversed(layout))
            elif layout is not None and attr in ("mT", "mH") and len(layout) >= 2:
                layout = (*layout[:-2], layout[-1], layout[-2])
            elif attr in ("real", "imag"):
                layout = None
            return Val(src=base.src, alias=base.alias, layout=layout)
        if attr == "__dict__":
            self._dynamic("__dict__", node)
        return replace(data(base), alias=frozenset(), shared=base.shared)

    def _e_Subscript(self, node: ast.Subscript, scope: _Scope) -> Val:
        base = self._eval(node.value, scope)
        return self._subscript_parts(node, scope, base)

    def _subscript_parts(self, node: ast.Subscript, scope: _Scope, base: Val) -> Val:
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        parts: list[tuple[str, Val]] = []
        slices: list[ast.Slice] = []
        for e in elts:
            if isinstance(e, ast.Slice):
                bounds = [self._eval(x, scope) for x in (e.lower, e.upper, e.step) if x is not None]
                parts.append(("slice", join(*bounds) if bounds else EMPTY))
                slices.append(e)
            elif isinstance(e, ast.Constant) and e.value is Ellipsis:
                parts.append(("...", EMPTY))
            elif isinstance(e, ast.Constant) and e.value is None:
                parts.append(("new", EMPTY))
            else:
                parts.append(("index", self._eval(e, scope)))
        if base.is_shape:
            return self._shape_subscript(base, parts, slices)
        if base.items is not None and len(parts) == 1:
            kind, part = parts[0]
            if kind == "index" and part.has_const and isinstance(part.const, int) and not isinstance(part.const, bool):
                i = part.const
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return join(*base.items) if base.items else EMPTY
        if base.dotted is not None and len(parts) == 1 and parts[0][1].has_const and base.dotted.endswith(".__dict__"):
            return self._attribute(Val(dotted=base.dotted[: -len(".__dict__")]), str(parts[0][1].const), node)
        indexed = self._index(base, parts)  # also records which loops index which axes
        if not (base.src or base.alias):  # a new tensor or a Python container: no input data, no layout
            return replace(indexed, layout=None, alias=frozenset(), shared=base.shared)
        return indexed

    def _shape_subscript(self, shape: Val, parts: list[tuple[str, Val]], slices: list[ast.Slice]) -> Val:
        """``x.shape[i]`` is the size of one axis; ``x.shape[a:b]`` a tuple of sizes."""
        if len(parts) != 1:
            return EMPTY
        kind, part = parts[0]
        layout = shape.layout
        n = len(layout) if layout is not None else 4
        refs: list[AxisRef | None] = list(layout) if layout is not None else [("?", i) for i in range(n)]
        if kind == "index" and part.has_const and isinstance(part.const, int):
            i = part.const if part.const >= 0 else n + part.const
            return Val(size=refs[i]) if 0 <= i < n else EMPTY
        if kind == "slice" and slices:
            bounds = [_const_int(x) for x in (slices[0].lower, slices[0].upper, slices[0].step)]
            if all(
                b is not None or x is None
                for b, x in zip(bounds, (slices[0].lower, slices[0].upper, slices[0].step), strict=True)
            ):
                chosen = refs[slice(*bounds)]
                return pack((Val(size=r) for r in chosen), container=True)
        return EMPTY

    def _index(self, base: Val, parts: list[tuple[str, Val]]) -> Val:
        """Index a tensor: record which loops index which axes, track the layout, mark one query of q."""
        layout = base.layout
        consuming = [i for i, (kind, _) in enumerate(parts) if kind in ("index", "slice")]
        ellipsis = next((i for i, (kind, _) in enumerate(parts) if kind == "..."), None)
        n = len(layout) if layout is not None else 4
        before = [i for i in consuming if ellipsis is None or i < ellipsis]
        after = [i for i in consuming if ellipsis is not None and i > ellipsis]
        position: dict[int, int] = {}
        for k, i in enumerate(before):
            position[i] = k
        for k, i in enumerate(after):
            position[i] = n - len(after) + k
        row = False
        kept: dict[int, AxisRef | None] = {}
        dropped: set[int] = set()
        index_src: frozenset[str] = frozenset()
        for i, (kind, part) in enumerate(parts):
            if i not in position:
                continue
            axis = position[i]
            ref = (layout[axis] if 0 <= axis < len(layout) else None) if layout is not None else ("?", axis)
            self._use(part.loops, ref)
            # One query of q: its query axis indexed by a loop variable (axis 2 of (B, H, T, D) when untracked).
            if part.loops and Q in base.src and ref is not None and ref[1] == 2 and ref[0] in (Q, "?"):
                row = True
            index_src |= data(part).src
            tensor_index = bool(part.src) or part.items is not None
            if kind == "index" and not tensor_index:
                dropped.add(axis)
            else:
                kept[axis] = ref
        src = base.src | index_src
        if row:
            src = (src - {Q}) | {Q_ROW}
        new_layout: Layout | None = None
        if layout is not None and all(0 <= a < len(layout) for a in position.values()):
            out: list[AxisRef | None] = []
            used_before = len(before)
            head = [parts[i] for i in range(len(parts)) if ellipsis is None or i < ellipsis]
            tail = [parts[i] for i in range(len(parts)) if ellipsis is not None and i > ellipsis]
            axis = 0
            for kind, _ in head:
                if kind == "new":
                    out.append(None)
                elif axis not in dropped:
                    out.append(layout[axis])
                    axis += 1
                else:
                    axis += 1
            middle_end = len(layout) - len(after)
            out.extend(layout[used_before:middle_end] if ellipsis is not None else layout[axis:])
            axis = middle_end
            for kind, _ in tail:
                if kind == "new":
                    out.append(None)
                elif axis not in dropped:
                    out.append(layout[axis])
                    axis += 1
                else:
                    axis += 1
            new_layout = tuple(out)
        return Val(src=src, alias=base.alias, layout=new_layout)

    def _index_axis(self, base: Val, position: int, index: Val) -> Val:
        """``base`` indexed at ``position`` by ``index`` (iteration over a tensor, unbind, ...)."""
        parts: list[tuple[str, Val]] = [("slice", EMPTY)] * position + [("index", index)]
        if position < 0:
            parts = [("...", EMPTY), ("index", index)] + [("slice", EMPTY)] * (-position - 1)
        return self._index(base, parts)

    def _e_BinOp(self, node: ast.BinOp, scope: _Scope) -> Val:
        left, right = self._eval(node.left, scope), self._eval(node.right, scope)
        if isinstance(node.op, ast.MatMult):
            self._product("@", (left, right), node)
            return data(left, right)
        if isinstance(node.op, ast.Mult):
            self._product("*", (left, right), node)
        if left.has_const and right.has_const:
            return EMPTY
        # A tensor combined with a scalar keeps its layout; a size with a constant stays that size.
        if left.src and not right.src and not right.items:
            return Val(src=left.src, layout=left.layout, loops=left.loops | right.loops)
        if right.src and not left.src and not left.items:
            return Val(src=right.src, layout=right.layout, loops=left.loops | right.loops)
        size = left.size if (left.size and (right.has_const or right.size == left.size)) else None
        size = size or (right.size if right.size and left.has_const else None)
        return Val(src=data(left, right).src, size=size, loops=left.loops | right.loops)

    def _e_UnaryOp(self, node: ast.UnaryOp, scope: _Scope) -> Val:
        value = self._eval(node.operand, scope)
        return Val(src=value.src, layout=value.layout, loops=value.loops, size=value.size)

    def _e_BoolOp(self, node: ast.BoolOp, scope: _Scope) -> Val:
        values = [self._eval(v, scope) for v in node.values]
        return join(*values)

    def _e_Compare(self, node: ast.Compare, scope: _Scope) -> Val:
        values = [self._eval(node.left, scope)] + [self._eval(c, scope) for c in node.comparators]
        sizes = [v.size for v in values if v.size is not None]
        return Val(
            src=data(*values).src, loops=frozenset().union(*(v.loops for v in values)), size=sizes[0] if sizes else None
        )

    def _e_IfExp(self, node: ast.IfExp, scope: _Scope) -> Val:
        self._eval(node.test, scope)
        return join(self._eval(node.body, scope), self._eval(node.orelse, scope))

    def _e_Tuple(self, node: ast.Tuple | ast.List | ast.Set, scope: _Scope) -> Val:
        items: list[Val] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                inner = self._eval(elt.value, scope)
                if inner.items is not None:
                    items.extend(inner.items)
                else:
                    items.append(self._element(inner))
            else:
                items.append(self._eval(elt, scope))
        return pack(items, container=True)

    _e_List = _e_Tuple
    _e_Set = _e_Tuple

    def _e_Dict(self, node: ast.Dict, scope: _Scope) -> Val:
        values = [self._eval(k, scope) for k in node.keys if k is not None] + [
            self._eval(v, scope) for v in node.values
        ]
        return replace(data(*values), container=True)

    def _e_JoinedStr(self, node: ast.JoinedStr, scope: _Scope) -> Val:
        for value in node.values:
            self._eval(value, scope)
        return EMPTY

    def _e_FormattedValue(self, node: ast.FormattedValue, scope: _Scope) -> Val:
        self._eval(node.value, scope)
        return EMPTY

    def _e_Starred(self, node: ast.Starred, scope: _Scope) -> Val:
        return self._eval(node.value, scope)

    def _e_NamedExpr(self, node: ast.NamedExpr, scope: _Scope) -> Val:
        value = self._eval(node.value, scope)
        self._assign(node.target, value, scope, node)
        return value

    def _e_Lambda(self, node: ast.Lambda, scope: _Scope) -> Val:
        self.functions.append(_Function(node, scope))
        return Val(funcs=frozenset({len(self.functions) - 1}))

    def _e_Await(self, node: ast.Await, scope: _Scope) -> Val:
        return self._eval(node.value, scope)

    def _e_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, scope: _Scope) -> Val:
        inner = _Scope(scope)
        gens = node.generators
        # A comprehension over a literal tuple, e.g. ``(t.double() for t in (q, k, v))``: element by element.
        if len(gens) == 1 and not gens[0].ifs and not isinstance(node, ast.DictComp):
            source = self._eval(gens[0].iter, scope)
            if source.items is not None and 0 < len(source.items) <= 16:
                self._new_loop(node, "comprehension")
                results = []
                for item in source.items:
                    inner.vars = dict(inner.vars)
                    self._assign(gens[0].target, item, inner, node)
                    results.append(self._eval(node.elt, inner))
                return pack(results, container=True)
            first: Val | None = source
        else:
            first = None
        loops: list[int] = []
        try:
            for i, gen in enumerate(gens):
                iterable = first if (i == 0 and first is not None) else self._eval(gen.iter, inner if i else scope)
                loop = self._new_loop(node, "comprehension")
                loops.append(loop)
                self._loops.append(loop)
                self._assign(gen.target, self._iterate(iterable, loop), inner, node)
                for cond in gen.ifs:
                    self._eval(cond, inner)
            if isinstance(node, ast.DictComp):
                result = data(self._eval(node.key, inner), self._eval(node.value, inner))
            else:
                result = self._eval(node.elt, inner)
        finally:
            for _ in loops:
                self._loops.pop()
        return replace(data(result), alias=result.alias, container=not isinstance(node, ast.GeneratorExp))

    _e_SetComp = _e_ListComp
    _e_GeneratorExp = _e_ListComp
    _e_DictComp = _e_ListComp

    # ------------------------------------------------------------------------------------------------------ calls
    def _e_Call(self, node: ast.Call, scope: _Scope) -> Val:
        args: list[Val] = []
        for arg in node.args:
            value = self._eval(arg, scope)
            if isinstance(arg, ast.Starred) and value.items is not None:
                args.extend(value.items)
            else:
                args.append(value)
        kwargs = {kw.arg: self._eval(kw.value, scope) for kw in node.keywords if kw.arg is not None}
        for kw in node.keywords:
            if kw.arg is None:
                self._eval(kw.value, scope)
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self._eval(func.value, scope)
            if receiver.dotted is not None:
                dotted = f"{receiver.dotted}.{func.attr}"
                self._ref(dotted, func)
                return self._library_call(dotted, args, kwargs, node, scope)
            self._ref(f".{func.attr}", func)
            return self._method_call(receiver, func.attr, args, kwargs, node, func, scope)
        callee = self._eval(func, scope)
        if callee.funcs:
            results = [self._call_function(i, args, kwargs, line=self._line(node)) for i in sorted(callee.funcs)]
            return join(*results)
        if callee.dotted is not None:
            return self._library_call(callee.dotted, args, kwargs, node, scope)
        if LAYER in callee.src:
            if self._recording:
                self.findings.layer_calls.append((tuple(args), self._line(node)))
            return data(*args)
        self._call_callbacks(args, kwargs, node)
        return data(callee, *args, *kwargs.values())

    def _call_callbacks(self, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> None:
        """User functions passed to a library or unknown call (map, vmap, partial, ...) are analysed too."""
        tensors = data(*(a for a in args if not a.funcs), *(v for v in kwargs.values() if not v.funcs))
        for value in [*args, *kwargs.values()]:
            for index in sorted(value.funcs):
                fn = self.functions[index].node
                count = len(fn.args.args) + len(fn.args.posonlyargs)
                self._call_function(index, [tensors] * count, {}, line=self._line(node))

    def _library_call(self, dotted: str, args: list[Val], kwargs: dict[str, Val], node: ast.Call, scope: _Scope) -> Val:
        name = last_name(dotted)
        if dotted in DYNAMIC:
            if dotted == "builtins.setattr" and len(args) >= 3 and args[1].has_const and args[0].dotted:
                patch = args[2]
                self.patches[f"{args[0].dotted}.{args[1].const}"] = replace(
                    patch, refs=patch.refs | self._refs_of(patch)
                )
                self._state(f"setattr on {args[0].dotted}", node)
            elif dotted == "importlib.import_module" and args and args[0].has_const:
                return Val(dotted=str(args[0].const))
            else:
                self._dynamic(name, node)
            return EMPTY
        if dotted == "builtins.getattr":
            if len(args) >= 2 and args[1].has_const and isinstance(args[1].const, str):
                return self._attribute(args[0], args[1].const, node)
            self._dynamic("getattr with a computed name", node)
            return data(*args)
        if dotted in CACHING:
            self._state(f"{dotted} keeps results between calls", node)
        if dotted == "builtins.range":
            stops = [a for a in args[:2]]
            stop = stops[-1] if stops else EMPTY
            return Val(it=("range", stop.size), loops=frozenset().union(*(a.loops for a in args)))
        if dotted == "builtins.len":
            if args and (args[0].src or args[0].alias):
                ref = args[0].layout[0] if args[0].layout else ("?", 0)
                return Val(size=ref)
            if args and args[0].is_shape:
                return EMPTY
            return Val(size=None)
        if dotted == "builtins.enumerate" and args:
            return iterating("enumerate", args[0])
        if dotted == "builtins.zip" and args:
            return iterating("zip", *args)
        if dotted == "builtins.map" and len(args) >= 2 and args[0].funcs:
            if args[1].items is not None and len(args) == 2:
                results = [
                    join(*(self._call_function(i, [item], {}, line=self._line(node)) for i in sorted(args[0].funcs)))
                    for item in args[1].items
                ]
                return pack(results, container=True)
            self._call_callbacks(args, kwargs, node)
            return data(*args[1:])
        if dotted in ("builtins.int", "builtins.min", "builtins.max", "builtins.abs", "builtins.round"):
            sizes = {a.size for a in args if a.size is not None}
            loops = frozenset().union(*(a.loops for a in args)) if args else frozenset()
            return Val(src=data(*args).src, size=sizes.pop() if len(sizes) == 1 else None, loops=loops)
        if dotted in ("builtins.list", "builtins.tuple", "builtins.reversed", "builtins.iter", "builtins.sorted"):
            if args and args[0].items is not None:
                return replace(args[0], container=True)
            if args and args[0].it is not None:
                return args[0]
            return replace(data(*args), alias=args[0].alias if args else frozenset(), container=True)
        if dotted in ("builtins.dict", "builtins.set"):
            return replace(data(*args, *kwargs.values()), container=True)
        if dotted.startswith("builtins."):
            return data(*args)
        self._call_callbacks(args, kwargs, node)
        tensors = [a for a in args if a.src or a.alias or a.items]
        first = args[0] if args else EMPTY
        # in-place library functions and out= / inplace=True
        if name.endswith("_") and not name.startswith("_") and name not in NOT_INPLACE and args:
            self._inplace(first, node, f"{dotted}(...) changes its first argument in place")
        if "out" in kwargs:
            out = kwargs["out"]
            for target in out.items or (out,):
                self._inplace(target, node, f"{dotted}(..., out=...) writes into an argument")
        inplace_kw = kwargs.get("inplace")
        if inplace_kw is not None and inplace_kw.has_const and inplace_kw.const is True and args:
            self._inplace(first, node, f"{dotted}(..., inplace=True)")
        if name in PRODUCT_OPS:
            operands = [a for a in args if not a.has_const]
            self._product(name, operands, node)
            return data(*operands)
        if name in RANDOM_NAMES:
            return self._random(name, data(*args), node, scope)
        if name in SORTING and any(RANDOM in a.src for a in args):
            return Val(src=(data(*args).src - {RANDOM}) | {PERM})
        if name in NEW_TENSOR:
            return EMPTY
        if name in VIEWS and args:
            return self._view(first, name, args[1:], kwargs)
        return replace(data(*tensors, *kwargs.values()), alias=frozenset())

    def _method_call(
        self,
        receiver: Val,
        attr: str,
        args: list[Val],
        kwargs: dict[str, Val],
        node: ast.Call,
        func: ast.Attribute,
        scope: _Scope,
    ) -> Val:
        if LAYER in receiver.src and attr == "__call__":
            if self._recording:
                self.findings.layer_calls.append((tuple(args), self._line(node)))
            return data(*args)
        if receiver.funcs and attr in ("__call__",):
            return join(*(self._call_function(i, args, kwargs, line=self._line(node)) for i in sorted(receiver.funcs)))
        if attr in MUTATORS:
            self._mutate(receiver, node, f".{attr}(...)")
            if isinstance(func.value, ast.Name):
                self._widen(func.value.id, data(*args), scope)
        if (attr.endswith("_") and not attr.startswith("_") and attr not in NOT_INPLACE) or attr in INPLACE_DUNDERS:
            self._inplace(receiver, node, f".{attr}(...) changes it in place")
            if receiver.shared:
                self._state(f"changes a module-level tensor in place (.{attr})", node)
        if attr == "size":
            if args and args[0].has_const and isinstance(args[0].const, int):
                n = len(receiver.layout) if receiver.layout is not None else 4
                i = args[0].const if args[0].const >= 0 else n + args[0].const
                if 0 <= i < n:
                    return Val(size=receiver.layout[i] if receiver.layout is not None else ("?", i))
                return EMPTY
            return Val(layout=receiver.layout, is_shape=True)
        if attr in META_METHODS:
            return EMPTY
        if attr in PRODUCT_OPS:
            operands = [receiver, *(a for a in args if not a.has_const)]
            self._product(attr, operands, node)
            return data(*operands)
        if attr in RANDOM_NAMES:
            return self._random(attr, data(receiver, *args), node, scope)
        if attr in SORTING and (RANDOM in receiver.src or any(RANDOM in a.src for a in args)):
            return Val(src=(data(receiver, *args).src - {RANDOM}) | {PERM})
        if attr in NEW_TENSOR:
            return EMPTY
        if attr in VIEWS:
            return self._view(receiver, attr, args, kwargs)
        if attr in ("get", "copy", "items", "values", "keys") and (receiver.shared or receiver.container):
            return replace(data(receiver, *args), shared=receiver.shared and attr != "copy", container=attr != "get")
        if attr.endswith("_") and not attr.startswith("_"):
            return replace(receiver, src=receiver.src | data(*args).src, size=None, is_shape=False)
        if attr in ("item", "tolist", "numpy"):
            return data(receiver)
        self._call_callbacks(args, kwargs, node)
        return data(receiver, *args, *kwargs.values())

    def _random(self, name: str, inputs: Val, node: ast.Call, scope: _Scope) -> Val:
        """Random data is marked RANDOM; a random permutation or selection (randperm, shuffle, ...) PERM."""
        if name not in PERMUTING:
            return Val(src=inputs.src | {RANDOM})
        if name == "shuffle" and node.args and isinstance(node.args[0], ast.Name):
            self._widen(node.args[0].id, Val(src=frozenset({PERM})), scope)
        return Val(src=(inputs.src - {RANDOM}) | {PERM})

    def _view(self, base: Val, name: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """A view (or a cast that may return the tensor itself): same data and storage, layout tracked if simple."""
        alias = frozenset() if name == "clone" else base.alias
        layout = base.layout
        ints = [a.const for a in args if a.has_const and isinstance(a.const, int) and not isinstance(a.const, bool)]
        if "dim" in kwargs and kwargs["dim"].has_const and isinstance(kwargs["dim"].const, int):
            ints = [*ints, kwargs["dim"].const] if name in ALONG else [kwargs["dim"].const]
        if name in ALONG:
            dim = ints[-1] if (name == "unbind" and ints) else (ints[1] if len(ints) >= 2 else 0)
            if name == "unbind" and not ints:
                dim = 0
            if "dim" in kwargs and kwargs["dim"].has_const:
                dim = int(kwargs["dim"].const)
            n = len(layout) if layout is not None else 4
            position = dim if dim >= 0 else n + dim
            return iterating("along", replace(base, alias=alias), extra=position)
        if layout is None or name in SAME_LAYOUT:
            return Val(src=base.src, alias=alias, layout=layout)
        n = len(layout)

        def norm(i: int) -> int:
            return i if i >= 0 else n + i

        new: Layout | None = None
        if name in ("transpose", "swapaxes", "swapdims", "transpose_") and len(ints) == 2:
            a, b = norm(ints[0]), norm(ints[1])
            if 0 <= a < n and 0 <= b < n:
                out = list(layout)
                out[a], out[b] = out[b], out[a]
                new = tuple(out)
        elif name == "permute" and len(ints) == n:
            order = [norm(i) for i in ints]
            if sorted(order) == list(range(n)):
                new = tuple(layout[i] for i in order)
        elif name in ("t",) and n == 2:
            new = (layout[1], layout[0])
        elif name in ("unsqueeze", "unsqueeze_") and len(ints) == 1:
            i = ints[0] if ints[0] >= 0 else n + 1 + ints[0]
            if 0 <= i <= n:
                new = (*layout[:i], None, *layout[i:])
        elif name in ("squeeze", "squeeze_") and len(ints) == 1:
            i = norm(ints[0])
            if 0 <= i < n:
                new = (*layout[:i], *layout[i + 1 :])
        elif name in ("expand", "expand_as", "broadcast_to"):
            new = layout if (name == "expand" and len(args) == n) else None
        elif name in ("movedim", "moveaxis") and len(ints) == 2:
            a, b = norm(ints[0]), norm(ints[1])
            if 0 <= a < n and 0 <= b < n:
                out = list(layout)
                moved = out.pop(a)
                out.insert(b, moved)
                new = tuple(out)
        return Val(src=base.src, alias=alias, layout=new)

    def _call_function(self, index: int, args: list[Val], kwargs: dict[str, Val], *, line: int) -> Val:
        function = self.functions[index]
        key = (index, tuple(args), tuple(sorted(kwargs.items())), tuple(self._loops), self._recording)
        if key in self._memo:
            return self._memo[key]
        if key in self._stack or len(self._stack) >= MAX_DEPTH:
            return data(*args, *kwargs.values())
        self._runs += 1
        if self._runs > MAX_FUNCTION_RUNS:
            raise _Budget
        self._stack.append(key)
        try:
            result = self._run_function(function, args, kwargs)
        finally:
            self._stack.pop()
        self._memo[key] = result
        return result

    def _run_function(self, function: _Function, args: list[Val], kwargs: dict[str, Val]) -> Val:
        node = function.node
        scope = _Scope(function.scope)
        spec = node.args
        positional = [*spec.posonlyargs, *spec.args]
        defaults: dict[str, ast.expr] = {}
        for arg, default in zip(reversed(positional), reversed(spec.defaults), strict=False):
            defaults[arg.arg] = default
        for arg, kw_default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
            if kw_default is not None:
                defaults[arg.arg] = kw_default
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self._eval(decorator, function.scope)
        for i, arg in enumerate(positional):
            if i < len(args):
                scope.vars[arg.arg] = args[i]
            elif arg.arg in kwargs:
                scope.vars[arg.arg] = kwargs[arg.arg]
            elif arg.arg in defaults:
                scope.vars[arg.arg] = self._default(defaults[arg.arg], function.scope)
            else:
                scope.vars[arg.arg] = EMPTY
        for arg in spec.kwonlyargs:
            if arg.arg in kwargs:
                scope.vars[arg.arg] = kwargs[arg.arg]
            elif arg.arg in defaults:
                scope.vars[arg.arg] = self._default(defaults[arg.arg], function.scope)
            else:
                scope.vars[arg.arg] = EMPTY
        if spec.vararg is not None:
            extra = args[len(positional) :]
            scope.vars[spec.vararg.arg] = pack(extra, container=True)
        if spec.kwarg is not None:
            scope.vars[spec.kwarg.arg] = data(*kwargs.values())
        if isinstance(node, ast.Lambda):
            return self._eval(node.body, scope)
        self._exec_block(node.body, scope)
        return join(*scope.returns) if scope.returns else EMPTY

    def _default(self, expr: ast.expr, scope: _Scope) -> Val:
        value = self._eval(expr, scope)
        mutable = isinstance(expr, ast.List | ast.Dict | ast.Set | ast.Call)
        return replace(value, shared=value.shared or mutable)


_OPS = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**", "MatMult": "@",
    "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>",
}  # fmt: skip


def _const_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const_int(node.operand)
        return -inner if inner is not None else None
    return None


def tensor_arg(name: str, ndim: int = 4) -> Val:
    """The value of an input tensor argument: its own label, its own layout, its own storage."""
    return Val(src=frozenset({name}), alias=frozenset({name}), layout=tuple((name, i) for i in range(ndim)))


def analyse(source: str, entry: str, args: list[Val]) -> Findings:
    """Walk ``entry`` of ``source`` called with ``args``; raises SourceUnreadable if it cannot be parsed."""
    analysis = Analysis(source)
    try:
        return analysis.run(entry, args)
    except (RecursionError, MemoryError):
        raise SourceUnreadable("the source is too deeply nested to analyse") from None
