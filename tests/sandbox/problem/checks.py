"""Checks of the tiny test problem: add(a, b) and scaled_attention(q, k, v, mask=None)."""

import torch

from graders.code.checks import CheckFailed, check


def _reference(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 3, 4, generator=g, dtype=torch.float64) for _ in range(3)]


@check(points=1, category="reference_example", visibility="visible", timeout_s=10)
def add_numbers(student):
    """add(2, 3) is 5."""
    got = student.call("add", 2, 3)
    if type(got) not in (int, float) or got != 5:
        raise CheckFailed(f"add(2, 3) returned {got!r}, expected 5")


@check(points=1, category="shape", timeout_s=10)
def add_tensors(student):
    """add works on tensors."""
    a, b = torch.arange(4.0), torch.ones(4)
    got = student.call("add", a, b)
    if type(got) is not torch.Tensor or got.shape != (4,) or not torch.equal(got, a + b):
        raise CheckFailed("add(a, b) on tensors is wrong")


@check(points=2, category="softmax_axis", timeout_s=10)
def attention_matches_reference(student):
    """scaled_attention matches the reference on a non-symmetric input."""
    q, k, v = _inputs()
    got = student.call("scaled_attention", q, k, v)
    if type(got) is not torch.Tensor or got.shape != (2, 3, 4):
        raise CheckFailed("scaled_attention must return a tensor of shape (2, 3, 4)")
    err = (got - _reference(q, k, v)).abs().max().item()
    if not err < 1e-9:
        raise CheckFailed(f"output differs from the reference (max abs error {err:.3g})")


@check(points=2, category="gradient", timeout_s=10)
def attention_gradient(student):
    """Gradients with respect to q, k and v match the reference in float64."""
    q, k, v = _inputs(1)
    g = torch.ones(2, 3, 4, dtype=torch.float64)
    _, grads = student.call_with_grad("scaled_attention", [q, k, v], {}, [g], [0, 1, 2])
    ref_in = [t.clone().requires_grad_(True) for t in (q, k, v)]
    expected = torch.autograd.grad(_reference(*ref_in), ref_in, g)
    for name, got, want in zip("qkv", grads, expected):
        if got is None:
            raise CheckFailed(f"no gradient reached {name}: is the output detached?")
        if not torch.allclose(got, want, atol=1e-8):
            raise CheckFailed(f"the gradient with respect to {name} is wrong")
