"""The CPU of one argon2id check at the two profiles app.security chooses between: OWASP's minimum (m = 19 MiB,
t = 2, p = 1) and RFC 9106's second recommended profile (m = 64 MiB, t = 3, p = 4, argon2-cffi's default). At login
the CPU of argon2 is what a class waits for (bench.bench_class_load), so the cheaper one is the production choice.

Each profile hashes and verifies ``--n`` passwords; printed: CPU per call (user + system of this process, all
argon2 lanes included) and wall p50. The ratio of the two is the figure to read on a shared machine.

    .venv/bin/python -m bench.bench_password_hash [--n 300]
"""

from __future__ import annotations

import argparse
import resource
import time

from argon2 import PasswordHasher, Type

PROFILES = {
    "OWASP minimum (m=19 MiB, t=2, p=1)": {"memory_cost": 19 * 1024, "time_cost": 2, "parallelism": 1},
    "RFC 9106 second (m=64 MiB, t=3, p=4)": {"memory_cost": 64 * 1024, "time_cost": 3, "parallelism": 4},
}


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(hasher: PasswordHasher, n: int) -> dict[str, float]:
    """CPU ms per call and wall p50 ms, for hash and for verify."""
    out: dict[str, float] = {}
    stored = hasher.hash("warm-up")
    for kind, call in (
        ("hash", lambda i: hasher.hash(f"pw-{i}")),
        ("verify", lambda _i: hasher.verify(stored, "warm-up")),
    ):
        walls = []
        cpu0 = cpu_s()
        for i in range(n):
            started = time.perf_counter()
            call(i)
            walls.append(time.perf_counter() - started)
        out[f"{kind} cpu"] = 1000 * (cpu_s() - cpu0) / n
        out[f"{kind} wall p50"] = 1000 * sorted(walls)[n // 2]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="hashes and verifies per profile")
    args = parser.parse_args()
    results = {}
    for name, params in PROFILES.items():
        results[name] = figures = measure(PasswordHasher(type=Type.ID, **params), args.n)
        print(f"{name}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in figures.items()), flush=True)
    cheap, dear = (results[name]["verify cpu"] for name in PROFILES)
    print(f"verify CPU ratio, RFC 9106 second / OWASP minimum: {dear / cheap:.1f}x (n={args.n} each)")


if __name__ == "__main__":
    main()
