"""Positive behaviour of the sandbox pool: values, isolation level, recycling, overlap,
the rlimits fallback and the bubblewrap-unavailable paths."""

from __future__ import annotations

import asyncio
import itertools
import os
import warnings

import numpy as np
import pytest
from _sandbox_helpers import DAEMON_PROGRAM, HAVE_BWRAP, assert_healthy, needs_bwrap

from basevolve.errors import ConfigError, SandboxError
from basevolve.records import ExecStatus, Isolation
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.sandbox import pool as pool_module

SCIPY_PROGRAM = """
import numpy as np
from scipy.optimize import minimize

def solve():
    rng = np.random.default_rng(0)
    centers = rng.random((26, 2))
    radii = np.full(26, 0.05)
    res = minimize(lambda x: np.sum((x - 3.0) ** 2), np.zeros(2))
    return centers, radii, float(radii.sum()) + 0.0 * float(res.fun)
"""


def test_numpy_scipy_program_returns_arrays(pool: SandboxPool) -> None:
    r = pool.run(SCIPY_PROGRAM, "solve", timeout_s=20)
    assert r.status is ExecStatus.OK, r
    centers, radii, total = r.value
    assert isinstance(r.value, tuple)
    np.testing.assert_array_equal(centers, np.random.default_rng(0).random((26, 2)))
    assert radii.shape == (26,) and radii.dtype == np.float64
    assert total == pytest.approx(1.3)
    assert r.seconds > 0 and r.isolation is pool.isolation


def test_plain_values_roundtrip(pool: SandboxPool) -> None:
    code = (
        "import numpy as np\n"
        "def main():\n"
        "    return {'i': 2**70, 'f': float('nan'), 'inf': -float('inf'), 's': 'π', 'n': None,\n"
        "            'b': np.bool_(True), 'np': np.int32(5), 'l': [1, (2, 3)], 'z': 1+2j,\n"
        "            'arr': np.arange(6, dtype=np.int16).reshape(2, 3), 'mask': np.array([True, False]),\n"
        "            'fortran': np.asfortranarray(np.eye(3))}\n"
    )
    r = pool.run(code, "main", timeout_s=10)
    assert r.status is ExecStatus.OK, r
    v = r.value
    assert v["i"] == 2**70 and np.isnan(v["f"]) and v["inf"] == -np.inf and v["s"] == "π"
    assert v["n"] is None and v["b"] is True and v["np"] == 5 and v["l"] == [1, (2, 3)]
    assert v["z"] == 1 + 2j
    assert v["arr"].dtype == np.int16 and v["arr"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert v["mask"].dtype == np.bool_
    np.testing.assert_array_equal(v["fortran"], np.eye(3))


def test_array_shapes_survive_exactly(pool: SandboxPool) -> None:
    """Regression: a 0-d array came back with shape (1,) (``ascontiguousarray`` makes
    arrays at least 1-d), so a scorer saw a shape the program never returned."""
    code = (
        "import numpy as np\n"
        "def main():\n"
        "    return np.array(5.0), np.zeros((0, 2)), np.ones((2, 3))[:, ::2]\n"
    )
    r = pool.run(code, "main", timeout_s=10)
    assert r.status is ExecStatus.OK, r
    scalar, empty, strided = r.value
    assert scalar.shape == () and float(scalar) == 5.0
    assert empty.shape == (0, 2)
    assert strided.shape == (2, 2) and strided.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_program_runs_as_module_named_program(pool: SandboxPool) -> None:
    code = (
        "import os\n"
        "ran_main = False\n"
        "if __name__ == '__main__':\n"
        "    ran_main = True\n"
        "def main():\n"
        "    return __name__, ran_main, os.getcwd(), os.environ.get('OPENBLAS_NUM_THREADS')\n"
    )
    r = pool.run(code, "main", timeout_s=5)
    assert r.status is ExecStatus.OK
    name, ran_main, cwd, threads = r.value
    assert (name, ran_main, threads) == ("program", False, "1")
    if pool.isolation is Isolation.BWRAP:
        assert cwd == "/tmp/run"


@needs_bwrap
def test_isolation_level_is_bwrap_here(pool: SandboxPool) -> None:
    assert pool.isolation is Isolation.BWRAP
    r = pool.run(
        "import os\ndef main():\n    return os.getuid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n",
        "main",
        timeout_s=5,
    )
    assert r.isolation is Isolation.BWRAP
    uid, pids = r.value
    assert pool.uid_range is not None and uid in pool.uid_range  # the slot's own leased uid
    # only the namespace: its init, the worker, this program (and at most a previous child
    # still exiting); never the host's processes
    assert 1 in pids and len(pids) <= 4


def test_worker_is_recycled_after_n_evaluations() -> None:
    with SandboxPool(SandboxConfig(workers=1, max_evals_per_worker=2)) as p:
        pids = []
        for _ in range(5):
            assert p.run("def main():\n    return 1\n", "main", timeout_s=5).value == 1
            pids.append(p._all[0].proc.pid)
        root = str(p._root)
    # evals 1-2 on the first worker, 3-4 on the second, 5 on the third
    assert pids[0] != pids[2] != pids[4]
    assert len(set(pids)) >= 3
    # retired and closed workers are gone, with everything in their namespaces
    assert _processes_mentioning(root) == []


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = open(f"/proc/{name}/cmdline", "rb").read()
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(int(name))
    return found


def test_concurrent_arun_overlaps(pool: SandboxPool) -> None:
    code = (
        "import time\n"
        "def main():\n"
        "    start = time.time()\n"
        "    time.sleep(0.4)\n"
        "    return start, time.time()\n"
    )

    async def go():
        return await asyncio.gather(*(pool.arun(code, "main", timeout_s=10) for _ in range(4)))

    results = asyncio.run(go())
    assert all(r.status is ExecStatus.OK for r in results), results
    spans = sorted(r.value for r in results)
    overlapping = sum(1 for a, b in itertools.pairwise(spans) if b[0] < a[1])
    assert overlapping >= 1  # two workers ran at the same time


def test_rlimits_fallback_works(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    with SandboxPool(SandboxConfig(workers=1, isolation="rlimits")) as p:
        assert p.isolation is Isolation.RLIMITS
        r = p.run(SCIPY_PROGRAM, "solve", timeout_s=20)
        assert r.status is ExecStatus.OK and r.isolation is Isolation.RLIMITS
        assert r.value[0].shape == (26, 2)
        r = p.run(
            "import os\ndef main():\n    return os.environ.get('OPENAI_API_KEY')\n",
            "main",
            timeout_s=5,
        )
        assert r.status is ExecStatus.OK and r.value is None
        r = p.run("import time\ndef main():\n    time.sleep(30)\n", "main", timeout_s=0.5)
        assert r.status is ExecStatus.TIMEOUT
        r = p.run(
            "import os\ndef main():\n    os.kill(os.getppid(), 9)\n    return 1\n",
            "main",
            timeout_s=5,
        )
        assert r.status is not ExecStatus.OK
        assert_healthy(p)


def test_auto_falls_back_and_warns_once_without_bwrap(monkeypatch) -> None:
    monkeypatch.setattr(pool_module, "bwrap_path", lambda: None)
    monkeypatch.setattr(pool_module, "_warned_fallback", False)
    with pytest.warns(RuntimeWarning, match="falling back to 'rlimits'"):
        with SandboxPool(SandboxConfig(workers=1)) as p:
            assert p.isolation is Isolation.RLIMITS
            assert (
                p.run("def main():\n    return 'x'\n", "main", timeout_s=5).isolation
                is Isolation.RLIMITS
            )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with SandboxPool(SandboxConfig(workers=1)) as p:  # second pool: no second warning
            assert p.isolation is Isolation.RLIMITS


def test_bwrap_required_but_unavailable_raises(monkeypatch) -> None:
    monkeypatch.setattr(pool_module, "bwrap_path", lambda: None)
    with pytest.raises(SandboxError, match="isolation='bwrap' was requested"):
        SandboxPool(SandboxConfig(workers=1, isolation="bwrap"))


@pytest.mark.skipif(not HAVE_BWRAP, reason="needs bubblewrap")
def test_bwrap_that_fails_to_start_falls_back(monkeypatch, tmp_path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    monkeypatch.setattr(pool_module, "bwrap_path", lambda: str(broken))
    monkeypatch.setattr("basevolve.sandbox.launch.bwrap_path", lambda: str(broken))
    with pytest.raises(SandboxError, match="Permission denied"):
        SandboxPool(SandboxConfig(workers=1, isolation="bwrap"))
    monkeypatch.setattr(pool_module, "_warned_fallback", False)
    with pytest.warns(RuntimeWarning, match="Permission denied"):
        with SandboxPool(SandboxConfig(workers=1)) as p:
            assert p.isolation is Isolation.RLIMITS


@pytest.mark.parametrize(
    "kwargs",
    [
        {"workers": 0},
        {"memory_mb": 10},
        {"isolation": "docker"},
        {"tmpfs_mb": -1},
        {"cpu_seconds": 0},
        {"output_limit_bytes": 1.5},
    ],
)
def test_bad_config_is_refused(kwargs) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        SandboxConfig(**kwargs)


def test_bad_run_arguments_and_closed_pool(pool: SandboxPool) -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        pool.run("def main():\n    return 1\n", "main", timeout_s=0)
    with pytest.raises(ConfigError, match="entry"):
        pool.run("def main():\n    return 1\n", "not an identifier", timeout_s=1)
    # Regression: 1e12 s overflowed select() in the worker and the parent, so the pool
    # raised OverflowError and the *next* program found a dead worker and scored 0.
    with pytest.raises(ConfigError, match="timeout_s"):
        pool.run("def main():\n    return 1\n", "main", timeout_s=1e12)
    assert_healthy(pool)
    p = SandboxPool(SandboxConfig(workers=1, isolation="rlimits"))
    p.close()
    with pytest.raises(SandboxError, match="closed pool"):
        p.run("def main():\n    return 1\n", "main", timeout_s=1)


def test_default_workers_is_cpu_count() -> None:
    assert SandboxConfig().n_workers == (os.cpu_count() or 1)


def test_worker_death_hang_and_oversized_result_are_survived(monkeypatch) -> None:
    import signal
    import threading

    monkeypatch.setattr(pool_module, "_BACKSTOP_GRACE_S", 0.5)
    cfg = SandboxConfig(workers=1, isolation="rlimits", max_result_bytes=100_000)
    with SandboxPool(cfg) as p:
        r = p.run(
            "import numpy as np\ndef main():\n    return np.zeros(10**6)\n", "main", timeout_s=5
        )
        assert r.status is ExecStatus.BAD_OUTPUT and "max_result_bytes" in r.error
        # the worker itself dies in the middle of an evaluation
        assert (
            p.run("def main():\n    return 0\n", "main", timeout_s=5).value == 0
        )  # respawned, ready
        worker_pid = p._all[0].pid  # the detached worker's host pid (not its launcher's)
        killer = threading.Timer(0.3, os.kill, (worker_pid, signal.SIGKILL))
        killer.start()
        r = p.run("import time\ndef main():\n    time.sleep(5)\n", "main", timeout_s=5)
        killer.join()
        assert r.status is ExecStatus.CRASHED and "worker died" in r.error
        assert_healthy(p)
        # the worker hangs (stopped): the parent's backstop gives up on it
        os.kill(p._all[0].pid, signal.SIGSTOP)
        r = p.run("def main():\n    return 1\n", "main", timeout_s=0.3)
        assert r.status is ExecStatus.CRASHED and "hung" in r.error
        assert_healthy(p)


@pytest.mark.skipif(os.geteuid() != 0, reason="a private network namespace needs root")
def test_rlimits_fallback_has_no_network_when_root() -> None:
    import socket

    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        SandboxPool(SandboxConfig(workers=1, isolation="rlimits")) as p,
    ):
        port = server.getsockname()[1]
        code = f"import socket\ndef main():\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        r = p.run(code, "main", timeout_s=5)
        assert r.status is ExecStatus.ERROR and "Error" in r.error


@pytest.mark.skipif(os.geteuid() != 0, reason="simulates the non-root path from a root run")
def test_non_root_fallback_recovers_from_parent_kill(monkeypatch) -> None:
    # Pretend not to be root in the forced fallback: no uid drop, so leftovers are found
    # as orphans re-parented to the worker (child subreaper) instead of by uid.  (The real
    # non-root paths, run from an unprivileged uid: test_sandbox_unprivileged.py.)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(pool_module, "_warned_fallback", False)
    with pytest.warns(RuntimeWarning, match="YOUR uid"):
        p = SandboxPool(SandboxConfig(workers=1, isolation="rlimits"))
    with p:
        assert p.isolation is Isolation.RLIMITS
        r = p.run("import os\ndef main():\n    os.kill(os.getppid(), 9)\n", "main", timeout_s=5)
        if "landlock-scope" in p.protections or any(
                t.startswith("landlock-abi") and int(t[12:]) >= 6 for t in p.protections):
            # Landlock's signal scoping: the program cannot reach its worker at all
            assert r.status is ExecStatus.ERROR and "PermissionError" in r.error, r
        else:
            assert r.status is ExecStatus.CRASHED and "worker died" in r.error
        assert_healthy(p)
        r = p.run(DAEMON_PROGRAM, "main", timeout_s=5)
        assert r.status is ExecStatus.ERROR and "left 1 process" in r.error
        assert_healthy(p)


def test_scratch_dirs_of_dead_pools_are_removed() -> None:
    import tempfile
    from pathlib import Path

    stale = Path(tempfile.gettempdir()) / "basevolve-sandbox-99999999-abc"  # pid never alive
    (stale / "slot0").mkdir(parents=True, exist_ok=True)
    with SandboxPool(SandboxConfig(workers=1, isolation="rlimits")) as p:
        root = p._root
        assert root.is_dir() and not stale.exists()
    assert not root.exists()  # closing removes the pool's own scratch dir


@pytest.mark.skipif(os.geteuid() != 0, reason="uid blocks are leased only as root")
def test_two_pools_lease_disjoint_uid_blocks(pool: SandboxPool) -> None:
    """Side-by-side pools (two runs at once) must not share uids: RLIMIT_NPROC and the
    fallback's kill-as-uid clean-up are per uid.  A closed pool's block is reusable."""
    with SandboxPool(SandboxConfig(workers=1)) as other:
        assert pool.uid_range is not None and other.uid_range is not None
        assert set(pool.uid_range).isdisjoint(other.uid_range)
        r = other.run("import os\ndef main():\n    return os.getuid()\n", "main", 10)
        assert r.status is ExecStatus.OK and r.value in other.uid_range
        first = other.uid_range
    with SandboxPool(SandboxConfig(workers=1)) as again:
        assert again.uid_range == first  # the lock died with the closed pool


def test_background_start_outlives_its_caller_thread() -> None:
    """``background=True`` returns before the workers are up; they must survive the
    caller's thread (bubblewrap's --die-with-parent follows the *thread* that started a
    worker: the first version started them on a short-lived thread and every evaluation
    crashed) and the pool must evaluate after that thread is gone."""
    import threading

    made: list[SandboxPool] = []
    t = threading.Thread(target=lambda: made.append(SandboxPool(background=True)))
    t.start()
    t.join()
    pool = made[0]
    try:
        first = pool.run("def f():\n    return 41 + 1\n", "f", timeout_s=20)
        assert first.status is ExecStatus.OK and first.value == 42, first.error
        assert pool.isolation in (Isolation.BWRAP, Isolation.RLIMITS)
        again = asyncio.run(pool.arun("def f():\n    return [1, 2]\n", "f", timeout_s=20))
        assert again.status is ExecStatus.OK and again.value == [1, 2], again.error
    finally:
        pool.close()
    with pytest.raises(SandboxError, match="closed pool"):
        pool.run("def f():\n    return 1\n", "f", timeout_s=5)


def test_background_pool_closed_while_starting() -> None:
    """close() right after a background start waits for the start, then stops it: the
    start completed (isolation known) and the pool refuses work."""
    pool = SandboxPool(background=True)
    pool.close()
    assert pool.isolation in (Isolation.BWRAP, Isolation.RLIMITS)
    with pytest.raises(SandboxError, match="closed pool"):
        pool.run("def f():\n    return 1\n", "f", timeout_s=5)
