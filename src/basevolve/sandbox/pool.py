"""The sandbox pool: warm fork-server workers that run untrusted programs.

Why this shape (issue 2, section 3; docs/design.md "Untrusted code runs; trusted code
scores"): the engine evaluates every child program the LLM writes while other LLM calls
are in flight, so evaluation must be cheap (a fork of a warm worker, not a fresh
interpreter: ~ms instead of ~500 ms), concurrent (``arun`` overlaps up to ``workers``
evaluations) and survive anything a program does.  Each slot holds one worker; a worker
is retired and restarted after ``max_evals_per_worker`` evaluations or as soon as
anything escaped (leftover processes, a timeout, a crash, a dead or silent worker).

Isolation is resolved once per pool: ``auto`` uses bubblewrap when it is installed and
a worker actually starts under it -- as root with a uid drop, otherwise unprivileged in a
user namespace (issue 22, item 16); both are recorded as ``bwrap``, and
:attr:`SandboxPool.protections` tells them apart.  Otherwise the ``rlimits`` fork server
(new session, rlimits, detached workers, Landlock where the kernel has it, uid drop and a
private network namespace when root), which warns loudly once per process and, without
root, makes this process non-dumpable while the pool is open (a program of the same uid
could otherwise read ``/proc/<basevolve>/environ``, the API key included).  The level
achieved is in every :class:`~basevolve.records.ExecResult`.  Memory is capped per
evaluation by a cgroup per slot (``cgroups.py``) or else by the worker's watcher, and
every program runs under the seccomp filter (``seccomp.py``); see docs/running.md,
"Threat model".
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import TracebackType

from basevolve.errors import ConfigError, SandboxError
from basevolve.records import ExecResult, ExecStatus, Isolation
from basevolve.sandbox.cgroups import PoolCgroup, open_pool_cgroup
from basevolve.sandbox.codec import interpret
from basevolve.sandbox.config import MAX_TIMEOUT_S, IsolationMode, SandboxConfig
from basevolve.sandbox.fallback import guard_parent, unguard_parent
from basevolve.sandbox.fallback import message as fallback_message
from basevolve.sandbox.handle import WorkerGone, WorkerHandle
from basevolve.sandbox.launch import bwrap_path, make_launch
from basevolve.sandbox.passthrough import request_env
from basevolve.sandbox.session import ProgramSession
from basevolve.sandbox.uids import UidLease

logger = logging.getLogger(__name__)
_BACKSTOP_GRACE_S = 10.0  # the worker itself kills at timeout_s; this only catches a wedged worker
_ROOT_PREFIX = "basevolve-sandbox-"
_warned_fallback = False
_warn_lock = threading.Lock()


def _warn_fallback(reason: str, guards: tuple[str, ...]) -> None:
    global _warned_fallback
    with _warn_lock:
        if _warned_fallback:
            return
        _warned_fallback = True
    msg = fallback_message(reason, guards)
    logger.warning(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)


def _remove_stale_roots() -> None:
    """Delete scratch dirs of pools whose process died without closing them (SIGKILL)."""
    for path in Path(tempfile.gettempdir()).glob(f"{_ROOT_PREFIX}*-*"):
        pid = path.name[len(_ROOT_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)


class SandboxPool:
    """Thread-safe pool of sandbox workers; use as a context manager.

    ``run(code, entry, timeout_s)`` execs ``code`` as a module named ``program`` in a
    fresh fork of a warm worker, calls ``entry()`` with no arguments and returns an
    :class:`ExecResult` whose ``value`` is plain data rebuilt by the parent.

    ``background=True`` returns at once and starts the workers on a thread of their own
    (a run prepares its client and store meanwhile; the first ``run``/``arun`` waits for
    :meth:`ready`).  That thread stays alive until :meth:`close`: bubblewrap's
    ``--die-with-parent`` ends a worker when the *thread* that started it exits.
    """

    def __init__(self, config: SandboxConfig | None = None, *, background: bool = False) -> None:
        self.config = config or SandboxConfig()
        self._closed = False
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._start_error: BaseException | None = None
        self.isolation: Isolation | None = None
        _remove_stale_roots()
        self._root = Path(tempfile.mkdtemp(prefix=f"{_ROOT_PREFIX}{os.getpid()}-"))
        os.chmod(self._root, 0o711)  # the rlimits fallback's slot uid must traverse it
        self._idle: queue.SimpleQueue[WorkerHandle] = queue.SimpleQueue()
        self._all: dict[int, WorkerHandle] = {}
        self._executor = ThreadPoolExecutor(self.config.n_workers, thread_name_prefix="sandbox")
        self._uids = (
            UidLease(self.config.uid_base, self.config.n_workers) if os.geteuid() == 0 else None
        )
        self._cgroup: PoolCgroup | None
        self._cgroup, self.cgroup_problem = open_pool_cgroup()
        self._guards: tuple[str, ...] = ()
        self._guarding_parent = False
        if background:
            threading.Thread(target=self._keep, name="sandbox-start", daemon=True).start()
            return
        try:
            self.isolation = self._start()
        except BaseException:
            self._ready.set()
            self.close()
            raise
        self._ready.set()

    def _keep(self) -> None:
        """Start the workers, then wait for :meth:`close` (see the class docstring)."""
        try:
            self.isolation = self._start()
        except BaseException as exc:  # handed to the first caller of ready()
            self._start_error = exc
        self._ready.set()
        if self._start_error is not None:
            self.close()
            return
        self._stop.wait()

    def ready(self) -> None:
        """Wait until the workers are up; raise the error that stopped them from starting."""
        self._ready.wait()
        if self._start_error is not None:
            raise self._start_error

    @property
    def protections(self) -> tuple[str, ...]:
        """What protects this pool's programs, as short tags (docs/running.md, "Threat
        model"): the level (``bwrap``/``rlimits``), then ``uid-drop`` or ``caller-uid``,
        ``user-namespace``, ``seccomp``, ``landlock-abiN``, ``net-namespace`` or
        ``net-seccomp``, ``detached``, ``parent-non-dumpable``, and the memory cap
        (``memory-cgroup-v1``/``-v2`` or ``memory-watcher``)."""
        self.ready()
        level = self.isolation.value if self.isolation is not None else "none"
        memory = self._cgroup.label if self._cgroup is not None else "memory-watcher"
        parent = ("parent-non-dumpable",) if self._guarding_parent else ()
        return (level, *self._guards, *parent, memory)

    @property
    def uid_range(self) -> range | None:
        """The uids this pool's programs run as (None when not root: no uid drop)."""
        if self._uids is None:
            return None
        return range(self._uids.first, self._uids.first + self.config.n_workers)

    # ------------------------------------------------------------------ start-up
    def _start(self) -> Isolation:
        mode = IsolationMode(self.config.isolation)
        if mode is IsolationMode.RLIMITS:
            isolation = self._start_all(Isolation.RLIMITS)
            _warn_fallback("isolation='rlimits' was requested", self._guards)
            return isolation
        problem = None
        if bwrap_path() is None:
            problem = "the 'bwrap' executable is not on PATH (apt-get install bubblewrap)"
        if problem is None:
            try:
                return self._start_all(Isolation.BWRAP)
            except SandboxError as exc:
                if mode is IsolationMode.BWRAP:
                    raise
                problem = str(exc)
                if os.geteuid() != 0:
                    problem = "unprivileged bubblewrap (a user namespace) did not start: " + problem
        if mode is IsolationMode.BWRAP:
            raise SandboxError(
                f"isolation='bwrap' was requested but {problem}; use isolation='auto' to allow the rlimits fallback"
            )
        for handle in self._all.values():
            handle.kill()
        self._all.clear()
        self._idle = queue.SimpleQueue()
        isolation = self._start_all(Isolation.RLIMITS)
        _warn_fallback(f"bubblewrap unavailable: {problem}", self._guards)
        return isolation

    def _spawn(self, slot: int, isolation: Isolation) -> WorkerHandle:
        slot_dir = self._root / f"slot{slot}"
        shutil.rmtree(slot_dir, ignore_errors=True)
        slot_dir.mkdir(mode=0o711)
        uid = self._uids.uid(slot) if self._uids is not None else None
        if isolation is Isolation.RLIMITS and os.geteuid() != 0 and not self._guarding_parent:
            guard_parent()  # before any program of our uid can look at us
            self._guarding_parent = True
        try:
            cgroup = self._cgroup.slot(slot) if self._cgroup is not None else None
        except OSError as exc:
            raise SandboxError(f"could not create the memory cgroup of sandbox slot {slot}"
                               f" under {self._cgroup.path}: {exc}") from exc
        spec = make_launch(self.config, isolation, slot_dir, uid,
                           cgroup_procs=cgroup.procs_file if cgroup is not None else None,
                           watch_memory=cgroup is None)
        self._guards = spec.guards
        try:
            handle = WorkerHandle(spec, slot=slot, uid=uid, log_path=self._root / f"slot{slot}.log",
                                  cgroup=cgroup, memory_mb=self.config.memory_mb)
        except SandboxError:
            if cgroup is not None:
                cgroup.remove()
            raise
        self._all[slot] = handle
        return handle

    def _start_all(self, isolation: Isolation) -> Isolation:
        handles = [self._spawn(slot, isolation) for slot in range(self.config.n_workers)]
        for handle in handles:  # started in parallel above; wait for each to import numpy/scipy
            info = handle.wait_ready(self.config.startup_timeout_s)
            if info.get("preload_errors"):
                logger.warning("sandbox worker could not pre-import: %s", info["preload_errors"])
        for handle in handles:
            self._idle.put(handle)
        return isolation

    # ------------------------------------------------------------------ evaluation
    def run(self, code: str, entry: str, timeout_s: float, *,
            seed: int | None = None) -> ExecResult:
        """Evaluate ``code`` and call ``entry()``; blocking and thread-safe.

        ``seed``: ``random`` and ``numpy.random`` start from it (None: from the operating
        system, as in a fresh process; ``_prepare.py``)."""
        if not isinstance(code, str) or not isinstance(entry, str) or not entry.isidentifier():
            raise ConfigError(
                f"SandboxPool.run needs code: str and an identifier entry, got entry={entry!r}"
            )
        if not (isinstance(timeout_s, int | float) and 0 < timeout_s <= MAX_TIMEOUT_S):
            raise ConfigError(
                f"SandboxPool.run timeout_s={timeout_s!r} must be a number > 0 and at most"
                f" {MAX_TIMEOUT_S:g} s"
            )
        handle = self._acquire("run")
        try:
            return self._evaluate(handle, code, entry, float(timeout_s), seed)
        finally:
            self._release(handle)

    @contextmanager
    def session(self, code: str, *, timeout_s: float, call_timeout_s: float | None = None,
                seed: int | None = None) -> Iterator[ProgramSession]:
        """Import ``code`` once in a worker and let trusted code call its functions.

        ``timeout_s`` bounds the import and every call together; ``call_timeout_s`` is a
        call's default limit (see :mod:`basevolve.sandbox.session`).  The worker is held
        for the whole ``with`` block and released (or replaced, if the program
        misbehaved) when it ends.
        """
        handle = self._acquire("session")
        try:
            program = ProgramSession(handle, self.config, code, timeout_s=timeout_s,
                                     call_timeout_s=call_timeout_s, seed=seed)
            try:
                program.open()
                yield program
            finally:
                program.close()
        finally:
            self._release(handle)

    def _acquire(self, what: str) -> WorkerHandle:
        """An idle, started worker for this thread (blocks until one is free)."""
        self.ready()
        if self._closed:
            raise SandboxError(f"SandboxPool.{what} called on a closed pool; create a new SandboxPool")
        handle = self._idle.get()
        try:
            for attempt in range(2):  # a replacement worker that dies while starting gets one retry
                if handle.dead:
                    handle = self._respawn(handle)
                try:
                    handle.wait_ready(self.config.startup_timeout_s)
                    break
                except SandboxError:
                    if attempt:
                        raise
        except BaseException:
            self._release(handle)
            raise
        return handle

    async def arun(self, code: str, entry: str, timeout_s: float, *,
                   seed: int | None = None) -> ExecResult:
        """Asyncio version of :meth:`run`; up to ``workers`` evaluations overlap."""
        if self._closed:
            raise SandboxError("SandboxPool.arun called on a closed pool; create a new SandboxPool")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(self.run, code, entry, timeout_s,
                                                                  seed=seed))

    def _evaluate(
        self, handle: WorkerHandle, code: str, entry: str, timeout_s: float,
        seed: int | None = None,
    ) -> ExecResult:
        request = {
            "env": request_env(self.config, handle.isolation),
            "seed": seed,
            "code": code,
            "entry": entry,
            "timeout_s": timeout_s,
            "limits": self.config.rlimits(timeout_s),
            "output_limit": self.config.output_limit_bytes,
            "max_result_bytes": self.config.max_result_bytes,
        }
        try:
            header, result = handle.evaluate(request, timeout_s + _BACKSTOP_GRACE_S)
        except WorkerGone as exc:
            logger.warning("sandbox worker of slot %d lost: %s", handle.slot, exc)
            return ExecResult(
                ExecStatus.CRASHED,
                error=f"the sandbox worker died or hung during the evaluation ({exc})",
                isolation=handle.isolation,
                seconds=timeout_s,
            )
        if (
            header.get("leftovers")
            or header.get("timed_out")
            or header.get("signal")
            or header.get("result_overflow")
            or header.get("memory_exceeded")
        ):
            handle.kill()  # something escaped or misbehaved: never reuse this worker
        return interpret(header, result, timeout_s=timeout_s, isolation=handle.isolation)

    def _respawn(self, old: WorkerHandle) -> WorkerHandle:
        old.kill()
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox pool was closed during an evaluation")
            return self._spawn(old.slot, old.isolation)

    def _release(self, handle: WorkerHandle) -> None:
        if handle.evals >= self.config.max_evals_per_worker:
            handle.kill()
        if handle.dead and not self._closed:
            try:
                handle = self._respawn(handle)  # starts now, readiness awaited on next use
            except SandboxError:
                pass
        self._idle.put(handle)

    # ------------------------------------------------------------------ shutdown
    @property
    def workers(self) -> int:
        return self.config.n_workers

    def close(self) -> None:
        # a pool still starting in the background: let the start finish (bounded by the
        # startup timeout), then stop every worker it made
        self._ready.wait(self.config.startup_timeout_s * 2)
        self._stop.set()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            handles = list(self._all.values())
        self._executor.shutdown(wait=False, cancel_futures=True)
        for handle in handles:
            handle.kill()
        if getattr(self, "_uids", None) is not None:
            self._uids.close()  # only after every worker (and its programs) is dead
        if getattr(self, "_cgroup", None) is not None:
            self._cgroup.close()
        if getattr(self, "_guarding_parent", False):
            self._guarding_parent = False
            unguard_parent()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
