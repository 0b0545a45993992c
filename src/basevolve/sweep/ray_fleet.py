"""The Ray driver's actors, kept alive: node runners and endpoint limiters (issue 22, item 14).

Why a fleet and not plain lists: an actor can die mid-sweep (its process killed, OOM,
``ray.kill``).  Before, the driver then crashed: ``ActorDiedError`` from the next poll
of the dead actor, then ``ValueError: force=True is not supported for actor tasks`` in
its clean-up.  Now every call on an actor goes through :meth:`Fleet.ask`, which turns a
dead actor into a replacement:

* a **node runner** that died while its node is alive is started again on that node
  (at most :data:`MAX_RESTARTS` times per node; after that, or when the node itself is
  gone, the node gets no more runs).  The runs it was driving are lost; the driver marks
  them "lost ... rerun to retry" -- a rerun resumes each from the scratch store the dead
  runner left on its node (or starts it afresh elsewhere);
* an **endpoint limiter** that died is replaced by a fresh one for the runs admitted
  from then on.  Runs holding the dead limiter fail at their next slot request and are
  lost the same way.  Calls they had in flight were already sent, so for a moment the
  endpoint may see up to twice its limit.

Each runner has its own *owner* number at the limiters (a replacement gets a new one),
so giving back a dead runner's slots never releases a slot of its successor.  Actors
are named ``basevolve-SWEEP-TAG-runner-I.GEN`` / ``...-limiter-J.GEN`` so that ``ray
list actors`` (and the tests) can tell them apart.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

MAX_RESTARTS = 3  # node runners started again per node before the node is given up


class Fleet:
    """The sweep's actors; ``runners[i]`` is None once node ``i`` gets no more runs."""

    def __init__(self, ray: Any, nodes: list[dict[str, Any]], endpoints: dict[str, int],
                 scratch: str, sandbox_workers: int | None, sweep_name: str) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from basevolve.sweep.ray_actors import actor_classes

        self.ray = ray
        self._affinity = NodeAffinitySchedulingStrategy
        self._limiter_cls, self._runner_cls = actor_classes(ray)
        self.node_ids = [n["NodeID"] for n in nodes]
        self.scratch, self.workers = scratch, sandbox_workers
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", sweep_name)[:40] or "sweep"
        self.prefix = f"basevolve-{safe}-{secrets.token_hex(3)}"
        self.restarts = [0] * len(nodes)
        self.owners: list[int] = []
        self._next_owner = 0
        self.runners: list[Any | None] = []
        for i in range(len(nodes)):
            self.owners.append(self._owner())
            self.runners.append(self._start_runner(i))
        self.limits = dict(endpoints)
        self._gen = dict.fromkeys(endpoints, 0)
        self.limiters = {ep: self._start_limiter(ep) for ep in endpoints}
        self.notes: list[str] = []  # what died and what replaced it, for the summary

    # ----------------------------------------------------------------- starting
    def _owner(self) -> int:
        self._next_owner += 1
        return self._next_owner

    def _start_runner(self, i: int) -> Any:
        return self._runner_cls.options(
            num_cpus=1, max_concurrency=100_000,
            name=f"{self.prefix}-runner-{i}.{self.restarts[i]}",
            scheduling_strategy=self._affinity(self.node_ids[i], soft=False),
        ).remote(self.scratch, self.workers)

    def _start_limiter(self, ep: str) -> Any:
        index = sorted(self.limits).index(ep)
        return self._limiter_cls.options(
            num_cpus=0, max_concurrency=100_000,
            name=f"{self.prefix}-limiter-{index}.{self._gen[ep]}",
        ).remote(self.limits[ep])

    # ----------------------------------------------------------------- deaths
    def dead(self, exc: BaseException) -> bool:
        """Whether ``exc`` (or the error it carries from a task) says an actor died."""
        died = self.ray.exceptions.RayActorError
        return isinstance(exc, died) or isinstance(getattr(exc, "cause", None), died)

    def runner_died(self, i: int, handle: Any) -> None:
        """Runner ``i`` (``handle``) died: give back its slots, then start it again if
        its node is alive (once per death: a second report of the same handle is a no-op)."""
        if self.runners[i] is not handle:
            return
        for lim in self.limiters.values():
            lim.release_owner.remote(self.owners[i])  # a dead limiter: the ref just fails
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        if self.node_ids[i] in alive and self.restarts[i] < MAX_RESTARTS:
            self.restarts[i] += 1
            self.owners[i] = self._owner()
            self.runners[i] = self._start_runner(i)
            self.notes.append(f"node runner {i} died; started again ({self.restarts[i]})")
        else:
            self.runners[i] = None
            self.notes.append(f"node runner {i} died; its node gets no more runs")

    def limiter_died(self, ep: str, handle: Any) -> None:
        if self.limiters.get(ep) is not handle:
            return
        self._gen[ep] += 1
        self.limiters[ep] = self._start_limiter(ep)
        self.notes.append(f"the limiter of {ep} died; a new one holds its limit")

    # ----------------------------------------------------------------- polling
    def snapshots(self) -> list[dict[str, Any]]:
        """Every live runner's run snapshots; a dead runner is replaced, not fatal."""
        out: list[dict[str, Any]] = []
        asked = [(i, r, r.snapshots.remote()) for i, r in enumerate(self.runners)
                 if r is not None]
        for i, runner, ref in asked:
            try:
                out += self.ray.get(ref)
            except self.ray.exceptions.RayActorError:
                self.runner_died(i, runner)
        return out

    def stats(self) -> dict[str, dict[str, int] | None]:
        """Each endpoint limiter's numbers; None for one that died (and was replaced)."""
        asked = [(ep, lim, lim.stats.remote()) for ep, lim in self.limiters.items()]
        out: dict[str, dict[str, int] | None] = {}
        for ep, lim, ref in asked:
            try:
                out[ep] = self.ray.get(ref)
            except self.ray.exceptions.RayActorError:
                self.limiter_died(ep, lim)
                out[ep] = None
        return out

    def live(self) -> list[int]:
        return [i for i, r in enumerate(self.runners) if r is not None]

    def cancel(self, refs: Any) -> None:
        """Stop runs still going (driver interrupted): actor tasks cancel without
        ``force`` (Ray refuses it for them), and a dead actor's task needs none."""
        for ref in refs:
            try:
                self.ray.cancel(ref)
            except Exception:  # best effort while stopping: it may be gone already
                pass


__all__ = ["MAX_RESTARTS", "Fleet"]
