"""Memory per evaluation (issue 22, item 17): one evaluation used 6.2 GiB under
``memory_mb=2048`` by forking, because ``RLIMIT_AS`` is per process.  Here a program forks
4 children of 480 MB each (each under its own rlimit, 1.9 GB together) under
``memory_mb=768``: it must be stopped as out of memory, with a reason, on the one-shot and
the call-session channel, by the slot's cgroup (where the pool has one) and by the
worker's process-tree watcher (without one), and the pool must go on evaluating.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from _sandbox_helpers import HAVE_BWRAP, assert_healthy

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxConfig, SandboxPool, cgroups
from basevolve.sandbox import pool as pool_module

MIB = 1024 * 1024
HOG = """
import os, time

def main():
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            try:
                held = []
                try:  # up to 480 MB (the forked worker's ~240 MB of address space + 480 < 768)
                    for _ in range(8):
                        held.append(b"x" * (60 << 20))
                except MemoryError:
                    pass  # whatever its own rlimit allowed: 4 of these are still over 768 MB
                time.sleep(30)
            finally:
                os._exit(0)
        kids.append(pid)
    return [os.waitpid(k, 0)[1] for k in kids]
"""


def _have_cgroup() -> bool:
    probe, _ = cgroups.open_pool_cgroup()
    if probe is None:
        return False
    probe.close()
    return True


HAVE_CGROUP = _have_cgroup()


def _isolations() -> list[str]:
    return ["bwrap", "rlimits"] if HAVE_BWRAP else ["rlimits"]


DEFAULT = _isolations()[0]  # the channels do not depend on the mode: sessions test one


def _pool(isolation: str) -> SandboxPool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the forced fallback's warning
        return SandboxPool(SandboxConfig(workers=1, memory_mb=768, tmpfs_mb=32,
                                         isolation=isolation))


@pytest.fixture
def cgroup_pool(request) -> Iterator[SandboxPool]:
    if not HAVE_CGROUP:
        pytest.skip("no writable memory cgroup here (the watcher test covers this case)")
    with _pool(getattr(request, "param", DEFAULT)) as pool:
        yield pool


@pytest.fixture
def watched_pool(request, monkeypatch) -> Iterator[SandboxPool]:
    monkeypatch.setattr(pool_module, "open_pool_cgroup", lambda: (None, "disabled by the test"))
    with _pool(getattr(request, "param", DEFAULT)) as pool:
        yield pool


def _assert_out_of_memory(status: ExecStatus, error: str | None) -> None:
    assert status is ExecStatus.CRASHED, error
    assert error is not None and "out of memory" in error and "memory_mb=768" in error


@pytest.mark.parametrize("cgroup_pool", _isolations(), indirect=True)
def test_a_cgroup_caps_the_whole_evaluation(cgroup_pool: SandboxPool) -> None:
    assert cgroup_pool.protections[-1].startswith("memory-cgroup-v")
    slot = cgroup_pool._all[0].cgroup
    assert slot is not None and slot.limit_bytes is not None
    worker_mb = slot.limit_bytes / MIB - 768  # the rule: memory_mb on top of the warm worker
    assert 0 < worker_mb < 512
    r = cgroup_pool.run(HOG, "main", timeout_s=60)
    _assert_out_of_memory(r.status, r.error)
    assert "cgroup" in r.error
    assert r.seconds < 30  # stopped, not waited out (its children sleep 30 s)
    peak = slot.final_peak  # read just before the retired worker's cgroup was removed
    assert peak is not None and peak <= slot.limit_bytes
    assert peak > 0.8 * slot.limit_bytes  # the children really were counted in it
    assert not slot.path.exists()
    assert_healthy(cgroup_pool)


def test_a_cgroup_caps_a_session_call(cgroup_pool: SandboxPool) -> None:
    code = HOG.replace("def main():", "def hog():")
    with cgroup_pool.session(code, timeout_s=60, call_timeout_s=50) as program:
        r = program.call("hog")
        _assert_out_of_memory(r.status, r.error)
        assert not program.alive and "out of memory" in program.ended_reason
        assert program.call("hog").status is ExecStatus.CRASHED  # the session is over
    assert_healthy(cgroup_pool)


@pytest.mark.parametrize("watched_pool", _isolations(), indirect=True)
def test_the_watcher_caps_the_whole_evaluation(watched_pool: SandboxPool) -> None:
    assert watched_pool.protections[-1] == "memory-watcher"
    r = watched_pool.run(HOG, "main", timeout_s=60)
    _assert_out_of_memory(r.status, r.error)
    assert "summed over its processes" in r.error
    assert r.seconds < 30
    assert_healthy(watched_pool)


def test_the_watcher_caps_a_session_call(watched_pool: SandboxPool) -> None:
    code = HOG.replace("def main():", "def hog():")
    with watched_pool.session(code, timeout_s=60, call_timeout_s=50) as program:
        r = program.call("hog")
        _assert_out_of_memory(r.status, r.error)
        assert not program.alive
    assert_healthy(watched_pool)


def test_one_big_process_is_still_an_ordinary_memory_error(watched_pool: SandboxPool) -> None:
    """A single process is bounded by its rlimit: a MemoryError the program sees, not a kill."""
    r = watched_pool.run("def main():\n    return len(b'x' * (900 << 20))\n", "main", 30)
    assert r.status is ExecStatus.ERROR and "MemoryError" in r.error


@pytest.mark.skipif(not HAVE_CGROUP, reason="no writable memory cgroup here")
def test_cgroups_are_removed_on_close_and_after_a_sigkill() -> None:
    with _pool("rlimits") as pool:
        directory = pool._cgroup.path
        assert directory.is_dir()
    assert not directory.exists()
    # A process that opened a pool dies by SIGKILL: its detached fallback workers and any
    # program still running stay in its cgroups until the next pool removes them.
    script = (
        "import sys, time, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from basevolve.sandbox import SandboxConfig, SandboxPool\n"
        "p = SandboxPool(SandboxConfig(workers=1, memory_mb=768, isolation='rlimits'))\n"
        "print(p._cgroup.version, p._cgroup.path, flush=True)\n"
        "p.run('import time\\ndef main():\\n    time.sleep(60)\\n', 'main', timeout_s=60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        version, path = proc.stdout.readline().split()  # type: ignore[union-attr]
        stale = Path(path)
        slot = cgroups.SlotCgroup(next(stale.glob("slot0.*")), int(version))
        deadline = time.monotonic() + 30
        while len(slot.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the worker and the sleeping program
        assert len(slot.pids()) >= 2
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert stale.is_dir()
    with _pool("rlimits"):
        assert not stale.exists()  # removed, with the processes still in it
