"""Expressions: names, attributes, subscripts (which axis an index selects), operators and comprehensions."""

from __future__ import annotations

import ast
from dataclasses import replace

from checklibs.attention.source_rules.values import (
    EMPTY,
    INPUT_KIND,
    Q_ROW,
    AxisRef,
    Layout,
    Q,
    Val,
    data,
    join,
    pack,
)
from checklibs.attention.source_rules.vocabulary import (
    BUILTINS,
    CACHING,
    META_ATTRS,
)
from checklibs.attention.source_rules.walker import Function, Scope, Walker


def _const_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const_int(node.operand)
        return -inner if inner is not None else None
    return None


class Expressions(Walker):
    def _eval(self, node: ast.expr | None, scope: Scope) -> Val:
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

    def _e_Constant(self, node: ast.Constant, scope: Scope) -> Val:
        if isinstance(node.value, str | int | float | bool) and not (
            isinstance(node.value, str) and len(node.value) > 200
        ):
            return Val(const=node.value, has_const=True)
        return EMPTY

    def _e_Name(self, node: ast.Name, scope: Scope) -> Val:
        return self._lookup(node.id, scope, node)

    def _lookup(self, name: str, scope: Scope, node: ast.AST) -> Val:
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

    def _e_Attribute(self, node: ast.Attribute, scope: Scope) -> Val:
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
        if base.instances or base.classes:
            member = self._member(base, attr)  # a method (bound) or an attribute stored on the file's class
            if member is not None:
                return member
        if attr == "shape":
            return Val(layout=base.layout, is_shape=True)
        if attr == "dtype":
            # x.dtype of a value derived from inputs of one dtype family, so that x.to(q.dtype) is read as a cast
            kinds = {INPUT_KIND.get(label) for label in base.src | base.alias}
            if kinds in ({"bool"}, {"float"}):
                return Val(dotted="torch.bool" if kinds == {"bool"} else "torch.float64")
            return EMPTY
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

    def _e_Subscript(self, node: ast.Subscript, scope: Scope) -> Val:
        base = self._eval(node.value, scope)
        return self._subscript_parts(node, scope, base)

    def _subscript_parts(self, node: ast.Subscript, scope: Scope, base: Val) -> Val:
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

    def _e_BinOp(self, node: ast.BinOp, scope: Scope) -> Val:
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

    def _e_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Val:
        value = self._eval(node.operand, scope)
        return Val(src=value.src, layout=value.layout, loops=value.loops, size=value.size)

    def _e_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Val:
        values = [self._eval(v, scope) for v in node.values]
        return join(*values)

    def _e_Compare(self, node: ast.Compare, scope: Scope) -> Val:
        values = [self._eval(node.left, scope)] + [self._eval(c, scope) for c in node.comparators]
        sizes = [v.size for v in values if v.size is not None]
        return Val(
            src=data(*values).src, loops=frozenset().union(*(v.loops for v in values)), size=sizes[0] if sizes else None
        )

    def _e_IfExp(self, node: ast.IfExp, scope: Scope) -> Val:
        self._eval(node.test, scope)
        return join(self._eval(node.body, scope), self._eval(node.orelse, scope))

    def _e_Tuple(self, node: ast.Tuple | ast.List | ast.Set, scope: Scope) -> Val:
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

    def _e_Dict(self, node: ast.Dict, scope: Scope) -> Val:
        values = [self._eval(k, scope) for k in node.keys if k is not None] + [
            self._eval(v, scope) for v in node.values
        ]
        return replace(data(*values), container=True)

    def _e_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> Val:
        for value in node.values:
            self._eval(value, scope)
        return EMPTY

    def _e_FormattedValue(self, node: ast.FormattedValue, scope: Scope) -> Val:
        self._eval(node.value, scope)
        return EMPTY

    def _e_Starred(self, node: ast.Starred, scope: Scope) -> Val:
        return self._eval(node.value, scope)

    def _e_NamedExpr(self, node: ast.NamedExpr, scope: Scope) -> Val:
        value = self._eval(node.value, scope)
        self._assign(node.target, value, scope, node)
        return value

    def _e_Lambda(self, node: ast.Lambda, scope: Scope) -> Val:
        self.functions.append(Function(node, scope))
        return Val(funcs=frozenset({len(self.functions) - 1}))

    def _e_Await(self, node: ast.Await, scope: Scope) -> Val:
        return self._eval(node.value, scope)

    def _e_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, scope: Scope) -> Val:
        inner = Scope(scope)
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
