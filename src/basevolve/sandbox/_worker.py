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
import shutil
import signal
import sys
import time
import types
from typing import Any

PR_SET_CHILD_SUBREAPER = 36


def _load_child() -> types.ModuleType:
    """Import the sibling ``_child.py`` by path: never put this directory on sys.path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py")
    spec = importlib.util.spec_from_file_location("_basevolve_sandbox_child", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_child = _load_child()
child_main, read_frame, write_frame = _child.child_main, _child.read_frame, _child.write_frame


def proc_info(pid: int | str) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            text = fh.read()
    except OSError:
        return None
    info = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key in ("State", "PPid", "Uid"):
            info[key] = val.split()[0]
    return info


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def has_descendants() -> bool:
    """True when this worker has any child (orphans of the program are re-parented here).

    Because the worker is a child subreaper, every process the program left behind is
    a descendant of a direct child of the worker, so an empty ``children`` list proves
    nothing escaped and spares a scan of the host's whole ``/proc`` (rlimits mode).
    """
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                if fh.read().strip():
                    return True
    except OSError:
        return True  # kernel without CONFIG_PROC_CHILDREN: do the full scan
    return False


def sweep(uid: int | None) -> int:
    """Kill every process the evaluation left behind; return how many were alive.

    Leftovers are processes of the worker's sandbox uid or orphans re-parented to this
    worker (it is a child subreaper), so double-forked daemons are found too.
    """
    for pid in list(EXITING):  # already SIGKILLed: wait so they are not counted as leftovers
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        EXITING.discard(pid)
    reap()
    if not has_descendants():
        return 0
    me = os.getpid()
    escaped = set()
    for _ in range(200):
        alive = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (me, 1):
                continue
            info = proc_info(name)
            if not info or info.get("State") == "Z":
                continue
            if (uid is not None and info.get("Uid") == str(uid)) or info.get("PPid") == str(me):
                alive.append(int(name))
        if not alive:
            break
        escaped.update(alive)
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)
        reap()
    reap()
    return len(escaped)


def fresh_workdir(cfg: dict[str, Any]) -> str:
    workdir = os.path.join(cfg["work_root"], "run")
    shutil.rmtree(workdir, ignore_errors=True)
    os.mkdir(workdir, 0o700)
    if cfg.get("uid") is not None:
        os.chown(workdir, cfg["uid"], cfg["gid"])
    return workdir


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
    while status is None:
        if not open_fds and bufs[res_r] and not overflow and alone(pid) and killed_alone(pid):
            deferred = True  # complete result, pipes closed, nothing else running
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0 or overflow:
            timed_out = not overflow
            break
        ready, _, _ = select.select([*open_fds, pidfd], [], [], remaining)
        pump([fd for fd in ready if fd != pidfd])
        if pidfd in ready:
            status = os.waitpid(pid, 0)[1]
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
    }
    return header, b"" if overflow else bytes(bufs[res_r]), pending


EXITING = set()  # children killed after their answer was sent, not reaped yet


def reap_exiting() -> None:
    for pid in list(EXITING):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            EXITING.discard(pid)


def let_exit(pending: dict[str, Any]) -> None:
    """The answer is sent: kill what is left of the child without waiting for its exit.

    Its address-space teardown then overlaps the next request; it is reaped later by
    ``reap_exiting``.  It was already SIGKILLed by ``killed_alone`` before the answer, so
    it cannot have started anything since; this kill is a harmless repeat.
    """
    pid = pending["pid"]
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os.close(pending["pidfd"])
    shutil.rmtree(pending["workdir"], ignore_errors=True)
    EXITING.add(pid)


def alone(pid: int) -> bool:
    """True when the program's process is the worker's only child and has no children.

    Checked once the result is complete and the child closed its pipes, so the answer
    need not wait for the child's exit; ``killed_alone`` repeats it after a SIGKILL so
    nothing can be started between the check and the answer.
    """
    reap_exiting()
    try:
        kids = set()
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                kids.update(fh.read().split())
        if kids - {str(p) for p in (pid, *EXITING)}:
            return False
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                if fh.read().split():
                    return False
    except OSError:
        return False
    return True


def killed_alone(pid: int) -> bool:
    """SIGKILL the program (group and process), then confirm it is still ``alone``.

    Why before the answer: a program may close its own pipes after writing a result and
    keep running; answering first and killing afterwards (``let_exit``) left a window in
    which it could fork a session leader that outlived the evaluation and was blamed on
    the next, innocent program.  Once SIGKILL is pending no fork of the program can
    complete (the kernel refuses it), so a child absent after the kill can never appear;
    the kill costs microseconds, the address-space teardown still overlaps the next
    request.  ``False`` sends the evaluation down the waiting path, whose sweep counts
    whatever was started as the program's own leftovers.
    """
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return alone(pid)


def finish_child(
    pid: int, pidfd: int, status: int | None, workdir: str, cfg: dict[str, Any]
) -> int:
    """Kill what is left of the evaluation (process group, then any leftover); reap."""
    if status is None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)  # the program's own process group
    except OSError:
        pass
    leftovers = sweep(cfg.get("uid"))
    os.close(pidfd)
    shutil.rmtree(workdir, ignore_errors=True)
    return leftovers


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
            return
        if spare is None:
            spare = spawn_spare(cfg, libc)
        header, result, pending = evaluate(json.loads(raw), raw, spare, cfg)
        spare = None
        write_frame(proto_out, json.dumps(header).encode())
        write_frame(proto_out, result)
        if pending is not None:
            let_exit(pending)
        spare = spawn_spare(cfg, libc)


if __name__ == "__main__":
    main()
