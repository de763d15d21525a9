"""The child's seccomp filter: default allow, deny what a grading process never needs and a jail escape would.

Runs inside the jail, after the uid change (so set*id can be denied) and right before student code loads.
"""

from __future__ import annotations

import contextlib
import errno
import socket

import pyseccomp as sc

# Syscalls that fail with EPERM. Privileged ones (mount, bpf, ...) already fail for a non-root uid; denying them
# here too means one missed capability is not an escape.
DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "execve",
    "execveat",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "bpf",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "setsid",
    "setpgid",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    # SysV IPC and POSIX message queues: a channel between processes that outlives them (each child also gets its
    # own IPC namespace; this is the second wall).
    "shmget",
    "shmat",
    "msgget",
    "semget",
    "mq_open",
    "mq_unlink",
)

# clone() with any of these creates a namespace: deny, one rule per flag (libseccomp ANDs conditions of a rule).
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
_LOW32 = 0xFFFFFFFF
# Host-wide counters a process reads of itself (tests/sandbox/test_pool_seams.py): pidfs numbers every process of
# the host from one 64-bit counter (a pidfd's inode), and every mount gets a unique 64-bit id; in a pooled child
# either counts the children the grader made before it. Refused: the ways to a pidfd and to the unique mount id.
COUNTER_SYSCALLS = ("pidfd_open", "statmount", "listmount", "listns")
CLONE_PIDFD = 0x00001000
SOL_SOCKET, SO_PASSPIDFD, SO_PEERPIDFD = 1, 76, 77
STATX_MNT_ID_UNIQUE = 0x4000
CLONE_THREAD = 0x00010000
PR_SET_DUMPABLE = 4
# nsfs's ioctls, all of type 0xb7 (NS_GET_ID, NS_GET_MNTNS_ID, NS_MNT_GET_NEXT, NS_GET_PARENT, ...): since Linux 6.18
# NS_GET_ID gives a namespace's 64-bit id, drawn from one host-wide counter; a child's four namespaces (pid, net,
# IPC, mount) told it how many namespaces the host made before it, so how many children the grader forked since the
# student's previous submission. No interpreter, torch or honest submission asks a namespace about itself.
NSFS_IOCTL_TYPE = 0xB7
_IOCTL_TYPE_BITS = 0xFF00


def build_filter(threads_only: bool = False) -> sc.SyscallFilter:
    """The filter object, not yet loaded.

    Args:
        threads_only: also refuse new processes (fork, vfork, clone without CLONE_THREAD), threads stay allowed.
            For a child without a memory cgroup: RLIMIT_AS bounds each process, so every fork would bring a whole
            new budget with it (RLIMIT_NPROC = 32 processes, 32 budgets).
    """
    f = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        _add(f, deny, name)
    # clone3 passes its flags in memory that seccomp cannot read: ENOSYS makes glibc fall back to clone().
    _add(f, sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in CLONE_NAMESPACE_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # Only AF_UNIX sockets (the comparison is on all 64 bits, so high garbage bits are denied too).
    for call in ("socket", "socketpair"):
        f.add_rule(sc.ERRNO(errno.EACCES), call, sc.Arg(0, sc.NE, socket.AF_UNIX))
    # kill(-1, ...) would signal every process the uid can reach; the uid and the pid namespace already confine
    # the rest (libseccomp cannot express "pid not in {self, group}" in one rule).
    f.add_rule(deny, "kill", sc.Arg(0, sc.MASKED_EQ, _LOW32, _LOW32))
    # The child is made non-dumpable before this filter loads (lockdown.no_new_privs): making itself dumpable again
    # would allow a core dump (a pipe core_pattern ignores RLIMIT_CORE) and open its /proc files to its uid. The
    # kernel reads the option as an int, so only its low 32 bits are compared (high garbage bits do not help).
    f.add_rule(deny, "prctl", sc.Arg(0, sc.MASKED_EQ, _LOW32, PR_SET_DUMPABLE))
    for name in COUNTER_SYSCALLS:
        _add(f, sc.ERRNO(errno.ENOSYS), name)
    f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_PIDFD, CLONE_PIDFD))
    for option in (SO_PASSPIDFD, SO_PEERPIDFD):
        for call in ("getsockopt", "setsockopt"):
            # level and optname are ints: only their low 32 bits are compared (high garbage bits do not help).
            level, name = sc.Arg(1, sc.MASKED_EQ, _LOW32, SOL_SOCKET), sc.Arg(2, sc.MASKED_EQ, _LOW32, option)
            f.add_rule(sc.ERRNO(errno.ENOPROTOOPT), call, level, name)
    f.add_rule(deny, "statx", sc.Arg(3, sc.MASKED_EQ, STATX_MNT_ID_UNIQUE, STATX_MNT_ID_UNIQUE))
    # The request's type byte (bits 8-15; the kernel reads the request as an unsigned int, so bits above 32 do not
    # change which ioctl it is): every nsfs ioctl, whatever its number.
    f.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, _IOCTL_TYPE_BITS, NSFS_IOCTL_TYPE << 8))
    if threads_only:
        for name in ("fork", "vfork"):  # absent on some architectures (aarch64): glibc uses clone there
            _add(f, deny, name)
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    return f


def _add(f: sc.SyscallFilter, action: int, name: str) -> None:
    with contextlib.suppress(ValueError, OSError):  # not a syscall on this architecture / libseccomp version
        f.add_rule(action, name)


def install(threads_only: bool = False) -> None:
    """Load the filter into this process (no_new_privs is set by libseccomp by default; set it first anyway)."""
    build_filter(threads_only).load()
