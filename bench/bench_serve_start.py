"""How long `autograder serve` takes to answer, and to offer its shipped sets, on a fresh data dir and on a restart.

    python -m bench.bench_serve_start [--port 8000] [--sandbox bwrap|unsafe-local]

Prints, for a first start (empty database: migrations, first accounts, every shipped set gated) and a restart
with the sets unchanged: seconds from the process start to the first `/healthz` 200, to the login page, and until
every set is live (`/healthz` "sets"), with the load average, since a busy machine stretches the gate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.config import REPO_ROOT

BOUND_S = 3600.0  # only stops a hung run


def _poll(base: str, start: float, proc: subprocess.Popen[bytes]) -> tuple[dict[str, float], list[str]]:
    out: dict[str, float] = {}
    while time.monotonic() - start < BOUND_S:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}")
        try:
            health = httpx.get(f"{base}/healthz", timeout=5).json()
            out.setdefault("healthz", time.monotonic() - start)
            if "login" not in out and httpx.get(f"{base}/login", timeout=5).status_code == 200:
                out["login"] = time.monotonic() - start
            states = list(health.get("sets", {}).values())
            if states and all(not ("queued" in s or "checking" in s) for s in states):
                out["sets settled"] = time.monotonic() - start
                return out, states
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("serve did not settle")


def run(data_dir: Path, port: int, sandbox: str) -> tuple[dict[str, float], list[str]]:
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(data_dir),
        "AUTOGRADER_SECRET_KEY": "s" * 40,
        "AUTOGRADER_SANDBOX": sandbox,
        "AUTOGRADER_DEV_MODE": "true" if sandbox == "unsafe-local" else "false",
    }
    log = (data_dir.parent / f"serve-{port}.log").open("ab")
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli.main", "serve", "--port", str(port)], cwd=REPO_ROOT,
                            env=env, stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    try:
        return _poll(f"http://127.0.0.1:{port}", start, proc)
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--sandbox", default="bwrap", choices=["bwrap", "unsafe-local"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        data_dir = Path(tmp) / "data"
        for label in ("first start", "restart, sets unchanged"):
            load = os.getloadavg()
            figures, states = run(data_dir, args.port, args.sandbox)
            shown = ", ".join(f"{k} {v:.1f} s" for k, v in figures.items())
            live = sum(s == "live" for s in states)
            print(f"{label}: {shown}; {live}/{len(states)} sets live; load average before {load[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
