"""The SymPy worker process: ``python -m graders.answers.symbolic_worker``.

Reads one JSON request per line on stdin ({"student", "expected", "symbols"}), answers one JSON line on stdout:
"equal", "different" or "error". It holds nothing secret (started with a minimal environment) and is killed by
symbolic_pool when it overruns its time limit.
"""

from __future__ import annotations

import json
import sys

WORKER_MEMORY_BYTES = 2 * 1024**3


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # not available on this platform; the time limit still holds


def _answer(line: str) -> str:
    from graders.answers.symbolic_sympy import simplify_equal

    try:
        request = json.loads(line)
        equal = simplify_equal(str(request["student"]), str(request["expected"]), list(request["symbols"]))
    except Exception:  # any parse or SymPy failure (MemoryError included) means "could not decide"
        return "error"
    return "equal" if equal else "different"


def main() -> None:
    """Serve requests until stdin closes."""
    import graders.answers.symbolic_sympy  # noqa: F401 - import SymPy before announcing readiness

    _limit_memory()
    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        print(json.dumps(_answer(line)), flush=True)


if __name__ == "__main__":
    main()
