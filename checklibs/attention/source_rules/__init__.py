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

Classes of the file are followed as Python runs them: calling a class runs its ``__init__`` and gives an instance,
calling an instance runs ``__call__`` (or ``forward``, as ``nn.Module`` does), ``obj.method(...)`` binds ``self``
(static and class methods as declared, methods inherited from the file's classes), and ``self.name = ...`` is what
later reads of ``self.name`` see. ``functools.partial(f, *a)`` calls f with a first, and ``torch.vmap(f)`` or
``torch.compile(f)`` calls f itself, so products written in a class, an ``nn.Module.forward``, a partial or a vmapped
helper count as the products they are. Casts follow the inputs' dtypes (a bool ``key_valid``, floating q, k, v):
``key_valid.bool()`` may be the caller's mask itself, ``key_valid.float()`` or ``key_valid.to(q.dtype)`` is a copy.

What it cannot see, by construction: code that exists only at run time (``exec``/``eval`` of strings, ``getattr``
with a computed name, ``importlib`` with a computed name, ``sys.modules`` tricks, a method looked up on an object
of a library class, monkey patches made by another module).
Those appear in ``dynamic`` but are not judged (the prompts do not forbid them);
the behavioural checks still judge what such code computes. Where a value's layout is lost (after ``reshape``,
products, ...) axis roles are guessed from index positions in a (B, H, T, D) tensor, and an unresolvable loop bound
gives the loop no role, so the rules err towards accepting code they cannot read.

The walk is split by what it reads: ``walker`` (state and recording), ``statements``, ``expressions``, ``calls``;
``values`` is what it knows of a value and ``vocabulary`` the names it recognises.

The walk is bounded (``MAX_STEPS`` evaluation steps, ``MAX_FUNCTION_RUNS`` function analyses, ``MAX_DEPTH`` calls
deep, values of at most ``MAX_WEIGHT`` parts): the shipped solutions need a few hundred steps, a 256 KiB source
costs well under a second; beyond a bound the findings are marked ``incomplete`` and the rules are not judged as
passed. Each ``analyse`` call parses anew and keeps nothing afterwards.
"""

from __future__ import annotations

from checklibs.attention.source_rules.analysis import Analysis, analyse, tensor_arg
from checklibs.attention.source_rules.values import (
    LAYER,
    MASK,
    PERM,
    RANDOM,
    Findings,
    LoopInfo,
    SourceUnreadable,
    Val,
    last_name,
)
from checklibs.attention.source_rules.vocabulary import RANDOM_NAMES

__all__ = [
    "LAYER",
    "MASK",
    "PERM",
    "RANDOM",
    "RANDOM_NAMES",
    "Analysis",
    "Findings",
    "LoopInfo",
    "SourceUnreadable",
    "Val",
    "analyse",
    "last_name",
    "tensor_arg",
]
