"""Sandbox worker, call sessions: one imported program, many timed calls (issue 21).

Runs INSIDE the sandbox, loaded by ``_worker.py`` (standard library only).  A one-shot
evaluation forks a child, runs the program's entry function once and reads its value.
A *session* keeps the child alive after the import so a trusted evaluator in the
basevolve process can call the program's functions many times (once per instance)
without re-importing it:

  parent -> worker  ``{"op": "open", "code", "timeout_s", "limits", ...}``
  parent -> worker  ``{"op": "call", "fn", "nonce", "timeout_s", ...}`` + packed arguments
  parent -> worker  ``{"op": "close"}``
  worker -> parent  one header frame (JSON facts) + one result frame per request.

Why the worker measures the time of a call, not the child: the program runs in the
child and may patch ``time``, ``resource`` or anything else in its own process.  The
worker is another process (root in the sandbox, or at least not the program): it
stamps ``time.monotonic()`` when it starts sending the call and when the answer frame is
complete, and reads the child's CPU time from the kernel (``clock_getcpuclockid`` of
the child's process: every thread of it, nanosecond resolution; plus the CPU of children
it waited for, from ``/proc/PID/stat``).  A call that ends with processes left behind,
a timeout, an oversized answer or a dead child ends the session (the child and every
leftover are killed, as after a one-shot evaluation).  The next spare child is forked
only once the session is closed: it would otherwise wipe the session's working
directory.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import sys
import time
from typing import Any

_procs = sys.modules["_basevolve_sandbox_procs"]  # loaded by _worker.py before this module
_memwatch = sys.modules["_basevolve_sandbox_memwatch"]
_libc = ctypes.CDLL(None, use_errno=True)
_TICK = os.sysconf("SC_CLK_TCK")
DRAIN_S = 2.0  # after the child died: read what its pipes still hold, at most this long

CURRENT: dict[str, Any] | None = None  # the open session, if any


def cpu_clock(pid: int) -> int | None:
    """The kernel's CPU-time clock of process ``pid`` (all its threads), or None."""
    clock = ctypes.c_int()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        return None
    return clock.value


def cpu_seconds(s: dict[str, Any], *, fresh: bool = True) -> float:
    """CPU seconds the child used so far, its waited-for children included.

    The child's own CPU comes from its kernel clock (cheap, exact); the CPU of children
    it waited for from ``/proc/PID/stat``, read only when ``fresh`` (at the end of a
    call; at its start the value read at the end of the previous call stands in).  A
    program that reaps children *between* calls can then only make its next call look
    slower, never faster, and each call costs one ``/proc`` read instead of two.
    """
    try:
        own = time.clock_gettime(s["clock"]) if s["clock"] is not None else None
    except OSError:
        own = None
    if fresh or own is None or "waited" not in s:
        try:
            with open(f"/proc/{s['pid']}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            s["waited"] = (int(fields[13]) + int(fields[14])) / _TICK
            if own is None:
                own = (int(fields[11]) + int(fields[12])) / _TICK
        except (OSError, IndexError, ValueError):
            return s.get("cpu_last", 0.0)
    s["cpu_last"] = own + s["waited"]
    return s["cpu_last"]


def take_frame(buf: bytearray, cap: int) -> tuple[bytes | None, bool]:
    """Pop one complete length-prefixed frame from ``buf``; (frame, too_large)."""
    if len(buf) < 4:
        return None, False
    (size,) = struct.unpack(">I", bytes(buf[:4]))
    if size > cap:
        return None, True
    if len(buf) < 4 + size:
        return None, False
    frame = bytes(buf[4 : 4 + size])
    del buf[: 4 + size]
    return frame, False


def frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def send(s: dict[str, Any]) -> None:
    """Write as much of the queued request as the child's pipe takes, without blocking."""
    try:
        while s["outbox"]:
            del s["outbox"][: os.write(s["req_w"], s["outbox"][:65536])]
    except BlockingIOError:
        pass
    except OSError:  # the child closed its request pipe: it cannot answer
        s["outbox"].clear()


def exchange(s: dict[str, Any], deadline: float, out_cap: int, res_cap: int) -> dict[str, Any]:
    """Send what is queued in ``s["outbox"]`` and wait for one answer frame.

    Pumps stdout/stderr meanwhile (capped at ``out_cap`` each, the rest counted and
    dropped, so a flood never blocks the child on a full pipe).  Writes are
    non-blocking, so a child that stops reading its requests cannot stall the worker
    past ``deadline``.
    """
    out = {s["out_r"]: bytearray(), s["err_r"]: bytearray()}
    seen = dict.fromkeys(out, 0)
    facts: dict[str, Any] = {"timed_out": False, "result_overflow": False, "status": None}
    answer = None

    def pump(fds: list[int]) -> None:
        for fd in fds:
            try:
                data = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            if not data:
                s["open"].discard(fd)
            elif fd == s["res_r"]:
                s["rbuf"] += data
            else:
                seen[fd] += len(data)
                out[fd] += data[: max(out_cap - len(out[fd]), 0)]

    watcher = _memwatch.Watcher(s["cfg"])
    send(s)  # usually the whole request fits the pipe: no select round for it
    while True:
        answer, facts["result_overflow"] = take_frame(s["rbuf"], res_cap)
        facts["result_overflow"] |= len(s["rbuf"]) > res_cap + 4
        if answer is not None or facts["result_overflow"] or facts["status"] is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            facts["timed_out"] = True
            break
        readable = [fd for fd in (s["out_r"], s["err_r"], s["res_r"]) if fd in s["open"]]
        writable = [s["req_w"]] if s["outbox"] and s["req_w"] is not None else []
        ready, can_write, _ = select.select([*readable, s["pidfd"]], writable, [],
                                            watcher.interval(remaining))
        if can_write:
            send(s)
        pump([fd for fd in ready if fd != s["pidfd"]])
        if s["pidfd"] in ready:
            facts["status"] = os.waitpid(s["pid"], 0)[1]
            end = time.monotonic() + DRAIN_S  # the child is gone: read what it left
            while s["open"] & {s["res_r"]} and time.monotonic() < end:
                r, _, _ = select.select(list(s["open"]), [], [], 0.1)
                pump(r)
        elif watcher.exceeded(s["pid"]):
            facts.update(watcher.facts())  # over memory_mb: the session ends (report)
            break
    facts["done_at"] = time.monotonic()
    while True:  # the child flushed before answering: its output is in the pipes now
        r, _, _ = select.select([fd for fd in out if fd in s["open"]], [], [], 0)
        if not r:
            break
        pump(r)
    facts["stdout"] = bytes(out[s["out_r"]]).decode("utf-8", "replace")
    facts["stderr"] = bytes(out[s["err_r"]]).decode("utf-8", "replace")
    facts["stdout_dropped"] = seen[s["out_r"]] - len(out[s["out_r"]])
    facts["stderr_dropped"] = seen[s["err_r"]] - len(out[s["err_r"]])
    return facts | {"answer": answer}


def end(cfg: dict[str, Any], status: int | None = None) -> int:
    """Kill the session's child and whatever it left; return how many leftovers."""
    global CURRENT
    s, CURRENT = CURRENT, None
    if s is None:
        return 0
    if s["req_w"] is not None:
        os.close(s["req_w"])
    leftovers = _procs.finish_child(s["pid"], s["pidfd"], status, s["workdir"], cfg)
    for fd in (s["out_r"], s["err_r"], s["res_r"]):
        os.close(fd)
    return leftovers


def report(s: dict[str, Any], facts: dict[str, Any], cfg: dict[str, Any]) -> tuple[dict, bytes]:
    """The header and answer bytes for the parent; ends the session when it must end."""
    status = facts["status"]
    header = {k: facts[k] for k in ("timed_out", "result_overflow", "stdout", "stderr",
                                   "stdout_dropped", "stderr_dropped")}
    header.update({k: v for k, v in facts.items() if k.startswith("memory_")})
    header.update(exit_code=None, signal=None, leftovers=0, ended=False)
    if facts.get("memory_exceeded"):
        header["leftovers"] = end(cfg)
        header["ended"] = True
    elif facts["answer"] is not None and status is None and not _procs.alone(s["pid"]):
        header["leftovers"] = end(cfg) or 1  # a child of the program is still running
        header["ended"] = True
    elif facts["answer"] is None or status is not None:
        header["leftovers"] = end(cfg, status)
        header["ended"] = True
    if status is not None:
        header["exit_code"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        header["signal"] = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return header, facts["answer"] or b""


def open_session(req: dict[str, Any], raw: bytes, spare: dict[str, Any],
                 cfg: dict[str, Any]) -> tuple[dict, bytes]:
    """Hand the open request to the spare child and wait until the program is imported."""
    global CURRENT
    if CURRENT is not None:
        end(cfg)
    s = dict(spare, rbuf=bytearray(), outbox=bytearray(frame(raw)), clock=cpu_clock(spare["pid"]),
             cfg=cfg)
    s["open"] = {s["out_r"], s["err_r"], s["res_r"]}
    os.set_blocking(s["req_w"], False)
    CURRENT = s
    t0 = time.monotonic()
    c0 = cpu_seconds(s)
    facts = exchange(s, t0 + req["timeout_s"], req["output_limit"], req["max_result_bytes"])
    cpu = cpu_seconds(s) - c0
    header, answer = report(s, facts, cfg)
    header.update(seconds=facts["done_at"] - t0, wall_s=facts["done_at"] - t0, cpu_s=cpu)
    return header, answer


def call(req: dict[str, Any], raw: bytes, packed: bytes, cfg: dict[str, Any]) -> tuple[dict, bytes]:
    """Forward one call to the session's child; time it from outside the program."""
    s = CURRENT
    if s is None:
        return {"ended": True, "no_session": True}, b""
    s["outbox"] += frame(raw) + frame(packed)
    t0 = time.monotonic()
    c0 = cpu_seconds(s, fresh=False)
    facts = exchange(s, t0 + req["timeout_s"], req["output_limit"], req["max_result_bytes"])
    cpu = cpu_seconds(s) - c0
    header, answer = report(s, facts, cfg)
    header.update(wall_s=facts["done_at"] - t0, cpu_s=max(cpu, 0.0), seconds=facts["done_at"] - t0)
    return header, answer


def close(cfg: dict[str, Any]) -> tuple[dict, bytes]:
    return {"closed": True, "leftovers": end(cfg)}, b""
