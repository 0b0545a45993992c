"""Ray actors of the sweep executor (see :mod:`basevolve.sweep.ray_executor`).

Kept apart so importing the executor does not import Ray; :func:`actor_classes` wraps
the plain classes below with ``ray.remote`` on first use.  Both are *async* actors: one
event loop per actor process, like the local executor's loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.run_checks import checked_run
from basevolve.sweep.limits import LimitedClient, PriorityLimiter

_CLASSES: dict[int, tuple[Any, Any]] = {}


class Limiter:
    """One endpoint's in-flight limit for the whole cluster.

    ``owner`` is the node runner holding a slot, so the driver can give back the slots
    of a node that died mid-call (``release_owner``) instead of leaking them.  A dead
    runner's requests still queued here are not dropped by Ray: one granted after
    ``release_owner`` would hold its slot for ever (with ``limit = 1`` the sweep then
    hung), so a slot granted to a released owner is given straight back.
    """

    def __init__(self, limit: int) -> None:
        self.lim = PriorityLimiter(limit)
        self.held: Counter[int] = Counter()
        self.gone: set[int] = set()

    async def acquire(self, priority: int, owner: int) -> None:
        await self.lim.acquire(priority)
        if owner in self.gone:  # its runner died while this request waited
            await self.lim.release()
            return
        self.held[owner] += 1

    async def release(self, owner: int) -> None:
        if self.held[owner] > 0:
            self.held[owner] -= 1
            await self.lim.release()

    async def release_owner(self, owner: int) -> None:
        self.gone.add(owner)
        for _ in range(self.held.pop(owner, 0)):
            await self.lim.release()

    async def stats(self) -> dict[str, int]:
        return {"limit": self.lim.limit, "peak": self.lim.peak, "in_use": self.lim.in_use,
                "waiting": self.lim.waiting}


class RayLimiter:
    """The :class:`~basevolve.sweep.limits.Limiter` interface over a Limiter actor."""

    def __init__(self, actor: Any, owner: int) -> None:
        self.actor, self.owner = actor, owner

    async def acquire(self, priority: int) -> None:
        await self.actor.acquire.remote(priority, self.owner)

    async def release(self) -> None:
        await self.actor.release.remote(self.owner)


class NodeRunner:
    """Runs sweep runs on one node: its sandbox pool, its clients, its scratch stores."""

    def __init__(self, scratch: str, sandbox_workers: int | None) -> None:
        from basevolve.sweep.local import SharedClients, TaskCache

        self.scratch = Path(scratch)
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.workers = sandbox_workers
        self.clients, self.tasks = SharedClients(), TaskCache()
        self.pool: Any = None
        self.pool_lock = asyncio.Lock()
        self.snaps: dict[str, dict[str, Any]] = {}

    async def held(self) -> list[str]:
        """Run ids with a scratch store on this node (resumable here)."""
        return sorted(p.stem for p in self.scratch.glob("*.sqlite"))

    async def _pool(self) -> Any:
        async with self.pool_lock:
            if self.pool is None:
                from basevolve.sandbox import SandboxConfig, SandboxPool

                self.pool = await asyncio.to_thread(
                    SandboxPool, SandboxConfig(workers=self.workers))
        return self.pool

    async def run(self, cfg_dict: dict[str, Any], rank: int, limiter: Any, owner: int,
                  labels: dict[str, Any]) -> dict[str, Any]:
        """Start or resume one run in its scratch store; its rows when it is complete."""
        from basevolve.engine.runner import resume_run_async, start_run_async
        from basevolve.store import RunStore
        from basevolve.store.transfer import export_run

        cfg = checked_run(RunConfig.from_dict(cfg_dict))
        pool = await self._pool()
        client = LimitedClient(self.clients.get(cfg), RayLimiter(limiter, owner), rank)
        task = self.tasks.get(cfg.task, cfg.task_params)
        started = time.monotonic()
        with RunStore(self.scratch / f"{cfg.run_id}.sqlite") as store:
            row = store.get_run(cfg.run_id)
            kwargs = {"task": task, "client": client, "pool": pool, "progress": self._snap}
            if row is None:
                await start_run_async(cfg, store, labels=labels, **kwargs)
            elif row["status"] != "finished":
                await resume_run_async(cfg.run_id, store, **kwargs)
            rows: dict[str, Any] = export_run(store, cfg.run_id)
        rows["wall_s"] = round(time.monotonic() - started, 3)
        self.snaps.pop(cfg.run_id, None)
        return rows

    def _snap(self, snap: dict[str, Any]) -> None:
        self.snaps[snap["run_id"]] = snap

    async def snapshots(self) -> list[dict[str, Any]]:
        return list(self.snaps.values())

    async def forget(self, run_id: str) -> None:
        """The driver has the run: drop its scratch store."""
        for suffix in ("", "-wal", "-shm"):
            (self.scratch / f"{run_id}.sqlite{suffix}").unlink(missing_ok=True)


def actor_classes(ray: Any) -> tuple[Any, Any]:
    """``(LimiterActor, NodeRunnerActor)``: the classes above as Ray actors."""
    key = id(ray)
    if key not in _CLASSES:
        _CLASSES[key] = (ray.remote(Limiter), ray.remote(NodeRunner))
    return _CLASSES[key]


__all__ = ["Limiter", "NodeRunner", "RayLimiter", "actor_classes"]
