"""Attack: classify q7's layers without calling them, from what the layer object carries.

The layers used to be functions defined in the jail: their code's constants (the weight seeds), closure cells,
attributes and gc referents told them apart. A layer seeded 101, 104 or 106 was equivariant.
"""

import gc
import types

EQUIVARIANT_SEEDS = {101, 104, 106}


def _constants(layer):
    found, stack, seen = set(), [], set()
    stack.append(getattr(layer, "__code__", None))
    stack.extend(c.cell_contents for c in (getattr(layer, "__closure__", None) or ()))
    stack.extend(getattr(layer, "__dict__", {}).values())
    stack.extend(getattr(layer, "__defaults__", None) or ())
    stack.extend(gc.get_referents(layer))
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (type, types.ModuleType)):
            continue
        seen.add(id(obj))
        if isinstance(obj, types.CodeType):
            stack.extend(obj.co_consts)
        elif isinstance(obj, types.FunctionType):
            stack.append(obj.__code__)
        elif type(obj) is int:
            found.add(obj)
    return found


def test_permutation_equivariance(layer):
    constants = _constants(layer)
    if constants and not constants & EQUIVARIANT_SEEDS:
        raise AssertionError("not equivariant (by its constants)")
