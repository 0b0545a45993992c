"""The local executor: every run of a sweep on one asyncio loop (issue 11, part 2).

One process, one loop, one store connection, one sandbox pool, one client and one
:class:`~basevolve.sweep.limits.PriorityLimiter` per endpoint.  Runs are admitted in
rank order (longest critical path first) while their widths add up to less than
``ADMIT_FACTOR`` x the endpoint's limit, so a grid of N <= 4 runs still keeps 16 calls
in flight, and each run's calls ask the limiter with the run's rank.

Crash safety is the engine's: every event is in the store before it is acted on, a run
killed mid-way is resumed by id (``resume_run_async``) to exactly C calls, and each run
is locked (:class:`~basevolve.sweep.locks.RunLocks`) while this process drives it.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.runner import llm_settings, resume_run_async, start_run_async
from basevolve.errors import BasevolveError
from basevolve.store import RunStore
from basevolve.sweep.config import SweepConfig
from basevolve.sweep.limits import LimitedClient, PriorityLimiter
from basevolve.sweep.locks import RunLocks
from basevolve.sweep.plan import IDLE_CHECK_S, PlannedRun, may_admit, width
from basevolve.sweep.progress import SweepProgress


class SharedClients:
    """One LLM client per (model, endpoint, settings), shared by every run using it."""

    def __init__(self) -> None:
        self._clients: dict[tuple[Any, ...], Any] = {}

    def get(self, cfg: RunConfig) -> Any:
        from basevolve.llm import make_client

        settings = llm_settings(cfg)
        key = (cfg.model, cfg.base_url, cfg.params, settings)
        if key not in self._clients:
            self._clients[key] = make_client(cfg.model, cfg.base_url, params=cfg.params,
                                             settings=settings)
        return self._clients[key]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


class TaskCache:
    """Tasks loaded once per name and ``--task-param`` values (a user task file is
    imported once, a QA dataset read once, not per run)."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], Any] = {}

    def get(self, name: str, params: dict[str, Any] | None = None) -> Any:
        import json

        from basevolve.tasks import load_task

        key = (name, json.dumps(params or {}, sort_keys=True))
        if key not in self._tasks:
            self._tasks[key] = load_task(name, params)
        return self._tasks[key]


async def drive_runs(sweep: SweepConfig, planned: list[PlannedRun], store: RunStore,
                     locks: RunLocks, progress: SweepProgress, pool: Any,
                     limiters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Run every planned run that is not done; outcome per run id.

    ``limiters`` maps endpoint keys to :class:`PriorityLimiter` s.  A run that fails (e.g. its endpoint kept failing)
    is recorded and the others go on; rerunning the sweep resumes it.
    """
    clients, tasks = SharedClients(), TaskCache()
    outcomes: dict[str, dict[str, Any]] = {}
    queue = [p for p in planned if p.action != "done"]
    busy: dict[str, float] = defaultdict(float)  # endpoint -> widths of its active runs
    active: dict[asyncio.Task[None], PlannedRun] = {}

    async def one(p: PlannedRun) -> None:
        run = p.run
        client = LimitedClient(clients.get(run.config), limiters[run.endpoint], p.rank)
        task = tasks.get(run.config.task, run.config.task_params)
        progress.started_run(run.run_id)
        try:
            if p.action == "resume":
                summary = await resume_run_async(run.run_id, store, task=task, client=client,
                                                 pool=pool, progress=progress.update)
            else:
                summary = await start_run_async(run.config, store, task=task, client=client,
                                                pool=pool, progress=progress.update,
                                                labels=sweep.run_labels(run.config.task))
        except BasevolveError as exc:
            outcomes[run.run_id] = {"status": "failed", "error": str(exc)}
            progress.failed(run.run_id, str(exc))
            return
        except Exception as exc:  # a bug in one run must not take the grid down with it
            msg = f"{type(exc).__name__}: {exc}"
            outcomes[run.run_id] = {"status": "failed", "error": msg}
            progress.failed(run.run_id, msg)
            return
        outcomes[run.run_id] = {"status": "finished", "summary": summary}
        progress.finished(run.run_id, summary)

    def admit() -> None:
        idle = {ep for ep, lim in limiters.items() if lim.in_use < lim.limit and not lim.waiting}
        for p in list(queue):
            ep = p.run.endpoint
            if busy[ep] and not may_admit(busy[ep], sweep.limit_of(ep), False):
                if not may_admit(busy[ep], sweep.limit_of(ep), ep in idle):
                    continue
                idle.discard(ep)  # one extra run per check: its calls fill the idle slots
            queue.remove(p)
            if not locks.try_lock(p.run.run_id):
                outcomes[p.run.run_id] = {"status": "busy",
                                          "error": "driven by another process"}
                progress.skipped(p.run.run_id, "another process drives it")
                continue
            busy[ep] += width(p.run.config)
            active[asyncio.ensure_future(one(p))] = p

    try:
        admit()
        while active:
            done, _ = await asyncio.wait(active, timeout=IDLE_CHECK_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                p = active.pop(t)
                busy[p.run.endpoint] -= width(p.run.config)
                locks.unlock(p.run.run_id)
                t.result()
            admit()
    finally:
        for t in active:
            t.cancel()
        if active:
            await asyncio.gather(*active, return_exceptions=True)
        await clients.aclose()
    return outcomes


def run_local(sweep: SweepConfig, planned: list[PlannedRun], store_path: str | Path,
              progress: SweepProgress) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Open the store, the sandbox pool and the limiters; drive the runs to completion.

    Returns the outcome per run and, per endpoint, its limit and the peak in flight.
    """
    from basevolve.sandbox import SandboxConfig, SandboxPool

    limiters = {ep: PriorityLimiter(sweep.limit_of(ep)) for ep in sweep.endpoints}
    with RunStore(store_path) as store, RunLocks(store_path) as locks, \
            SandboxPool(SandboxConfig(workers=sweep.sandbox_workers)) as pool:
        outcomes = asyncio.run(drive_runs(sweep, planned, store, locks, progress, pool,
                                          limiters))
    return outcomes, {ep: {"limit": lim.limit, "peak": lim.peak} for ep, lim in limiters.items()}


__all__ = ["SharedClients", "TaskCache", "drive_runs", "run_local"]
