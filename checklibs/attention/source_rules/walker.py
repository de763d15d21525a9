"""The walk's state, scopes and budget, and how it records findings; the parts that read syntax build on it."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from checklibs.attention.source_rules.values import (
    MAX_STEPS,
    AxisRef,
    Findings,
    LoopInfo,
    Product,
    SourceUnreadable,
    Val,
    role,
)


@dataclass
class Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    scope: Scope


@dataclass
class ClassInfo:
    """A class of the file: its methods (own and inherited from classes of the file) and attributes set on it.

    ``attrs`` joins every value assigned to ``self.<name>`` (or ``<Class>.<name>``) anywhere, so a method reads what
    ``__init__`` stored; ``kinds`` says which methods are static or class methods (how their first argument binds).
    """

    name: str
    methods: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, Val] = field(default_factory=dict)


class Scope:
    def __init__(self, parent: Scope | None, *, module: bool = False) -> None:
        self.vars: dict[str, Val] = {}
        self.parent = parent
        self.module = module
        self.globals: set[str] = set()
        self.returns: list[Val] = []

    def lookup(self, name: str) -> tuple[Val, Scope] | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name], scope
            scope = scope.parent
        return None


class BudgetExceeded(Exception):
    pass


class Walker:
    """The parsed module, the walk's state and what it records; ``run(entry, args)`` walks one entry function.

    The walk itself is split by the syntax it reads (``statements``, ``expressions``, ``calls``); those parts call
    each other through the methods declared at the end of this class, which ``Analysis`` gets from them.
    """

    def __init__(self, source: str) -> None:
        try:
            self.tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise SourceUnreadable(f"the source could not be parsed ({type(exc).__name__})") from None
        self.functions: list[Function] = []
        self.classes: list[ClassInfo] = []
        self.patches: dict[str, Val] = {}
        self.star_imports: list[str] = []
        self.module = Scope(None, module=True)
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
        except BudgetExceeded:
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
        except BudgetExceeded:
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

    def _step(self, cost: int = 1) -> None:
        self._steps += cost
        if self._steps > MAX_STEPS:
            raise BudgetExceeded

    # ------------------------------------------------------------- provided by statements, expressions and calls
    def _exec_block(self, body: list[ast.stmt], scope: Scope) -> None:
        raise NotImplementedError  # statements.py

    def _assign(self, target: ast.expr, value: Val, scope: Scope, node: ast.AST) -> None:
        raise NotImplementedError  # statements.py

    def _refs_of(self, value: Val) -> frozenset[str]:
        raise NotImplementedError  # statements.py

    def _widen(self, name: str, value: Val, scope: Scope) -> None:
        raise NotImplementedError  # statements.py

    def _mutate(self, base: Val, node: ast.AST, how: str) -> None:
        raise NotImplementedError  # statements.py

    def _iterate(self, it: Val, loop: int) -> Val:
        raise NotImplementedError  # statements.py

    def _element(self, value: Val) -> Val:
        raise NotImplementedError  # statements.py

    def _eval(self, node: ast.expr | None, scope: Scope) -> Val:
        raise NotImplementedError  # expressions.py

    def _lookup(self, name: str, scope: Scope, node: ast.AST) -> Val:
        raise NotImplementedError  # expressions.py

    def _attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        raise NotImplementedError  # expressions.py

    def _subscript_parts(self, node: ast.Subscript, scope: Scope, base: Val) -> Val:
        raise NotImplementedError  # expressions.py

    def _index_axis(self, base: Val, position: int, index: Val) -> Val:
        raise NotImplementedError  # expressions.py

    def _call_function(self, index: int, args: list[Val], kwargs: dict[str, Val], *, line: int) -> Val:
        raise NotImplementedError  # calls.py

    def _member(self, owner: Val, attr: str) -> Val | None:
        raise NotImplementedError  # calls.py
