"""The names the walk recognises: products, views, mutators, random and dynamic calls, builtins."""

from __future__ import annotations

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
# Casts and copies that keep the layout; all but clone may return the tensor itself (``key_valid.bool()`` on a bool
# mask, ``torch.as_tensor(q)``), so their result may share the input's storage.
SAME_LAYOUT = frozenset(
    {"float", "double", "half", "bfloat16", "bool", "long", "int", "short", "byte", "char", "to", "type",
     "type_as", "contiguous", "cpu", "cuda", "detach", "clone", "requires_grad_", "conj", "resolve_conj",
     "resolve_neg", "data", "as_tensor", "asarray"}
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
# What dtype family a cast produces: a cast returns its tensor itself only when that already has the dtype, so
# ``key_valid.bool()`` (a bool mask) may alias the caller's mask and ``key_valid.float()`` is a copy.
CAST_KIND = {
    "bool": "bool", "float": "float", "double": "float", "half": "float", "bfloat16": "float", "float32": "float",
    "float64": "float", "float16": "float", "long": "int", "int": "int", "short": "int", "byte": "int",
    "char": "int", "int64": "int", "int32": "int", "int16": "int", "int8": "int", "uint8": "int",
}  # fmt: skip
PARTIAL = frozenset({"partial", "partialmethod"})
# Library calls that return the function they are given, mapped or compiled: calling the result runs it on the
# same arguments (torch.vmap, torch.func.vmap, functorch.vmap, torch.compile, torch.jit.script, functools.wraps(f)).
WRAPPERS = frozenset({"vmap", "compile", "script", "jit", "checkpoint_wrapper", "update_wrapper"})
CACHING = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})
BUILTINS = frozenset(
    {"range", "len", "enumerate", "zip", "map", "getattr", "setattr", "delattr", "exec", "eval", "compile",
     "__import__", "globals", "locals", "vars", "min", "max", "abs", "int", "float", "round", "sum", "list",
     "tuple", "dict", "set", "reversed", "sorted", "iter", "next", "isinstance", "print", "any", "all", "bool",
     "str", "type", "filter", "open", "callable", "hasattr", "id", "hash", "super", "object", "ValueError",
     "TypeError", "AssertionError", "RuntimeError", "Exception"}
)  # fmt: skip
