"""Instructor source that checks ``define()`` inside the jail, beside the student's code (not secret).

How names reach each other in the jail (graders/sandbox/child.py): ``define()`` runs in a helpers namespace
apart from the submission; ``Ref(name)`` resolves helper names; ``call``/``time`` resolve names of the submission
module only, and the helpers namespace holds that module as ``submission``. So a helper the check must *call*
(the reference it times, the mutation probe) is exported into the submission module under an ``_ag_`` name,
which cannot clash with a student's name in practice and only adds an attribute. Imports happen inside the
functions. The reference here computes in the input dtype; tests assert it agrees with
reference.reference_attention.
"""

from __future__ import annotations

# Prepended to a helper source: ``@_ag_export`` makes a helper callable by name through call() and time().
_EXPORT = """
def _ag_export(fn):
    import sys

    module = globals().get("submission") or sys.modules.get("submission")
    if module is not None:
        setattr(module, fn.__name__, fn)
    return fn
"""

REFERENCE_NAME = "_ag_reference_attention"

REFERENCE_SOURCE = (
    _EXPORT
    + """

@_ag_export
def _ag_reference_attention(q, k, v, key_valid=None, causal=False):
    import math

    import torch

    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size d_k")
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights
"""
)

# In-place mutation of an input is invisible through the RPC boundary: arguments are copied over the wire, so
# the trusted side's tensors never change. This probe runs beside the student's function and reports which of
# the arguments it was given changed during the call (names only; no values leave the jail).
MUTATION_PROBE_NAME = "_ag_mutation_probe"

MUTATION_PROBE_SOURCE = (
    _EXPORT
    + """

@_ag_export
def _ag_mutation_probe(entry, *args, **kwargs):
    import sys

    import torch

    module = globals().get("submission") or sys.modules.get("submission")
    fn = getattr(module, entry)
    names = ["q", "k", "v"]
    tensors = [(names[i] if i < 3 else "argument %d" % i, a) for i, a in enumerate(args)]
    tensors += list(kwargs.items())
    tensors = [(name, t) for name, t in tensors if isinstance(t, torch.Tensor)]
    before = [t.detach().clone() for _, t in tensors]
    fn(*args, **kwargs)
    return [name for (name, t), b in zip(tensors, before) if not torch.equal(t.detach(), b)]
"""
)

# q6: the batched style of the same algorithm, timed beside the student's attention_batched.
REFERENCE_BATCHED_NAME = "_ag_reference_batched"

REFERENCE_BATCHED_SOURCE = (
    _EXPORT
    + """

@_ag_export
def _ag_reference_batched(q, k, v):
    import math

    import torch

    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights
"""
)
