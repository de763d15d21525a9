"""The command line that starts a zygote: inside bubblewrap (mode "bwrap") or bare (mode "unsafe-local").

The jail's filesystem is built from nothing: read-only binds of what Python and torch need (the system's /usr, the
Python install, the venv's site-packages, and this graders/sandbox package at a neutral path). The repository, its
problems/, the data dir and anything secret are simply not there; hidden paths that happen to sit under a bound
directory are masked on top.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from pathlib import Path

from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import SandboxError

SANDBOX_PACKAGE = Path(__file__).resolve().parent
SOURCE_ROOT = SANDBOX_PACKAGE.parents[1]  # the folder that holds graders/
# The check libraries a set's checks import (course content beside the engine): bound into the checker only.
CHECK_LIBRARIES = SOURCE_ROOT / "checklibs"
JAIL_ROOT = "/opt/autograder"
JAIL_WORK = "/w"
# What the zygote (root inside the jail) needs: uid change and netns for children, chown and cleanup of their
# working dir, and SIGKILL to their leftovers. Every other capability is dropped.
ZYGOTE_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN", "CAP_CHOWN", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER")
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def default_hidden_paths() -> list[Path]:
    """Paths never visible in the jail whatever the config says: the problem sets next to this package."""
    return [SOURCE_ROOT / "problems"]


def site_packages() -> list[Path]:
    paths = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return sorted(p for p in paths if p.is_dir())


def python_binary() -> Path:
    return Path(os.path.realpath(sys.executable))


def bootstrap(paths: list[str], module: str = "graders.sandbox.zygote") -> str:
    return f"import sys; sys.path[:0] = {paths!r}; from {module} import main; main()"


def zygote_argv(config: SandboxConfig, ctl_fd: int, work_root: str) -> list[str]:
    """The full argv of one zygote."""
    tail = [str(ctl_fd), work_root, config.device, str(config.max_transfer_mb * 2**20)]
    if not config.sandboxed:
        return [sys.executable, "-I", "-c", bootstrap([str(SOURCE_ROOT)]), *tail, "0"]
    binds = _binds(config)
    jail_paths = [f"{JAIL_ROOT}/src"] + [dest for src, dest in binds if src in site_packages()]
    python = [str(python_binary()), "-I", "-S", "-c", bootstrap(jail_paths), *tail, "1"]
    return [*_bwrap_options(config, binds), *python]


# The checker (graders.code.checker) runs one set's own code: it sees the graders package and the check libraries
# of checklibs/ (not app/, not the rest of the repository), the set's folder read-only at CHECKER_SET, a private
# /tmp and working dir, and nothing else. Its bootstrap changes to its own uid before it imports anything of the
# set, so it keeps only what that needs.
CHECKER_SET = f"{JAIL_ROOT}/set"
CHECKER_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")
CHECKER_MODULE = "graders.code.checker.main"


def checker_argv(config: SandboxConfig, rfd: int, wfd: int, uid: int | None, set_root: Path) -> list[str]:
    """The argv of one checker for the set at ``set_root`` (unsandboxed: a bare interpreter, for unsafe-local)."""
    tail = [str(rfd), str(wfd)]
    memory_mb = config.checker_memory_mb if config.device == "cpu" else 0
    rest = [config.device, str(config.max_transfer_mb * 2**20), str(memory_mb)]
    if not config.sandboxed:
        return [
            sys.executable,
            "-I",
            "-c",
            bootstrap([str(SOURCE_ROOT)], CHECKER_MODULE),
            *tail,
            "-1",
            str(set_root),
            *rest,
        ]
    if uid is None:
        raise SandboxError("a sandboxed checker needs a uid of its own")
    binds = _binds(config, SANDBOX_PACKAGE.parent, CHECK_LIBRARIES)
    jail_paths = [f"{JAIL_ROOT}/src"] + [dest for src, dest in binds if src in site_packages()]
    python = [str(python_binary()), "-I", "-S", "-c", bootstrap(jail_paths, CHECKER_MODULE), *tail, str(uid)]
    opts = _bwrap_options(config, binds, CHECKER_CAPS)
    # Bound after the hidden-path check on purpose: the set's folder usually lies in the data dir, which is hidden.
    opts += [*_parent_dirs([CHECKER_SET]), "--ro-bind", str(set_root.resolve()), CHECKER_SET]
    return [*opts, *python, CHECKER_SET, *rest]


def _binds(config: SandboxConfig, *packages: Path) -> list[tuple[Path, str]]:
    """What a jail binds: the system, Python, site-packages and ``packages`` of this source tree (by default only
    graders/sandbox, what the zygote and the student's child run), each at its path under JAIL_ROOT/src."""
    binds: list[tuple[Path, str]] = [(Path("/usr"), "/usr")]
    prefix = Path(sys.base_prefix).resolve()
    if not prefix.is_relative_to("/usr"):
        binds.append((prefix, str(prefix)))
    binds += [(p, f"{JAIL_ROOT}/site-{i}") for i, p in enumerate(site_packages())]
    for package in packages or (SANDBOX_PACKAGE,):
        binds.append((package, f"{JAIL_ROOT}/src/{package.relative_to(SOURCE_ROOT)}"))
    hidden = [p.resolve() for p in [*config.hidden_paths, *default_hidden_paths()]]
    for src, _ in binds:
        for h in hidden:
            if src.is_relative_to(h):
                raise SandboxError(f"the jail would need {src}, which lies inside the hidden path {h}")
    return binds


def _bwrap_options(
    config: SandboxConfig, binds: list[tuple[Path, str]], caps: tuple[str, ...] = ZYGOTE_CAPS
) -> list[str]:
    # No --unshare-user (considered, not done): bwrap 0.8 can only map ONE uid into a new user namespace (--uid/--gid),
    # so the slots' host uids (uid_base + n, one per slot and role) would not exist inside it and the children's
    # setresuid to them would fail; RLIMIT_NPROC, the kill-by-uid sweep (procfs.pids_of_uid reads host uids) and the
    # uid lock files all rely on those host uids being real. Doing it would need a user namespace created by the
    # trusted side with a multi-range uid_map (newuidmap / writing /proc/PID/uid_map) passed in with --userns, and
    # re-measuring the cgroup writes by host pid. Until then the zygote keeps only the listed capabilities
    # (ZYGOTE_CAPS), no child keeps any (setresuid to a non-root uid drops them; no_new_privs and seccomp follow).
    opts = [config.bwrap_path, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    opts += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
    for key, value in CLEAN_ENV.items():
        opts += ["--setenv", key, value]
    opts += ["--cap-drop", "ALL"] + [arg for cap in caps for arg in ("--cap-add", cap)]
    opts += _parent_dirs([dest for _, dest in binds])
    for src, dest in binds:
        opts += ["--ro-bind", str(src), dest]
    for name in ("lib", "lib64", "bin", "sbin"):
        host = Path("/") / name
        if host.is_symlink():
            opts += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            opts += ["--ro-bind", str(host), f"/{name}"]
    if Path("/etc/ld.so.cache").exists():
        opts += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    opts += ["--dev", "/dev", "--proc", "/proc", "--size", "1048576", "--tmpfs", "/tmp"]  # noqa: S108 - an empty, root-owned /tmp inside the jail
    opts += ["--size", str(config.workdir_mb * 2**20), "--tmpfs", JAIL_WORK, "--chdir", JAIL_WORK]
    opts += _mask_hidden(config, binds)
    if config.device == "cuda":
        opts += _gpu_binds()
    return opts


def _parent_dirs(dests: list[str]) -> list[str]:
    """bwrap creates missing parents of a bind target with a restrictive mode: make them traversable (0755)."""
    parents = sorted({str(p) for d in dests for p in Path(d).parents if str(p) != "/"}, key=len)
    return [arg for p in parents for arg in ("--perms", "0755", "--dir", p)]


def _mask_hidden(config: SandboxConfig, binds: list[tuple[Path, str]]) -> list[str]:
    """Hidden paths under a bound directory get an empty tmpfs (dirs) or /dev/null (files) on top."""
    opts: list[str] = []
    for hidden in [p.resolve() for p in config.hidden_paths]:
        for src, dest in binds:
            if hidden.is_relative_to(src) and hidden.exists():
                inside = str(Path(dest) / hidden.relative_to(src))
                opts += ["--tmpfs", inside] if hidden.is_dir() else ["--ro-bind", "/dev/null", inside]
    return opts


# What a CUDA child needs of the host, and nothing more (gap 10 of docs/sandbox.md): the NVIDIA device nodes, and
# of /sys the GPUs' own PCI device directories (libcuda and NVML read numa_node, local_cpulist, resource, ...), the
# driver modules' version and parameters, and the CPU and NUMA topology (where the driver places its threads). The
# rest of /sys (cgroupfs, /sys/kernel, /sys/firmware, every other device) is simply absent from the jail.
GPU_DEV_ROOT = Path("/dev")
GPU_SYS_ROOT = Path("/sys")
GPU_DEVICE_NODE = re.compile(r"nvidia([0-9]+|ctl|-uvm|-uvm-tools|-modeset)")
GPU_CAPS_DIR = "nvidia-caps"  # MIG capability nodes (nvidia-cap1, ...)
GPU_SYS_ENTRIES = ("module/nvidia", "module/nvidia_uvm", "devices/system/cpu", "devices/system/node")
NVIDIA_PCI_VENDOR = "0x10de"


def _gpu_binds() -> list[str]:
    return gpu_binds(GPU_DEV_ROOT, GPU_SYS_ROOT)


def gpu_binds(dev_root: Path, sys_root: Path) -> list[str]:
    """bubblewrap options for a GPU worker: the device nodes and sysfs entries found under these roots (the host's
    /dev and /sys; a test passes a fake tree), bound at /dev/... and /sys/... Symbolic links are never followed.
    """
    opts: list[str] = []
    nodes = [p for p in sorted(dev_root.glob("nvidia*")) if GPU_DEVICE_NODE.fullmatch(p.name)]
    caps = dev_root / GPU_CAPS_DIR
    if caps.is_dir() and not caps.is_symlink():
        nodes.append(caps)
    for node in nodes:
        if not node.is_symlink():
            opts += ["--dev-bind", str(node), f"/dev/{node.relative_to(dev_root)}"]
    sys_binds: list[tuple[Path, str]] = []
    links: list[tuple[str, str]] = []
    for device in sorted((sys_root / "bus" / "pci" / "devices").glob("*")):
        try:
            vendor = (device / "vendor").read_text().strip()
        except OSError:
            continue
        real = device.resolve()
        if vendor != NVIDIA_PCI_VENDOR or not real.is_relative_to(sys_root / "devices"):
            continue
        inside = f"/sys/{real.relative_to(sys_root)}"
        sys_binds.append((real, inside))
        if device.is_symlink():  # as in sysfs: bus/pci/devices/ADDR -> ../../../devices/pci.../ADDR
            links.append((os.readlink(device), f"/sys/bus/pci/devices/{device.name}"))
    if not opts and not sys_binds:
        return []  # no NVIDIA device here: CUDA cannot start, and the jail gets nothing of /sys or /dev for it
    for entry in GPU_SYS_ENTRIES:
        path = sys_root / entry
        if path.exists() and not path.is_symlink():
            sys_binds.append((path, f"/sys/{entry}"))
    dests = [dest for _, dest in sys_binds] + [dest for _, dest in links]
    opts += _parent_dirs(dests) if dests else []
    for src, dest in sys_binds:
        opts += ["--ro-bind", str(src), dest]
    for target, dest in links:
        opts += ["--symlink", target, dest]
    return opts
