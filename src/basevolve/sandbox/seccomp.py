"""The seccomp filter every sandboxed program runs under (issue 22, item 17).

Why a filter of our own, installed by the forked child itself (``_guard.py``) and not
bubblewrap's ``--seccomp``: it must hold in every isolation mode (bubblewrap as root,
unprivileged bubblewrap, the rlimits fallback), and the warm worker still needs the
calls it denies (the child's per-evaluation ``unshare(CLONE_NEWIPC)`` happens before the
filter).  Any process may install one after ``PR_SET_NO_NEW_PRIVS``, so no privilege is
needed.  The classic-BPF program is generated here, in the trusted parent, and handed to
the worker in its JSON configuration; the sandbox side cannot import basevolve.

What it does (the rest is allowed, so numpy, scipy, threads and subprocess work):

* a system call of another ABI (i386 ``int 0x80``, x32) kills the process: the numbers
  below are only valid for the native one;
* no namespaces, no mounts: ``unshare``, ``setns``, ``mount`` and the new mount API,
  ``pivot_root``, ``chroot`` fail with EPERM, and so does ``clone`` with any
  ``CLONE_NEW*`` flag; ``clone3`` fails with ENOSYS (its flags sit in memory, which a
  filter cannot read), so glibc falls back to ``clone``, whose flags are checked;
* no network: ``socket`` of any family but ``AF_UNIX`` fails with EACCES;
* ``io_uring_*`` fail with ENOSYS (io_uring would bypass the socket rule);
* no tracing or reading other processes (``ptrace``, ``process_vm_readv/writev``,
  ``pidfd_getfd``), no kernel-wide state (modules, kexec, reboot, swap, clocks, host
  names, quotas, ``bpf``, ``perf_event_open``, ``userfaultfd``, file handles);
* ``private_ipc=False`` (a mode without a fresh IPC namespace per evaluation:
  unprivileged bubblewrap, the fallback without root) also denies System V IPC and
  POSIX message queues with EPERM, which would otherwise let a program reach another
  evaluation's (or the host user's) segments and queues;
* ``connect=False`` (the rlimits fallback, where the host's files are visible) denies
  ``connect`` with EACCES: the only sockets left are AF_UNIX ones, and connecting one to
  a host socket (a Docker daemon, a desktop bus, X11) is the way out of the sandbox.
  ``socketpair`` needs no ``connect``.

Unknown architectures get no filter (``build`` returns None) and the pool records that.
"""

from __future__ import annotations

import base64
import errno
import os
import struct

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06

RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000

_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; args[0] low word (LE)
_X32_BIT = 0x40000000

NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
AF_UNIX = 1

# name -> number, per architecture (asm/unistd_64.h; asm-generic/unistd.h for aarch64)
_X86_64 = {
    "clone": 56, "clone3": 435, "socket": 41, "connect": 42, "unshare": 272, "setns": 308, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "open_tree_attr": 467, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_getfd": 438, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168,
    "acct": 163, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305,
    "adjtimex": 159, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "quotactl": 179, "quotactl_fd": 443, "lookup_dcookie": 212, "bpf": 321,
    "perf_event_open": 298, "userfaultfd": 323, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67,
    "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69,
    "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241,
}
_AARCH64 = {
    "clone": 220, "clone3": 435, "socket": 198, "connect": 203, "unshare": 97, "setns": 268, "mount": 40,
    "umount2": 39, "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "open_tree_attr": 467, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "pidfd_getfd": 438, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
    "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225,
    "acct": 89, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266,
    "adjtimex": 171, "sethostname": 161, "setdomainname": 162, "quotactl": 60,
    "quotactl_fd": 443, "lookup_dcookie": 18, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "name_to_handle_at": 264, "open_by_handle_at": 265,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "shmget": 194,
    "shmat": 196, "shmctl": 195, "shmdt": 197, "semget": 190, "semop": 193, "semctl": 191,
    "semtimedop": 192, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
    "mq_open": 180, "mq_unlink": 181,
}
ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}

DENIED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "open_tree_attr", "ptrace",
    "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname", "iopl", "ioperm", "quotactl", "quotactl_fd", "lookup_dcookie", "bpf",
    "perf_event_open", "userfaultfd", "name_to_handle_at", "open_by_handle_at",
)
NOT_IMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
IPC = (
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget",
    "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink",
)


def _insn(code: int, jt: int, jf: int, k: int) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def build(machine: str | None = None, *, private_ipc: bool = True,
          connect: bool = True) -> bytes | None:
    """The filter as packed ``struct sock_filter`` entries, or None for an unknown arch."""
    arch = ARCHES.get(machine or os.uname().machine)
    if arch is None:
        return None
    audit_arch, numbers = arch
    # Jumps are relative and at most 255 forward, so the program is laid out as: checks
    # (each jumping to a shared return at the end), then the shared returns.
    returns = {
        "allow": RET_ALLOW,
        "eperm": RET_ERRNO | errno.EPERM,
        "enosys": RET_ERRNO | errno.ENOSYS,
        "eacces": RET_ERRNO | errno.EACCES,
        "kill": RET_KILL_PROCESS,
    }
    plan: list[tuple] = [
        ("ld", _OFF_ARCH),
        ("jne", audit_arch, "kill"),
        ("ld", _OFF_NR),
    ]
    if audit_arch == ARCHES["x86_64"][0]:
        plan.append(("jset", _X32_BIT, "kill"))
    plan.append(("jeq", numbers["clone"], "clone"))
    plan.append(("jeq", numbers["socket"], "socket"))
    for name in NOT_IMPLEMENTED:
        plan.append(("jeq", numbers[name], "enosys"))
    if not connect:
        plan.append(("jeq", numbers["connect"], "eacces"))
    for name in DENIED + (() if private_ipc else IPC):
        if name in numbers:  # aarch64 has no iopl/ioperm
            plan.append(("jeq", numbers[name], "eperm"))
    plan.append(("ret", "allow"))
    plan += [("label", "clone"), ("ld", _OFF_ARG0), ("jset", NAMESPACE_FLAGS, "eperm"),
             ("ret", "allow")]
    plan += [("label", "socket"), ("ld", _OFF_ARG0), ("jeq", AF_UNIX, "allow"),
             ("ret", "eacces")]
    for name in returns:
        plan += [("label", name), ("ret", name)]
    labels: dict[str, int] = {}
    pos = 0
    for step in plan:
        if step[0] == "label":
            labels.setdefault(step[1], pos)
        else:
            pos += 1
    program = []
    for step in plan:
        op = step[0]
        if op == "label":
            continue
        here = len(program)
        if op == "ld":
            program.append(_insn(_LD_W_ABS, 0, 0, step[1]))
        elif op == "ret":
            program.append(_insn(_RET_K, 0, 0, returns[step[1]]))
        else:
            off = labels[step[2]] - here - 1
            if not 0 <= off <= 255:
                raise AssertionError(f"seccomp jump out of range ({off})")
            if op == "jeq":
                program.append(_insn(_JEQ_K, off, 0, step[1]))
            elif op == "jset":
                program.append(_insn(_JSET_K, off, 0, step[1]))
            else:  # jne: fall through when equal
                program.append(_insn(_JEQ_K, 0, off, step[1]))
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


def encoded(*, private_ipc: bool, connect: bool = True) -> str | None:
    """``build()`` as base64 text for the worker's JSON configuration."""
    program = build(private_ipc=private_ipc, connect=connect)
    return None if program is None else base64.b64encode(program).decode()


__all__ = ["ARCHES", "build", "encoded"]
