"""Hostile programs (issue 2, "What it must show"): all contained, each scoring != ok with
a reason, the host unaffected, and the pool still evaluating the next program."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from _sandbox_helpers import (
    DAEMON_PROGRAM,
    HAVE_BWRAP,
    assert_healthy,
    needs_bwrap,
    needs_root,
    sandbox_uid_processes,
)

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxConfig, SandboxPool


def _run(pool: SandboxPool, body: str, timeout_s: float = 2.0):
    return pool.run(body, "main", timeout_s=timeout_s)


def test_infinite_loop_times_out(pool: SandboxPool) -> None:
    r = _run(pool, "def main():\n    while True:\n        pass\n", timeout_s=1.0)
    assert r.status is ExecStatus.TIMEOUT
    assert "wall-clock limit of 1 s" in r.error
    assert_healthy(pool)


def test_sleep_past_limit_and_ignoring_sigterm(pool: SandboxPool) -> None:
    code = (
        "import signal, time\n"
        "def main():\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    print('going to sleep', flush=True)\n"
        "    time.sleep(60)\n"
    )
    r = _run(pool, code, timeout_s=0.7)
    assert r.status is ExecStatus.TIMEOUT and r.error
    assert "going to sleep" in r.stdout  # output produced before the kill is kept
    assert_healthy(pool)


def test_memory_bomb_is_refused(pool: SandboxPool) -> None:
    code = (
        "def main():\n"
        "    hoard = []\n"
        "    while True:\n"
        "        hoard.append(bytearray(64 * 1024 * 1024))\n"
    )
    r = _run(pool, code, timeout_s=10)
    assert r.status in (ExecStatus.ERROR, ExecStatus.CRASHED)
    assert "MemoryError" in r.error or "killed" in r.error
    r = _run(pool, "import numpy as np\ndef main():\n    return np.ones((40000, 40000)).sum()\n")
    assert r.status is ExecStatus.ERROR and "MemoryError" in r.error
    assert_healthy(pool)


@needs_root
def test_fork_bomb_is_contained(pool: SandboxPool) -> None:
    code = "import os\ndef main():\n    while True:\n        os.fork()\n"
    r = _run(pool, code, timeout_s=3)
    assert r.status is not ExecStatus.OK and r.error
    assert sandbox_uid_processes(pool.uid_range) == []
    assert_healthy(pool)


def test_disk_filling_hits_file_size_limit(pool: SandboxPool) -> None:
    code = (
        "def main():\n"
        "    with open('big.bin', 'wb') as fh:\n"
        "        for _ in range(1000):\n"
        "            fh.write(b'x' * (1 << 20))\n"
    )
    r = _run(pool, code, timeout_s=10)
    assert r.status is ExecStatus.ERROR
    assert "File too large" in r.error or "No space" in r.error
    assert_healthy(pool)


@needs_bwrap
def test_disk_filling_hits_tmpfs_limit(pool: SandboxPool) -> None:
    code = (
        "def main():\n"
        "    for i in range(1000):\n"
        "        with open(f'part{i}.bin', 'wb') as fh:\n"
        "            fh.write(b'x' * (4 << 20))\n"
    )
    r = _run(pool, code, timeout_s=10)
    assert r.status is ExecStatus.ERROR
    assert "No space left" in r.error
    # the next program gets an empty, writable working directory again
    r = _run(
        pool, "import os\ndef main():\n    open('a', 'w').write('ok')\n    return os.listdir('.')\n"
    )
    assert r.status is ExecStatus.OK and r.value == ["a"]


@needs_bwrap
def test_etc_passwd_is_generated_not_the_hosts(pool: SandboxPool) -> None:
    r = _run(pool, "def main():\n    return open('/etc/passwd').read()\n")
    assert r.status is ExecStatus.OK
    host = open("/etc/passwd").read()
    assert r.value != host
    names = [line.split(":")[0] for line in r.value.splitlines()]
    assert names == ["root", "sandbox"]  # the documented view: nothing of the host's users


@needs_bwrap
def test_home_cwd_and_store_are_invisible(pool: SandboxPool, tmp_path) -> None:
    secret = tmp_path / "store.sqlite"
    secret.write_text("secret")
    # the caller's working folder (tests run in a temporary one: tests/conftest.py) and
    # the repository the caller runs from, both there on the host
    here = Path.cwd() / "caller-file.txt"
    here.write_text("x")
    repo = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert repo.is_file()
    code = (
        "import os\n"
        "def main():\n"
        f"    paths = [{str(secret)!r}, {str(here)!r}, {str(repo)!r}, os.path.expanduser('~root') + '/.bashrc']\n"
        "    return [os.path.exists(p) for p in paths], sorted(os.listdir('/'))\n"
    )
    r = _run(pool, code)
    assert r.status is ExecStatus.OK
    seen, top = r.value
    assert seen == [False, False, False, False]
    assert "home" not in top and "mnt" not in top and "var" not in top


def test_callers_env_is_invisible(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    code = (
        "import os, glob\n"
        "def main():\n"
        "    leaked = [k for k, v in os.environ.items() if 'sk-test' in v or k == 'OPENAI_API_KEY']\n"
        "    for path in glob.glob('/proc/*/environ'):\n"
        "        try:\n"
        "            if b'sk-test' in open(path, 'rb').read():\n"
        "                leaked.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return leaked\n"
    )
    with SandboxPool(SandboxConfig(workers=1)) as p:
        r = p.run(code, "main", timeout_s=10)
    assert r.status is ExecStatus.OK, r
    assert r.value == []


@needs_bwrap
def test_socket_to_host_listener_fails(pool: SandboxPool) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.3)
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            "def main():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')\n"
            "    return 'connected'\n"
        )
        r = _run(pool, code, timeout_s=5)
        assert r.status is ExecStatus.ERROR
        assert "OSError" in r.error or "Error" in r.error
        with pytest.raises(TimeoutError):
            server.accept()


@needs_root
def test_double_forked_daemon_does_not_outlive_the_evaluation(pool: SandboxPool) -> None:
    r = _run(pool, DAEMON_PROGRAM, timeout_s=5)
    assert r.status is ExecStatus.ERROR
    assert "left 1 process" in r.error
    deadline = time.monotonic() + 2
    while sandbox_uid_processes(pool.uid_range) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_uid_processes(pool.uid_range) == []
    assert_healthy(pool)


# Writes a complete (large) result frame itself, closes its pipes so the worker may answer
# before the process exits, then double-forks a session leader while the answer is sent.
_LATE_DAEMON = """
import io, json, os, struct, sys, time
import numpy as np

def main():
    buf = io.BytesIO()
    np.save(buf, np.zeros(4_000_000), allow_pickle=False)
    blob = buf.getvalue()
    head = json.dumps({"status": "ok", "tree": ["a", 0], "blobs": [len(blob)]}).encode()
    view = memoryview(b"BVR1" + struct.pack(">I", len(head)) + head + blob)
    while view:
        view = view[os.write(3, view):]
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in (0, 1, 2, 3):
        os.close(fd)
    time.sleep(DELAY)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(30)
        os._exit(0)
    time.sleep(5)
"""


@needs_root
def test_daemon_started_after_the_result_never_outlives_it_or_blames_the_next_program() -> None:
    """Regression: a program that closed its pipes used to be answered before it was
    killed, so a daemon forked in that window survived the evaluation and the *next*,
    innocent program was scored 0 for "leaving" it."""
    with SandboxPool(SandboxConfig(workers=1, memory_mb=768, tmpfs_mb=32, max_file_mb=8)) as p:
        for delay in (0.002, 0.02):
            r = p.run(_LATE_DAEMON.replace("DELAY", repr(delay)), "main", timeout_s=10)
            assert r.status in (ExecStatus.OK, ExecStatus.ERROR), r.error
            time.sleep(0.1)  # longer than the daemon needs to appear, were it still possible
            assert sandbox_uid_processes(p.uid_range) == []
            innocent = p.run("def main():\n    return 42\n", "main", timeout_s=10)
            assert innocent.status is ExecStatus.OK and innocent.value == 42, innocent.error


_SHM_WRITE = """
import ctypes

def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0x4242, 4096, 0o1000 | 0o666)  # IPC_CREAT
    if shmid < 0:
        return "refused"
    ctypes.memmove(libc.shmat(shmid, None, 0), b"planted", 7)
    return "planted"
"""

_SHM_READ = """
import ctypes

def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0x4242, 0, 0)
    return "absent" if shmid < 0 else ctypes.string_at(libc.shmat(shmid, None, 0), 7).decode()
"""


@needs_root
@pytest.mark.parametrize("isolation", ["bwrap", "rlimits"])
def test_sysv_shared_memory_does_not_outlive_the_evaluation(isolation: str) -> None:
    """Regression: under bubblewrap the IPC namespace was per worker, so a SysV segment a
    program created stayed readable by every later evaluation of that worker."""
    if isolation == "bwrap" and not HAVE_BWRAP:
        pytest.skip("needs bubblewrap")
    cfg = SandboxConfig(workers=1, memory_mb=768, tmpfs_mb=32, max_file_mb=8, isolation=isolation)
    with SandboxPool(cfg) as p:
        wrote = p.run(_SHM_WRITE, "main", timeout_s=10)
        assert wrote.status is ExecStatus.OK, wrote.error
        read = p.run(_SHM_READ, "main", timeout_s=10)
        assert read.status is ExecStatus.OK and read.value == "absent", read


_KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(os.uname().machine)

_KEY_WRITE = """
import ctypes

def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for ring in (-4, -5, -3):  # user, user-session and session keyrings
        name = b"bv-leak-%d" % -ring
        if libc.syscall(ADD_KEY, b"user", name, b"planted", 7, ctypes.c_long(ring)) < 0:
            return "refused"
    return "planted"
"""

_KEY_READ = """
import ctypes

def main():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    found = []
    for ring in (-4, -5, -3):
        name = b"bv-leak-%d" % -ring
        if libc.syscall(KEYCTL, 10, ctypes.c_long(ring), b"user", name, 0) >= 0:  # SEARCH
            found.append(ring)
    return found
"""


@needs_root
@pytest.mark.skipif(_KEYCTL is None, reason="keyctl syscall numbers known for x86_64/aarch64")
@pytest.mark.parametrize("isolation", ["bwrap", "rlimits"])
def test_kernel_keyrings_do_not_carry_data_to_later_evaluations(isolation: str) -> None:
    """Regression: keys a program added to its uid's user keyring (which the kernel keeps
    per uid, not per process) were readable by every later evaluation with that uid,
    even in a new pool."""
    if isolation == "bwrap" and not HAVE_BWRAP:
        pytest.skip("needs bubblewrap")
    assert _KEYCTL is not None
    add_key, keyctl = _KEYCTL
    write = _KEY_WRITE.replace("ADD_KEY", str(add_key))
    read = _KEY_READ.replace("KEYCTL", str(keyctl))
    cfg = SandboxConfig(workers=1, memory_mb=768, tmpfs_mb=32, max_file_mb=8, isolation=isolation)
    with SandboxPool(cfg) as p:
        wrote = p.run(write, "main", timeout_s=10)
        assert wrote.status is ExecStatus.OK and wrote.value == "planted", wrote
        later = p.run(read, "main", timeout_s=10)
        assert later.status is ExecStatus.OK and later.value == [], later
    with SandboxPool(cfg) as p:  # a new pool leases the same uids again
        p.run(write, "main", timeout_s=10)
    with SandboxPool(cfg) as p:
        later = p.run(read, "main", timeout_s=10)
        assert later.status is ExecStatus.OK and later.value == [], later


def test_stdout_flood_is_truncated_and_the_value_still_arrives(pool: SandboxPool) -> None:
    code = (
        "import sys\n"
        "def main():\n"
        "    for _ in range(20000):\n"
        "        print('x' * 250)\n"
        "    sys.stderr.write('e' * 300000)\n"
        "    return 7\n"
    )
    r = _run(pool, code, timeout_s=20)
    assert r.status is ExecStatus.OK and r.value == 7
    limit = pool.config.output_limit_bytes
    assert limit < len(r.stdout) < limit + 100 and "truncated" in r.stdout
    assert limit < len(r.stderr) < limit + 100 and "truncated" in r.stderr


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("class Thing:\n    pass\ndef main():\n    return Thing()\n", "type Thing"),
        (
            "import numpy as np\ndef main():\n    return np.array([object(), 1], dtype=object)\n",
            "dtype object",
        ),
        ("def main():\n    return main\n", "type function"),
        ("def main():\n    return {1: 2}\n", "key of type int"),
        ("def main():\n    x = []\n    x.append(x)\n    return x\n", "nested deeper"),
    ],
)
def test_non_plain_data_is_bad_output(pool: SandboxPool, body: str, reason: str) -> None:
    r = _run(pool, body)
    assert r.status is ExecStatus.BAD_OUTPUT
    assert reason in r.error


def test_forged_result_bytes_are_bad_output(pool: SandboxPool) -> None:
    code = (
        "import os\n"
        "def main():\n"
        "    os.write(3, b'BVR1\\x00\\x00\\x00\\x05{\"a\":')\n"
        "    os._exit(0)\n"
    )
    r = _run(pool, code)
    assert r.status is ExecStatus.BAD_OUTPUT and "could not be decoded" in r.error


def test_forged_frame_with_an_unrepresentable_float_is_bad_output(pool: SandboxPool) -> None:
    """Regression: the parent's decoder raised OverflowError, which escaped SandboxPool.run."""
    code = (
        "import os, struct\n"
        "def main():\n"
        '    head = b\'{"status": "ok", "tree": ["f", 1\' + b\'0\' * 400 + b\'], "blobs": []}\'\n'
        "    os.write(3, b'BVR1' + struct.pack('>I', len(head)) + head)\n"
        "    os._exit(0)\n"
    )
    r = _run(pool, code)
    assert r.status is ExecStatus.BAD_OUTPUT and "out of range" in r.error
    assert_healthy(pool)


def test_sys_exit_and_os_exit(pool: SandboxPool) -> None:
    r = _run(pool, "import sys\ndef main():\n    sys.exit(0)\n")
    assert r.status is ExecStatus.ERROR and "sys.exit(0)" in r.error
    r = _run(pool, "import os\ndef main():\n    os._exit(3)\n")
    assert r.status is ExecStatus.CRASHED and "code 3" in r.error
    r = _run(pool, "import sys\nsys.exit(5)\ndef main():\n    return 1\n")  # at import time
    assert r.status is ExecStatus.ERROR and "sys.exit(5)" in r.error
    assert_healthy(pool)


def test_killing_its_parent(pool: SandboxPool) -> None:
    r = _run(pool, "import os\ndef main():\n    os.kill(os.getppid(), 9)\n    return 'survived'\n")
    assert r.status is not ExecStatus.OK and r.error
    r = _run(
        pool,
        "import os, signal\ndef main():\n    os.kill(1, signal.SIGKILL)\n    os.kill(-1, signal.SIGKILL)\n",
    )
    assert r.status is not ExecStatus.OK and r.error
    assert_healthy(pool)


def test_missing_entry_and_exceptions_have_reasons(pool: SandboxPool) -> None:
    r = pool.run("def other():\n    return 1\n", "main", timeout_s=2)
    assert r.status is ExecStatus.ERROR and "'main' is not defined" in r.error
    r = pool.run("main = 3\n", "main", timeout_s=2)
    assert r.status is ExecStatus.ERROR and "not a function" in r.error
    r = pool.run("def main():\n    raise ValueError('nope')\n", "main", timeout_s=2)
    assert r.status is ExecStatus.ERROR and r.error == "ValueError: nope"
    assert "Traceback" in r.stderr and "program.py" in r.stderr
    r = pool.run("def main(:\n", "main", timeout_s=2)
    assert r.status is ExecStatus.ERROR and "SyntaxError" in r.error
