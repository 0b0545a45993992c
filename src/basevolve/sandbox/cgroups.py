"""Memory cgroups: one per worker slot, so ``memory_mb`` caps a whole evaluation.

Why (issue 22, item 17): ``RLIMIT_AS`` is per process, so a program that forked could use
``max_processes x memory_mb`` (one evaluation used 6.2 GiB under ``memory_mb=2048``).  A
cgroup counts every process of the worker's tree together, whatever it forks.

Layout: ``<our cgroup>/basevolve-<pid>-<token>/slot<i>.<n>``, one directory per started
worker (``n`` counts restarts, so a fresh worker never inherits the charges of the one
before).  The worker is moved in before it starts anything (``_launch.py``).  Once it
reports ready, its limit is set to

    limit = memory_mb MiB + the slot's usage at that moment

i.e. the program gets ``memory_mb`` on top of the warm worker (interpreter, pre-imported
numpy/scipy and the page cache they charged; about 60-150 MiB).  Swap is capped at 0
where the controller has the file, so a program cannot page its excess out.  When the
kernel's OOM killer fires in a slot (the slot's ``oom_kill`` counter moves), the parent
reports the evaluation as crashed, out of memory, and retires the worker.

cgroup v2 (``memory.max``, needs the memory controller delegated to our cgroup, as
``systemd-run --user -p Delegate=yes`` or a container does) is preferred; cgroup v1
(``memory.limit_in_bytes``) next; when neither is writable, :func:`open_pool_cgroup`
returns None and the sandbox worker's process-tree watcher caps memory instead.  Pool
directories of processes that died without closing (SIGKILL) are removed, with anything
still in them, by the next pool, as the stale scratch directories are.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "basevolve-"
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    version: int
    base: Path  # our own cgroup's directory in that hierarchy


def _mounts() -> list[tuple[str, str, str, str]]:
    """(mount root, mount point, fs type, super options) of every cgroup mount."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            found.append((fields[3], fields[4].replace("\\040", " "), rest[0], rest[2]))
    return found


def _own_dir(path: str, root: str, point: str) -> Path | None:
    rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
    if rel.startswith(".."):
        return None  # our cgroup lies outside what this mount shows
    return Path(point) / ("" if rel == "." else rel)


def _hierarchies() -> list[_Hierarchy]:
    """Memory-capable hierarchies we sit in, v2 first."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found: list[_Hierarchy] = []
    mounts = _mounts()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for root, point, fstype, opts in mounts:
            if controllers == "" and fstype == "cgroup2":
                base = _own_dir(path, root, point)
                if base is not None and "memory" in _read(base / "cgroup.controllers").split():
                    found.insert(0, _Hierarchy(2, base))
            elif "memory" in controllers.split(",") and fstype == "cgroup" and (
                    "memory" in opts.split(",")):
                base = _own_dir(path, root, point)
                if base is not None:
                    found.append(_Hierarchy(1, base))
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


class SlotCgroup:
    """The cgroup of one started worker."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version
        self.limit_bytes: int | None = None
        self.final_peak: int | None = None  # peak_bytes() just before remove()
        self._events: int | None = None  # kept open: read twice per request (~8 us each)

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def _file(self, v1: str, v2: str) -> Path:
        return self.path / (v2 if self.version == 2 else v1)

    def usage_bytes(self) -> int:
        return int(_read(self._file("memory.usage_in_bytes", "memory.current")) or 0)

    def peak_bytes(self) -> int | None:
        """Highest usage seen (``memory.max_usage_in_bytes`` / ``memory.peak``), if kept."""
        text = _read(self._file("memory.max_usage_in_bytes", "memory.peak")).strip()
        return int(text) if text.isdigit() else None

    def arm(self, memory_mb: int) -> int:
        """Set the limit to ``memory_mb`` MiB on top of the current usage; return it."""
        limit = self.usage_bytes() + memory_mb * MIB
        if self.version == 2:
            (self.path / "memory.max").write_text(str(limit))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(limit))
        self.limit_bytes = limit
        return limit

    def oom_kills(self) -> int:
        """How often the kernel's OOM killer fired in this cgroup so far."""
        try:
            if self._events is None:
                name = "memory.events" if self.version == 2 else "memory.oom_control"
                self._events = os.open(self.path / name, os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._events, 4096, 0).decode()
        except OSError:
            return 0
        return _field(text, "oom_kill")

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.path / "cgroup.procs").split() if p.isdigit()]

    def kill_all(self, timeout_s: float = 5.0) -> None:
        """SIGKILL everything in the cgroup until it is empty (or ``timeout_s`` passed)."""
        kill_file = self.path / "cgroup.kill"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pids = self.pids()
            if not pids:
                return
            if self.version == 2 and kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)

    def remove(self, timeout_s: float = 2.0) -> bool:
        """Kill what is left and remove the directory; False if it stayed busy."""
        self.kill_all()
        if self.final_peak is None:
            self.final_peak = self.peak_bytes()
        if self._events is not None:
            os.close(self._events)
            self._events = None
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)


class PoolCgroup:
    """The directory holding one pool's slot cgroups."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version
        self._started: dict[int, int] = {}

    @property
    def label(self) -> str:
        return f"memory-cgroup-v{self.version}"

    def slot(self, slot: int) -> SlotCgroup:
        """A fresh cgroup for the next worker of ``slot``."""
        n = self._started.get(slot, 0) + 1
        self._started[slot] = n
        path = self.path / f"slot{slot}.{n}"
        path.mkdir()
        return SlotCgroup(path, self.version)

    def close(self) -> None:
        _remove_tree(self.path, self.version)


def _remove_tree(path: Path, version: int) -> None:
    try:
        children = [p for p in path.iterdir() if p.is_dir()]
    except OSError:
        return
    for child in children:
        SlotCgroup(child, version).remove()
    SlotCgroup(path, version).remove()


def remove_stale(base: Path, version: int) -> None:
    """Remove the pool directories of processes that no longer exist."""
    try:
        entries = list(base.glob(f"{PREFIX}*-*"))
    except OSError:
        return
    for path in entries:
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _remove_tree(path, version)


def open_pool_cgroup() -> tuple[PoolCgroup | None, str]:
    """The pool's cgroup directory, or (None, why not) when no hierarchy is writable."""
    reasons = []
    hierarchies = _hierarchies()
    if not hierarchies:
        return None, "no cgroup with a memory controller is visible"
    for h in hierarchies:
        remove_stale(h.base, h.version)
        path = h.base / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError as exc:
            reasons.append(f"v{h.version} {h.base}: {exc.strerror or exc}")
            continue
        try:
            if h.version == 2:
                if "memory" not in _read(h.base / "cgroup.subtree_control").split():
                    (h.base / "cgroup.subtree_control").write_text("+memory")
                (path / "cgroup.subtree_control").write_text("+memory")
            probe = path / "probe"
            probe.mkdir()
            limit = "memory.max" if h.version == 2 else "memory.limit_in_bytes"
            (probe / limit).write_text(str(1 << 40))
            probe.rmdir()
        except OSError as exc:
            reasons.append(f"v{h.version} {h.base}: {exc.strerror or exc}")
            _remove_tree(path, h.version)
            continue
        return PoolCgroup(path, h.version), ""
    return None, "; ".join(reasons)


__all__ = ["PoolCgroup", "SlotCgroup", "open_pool_cgroup", "remove_stale"]
