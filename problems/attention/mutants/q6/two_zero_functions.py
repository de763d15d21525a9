"""Mutant (points without work): both functions return zeros of the right shapes. They agree with each other,
which used to earn the agreement check's 2 points; agreement now pays only when both are right on a basic case."""

# caught-by: softmax_axis, determinism


def attention_loop(q, k, v):
    b, h, tq, _ = q.shape
    return q.new_zeros(b, h, tq, v.shape[-1]), q.new_zeros(b, h, tq, k.shape[-2])


def attention_batched(q, k, v):
    b, h, tq, _ = q.shape
    return q.new_zeros(b, h, tq, v.shape[-1]), q.new_zeros(b, h, tq, k.shape[-2])
