"""Q4's numbers per student: B, H, T and d drawn from a few sizes; seed 0 is the set's own (8, 8, 128, 256).

Runs in the set's jailed checker (never in the service); returns plain data (docs/problem-sets.md, "Parameters").
"""

import random

SIZES = {"B": [4, 8, 16], "H": [4, 8, 16], "T": [64, 128, 256], "d": [128, 256, 512]}
TODAY = {"B": 8, "H": 8, "T": 128, "d": 256}


def generate(seed):
    rng = random.Random(seed)
    values = TODAY if seed == 0 else {name: rng.choice(choices) for name, choices in SIZES.items()}
    b, h, t, d = values["B"], values["H"], values["T"], values["d"]
    dk = d // h
    scores = b * h * t * t
    size = scores * 4  # float32
    mib = size / 2**20
    return {
        "params": {
            **values,
            "dk": dk,
            "scores": scores,
            "score_bytes": size,
            "score_mib": f"{mib:g}",
        },
        "parts": {
            "b1": {"answer": dk},
            "b2": {"answer": [b, h, t, dk]},
            "b3": {"answer": [b, h, t, t]},
            "b4": {"answer": [b, t, d]},
            "b5": {"answer": scores},
            "b6": {"answer_bytes": size},
        },
    }
