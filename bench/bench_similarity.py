"""Code similarity of a class: 300 students' q5 submissions compared pairwise (app.gradebook.similarity), on this
machine's cores, with the reference solutions as boilerplate. Prints the time to fingerprint, to compare all
44 850 pairs, the whole report, and a second report after one more student submitted (fingerprints are kept, so
only the new one is made), beside a baseline from the same run: reading and hashing the 300 sources.

The class is made from the attention set's shipped q5 files (7 solutions, 33 mutants): each student hands in one of
them with its names changed and comments moved, and every fiftieth pair of students shares a near-copy.

    .venv/bin/python -m bench.bench_similarity [--students 300]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import time

from app.config import REPO_ROOT
from app.gradebook import similarity
from app.gradebook.similarity import Entry

Q5 = REPO_ROOT / "problems" / "attention"
RENAMES = [("scores", "logits"), ("weights", "attn"), ("allowed", "keep"), ("tq", "n_q"), ("tk", "n_k")]


def make_class(students: int, seed: int = 7) -> tuple[list[Entry], list[str]]:
    rng = random.Random(seed)
    files = sorted((Q5 / "solutions" / "q5").glob("*.py")) + sorted((Q5 / "mutants" / "q5").glob("*.py"))
    sources = [f.read_text(encoding="utf-8") for f in files]
    references = [f.read_text(encoding="utf-8") for f in sorted((Q5 / "solutions" / "q5").glob("*.py"))]
    entries = []
    for n in range(students):
        code = sources[rng.randrange(len(sources))]
        for old, new in RENAMES:
            if rng.random() < 0.5:
                code = code.replace(old, f"{new}{n % 7}")
        code = f"# student {n}\n" + code + f"\n\ndef _helper_{n}(x):\n    return x * {n} + {rng.randrange(1000)}\n"
        if n % 50 == 1:  # a near-copy of the previous student's file
            code = entries[-1].code.replace("student", "learner")
        entries.append(Entry(n, f"s{n}", f"s{n}@example.com", n, code))
    return entries, references


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=300)
    args = parser.parse_args()
    entries, references = make_class(args.students)
    start = time.perf_counter()
    for e in entries:
        hashlib.sha256(e.code.encode()).hexdigest()
    baseline = time.perf_counter() - start
    similarity.similar_pairs(entries[:2], references)  # import copydetect and its numpy, matplotlib once
    similarity._FINGERPRINTS.clear()
    marks: dict[str, float] = {}

    def progress(done: int, total: int) -> None:
        if done == len(entries) and "fingerprinted" not in marks:
            marks["fingerprinted"] = time.perf_counter()

    start = time.perf_counter()
    pairs = similarity.similar_pairs(entries, references, progress)
    whole = time.perf_counter() - start
    fingerprinting = marks["fingerprinted"] - start
    newcomer = Entry(10_000, "new", "new@example.com", 10_000, entries[0].code.replace("student", "newcomer"))
    start = time.perf_counter()
    similarity.similar_pairs([*entries, newcomer], references)
    again = time.perf_counter() - start
    n_pairs = len(entries) * (len(entries) - 1) // 2
    print(f"similarity of {len(entries)} q5 submissions ({n_pairs} pairs), load {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores")  # fmt: skip
    print(f"  baseline: read and hash the sources        {1000 * baseline:8.1f} ms")
    print(f"  fingerprint {len(entries)} submissions             {1000 * fingerprinting:8.1f} ms")
    print(f"  compare every pair                         {1000 * (whole - fingerprinting):8.1f} ms")
    print(f"  whole report                               {1000 * whole:8.1f} ms  ({len(pairs)} pairs share code)")
    print(f"  again after one more submission (cached)   {1000 * again:8.1f} ms")
    top = pairs[0]
    print(f"  top pair: {top.a.name} · {top.b.name} at {100 * top.score:.0f}%")


if __name__ == "__main__":
    main()
