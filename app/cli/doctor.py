"""`autograder doctor`: what the code sandbox can use on this host, and whether a safe sandbox is possible here.

Everything is probed, nothing is assumed: bubblewrap is run once, the sandbox's own seccomp filter is loaded in a
throwaway process, cgroup groups are checked for write access. Exit 0 when a safe sandbox (mode "bwrap") can run
here, 1 otherwise; ``--json`` prints the same facts for machines.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from graders.sandbox import cgroups, pidns_init
from graders.sandbox.cgroup_common import SLOT_CPU_SHARES, SLOT_CPU_WEIGHT
from graders.sandbox.cgroups import CgroupV2, own_v1_group

PROBE_TIMEOUT_S = 20.0
# The sandbox's seccomp filter, loaded for real in a throwaway interpreter.
SECCOMP_PROBE = "from graders.sandbox import seccomp_filter; seccomp_filter.install(); print('loaded')"


def _run(argv: list[str]) -> tuple[int | None, str]:
    """(exit status or None when it could not run, the last of its output)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return done.returncode, (done.stdout + done.stderr).strip()[-300:]


def bubblewrap(bwrap: str) -> dict[str, Any]:
    path = shutil.which(bwrap)
    if path is None:
        return {"found": False, "path": None, "version": None, "runs": False, "detail": f"{bwrap} not found"}
    _, version = _run([path, "--version"])
    # What the zygote needs of it: new pid and network namespaces, a fresh /proc, a read-only root.
    jail = [path, "--unshare-pid", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/"]
    jail += ["--dev", "/dev", "--proc", "/proc", "true"]
    status, output = _run(jail)
    return {"found": True, "path": path, "version": version or None, "runs": status == 0, "detail": output}


def cgroup_v1() -> dict[str, Any]:
    found = {}
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        group = own_v1_group(controller)
        found[controller] = {"writable": group is not None, "group": str(group) if group is not None else None}
    return found


def _mountinfo() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees."""
    mounts: list[tuple[str, str]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) > 4 and right:
            mounts.append((fields[4], right.split()[0]))
    return mounts


def cgroup_v2() -> dict[str, Any]:
    """Whether the unified hierarchy is mounted and this process's own group in it could be delegated from."""
    points = [point for point, fstype in _mountinfo() if fstype == "cgroup2"]
    if not points:
        return {
            "mounted": False,
            "mount_point": None,
            "group": None,
            "controllers": [],
            "delegated_writable": False,
            "usable": False,
        }
    own = "/"
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = line[3:] or "/"
    except OSError:
        pass
    group = Path(points[0]) / own.lstrip("/")
    try:
        controllers = (group / "cgroup.controllers").read_text().split()
    except OSError:
        controllers = []
    needed = [group, group / "cgroup.procs", group / "cgroup.subtree_control"]
    writable = all(p.exists() and os.access(p, os.W_OK) for p in needed)
    return {
        "mounted": True,
        "mount_point": points[0],
        "group": str(group),
        "controllers": controllers,
        "delegated_writable": writable,
        "usable": CgroupV2.detect() is not None,  # writable and offering memory and pids: the sandbox picks v2
    }


def seccomp() -> dict[str, Any]:
    status, output = _run([sys.executable, "-I", "-c", SECCOMP_PROBE])
    return {"available": status == 0 and output.endswith("loaded"), "detail": output}


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def user_namespaces() -> dict[str, Any]:
    maximum = _read_int("/proc/sys/user/max_user_namespaces")
    unprivileged = _read_int("/proc/sys/kernel/unprivileged_userns_clone")  # Debian's switch, absent elsewhere
    restricted = _read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")  # Ubuntu's
    if maximum == 0 or unprivileged == 0 or restricted == 1:
        allowed: bool | None = False
    elif maximum is None:
        allowed = None
    else:
        allowed = True
    return {"max_user_namespaces": maximum, "unprivileged_allowed": allowed, "used_by_sandbox": False}


def isolation() -> dict[str, Any]:
    """The isolation level the pool picks here (``cgroups.detect``) and, per controller, where its groups go."""
    hierarchy = cgroups.detect()
    controllers: dict[str, str | None] = dict.fromkeys(("memory", "pids", "cpu"))
    if hierarchy is not None:
        controllers.update(hierarchy.controllers)
    return {"level": cgroups.level(hierarchy), "controllers": controllers}


def enforcement(possible: bool, level: dict[str, Any]) -> dict[str, str]:
    """Which bound on memory, processes and CPU the sandbox applies here (graders/sandbox: Slot, lockdown)."""
    if not possible:
        none = "none: the sandbox cannot start here"
        return {"memory": none, "processes": none, "cpu": none}
    have = level["controllers"]
    calls = "RLIMIT_CPU + wall-clock deadlines per call"
    if level["level"] == cgroups.THREADS_ONLY:
        return {
            "memory": "RLIMIT_AS (VmSize + the budget) per process; seccomp refuses new processes (threads only)",
            "processes": "RLIMIT_NPROC for the slot's uid (and no fork: threads only)",
            "cpu": f"{calls}; no CPU share per slot (no cgroup)",
        }
    if level["level"] == "cgroup v2":
        memory = "cgroup v2 group per child (memory.max = the budget, memory.swap.max 0, memory.oom.group 1)"
        processes = "cgroup v2 pids.max per child + RLIMIT_NPROC"
        cpu = f"{calls}; cgroup v2 group per slot: cpu.weight {SLOT_CPU_WEIGHT}, cpu.max one core"
    else:
        memory = "cgroup v1 memory group per child"
        processes = (
            "cgroup v1 pids group per child + RLIMIT_NPROC"
            if have["pids"] is not None
            else "RLIMIT_NPROC for the slot's uid (no writable pids controller)"
        )
        cpu = f"{calls}; cgroup v1 cpu group per slot: cpu.shares {SLOT_CPU_SHARES}, CFS quota one core"
    if have["cpu"] is None:
        cpu = f"{calls}; no CPU share per slot (no writable cpu controller in {level['level']})"
    return {"memory": memory, "processes": processes, "cpu": cpu}


def report(bwrap: str = "bwrap") -> dict[str, Any]:
    root = os.geteuid() == 0
    found_bwrap = bubblewrap(bwrap)
    filters = seccomp()
    init = pidns_init.init_argv()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    problems = []
    if not found_bwrap["found"]:
        problems.append("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    elif not found_bwrap["runs"]:
        problems.append(f"bubblewrap cannot start a jail here: {found_bwrap['detail']}")
    if not root:
        problems.append("not running as root: the sandbox changes uids and mounts the children's working dirs")
    if not filters["available"]:
        problems.append(f"the sandbox's seccomp filter cannot be loaded: {filters['detail']}")
    level = isolation()
    return {
        "ok": not problems,
        "problems": problems,
        "bubblewrap": found_bwrap,
        "root": {"euid": os.geteuid(), "is_root": root},
        "cgroup_v1": cgroup_v1(),
        "cgroup_v2": cgroup_v2(),
        "isolation": level,
        "enforcement": enforcement(not problems, level),
        "seccomp": filters,
        "user_namespaces": user_namespaces(),
        "pid_namespace_init": "setpriv + env, spawned" if init is not None else "forked from the zygote (fallback)",
        "fd_limit": {"soft": soft, "hard": hard},
    }


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def render(doc: dict[str, Any]) -> str:
    b, v1, v2, enf = doc["bubblewrap"], doc["cgroup_v1"], doc["cgroup_v2"], doc["enforcement"]
    level = doc["isolation"]
    users = doc["user_namespaces"]
    bwrap = f"yes  {b['path']} ({b['version']}); starts a jail: {_yes(b['runs'])}" if b["found"] else "no"
    v2_line = "not mounted"
    if v2["mounted"]:
        v2_line = (
            f"mounted at {v2['mount_point']}; own group {v2['group']}; delegated subtree writable: "
            f"{_yes(v2['delegated_writable'])}; controllers: {' '.join(v2['controllers']) or 'none'}; "
            f"offers memory and pids: {_yes(v2['usable'])}"
        )
    allowed = {True: "allowed", False: "not allowed", None: "unknown"}[users["unprivileged_allowed"]]
    rows = [
        ("bubblewrap", bwrap),
        ("root", f"{_yes(doc['root']['is_root'])}  (euid {doc['root']['euid']})"),
        *[
            (f"cgroup v1 {c}", f"writable  {v1[c]['group']}" if v1[c]["writable"] else "not writable")
            for c in ("memory", "pids", "cpu", "cpuacct")
        ],
        ("cgroup v2", v2_line),
        ("isolation", f"{level['level']}  (cgroup v2 if it offers memory+pids, else v1, else threads-only)"),
        *[
            (f"  {name}", f"{level['level']}  {where}" if where is not None else "not used")
            for name, where in level["controllers"].items()
        ],
        ("seccomp", "yes" if doc["seccomp"]["available"] else f"no  {doc['seccomp']['detail']}"),
        (
            "user namespaces",
            f"max {users['max_user_namespaces']}, unprivileged {allowed} (the sandbox does not use them)",
        ),
        ("pid ns init", doc["pid_namespace_init"]),
        ("fd limit", f"soft {doc['fd_limit']['soft']}, hard {doc['fd_limit']['hard']}"),
        ("memory bound", enf["memory"]),
        ("process bound", enf["processes"]),
        ("CPU bound", enf["cpu"]),
    ]
    lines = [f"{name:<19}{text}" for name, text in rows]
    if doc["ok"]:
        lines.append("verdict            a safe sandbox (mode bwrap) is possible on this host")
    else:
        lines.append("verdict            NO safe sandbox on this host:")
        lines += [f"                   - {problem}" for problem in doc["problems"]]
    return "\n".join(lines)


def run(*, as_json: bool, bwrap: str) -> None:
    """`autograder doctor` (app.cli.main declares its options): print the report, exit 1 if no safe sandbox."""
    doc = report(bwrap)
    typer.echo(json.dumps(doc, indent=2) if as_json else render(doc))
    raise typer.Exit(0 if doc["ok"] else 1)
