"""Q1's numbers per student: Q = diag(q1, q2), K = I, and V drawn from small integers; seed 0 is the set's own
(Q = K = I, V = [[2, 0], [0, 4]]).

S = QK^T/sqrt(2) stays diagonal, so each row's softmax is worked by hand from one exponential: row i is
[p, 1 - p] or [1 - p, p] with p = exp(q_i/sqrt(2)) / (exp(q_i/sqrt(2)) + 1). With q1 != q2 the weights A are not
symmetric, so a softmax taken along the wrong axis (which gives A^T here) loses points.

Runs in the set's jailed checker (never in the service); returns plain data (docs/problem-sets.md, "Parameters").
"""

import math
import random

TODAY = {"q1": 1, "q2": 1, "v11": 2, "v12": 0, "v21": 0, "v22": 4}


def _draw(rng):
    while True:
        values = {
            "q1": rng.choice([1, 2, 3]),
            "q2": rng.choice([1, 2, 3]),
            "v11": rng.randint(1, 4),
            "v12": rng.randint(0, 3),
            "v21": rng.randint(0, 3),
            "v22": rng.randint(1, 4),
        }
        # Two equal rows of V would make A V = V whatever the weights: the weights would not matter.
        if (values["v11"], values["v12"]) != (values["v21"], values["v22"]):
            return values


def _weight(q):
    """A row's larger softmax weight: exp(q/sqrt(2)) / (exp(q/sqrt(2)) + 1)."""
    e = math.exp(q / math.sqrt(2))
    return e / (e + 1)


def _shown(x):
    return f"{x:.4f}"


def generate(seed):
    values = TODAY if seed == 0 else _draw(random.Random(seed))
    q1, q2 = values["q1"], values["q2"]
    v = [[values["v11"], values["v12"]], [values["v21"], values["v22"]]]
    s = [[q1 / math.sqrt(2), 0.0], [0.0, q2 / math.sqrt(2)]]
    p1, p2 = _weight(q1), _weight(q2)
    a = [[p1, 1 - p1], [1 - p2, p2]]
    out = [[sum(a[i][k] * v[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
    shown = {
        "p1": _shown(p1),
        "p1c": _shown(1 - p1),
        "p2": _shown(p2),
        "p2c": _shown(1 - p2),
        "o11": _shown(out[0][0]),
        "o12": _shown(out[0][1]),
        "o21": _shown(out[1][0]),
        "o22": _shown(out[1][1]),
    }
    return {
        "params": {**values, **shown},
        "parts": {
            "b1": {"answer": [[round(x, 8) for x in row] for row in s]},
            "b2": {"answer": [[round(x, 8) for x in row] for row in a]},
            "b3": {"answer": round(p1, 8)},
            "b4": {"answer": [[round(x, 7) for x in row] for row in out]},
        },
    }
