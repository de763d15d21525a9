"""Statements: assignments (with aliasing and widening), loops and their axis roles, in-place changes."""

from __future__ import annotations

import ast
from dataclasses import replace

from checklibs.attention.source_rules.values import (
    EMPTY,
    MAX_ITEMS,
    AxisRef,
    Val,
    data,
    join,
    pack,
)
from checklibs.attention.source_rules.walker import ClassInfo, Function, Scope, Walker

_OPS = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**", "MatMult": "@",
    "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>",
}  # fmt: skip


def _method_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """ "static", "class" or "plain": how a method of a class binds its first argument."""
    for decorator in node.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name == "staticmethod":
            return "static"
        if name == "classmethod":
            return "class"
    return "plain"


class Statements(Walker):
    def _exec_block(self, body: list[ast.stmt], scope: Scope) -> None:
        for stmt in body:
            self._exec(stmt, scope)

    def _branches(self, blocks: list[list[ast.stmt]], scope: Scope) -> None:
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

    def _exec(self, stmt: ast.stmt, scope: Scope) -> None:
        self._step()
        if not self._recording and scope.module:
            self._sink = set()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.functions.append(Function(stmt, scope))
            self._bind_name(stmt.name, Val(funcs=frozenset({len(self.functions) - 1})), scope, stmt)
        elif isinstance(stmt, ast.ClassDef):
            self._class_def(stmt, scope)
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

    def _class_def(self, stmt: ast.ClassDef, scope: Scope) -> None:
        """A class: its methods are the file's functions, called with ``self`` when an instance's method is called.

        Methods of base classes of the file are inherited; library bases (``nn.Module``) add nothing but the
        convention that calling an instance runs ``forward`` (calls.py).
        """
        info = ClassInfo(stmt.name)
        for part in [*stmt.bases, *stmt.decorator_list]:
            base = self._eval(part, scope)
            for index in sorted(base.classes):
                parent = self.classes[index]
                info.methods.update(parent.methods)
                info.kinds.update(parent.kinds)
                info.attrs.update(parent.attrs)
        inner = Scope(scope)
        self._exec_block(stmt.body, inner)
        for member in stmt.body:
            if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and member.name in inner.vars:
                funcs = inner.vars[member.name].funcs
                if funcs:
                    info.methods[member.name] = max(funcs)
                    info.kinds[member.name] = _method_kind(member)
        for name, value in inner.vars.items():
            if name not in info.methods:
                info.attrs[name] = value
        self.classes.append(info)
        value = Val(refs=frozenset(self._sink), classes=frozenset({len(self.classes) - 1}))
        self._bind_name(stmt.name, value, scope, stmt)

    def _bind_name(self, name: str, value: Val, scope: Scope, node: ast.AST) -> None:
        if scope.module:
            value = replace(value, shared=True, refs=value.refs | frozenset(self._sink))
            scope.vars[name] = value
            return
        if name in scope.globals:
            self._state(f"assigns the module-level name {name}", node)
            self.module.vars[name] = join(self.module.vars.get(name, EMPTY), value)
            return
        scope.vars[name] = value

    def _assign(self, target: ast.expr, value: Val, scope: Scope, node: ast.AST) -> None:
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
            for index in sorted(base.instances | base.classes):
                attrs = self.classes[index].attrs
                attrs[target.attr] = join(attrs[target.attr], value) if target.attr in attrs else value
            if base.dotted is not None:
                self.patches[f"{base.dotted}.{target.attr}"] = replace(value, refs=value.refs | self._refs_of(value))
                self._state(f"assigns to the library attribute {base.dotted}.{target.attr}", node)
            elif base.funcs or base.shared:
                self._state(f"sets the attribute {ast.unparse(target)[:60]}", node)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, value, scope, node)

    def _refs_of(self, value: Val) -> frozenset[str]:
        return frozenset({value.dotted}) if value.dotted else frozenset()

    def _widen(self, name: str, value: Val, scope: Scope) -> None:
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

    def _aug_assign(self, stmt: ast.AugAssign, scope: Scope) -> None:
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

    def _for(self, stmt: ast.For | ast.AsyncFor, scope: Scope) -> None:
        iterable = self._eval(stmt.iter, scope)
        loop = self._new_loop(stmt, "for")
        self._loops.append(loop)
        try:
            self._assign(stmt.target, self._iterate(iterable, loop), scope, stmt)
            self._branches([stmt.body, []], scope)
        finally:
            self._loops.pop()
        self._exec_block(stmt.orelse, scope)

    def _while(self, stmt: ast.While, scope: Scope) -> None:
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
