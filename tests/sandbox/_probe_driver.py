"""Driver run in a fresh process (as root or as an unprivileged uid) by
test_sandbox_unprivileged.py: it opens a SandboxPool, runs hostile probes and prints one
JSON line.  Passed to ``python -c`` as text (an unprivileged uid may not be able to read
the test tree), with its arguments as one JSON string in ``sys.argv[1]``.

Its own environment holds the secret (as ``OPENAI_API_KEY``) from the moment it was
exec'd, so ``/proc/<driver>/environ`` really contains it, as a basevolve process's would.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile

from basevolve.sandbox import SandboxConfig, SandboxPool, fallback

PROBE = """
import ctypes, glob, os, socket

def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        return type(exc).__name__

def main():
    secret = SECRET.encode()
    out = {"uid": os.getuid(), "env_has_key": any(SECRET in v for v in os.environ.values())}
    out["environ_leaks"] = [p for p in glob.glob("/proc/*/environ")
                            if isinstance(_read(p), bytes) and secret in _read(p)]
    chain, pid = [], os.getppid()
    while pid > 1 and len(chain) < 50:
        chain.append(pid)
        stat = _read(f"/proc/{pid}/stat")
        if not isinstance(stat, bytes):
            break
        pid = int(stat.rsplit(b")", 1)[1].split()[1])
    out["ancestors"] = chain
    out["driver_environ"] = repr(_read(f"/proc/{DRIVER}/environ"))[:40]
    out["secret_file"] = repr(_read(SECRET_FILE))[:40]
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).sendall(b"GET / HTTP/1.0")
        out["connect"] = "connected"
    except OSError as exc:
        out["connect"] = type(exc).__name__
    try:  # a host UNIX socket any uid may connect to (a Docker or X11 socket, say)
        socket.socket(socket.AF_UNIX).connect(UNIX_PATH)
        out["unix_connect"] = "connected"
    except OSError as exc:
        out["unix_connect"] = type(exc).__name__
    libc = ctypes.CDLL(None, use_errno=True)
    out["shmget"] = libc.shmget(0x4242, 4096, 0o1000 | 0o600)
    out["unshare_user"] = (libc.unshare(0x10000000), ctypes.get_errno())
    out["mount"] = (libc.mount(b"none", b"/mnt", b"tmpfs", 0, None), ctypes.get_errno())
    try:
        os.kill(os.getppid(), 0)
        out["signal_worker"] = "allowed"
    except OSError as exc:
        out["signal_worker"] = type(exc).__name__
    out["left_by_earlier"] = [d for d in ("/tmp/bv-left", "/dev/shm/bv-left") if os.path.exists(d)]
    out["wrote"] = []
    for name in ("/tmp/bv-left", "/dev/shm/bv-left"):
        try:
            open(name, "w").write("x")
            out["wrote"].append(name)
        except OSError:
            pass
    return out
"""

HOG = """
import os, time

def main():
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            try:
                held = []
                try:  # 600 MB each, under the per-process limit: 2.4 GB in total
                    for _ in range(10):
                        held.append(b"x" * (60 << 20))
                except MemoryError:
                    pass
                time.sleep(20)
            finally:
                os._exit(0)
        kids.append(pid)
    return [os.waitpid(k, 0)[1] for k in kids]
"""


def _result(r) -> dict:
    return {"status": r.status.value, "value": r.value, "error": r.error}


def main() -> None:
    args = json.loads(sys.argv[1])
    secret = os.environ["OPENAI_API_KEY"]
    probe = (PROBE.replace("SECRET_FILE", repr(args["secret_file"]))
             .replace("SECRET", repr(secret)).replace("DRIVER", str(os.getpid())))
    out: dict = {"driver_uid": os.getuid(), "driver_pid": os.getpid()}
    folder = tempfile.mkdtemp(prefix="bv-sock-")
    os.chmod(folder, 0o755)
    unix_path = os.path.join(folder, "daemon.sock")
    with socket.create_server(("127.0.0.1", 0)) as server, socket.socket(socket.AF_UNIX) as unix:
        unix.bind(unix_path)
        os.chmod(unix_path, 0o777)
        unix.listen()
        unix.settimeout(0.2)
        server.settimeout(0.2)
        probe = probe.replace("PORT", str(server.getsockname()[1]))
        probe = probe.replace("UNIX_PATH", repr(unix_path))
        # the probe's imports are pre-imported by the worker: a slot uid of the root
        # fallback may not be able to enter the interpreter's directory (pyenv under /root)
        cfg = SandboxConfig(workers=1, memory_mb=768, preload=("ctypes", "glob", "socket", "encodings.idna"),
                            isolation=args["isolation"])
        with SandboxPool(cfg) as pool:
            out.update(isolation=pool.isolation.value, protections=list(pool.protections),
                       driver_dumpable=fallback.dumpable())
            out["probes"] = [_result(pool.run(probe, "main", timeout_s=60)) for _ in range(2)]
            out["hog"] = _result(pool.run(HOG, "main", timeout_s=60))
            out["after"] = _result(pool.run("def main():\n    return 7\n", "main", timeout_s=60))
        out["accepted"] = []
        for listener in (server, unix):
            try:
                listener.accept()
                out["accepted"].append(listener.family.name)
            except TimeoutError:
                pass
    shutil.rmtree(folder, ignore_errors=True)
    out["dumpable_after"] = fallback.dumpable()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
