"""Hostile programs (issue 2, "What it must show"): all contained, each scoring != ok with
a reason, the host unaffected, and the pool still evaluating the next program."""

from __future__ import annotations

import os
import socket
import time

import pytest
from _sandbox_helpers import assert_healthy, needs_bwrap, needs_root, sandbox_uid_processes

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
    code = (
        "import os\n"
        "def main():\n"
        f"    paths = [{str(secret)!r}, {os.getcwd()!r} + '/pyproject.toml', os.path.expanduser('~root') + '/.bashrc']\n"
        "    return [os.path.exists(p) for p in paths], sorted(os.listdir('/'))\n"
    )
    r = _run(pool, code)
    assert r.status is ExecStatus.OK
    seen, top = r.value
    assert seen == [False, False, False]
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
    code = (
        "import os, time\n"
        "def main():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            open('/tmp/run/marker', 'w').write('alive')\n"
        "        os._exit(0)\n"
        "    time.sleep(0.2)\n"
        "    return 'done'\n"
    )
    r = _run(pool, code, timeout_s=5)
    assert r.status is ExecStatus.ERROR
    assert "left 1 process" in r.error
    deadline = time.monotonic() + 2
    while sandbox_uid_processes(pool.uid_range) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox_uid_processes(pool.uid_range) == []
    assert_healthy(pool)


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
