"""Sandbox worker's process bookkeeping: reaping, leftover sweeps, the "alone" check.

Runs INSIDE the sandbox, loaded by ``_worker.py`` from its own directory (basevolve is
not importable there), so it is standard library only.  Shared by the one-shot
evaluation path (``_worker.py``) and the call sessions (``_session.py``): both must
know when a program's process is the worker's only child, kill what a program left
behind, and reap children without blocking a request.  The worker is a child
subreaper, so double-forked daemons of a program come back to it and are found here.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from typing import Any


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


def wipe(directory: str) -> None:
    """Remove everything inside ``directory`` (not the directory itself)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def fresh_workdir(cfg: dict[str, Any]) -> str:
    workdir = os.path.join(cfg["work_root"], "run")
    for directory in cfg.get("wipe", ()):  # what earlier programs may have left (no uid drop)
        wipe(directory)
    shutil.rmtree(workdir, ignore_errors=True)
    os.mkdir(workdir, 0o700)
    if cfg.get("uid") is not None:
        os.chown(workdir, cfg["uid"], cfg["gid"])
    return workdir


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


