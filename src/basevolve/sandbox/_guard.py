"""Sandbox child: the last locks before a program runs (issue 22, items 16-17).

Runs INSIDE the sandbox, loaded by ``_worker.py`` (standard library only).  Called by the
forked child after its rlimits, uid drop and ``PR_SET_NO_NEW_PRIVS`` (so an unprivileged
process may install them), in every isolation mode:

* ``seccomp``: the classic-BPF filter the parent generated
  (``basevolve.sandbox.seccomp``: no namespaces, no mounts, no sockets but AF_UNIX, ...);
* ``landlock`` (the rlimits fallback, where no mount namespace hides the host):
  read-only access to the Python installation and ``/usr``, read-write only in the
  evaluation's own directory, no TCP, and -- Landlock's own scoping -- no ptrace, no
  ``/proc/PID/environ|mem|fd`` and no signals for any process outside the program's own
  tree (the worker, basevolve, the user's shell).  Under unprivileged bubblewrap, where
  the program shares the worker's uid, only the scoping (``scope_only``): it cannot
  signal or trace the worker.

Both fail closed: a child that cannot install what the parent recorded as active exits
with status 71 and says why on stderr, so the evaluation is reported as crashed.
"""

from __future__ import annotations

import base64
import ctypes
import os
import struct
from typing import Any

PR_SET_DUMPABLE = 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
LANDLOCK_CREATE, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT = 444, 445, 446  # every arch
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
O_PATH = getattr(os, "O_PATH", 0o10000000)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def fail(what: str) -> None:
    try:
        os.write(2, f"basevolve sandbox: {what}; the program was not run\n".encode())
    finally:
        os._exit(71)


def oom_first() -> None:
    """Make the program's processes the OOM killer's first choice (raising is unprivileged)."""
    try:
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass


def install_seccomp(libc: Any, encoded: str) -> None:
    program = base64.b64decode(encoded)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _Fprog(len(program) // 8, ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        fail(f"could not install the seccomp filter (errno {ctypes.get_errno()})")


def landlock_abi(libc: Any) -> int:
    abi = libc.syscall(LANDLOCK_CREATE, None, ctypes.c_size_t(0),
                       ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return abi if abi > 0 else 0


def _fs_rights(abi: int) -> tuple[int, int]:
    """(every filesystem right this ABI knows, the subset that applies to files)."""
    every = (1 << 13) - 1  # ABI 1: execute ... make_sym
    files = EXECUTE | WRITE_FILE | READ_FILE
    if abi >= 2:
        every |= 1 << 13  # refer
    if abi >= 3:
        every |= 1 << 14  # truncate
        files |= 1 << 14
    if abi >= 5:
        every |= 1 << 15  # ioctl on devices
        files |= 1 << 15
    return every, files


def install_landlock(libc: Any, rules: dict[str, Any], workdir: str) -> None:
    """Restrict the filesystem, TCP and (ABI >= 6) signals/abstract sockets; see above."""
    abi = landlock_abi(libc)
    if abi < 1:
        fail("Landlock is not available although the pool found it")
    every, files = _fs_rights(abi)
    net = 3 if abi >= 4 else 0  # bind and connect TCP: none allowed
    scoped = 3 if abi >= 6 else 0  # abstract unix sockets and signals outside the domain
    if rules.get("scope_only"):  # unprivileged bubblewrap: its mounts already hide the host
        every = net = 0
    attr = struct.pack("=QQQ", every, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(LANDLOCK_CREATE, buf, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        fail(f"could not create a Landlock ruleset (errno {ctypes.get_errno()})")
    read_dir = READ_FILE | READ_DIR | EXECUTE
    plan = [(p, read_dir) for p in rules.get("read", ())]
    plan += [(p, READ_FILE) for p in rules.get("read_files", ())]
    plan += [(p, READ_FILE | WRITE_FILE) for p in rules.get("devices", ())]
    if every:
        plan.append((workdir, every))
    for path, rights in plan:
        try:
            fd = os.open(path, O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # absent on this host: nothing to allow
        if not os.path.isdir(path):
            rights &= files
        rule = struct.pack("=Qi", rights, fd)
        rbuf = ctypes.create_string_buffer(rule, len(rule))
        done = libc.syscall(LANDLOCK_ADD_RULE, ctypes.c_int(ruleset),
                            ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rbuf, ctypes.c_uint32(0))
        os.close(fd)
        if done != 0:
            fail(f"could not add the Landlock rule for {path} (errno {ctypes.get_errno()})")
    if libc.syscall(LANDLOCK_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        fail(f"could not enforce the Landlock ruleset (errno {ctypes.get_errno()})")
    os.close(ruleset)


def lock(libc: Any, cfg: dict[str, Any], workdir: str) -> None:
    """Everything this module does, in order; called once, right before the program."""
    if cfg.get("uid") is None:
        # No uid drop (not root): let the worker, the same uid without capabilities, read
        # this process's /proc files (memory watcher).  The worker itself stays
        # non-dumpable, so the program cannot read or trace it.
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    if cfg.get("landlock") is not None:
        install_landlock(libc, cfg["landlock"], workdir)
    if cfg.get("seccomp"):
        install_seccomp(libc, cfg["seccomp"])
