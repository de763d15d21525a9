"""The checker process (inside its jail): drop to its own uid, then import and run one set's checks on request.

argv: request fd, reply fd, uid (-1: stay, unsafe-local only), the set's folder, the device, the largest frame, the
address space in MiB (0: none). Nothing of the set is imported before the lockdown (uid change, no_new_privs, the
address-space limit, the seccomp filter); the environment is already empty (bubblewrap --clearenv).
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path
from typing import Any

WORKDIR = "/w"


def _lock_down(uid: int, memory_mb: int) -> None:
    from graders.sandbox import lockdown, seccomp_filter

    os.chown(WORKDIR, uid, uid)  # the checker's private, size-capped tmpfs: the one place it may write
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    lockdown.drop_privileges(uid)  # a non-root uid: every capability bwrap left is gone with it
    lockdown.no_new_privs()
    if memory_mb > 0:  # a check that allocates without bound gets a MemoryError, not the host's memory
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    # The student child's filter (ptrace, mount, bpf, kexec, namespaces, exec, set*id, non-AF_UNIX sockets, ...),
    # threads only: a forked process would bring an address space of its own past the limit above.
    seccomp_filter.install(threads_only=True)
    lockdown.enter_workdir(WORKDIR)


class Checker:
    def __init__(self, set_root: Path, device: str, max_payload: int) -> None:
        from graders.code.checker.remote import Link
        from graders.sandbox import codec

        self.root, self.device = set_root, device
        self.link = Link(int(sys.argv[1]), int(sys.argv[2]), max_payload)
        self.caps = codec.Caps(max_bytes=max_payload)
        self.modules: dict[str, Any] = {}

    def specs(self, relative: str) -> dict[str, Any]:
        from graders.code.checks import load_checks

        if relative not in self.modules:
            path = (self.root / relative).resolve()
            if not path.is_relative_to(self.root.resolve()):
                raise ValueError("the checks file lies outside the set")
            self.modules[relative] = {spec.name: spec for spec in load_checks(path)}
        return self.modules[relative]

    def serve(self) -> None:
        while True:
            try:
                frame = self.link.receive()
            except EOFError:
                return
            op = frame.msg.get("op")
            if op == "describe":
                self.link.send(self.describe(frame.msg.get("file")))
            elif op == "variant":
                self.link.send(self.variant(frame.msg.get("file"), frame.msg.get("seed")))
            elif op == "run":
                self.link.send({"done": self.run(frame.msg, frame.buffers)})
            else:
                self.link.send({"error": "unknown request"})

    def describe(self, relative: Any) -> dict[str, Any]:
        from graders.code.checker import protocol

        try:
            specs = self.specs(str(relative))
        except BaseException as exc:  # instructor code: any failure to import is the set's
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"error": "import", "message": protocol.clip(f"{type(exc).__name__}: {exc}", 1000)}
        return {"ok": True, "checks": [protocol.spec_fields(s) for s in specs.values()]}

    def variant(self, relative: Any, seed: Any) -> dict[str, Any]:
        """``generate(seed)`` of a generator file of the set, as JSON data (graders/problemset/variants.py)."""
        import json

        from graders.code.checker import protocol
        from graders.code.checks import load_module

        try:
            if type(seed) is not int:
                raise TypeError("the seed must be an integer")
            key = f"generator:{relative}"
            if key not in self.modules:
                path = (self.root / str(relative)).resolve()
                if not path.is_relative_to(self.root.resolve()):
                    raise ValueError("the generator lies outside the set")
                self.modules[key] = load_module(path, "autograder_generator")
            generate = getattr(self.modules[key], "generate", None)
            if not callable(generate):
                raise TypeError("the generator file defines no generate(seed) function")
            # Plain JSON data only: what cannot be written as JSON is refused here, in the jail.
            return {"ok": True, "variant": json.loads(json.dumps(generate(seed), allow_nan=False))}
        except BaseException as exc:  # instructor code: any failure is the set's, told back as text
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"error": "generator", "message": protocol.clip(f"{type(exc).__name__}: {exc}", 1000)}

    def run(self, msg: dict[str, Any], buffers: list[bytearray]) -> dict[str, Any]:
        import torch

        from graders.code.checker import protocol
        from graders.code.checker.remote import RemoteProxy
        from graders.code.checks import CheckFailed
        from graders.sandbox.errors import RunEnded

        try:
            spec = self.specs(str(msg.get("file")))[str(msg.get("check"))]
        except BaseException as exc:
            return {"kind": "raised", **protocol.raise_fields(exc)}
        source = bytes(buffers[0]).decode("utf-8", errors="replace") if buffers else None
        proxy = RemoteProxy(self.link, device=self.device, source=source, caps=self.caps)
        torch.set_num_threads(1)
        try:
            feedback = spec.func(proxy)
            return {"kind": "passed", **protocol.feedback_fields(feedback)}
        except CheckFailed as exc:
            return {
                "kind": "failed",
                **protocol.feedback_fields(exc.words or exc.feedback),
                "fraction": exc.score_fraction,
            }
        except AssertionError as exc:
            return {"kind": "assertion", "message": protocol.clip(str(exc), 4000)}
        except RunEnded:
            return {"kind": "run_ended"}
        except (KeyboardInterrupt, SystemExit, Exception) as exc:
            return {"kind": "raised", **protocol.raise_fields(exc)}


def main() -> None:
    uid, set_root, device, max_payload = int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5], int(sys.argv[6])
    if uid >= 0:
        _lock_down(uid, int(sys.argv[7]))
    Checker(set_root, device, max_payload).serve()
