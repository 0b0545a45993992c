"""Parent-side handle of one sandbox worker process (one pool slot).

The handle speaks the length-prefixed frame protocol of ``_worker.py`` over the worker's
stdin/stdout, enforces a backstop deadline on every read (a wedged or killed worker can
never hang the caller), and kills the worker's whole tree when it is retired: with
``--unshare-pid`` and ``--die-with-parent``, killing bubblewrap ends every process in
the worker's pid namespace; in the rlimits fallback a final kill sweep of the slot's
uid catches processes that left the worker's session.  Where the slot has a memory
cgroup (``cgroups.py``), everything still in it is killed too, whatever uid it runs as,
and an OOM kill in it during a request is reported as ``memory_exceeded``.

Every worker is started through ``_launch.py``, whose first frame names the host pid of
the process that becomes the worker (or bubblewrap): in the fallback that process is
detached from us, so it is not ``self.proc`` (the launcher, which exits at once).
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

from basevolve.errors import SandboxError
from basevolve.records import Isolation
from basevolve.sandbox.cgroups import MIB, SlotCgroup
from basevolve.sandbox.launch import LaunchSpec

_MAX_FRAME = 512 * 1024 * 1024


def _descendants(pid: int) -> list[int]:
    """All descendants of ``pid`` (via /proc/PID/task/TID/children), best effort."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tids = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{current}/task/{tid}/children") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except OSError:
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    """Wait until killed processes have exited (a zombie counts as gone)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                break
            if state in ("Z", "X"):
                break
            time.sleep(0.005)


class WorkerGone(Exception):
    """The worker died or stopped answering; the handle is dead."""


class _OutOfMemory(Exception):
    """The kernel OOM-killed a process in the slot's cgroup during a request."""


OOM_POLL_S = 0.05  # how often a waiting request looks at the slot's OOM counter


class WorkerHandle:
    def __init__(self, spec: LaunchSpec, *, slot: int, uid: int | None, log_path: Path,
                 cgroup: SlotCgroup | None = None, memory_mb: int = 0) -> None:
        self.spec, self.slot, self.uid = spec, slot, uid
        self.cgroup, self.memory_mb = cgroup, memory_mb
        self.evals = 0
        self.dead = False
        self.ready_info: dict[str, Any] | None = None
        self.pid: int | None = None  # the worker's (or bubblewrap's) host pid, once known
        self._oom_base: int | None = None  # the slot's OOM count when the request began
        self._log = open(log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                spec.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                env=spec.env,
                cwd=spec.cwd,
                start_new_session=True,
                bufsize=0,
                close_fds=True,
            )
        except OSError as exc:
            self._log.close()
            raise SandboxError(
                f"could not start a sandbox worker ({spec.isolation.value}): {spec.argv[0]}: {exc}"
            ) from exc
        self._in = self.proc.stdin.fileno()  # type: ignore[union-attr]
        self._out = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._log_path = log_path

    @property
    def isolation(self) -> Isolation:
        return self.spec.isolation

    def log_tail(self, n: int = 800) -> str:
        try:
            return self._log_path.read_bytes()[-n:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # ------------------------------------------------------------------ framing
    def _read_exact(self, n: int, deadline: float) -> bytes:
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkerGone("worker did not answer before the backstop deadline")
            watching = self._oom_base is not None and self.cgroup is not None
            ready, _, _ = select.select([self._out], [], [], min(wait, OOM_POLL_S) if watching
                                        else wait)
            if not ready:
                if watching and self.cgroup.oom_kills() > self._oom_base:  # type: ignore[union-attr]
                    raise _OutOfMemory()
                continue
            chunk = os.read(self._out, min(left, 1 << 20))
            if not chunk:
                raise WorkerGone("worker closed its pipe (it died)")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self, deadline: float) -> bytes:
        (size,) = struct.unpack(">I", self._read_exact(4, deadline))
        if size > _MAX_FRAME:
            raise WorkerGone(f"worker sent an oversized frame ({size} bytes)")
        return self._read_exact(size, deadline)

    def _write_frames(self, frames: list[bytes]) -> None:
        """All ``frames`` in one buffer: one write per request in the common case."""
        view = memoryview(b"".join(struct.pack(">I", len(d)) + d for d in frames))
        try:
            while view:
                view = view[os.write(self._in, view) :]
        except OSError as exc:
            raise WorkerGone(f"could not write to the worker ({exc})") from exc

    # ------------------------------------------------------------------ life cycle
    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        if self.ready_info is not None:
            return self.ready_info
        deadline = time.monotonic() + timeout_s
        try:
            if self.pid is None:
                self.pid = int(json.loads(self._read_frame(deadline))["launched"])
            info = json.loads(self._read_frame(deadline))
            if self.cgroup is not None:  # memory_mb on top of the warm worker (cgroups.py)
                self.cgroup.arm(self.memory_mb)
        except (WorkerGone, ValueError, KeyError, TypeError, OSError) as exc:
            self.kill()
            raise SandboxError(
                f"sandbox worker ({self.isolation.value}) failed to start: {exc}; "
                f"worker stderr: {self.log_tail() or '(empty)'}"
            ) from exc
        self.ready_info = info
        return info

    def evaluate(self, request: dict[str, Any], backstop_s: float) -> tuple[dict[str, Any], bytes]:
        """Send one request; return (worker header, child result bytes) or raise WorkerGone."""
        return self.exchange([json.dumps(request).encode()], backstop_s, count=True)

    def exchange(self, frames: list[bytes], backstop_s: float,
                 count: bool = False) -> tuple[dict[str, Any], bytes]:
        """Send ``frames`` (a JSON request, then any payload frames it announces); return
        (worker header, result bytes) or raise WorkerGone (the worker is then killed).

        ``count``: this request starts a program (an evaluation or a session), which is
        what ``max_evals_per_worker`` counts; the calls of a session are not counted."""
        if self.dead:
            raise WorkerGone("worker is dead")
        self.evals += count
        self._oom_base = ooms = self.cgroup.oom_kills() if self.cgroup is not None else None
        start = time.monotonic()
        oom = False
        try:
            self._write_frames(frames)
            deadline = time.monotonic() + backstop_s
            header = json.loads(self._read_frame(deadline))
            result = self._read_frame(deadline)
        except _OutOfMemory:
            # Stopped at once: the program is over its cgroup's limit (memory_mb on top of
            # the warm worker), and the worker is never reused after that anyway.
            header, result, oom = {"seconds": time.monotonic() - start}, b"", True
            self.kill()
        except (WorkerGone, ValueError) as exc:
            self.kill()
            raise WorkerGone(str(exc)) from exc
        finally:
            self._oom_base = None
        if oom or (ooms is not None and self.cgroup.oom_kills() > ooms):  # type: ignore[union-attr]
            peak = self.cgroup.final_peak or self.cgroup.peak_bytes()  # type: ignore[union-attr]
            header.update(memory_exceeded=True, memory_by="cgroup", ended=True,
                          memory_limit_mb=self.memory_mb,
                          memory_used_mb=round(peak / MIB, 1) if peak else None)
        return header, result

    def kill(self) -> None:
        """Kill the worker and everything it started; idempotent."""
        if self.dead:
            return
        self.dead = True
        # bwrap's namespace init, the worker, its children (the worker's pid: in the
        # fallback it was detached from the launcher, ``self.proc``, and is only in its group)
        tree = _descendants(self.proc.pid)
        if self.pid is not None and self.pid != self.proc.pid:
            tree = [self.pid, *_descendants(self.pid), *tree]
        for fn in (os.killpg, os.kill):
            try:
                fn(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _wait_gone(tree, timeout_s=5.0)
        if self.isolation is Isolation.RLIMITS and self.uid is not None:
            # Programs run as the slot's own uid: kill(-1) as that uid reaches all of them.
            subprocess.run(
                ["kill", "-9", "-1"],
                user=self.uid,
                group=self.uid,
                extra_groups=[],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                env={"PATH": "/usr/bin:/bin"},
            )
        if self.cgroup is not None:
            self.cgroup.remove()  # kills whatever is left in it, then removes it
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._log.close()
