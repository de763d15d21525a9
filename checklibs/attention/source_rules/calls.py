"""Calls: library functions and methods (products, views, random values), and the student's own functions."""

from __future__ import annotations

import ast
from dataclasses import replace

from checklibs.attention.source_rules.values import (
    EMPTY,
    INPUT_KIND,
    LAYER,
    MAX_DEPTH,
    MAX_FUNCTION_RUNS,
    PERM,
    RANDOM,
    Layout,
    Val,
    data,
    iterating,
    join,
    last_name,
    pack,
)
from checklibs.attention.source_rules.vocabulary import (
    ALONG,
    CACHING,
    CAST_KIND,
    DYNAMIC,
    INPLACE_DUNDERS,
    META_METHODS,
    MUTATORS,
    NEW_TENSOR,
    NOT_INPLACE,
    PARTIAL,
    PERMUTING,
    PRODUCT_OPS,
    RANDOM_NAMES,
    SAME_LAYOUT,
    SORTING,
    VIEWS,
    WRAPPERS,
)
from checklibs.attention.source_rules.walker import BudgetExceeded, Function, Scope, Walker


def _cast_alias(alias: frozenset[str], name: str, args: list[Val], kwargs: dict[str, Val]) -> frozenset[str]:
    """The inputs a cast's result may share storage with: those already of the dtype it casts to."""
    target = CAST_KIND.get(name)
    if name in ("to", "type"):
        given = [a.dotted for a in [*args, kwargs.get("dtype", EMPTY)] if a.dotted is not None]
        target = CAST_KIND.get(last_name(given[0])) if given else None
    if target is None:
        return alias
    return frozenset(a for a in alias if INPUT_KIND.get(a, target) == target)


class Calls(Walker):
    def _e_Call(self, node: ast.Call, scope: Scope) -> Val:
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
            if receiver.instances or receiver.classes:
                member = self._member(receiver, func.attr)
                if member is not None:
                    return self._call_value(member, args, kwargs, node, scope)
            return self._method_call(receiver, func.attr, args, kwargs, node, func, scope)
        callee = self._eval(func, scope)
        if callee.funcs or callee.classes or callee.instances:
            return self._call_value(callee, args, kwargs, node, scope)
        if callee.dotted is not None:
            return self._library_call(callee.dotted, [*callee.bound, *args], kwargs, node, scope)
        if LAYER in callee.src:
            if self._recording:
                self.findings.layer_calls.append((tuple(args), self._line(node)))
            return data(*args)
        self._call_callbacks(args, kwargs, node)
        return data(callee, *args, *kwargs.values())

    def _call_value(self, callee: Val, args: list[Val], kwargs: dict[str, Val], node: ast.Call, scope: Scope) -> Val:
        """Call a function, bound method or partial of the file, a class of the file (its ``__init__``, giving an
        instance) or an instance (its ``__call__``, or ``forward`` as ``nn.Module`` calls it)."""
        self._step()
        line = self._line(node)
        results: list[Val] = []
        bound = [*callee.bound, *args]
        results += [self._call_function(i, bound, kwargs, line=line) for i in sorted(callee.funcs)]
        for index in sorted(callee.classes):
            instance = Val(instances=frozenset({index}))
            init = self.classes[index].methods.get("__init__")
            if init is not None:
                self._call_function(init, [instance, *bound], kwargs, line=line)
            results.append(instance)
        for index in sorted(callee.instances):
            info = self.classes[index]
            method = "__call__" if "__call__" in info.methods else "forward"
            member = self._member(replace(callee, classes=frozenset(), funcs=frozenset()), method)
            if member is not None:
                results.append(self._call_value(member, bound, kwargs, node, scope))
        if callee.dotted is not None:
            results.append(self._library_call(callee.dotted, bound, kwargs, node, scope))
        return join(*results)

    def _member(self, owner: Val, attr: str) -> Val | None:
        """``owner.attr`` for a class of the file or an instance: a method bound as Python binds it, or an
        attribute stored on it; None when the file's classes do not define it (a library base's method)."""
        found: list[Val] = []
        for index in sorted(owner.instances | owner.classes):
            info = self.classes[index]
            method = info.methods.get(attr)
            if method is not None:
                kind = info.kinds.get(attr, "plain")
                if kind == "class":
                    first: tuple[Val, ...] = (Val(classes=frozenset({index})),)
                elif kind == "plain" and index in owner.instances:
                    first = (owner,)
                else:
                    first = ()
                found.append(Val(funcs=frozenset({method}), bound=first))
            elif attr in info.attrs:
                found.append(info.attrs[attr])
        return join(*found) if found else None

    def _call_callbacks(self, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> None:
        """User functions passed to a library or unknown call (map, vmap, partial, ...) are analysed too."""
        tensors = data(*(a for a in args if not a.funcs), *(v for v in kwargs.values() if not v.funcs))
        for value in [*args, *kwargs.values()]:
            for index in sorted(value.funcs):
                fn = self.functions[index].node
                count = len(fn.args.args) + len(fn.args.posonlyargs)
                self._call_function(index, [tensors] * count, {}, line=self._line(node))

    def _library_call(self, dotted: str, args: list[Val], kwargs: dict[str, Val], node: ast.Call, scope: Scope) -> Val:
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
        if name in PARTIAL and args:
            # functools.partial(f, *a): calling it calls f with a first (f a function of the file or a library one).
            return replace(args[0], bound=(*args[0].bound, *args[1:]))
        if name in WRAPPERS and args and (args[0].funcs or args[0].classes or args[0].instances or args[0].dotted):
            return args[0]  # torch.vmap(f, ...), torch.compile(f): calling the result runs f on the same tensors
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
        scope: Scope,
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

    def _random(self, name: str, inputs: Val, node: ast.Call, scope: Scope) -> Val:
        """Random data is marked RANDOM; a random permutation or selection (randperm, shuffle, ...) PERM."""
        if name not in PERMUTING:
            return Val(src=inputs.src | {RANDOM})
        if name == "shuffle" and node.args and isinstance(node.args[0], ast.Name):
            self._widen(node.args[0].id, Val(src=frozenset({PERM})), scope)
        return Val(src=(inputs.src - {RANDOM}) | {PERM})

    def _view(self, base: Val, name: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """A view (or a cast that may return the tensor itself): same data and storage, layout tracked if simple."""
        alias = frozenset() if name == "clone" else _cast_alias(base.alias, name, args, kwargs)
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
            raise BudgetExceeded
        self._stack.append(key)
        try:
            result = self._run_function(function, args, kwargs)
        finally:
            self._stack.pop()
        self._memo[key] = result
        return result

    def _run_function(self, function: Function, args: list[Val], kwargs: dict[str, Val]) -> Val:
        node = function.node
        scope = Scope(function.scope)
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

    def _default(self, expr: ast.expr, scope: Scope) -> Val:
        value = self._eval(expr, scope)
        mutable = isinstance(expr, ast.List | ast.Dict | ast.Set | ast.Call)
        return replace(value, shared=value.shared or mutable)
