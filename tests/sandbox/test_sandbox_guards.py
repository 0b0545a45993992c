"""The seccomp filter (issue 22, item 17), in real sandboxes: no new namespaces, no mounts,
no IP sockets, no io_uring -- while threads, subprocess, AF_UNIX sockets, numpy and scipy
still work -- in both isolation modes, on both channels (one-shot and call sessions)."""

from __future__ import annotations

import struct
import warnings
from collections.abc import Iterator

import pytest
from _sandbox_helpers import HAVE_BWRAP, assert_healthy

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxConfig, SandboxPool, seccomp

SYSCALLS = """
import ctypes, errno, os, socket

def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr = NUMBERS
    def call(fn, *args):
        ctypes.set_errno(0)
        return fn(*args), errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
    out = {
        "unshare_user": call(libc.unshare, 0x10000000),
        "unshare_net": call(libc.unshare, 0x40000000),
        "mount": call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None),
        "setns": call(libc.setns, 0, 0),
        "chroot": call(libc.chroot, b"/"),
        "clone_newuser": call(libc.syscall, nr["clone"], 0x10000000 | 17, None, None, None, None),
        "clone3": call(libc.syscall, nr["clone3"], None, 0),
        "io_uring_setup": call(libc.syscall, nr["io_uring_setup"], 1, None),
        "ptrace": call(libc.ptrace, 16, os.getppid(), None, None),
    }
    for name, family in (("inet", socket.AF_INET), ("inet6", socket.AF_INET6)):
        try:
            socket.socket(family, socket.SOCK_STREAM).close()
            out[name] = "opened"
        except OSError as exc:
            out[name] = errno.errorcode[exc.errno]
    a, b = socket.socketpair()  # AF_UNIX stays allowed (multiprocessing, subprocess pipes)
    a.sendall(b"ok")
    out["unix"] = b.recv(2).decode()
    server = socket.socket(socket.AF_UNIX)
    server.bind("own.sock")  # in its working directory
    server.listen()
    try:
        socket.socket(socket.AF_UNIX).connect("own.sock")
        out["connect"] = "connected"
    except OSError as exc:
        out["connect"] = errno.errorcode[exc.errno]
    return out
"""

WORKS = """
import subprocess, threading
import numpy as np
from scipy.optimize import minimize

def main():
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(
        float(np.linalg.svd(np.full((30, 30), i + 1.0))[1].sum()))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    child = subprocess.run(["/bin/sh", "-c", "echo $((6 * 7))"], capture_output=True, text=True)
    best = minimize(lambda x: (x[0] - 3.0) ** 2, [0.0]).x[0]
    return len(results), child.stdout.strip(), round(float(best), 3)
"""


def _numbers() -> dict[str, int]:
    import os

    table = seccomp.ARCHES.get(os.uname().machine)
    if table is None:
        pytest.skip("no seccomp filter for this architecture")
    return table[1]


@pytest.fixture(scope="module", params=["bwrap", "rlimits"])
def guarded_pool(request) -> Iterator[SandboxPool]:
    if request.param == "bwrap" and not HAVE_BWRAP:
        pytest.skip("needs bubblewrap and root")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the forced fallback's warning
        pool = SandboxPool(SandboxConfig(workers=1, memory_mb=768, tmpfs_mb=32,
                                         isolation=request.param))
    with pool:
        yield pool


def test_the_filter_refuses_namespaces_mounts_and_ip_sockets(guarded_pool) -> None:
    assert "seccomp" in guarded_pool.protections
    numbers = _numbers()
    code = SYSCALLS.replace("NUMBERS", repr(numbers))
    r = guarded_pool.run(code, "main", timeout_s=30)
    assert r.status is ExecStatus.OK, r.error
    out = r.value
    for name in ("unshare_user", "unshare_net", "mount", "setns", "chroot", "clone_newuser",
                 "ptrace"):
        assert out[name] == (-1, "EPERM"), (name, out[name])
    assert out["clone3"] == (-1, "ENOSYS")  # so glibc falls back to clone, whose flags are seen
    assert out["io_uring_setup"] == (-1, "ENOSYS")
    assert out["inet"] == out["inet6"] == "EACCES"
    assert out["unix"] == "ok"
    # the fallback sees the host's sockets (a Docker daemon, X11): no connect() there at all
    fallback = guarded_pool.isolation.value == "rlimits"
    assert out["connect"] == ("EACCES" if fallback else "connected")
    assert_healthy(guarded_pool)


def test_threads_subprocess_numpy_and_scipy_still_work(guarded_pool) -> None:
    r = guarded_pool.run(WORKS, "main", timeout_s=60)
    assert r.status is ExecStatus.OK, r.error
    assert r.value == (4, "42", 3.0)


def test_the_filter_holds_on_the_call_channel(guarded_pool) -> None:
    numbers = _numbers()
    code = SYSCALLS.replace("NUMBERS", repr(numbers)).replace("def main():", "def probe():")
    with guarded_pool.session(code, timeout_s=60, call_timeout_s=30) as program:
        r = program.call("probe")
    assert r.ok, r.error
    assert r.value["unshare_user"] == (-1, "EPERM") and r.value["inet"] == "EACCES"


def _decode(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_filter_programs_are_well_formed(machine: str) -> None:
    """Every jump lands inside the program and every path ends in a return; the IPC
    denial is present only when asked for; unknown architectures get no filter."""
    for private_ipc in (True, False):
        program = seccomp.build(machine, private_ipc=private_ipc)
        assert program is not None and len(program) % 8 == 0
        insns = _decode(program)
        assert len(insns) < 4096  # BPF_MAXINSNS
        for i, (code, jt, jf, _) in enumerate(insns):
            if code & 0x07 == 0x05:  # BPF_JMP
                assert i + 1 + max(jt, jf) < len(insns)
        assert insns[-1][0] == 0x06  # ends in a return
        numbers = seccomp.ARCHES[machine][1]
        denied_ipc = any(k == numbers["shmget"] and code == 0x15 for code, _, _, k in insns)
        assert denied_ipc is (not private_ipc)
    no_connect = _decode(seccomp.build(machine, connect=False) or b"")
    assert any(k == numbers["connect"] and code == 0x15 for code, _, _, k in no_connect)
    assert seccomp.build("pdp11") is None
