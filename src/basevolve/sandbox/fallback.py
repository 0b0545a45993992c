"""What the rlimits fallback changes in the basevolve process itself (issue 22, item 16).

Without bubblewrap, programs share the host's ``/proc`` and, without root, this
process's uid.  Two things follow:

* :func:`guard_parent` makes this process non-dumpable while a fallback pool is open
  (reference-counted over pools): a program of the same uid can then no longer open its
  ``/proc/PID/environ`` (the API key), ``mem``, ``fd`` or ``maps``, nor trace it.  Side
  effects, for as long as it holds: no core dumps of basevolve, debuggers and profilers
  such as ``py-spy`` cannot attach, and basevolve cannot read its own ``/proc/self/environ``.
  Processes basevolve starts are not affected (``execve`` resets the flag).  The
  command line (``/proc/PID/cmdline``) stays readable: never put secrets there.
* :func:`message` is the loud warning: what the fallback does and does NOT protect, and
  how to get bubblewrap instead (docs/running.md, "Threat model").
"""

from __future__ import annotations

import ctypes
import os
import threading

PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
_lock = threading.Lock()
_holders = 0
_before = 1


def guard_parent() -> None:
    """Make this process non-dumpable until the matching :func:`unguard_parent`."""
    global _holders, _before
    libc = ctypes.CDLL(None, use_errno=True)
    with _lock:
        if _holders == 0:
            _before = libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        _holders += 1


def unguard_parent() -> None:
    global _holders
    libc = ctypes.CDLL(None, use_errno=True)
    with _lock:
        _holders = max(_holders - 1, 0)
        if _holders == 0 and _before == 1:
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def dumpable() -> bool:
    """Whether this process is dumpable now (for tests and diagnostics)."""
    return ctypes.CDLL(None, use_errno=True).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1


def message(reason: str, guards: tuple[str, ...]) -> str:
    """The loud warning of the rlimits fallback: what is and is NOT protected."""
    root = os.geteuid() == 0
    users = "the sandbox uids" if root else "your user"
    abi = max((int(g[len("landlock-abi"):]) for g in guards if g.startswith("landlock-abi")),
              default=0)
    if abi:
        files = ("Landlock: host files outside the Python installation and /usr are "
                 "unreadable, nothing outside the working directory is writable, no other "
                 "process can be traced or have its environment or memory read"
                 + (", or be signalled" if abi >= 6 else ""))
    else:
        files = (f"NO Landlock on this kernel: programs can READ AND WRITE every file {users} "
                 "may" + ("" if root else ", and read the environment of your other "
                         "processes (a shell's exported API key included)"))
    net = ("no network (private namespace)" if root else
           "no IP sockets (seccomp)" if "seccomp" in guards else "THE NETWORK IS OPEN")
    who = "a per-slot uid" if root else "YOUR uid (no uid drop)"
    return (
        f"basevolve sandbox: falling back to 'rlimits' isolation, which is weaker ({reason})."
        f" Programs run "
        f"as {who} with no filesystem or pid namespace; {files}; {net}; the environment "
        "is cleared and workers are detached from this process"
        + ("" if root else ", which is non-dumpable while the pool is open")
        + ". Evaluations record isolation=rlimits. For full isolation install bubblewrap "
        "(apt-get install bubblewrap) and allow unprivileged user namespaces (sysctl "
        "user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 where it exists, "
        "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04), or run as root; "
        "see docs/running.md, 'Threat model'."
    )
