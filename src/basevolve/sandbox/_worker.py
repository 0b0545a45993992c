"""Sandbox worker: runs INSIDE the sandbox (bubblewrap namespaces or plain rlimits).

Executed as a script by a bare ``python -I -B`` inside the sandbox, where the basevolve
package is NOT importable (only the Python installation is visible), so it and its
sibling ``_child.py`` are self-contained: standard library plus the pre-imports.

Why a fork server (issue 2, section 3): importing numpy + scipy.optimize costs ~0.5 s,
a ``fork()`` of a warm worker a few milliseconds.  Each evaluation is one fork; the
child starts a new session, sets rlimits, drops to the worker's unprivileged uid (when
root), sets no-new-privs, runs the program and writes its value as plain data (tagged
JSON and ``.npy`` blobs, never pickle) to fd 3 (see ``_child.py``).  The worker enforces
the wall-clock limit, kills the child's process group and every leftover process (it is
a child subreaper, so double-forked daemons come back to it), and reports raw facts to
the parent, which alone interprets them (the parent is trusted; this process contains).

Latency (target <= 15 ms per evaluation): the child of the next evaluation is forked
ahead of time, right after an answer is sent, and an answer is sent as soon as the
result is complete, the child closed its pipes and nothing else runs (checked again
after a SIGKILL, so the program cannot start anything once answered) - the kernel's
teardown of the child's address space overlaps the next request.

Protocol with the parent (fd 0 in, fd 1 out, frames = 4-byte big-endian length + bytes):
  worker -> parent  READY frame (JSON) once started;
  parent -> worker  request frame (JSON: code, entry, timeout_s, limits, ...);
  worker -> parent  header frame (JSON facts) + result frame (child's raw result bytes).
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import json
import os
import select
import signal
import struct
import sys
import time
import types
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4


def load_sibling(name: str) -> types.ModuleType:
    """Import the sibling ``<name>.py`` by path (never put this directory on sys.path).

    Cached in ``sys.modules`` under ``_basevolve_sandbox_<name without leading _>`` so every sibling that
    looks a module up there (``_session.py``) shares one copy and one state (the
    ``EXITING`` set of ``_procs.py``).
    """
    key = f"_basevolve_sandbox_{name.lstrip('_')}"
    if key in sys.modules:
        return sys.modules[key]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


_child = load_sibling("_child")
_procs = load_sibling("_procs")
_guard = load_sibling("_guard")
_memwatch = load_sibling("_memwatch")
_prepare = load_sibling("_prepare")
_session = load_sibling("_session")
child_main, read_frame, write_frame = _child.child_main, _child.read_frame, _child.write_frame
fresh_workdir, finish_child, alone = _procs.fresh_workdir, _procs.finish_child, _procs.alone
killed_alone, let_exit, reap_exiting = _procs.killed_alone, _procs.let_exit, _procs.reap_exiting
EXITING = _procs.EXITING


def spawn_spare(cfg: dict[str, Any], libc: ctypes.CDLL) -> dict[str, Any]:
    """Fork the child of the NEXT evaluation now, so fork cost is off the critical path.

    The spare stays root (in its own session, in the fresh working directory) and blocked
    on its request pipe; it drops privileges and sets limits only once a request arrives.
    """
    workdir = fresh_workdir(cfg)
    req_r, req_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child_main(cfg, libc, workdir, req_r, out_w, err_w, res_w)
        finally:
            os._exit(70)
    for fd in (req_r, out_w, err_w, res_w):
        os.close(fd)
    return {
        "pid": pid,
        "pidfd": os.pidfd_open(pid),
        "req_w": req_w,
        "out_r": out_r,
        "err_r": err_r,
        "res_r": res_r,
        "workdir": workdir,
    }


def discard_spare(spare: dict[str, Any]) -> None:
    os.close(spare["req_w"])  # EOF: the spare exits by itself
    try:
        os.kill(spare["pid"], signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(spare["pid"], 0)
    for key in ("pidfd", "out_r", "err_r", "res_r"):
        os.close(spare[key])


def evaluate(
    req: dict[str, Any], raw: bytes, spare: dict[str, Any], cfg: dict[str, Any]
) -> tuple[dict[str, Any], bytes, dict[str, Any] | None]:
    pid, pidfd, workdir = spare["pid"], spare["pidfd"], spare["workdir"]
    out_r, err_r, res_r = spare["out_r"], spare["err_r"], spare["res_r"]
    t0 = time.monotonic()
    try:
        write_frame(spare["req_w"], raw)
    except OSError:
        pass  # the spare died; reported below as a crash of this evaluation
    os.close(spare["req_w"])
    caps = {out_r: req["output_limit"], err_r: req["output_limit"], res_r: req["max_result_bytes"]}
    bufs = {fd: bytearray() for fd in caps}
    seen = dict.fromkeys(caps, 0)
    deadline = t0 + req["timeout_s"]
    timed_out = overflow = False
    status = None
    open_fds = set(caps)

    def pump(fds: list[int]) -> None:
        nonlocal overflow
        for fd in fds:
            data = os.read(fd, 1 << 20)
            if not data:
                open_fds.discard(fd)
                continue
            seen[fd] += len(data)
            room = caps[fd] - len(bufs[fd])
            bufs[fd] += data[: max(room, 0)]
            if fd == res_r and seen[fd] > caps[fd]:
                overflow = True

    deferred = False
    watcher = _memwatch.Watcher(cfg)
    memory: dict[str, Any] = {}
    while status is None:
        if not open_fds and bufs[res_r] and not overflow and alone(pid) and killed_alone(pid):
            deferred = True  # complete result, pipes closed, nothing else running
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0 or overflow:
            timed_out = not overflow
            break
        ready, _, _ = select.select([*open_fds, pidfd], [], [], watcher.interval(remaining))
        pump([fd for fd in ready if fd != pidfd])
        if pidfd in ready:
            status = os.waitpid(pid, 0)[1]
        elif watcher.exceeded(pid):
            memory = watcher.facts()  # the processes together are over memory_mb
            break
    seconds = time.monotonic() - t0
    pending = {"pid": pid, "pidfd": pidfd, "workdir": workdir} if deferred else None
    if status is None and not deferred:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        status = os.waitpid(pid, 0)[1]
    leftovers = 0
    if not deferred:
        leftovers = finish_child(pid, pidfd, status, workdir, cfg)
    end = time.monotonic() + 2.0
    while open_fds and time.monotonic() < end:  # all writers are dead: drain to EOF
        ready, _, _ = select.select(list(open_fds), [], [], 0.1)
        pump(ready)
    for fd in caps:
        os.close(fd)
    status = status or 0
    header = {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "result_overflow": overflow,
        "seconds": seconds,
        "stdout": bytes(bufs[out_r]).decode("utf-8", "replace"),
        "stderr": bytes(bufs[err_r]).decode("utf-8", "replace"),
        "stdout_dropped": seen[out_r] - len(bufs[out_r]),
        "stderr_dropped": seen[err_r] - len(bufs[err_r]),
        "leftovers": leftovers,
        **memory,
    }
    return header, b"" if overflow else bytes(bufs[res_r]), pending


def main() -> None:
    cfg = json.loads(sys.argv[1])
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints of imported libraries must not corrupt the protocol
    errors = {}
    for name in cfg["preload"]:
        try:
            importlib.import_module(name)
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Without a uid drop (not root) programs share this worker's uid: non-dumpable, it
    # cannot be traced by them, nor its /proc/PID/mem, environ or fd be opened (issue 22).
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    gc.collect()
    gc.freeze()  # keep forked children from touching (copying) the pre-imported heap
    ready = {"ready": True, "pid": os.getpid(), "preload_errors": errors, "uid": os.getuid()}
    write_frame(proto_out, json.dumps(ready).encode())
    spare = None
    while True:
        while EXITING:  # reap the last child while idle, without delaying a request
            ready, _, _ = select.select([proto_in], [], [], 0.05)
            reap_exiting()
            if ready:
                break
        raw = read_frame(proto_in)
        if raw is None:
            if spare is not None:
                discard_spare(spare)
            _session.end(cfg)
            return
        req = json.loads(raw)
        op = req.get("op")
        if op is not None:  # a call session (_session.py)
            spare = session_request(op, req, raw, spare, cfg, libc, proto_in, proto_out)
            continue
        _session.end(cfg)  # a one-shot request ends any session left open
        if spare is None:
            spare = spawn_spare(cfg, libc)
        header, result, pending = evaluate(req, raw, spare, cfg)
        spare = None
        answer(proto_out, header, result)
        if pending is not None:
            let_exit(pending)
        spare = spawn_spare(cfg, libc)


def answer(proto_out: int, header: dict[str, Any], result: bytes) -> None:
    """The header frame and the result frame in one write: the parent wakes once."""
    head = json.dumps(header).encode()
    _child.write_all(proto_out, struct.pack(">I", len(head)) + head
                     + struct.pack(">I", len(result)) + result)


def session_request(op: str, req: dict[str, Any], raw: bytes, spare: dict[str, Any] | None,
                    cfg: dict[str, Any], libc: ctypes.CDLL, proto_in: int,
                    proto_out: int) -> dict[str, Any] | None:
    """Answer one session request; return the spare child (None while a session is open).

    The spare is forked only when no session is open: its fresh working directory is
    the one the session's program is using.
    """
    if op == "call":
        packed = read_frame(proto_in) or b""
        header, result = _session.call(req, raw, packed, cfg)
    elif op == "open":
        if spare is None:
            spare = spawn_spare(cfg, libc)
        header, result = _session.open_session(req, raw, spare, cfg)
        spare = None
    elif op == "close":
        header, result = _session.close(cfg)
    else:
        header, result = {"ended": True, "protocol_error": f"unknown op {op!r}"}, b""
    answer(proto_out, header, result)
    if _session.CURRENT is None and spare is None:
        spare = spawn_spare(cfg, libc)
    return spare

if __name__ == "__main__":
    main()
