"""The Ray executor: a sweep's runs spread over a Ray cluster (issue 11, part 3).

``pip install 'basevolve[ray]'``, then ``basevolve sweep CONFIG --store FILE --executor
ray --address auto|HOST:PORT``.  Layout:

* one :class:`NodeRunner` actor per node (pinned with ``NodeAffinitySchedulingStrategy``)
  runs many runs on its own asyncio loop with **its node's sandbox pool** and one client
  per endpoint -- the local executor's machinery, per node;
* one :class:`LimiterActor` per endpoint holds that endpoint's in-flight limit for the
  **whole cluster**: every call on every node acquires a slot from it (with its run's
  rank), so 16 means 16 however many nodes there are;
* **results reach the single store through the driver.**  A node writes each run to a
  node-local scratch store (the engine needs a local SQLite file for its write-ahead
  durability, and SQLite must not be shared over a network file system); when the run
  is complete the node returns its rows and the driver imports them into the sweep's
  store in one transaction (:func:`basevolve.store.transfer.import_run`).  Why not
  per-node stores merged at the end: the sweep store then shows every finished run as
  soon as it finishes (``--status``, the dashboard), and a driver killed half-way has
  lost nothing that finished.  The driver is the store's only writer.

Authentication (issue 22, item 15): before connecting to ``HOST:PORT`` the driver asks
whether the cluster wants a token and whether it would take this driver's
(:mod:`basevolve.sweep.ray_auth`), so a refused driver is one line, not Ray's retries;
a cluster that runs code for anyone gets a warning on stderr.

Killing the driver and rerunning resumes: finished runs are in the store and skipped;
an unfinished run resumes from its scratch store when it is scheduled on the node that
holds it (the driver asks each node which runs it holds) and otherwise starts afresh on
another node -- either way the stored run has exactly C calls.  Runs left unfinished by
the *local* executor live in the sweep store itself; finish those with the local
executor first (the driver refuses them with that advice rather than duplicating them).
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError
from basevolve.sweep.config import SweepConfig
from basevolve.sweep.plan import PlannedRun, may_admit, width
from basevolve.sweep.progress import SweepProgress

POLL_S = 0.5  # how often the driver collects finished runs and node snapshots


class RaySession:
    """A connection to Ray; ``close`` shuts it down only if this session started it."""

    def __init__(self, ray: Any, owned: bool) -> None:
        self.ray, self.owned = ray, owned

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'basevolve[ray]'") from None
    return ray


def connect(address: str | None) -> RaySession:
    """Reach the cluster (or reuse a Ray initialised in this process) -- fast, clearly."""
    ray = _import_ray()
    if ray.is_initialized():
        return RaySession(ray, owned=False)
    address = address or "auto"
    if address != "auto":
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"--address {address!r} must be auto or HOST:PORT "
                              "(the head node's GCS port, 6379 by default)")
        try:
            socket.create_connection((host, int(port)), timeout=5.0).close()
        except OSError as exc:
            raise ConfigError(
                f"cannot reach the Ray cluster at {address!r} ({exc.strerror or exc}); start "
                "it with `ray start --head` on the head node, or fix --address") from None
    protected = None if address == "auto" else _check_token(address)
    refused = getattr(ray.exceptions, "AuthenticationError", ConnectionError)  # Ray >= 2.52
    try:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError, refused) as exc:
        raise ConfigError(f"cannot connect to the Ray cluster at {address!r}: "
                          f"{str(exc).splitlines()[0] if str(exc) else exc}; start it with "
                          "`ray start --head`, or fix --address (an authenticated cluster, "
                          "as docs/sweeps.md starts it, wants RAY_AUTH_MODE=token here "
                          "too)") from None
    _warn_if_open(ray, address, protected)
    return RaySession(ray, owned=True)


def _check_token(address: str) -> bool | None:
    """Whether the cluster at ``address`` wants a token (module ray_auth); refuse now,
    in one line, a driver whose token it would refuse."""
    import os

    from basevolve.sweep.ray_auth import requires_token, token_refused

    protected = requires_token(address)
    if protected and token_refused(address):
        mode = os.environ.get("RAY_AUTH_MODE", "")
        fix = ("its token does not match the cluster's: use the token file of the head "
               "node (~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)"
               if mode.lower() == "token" else
               "run with RAY_AUTH_MODE=token and the cluster's token (~/.ray/auth_token, "
               "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)")
        raise ConfigError(f"the Ray cluster at {address!r} requires token authentication "
                          f"and would refuse this driver: {fix}; see docs/sweeps.md")
    return protected


def _warn_if_open(ray: Any, address: str, protected: bool | None) -> None:
    """Say loudly when the cluster just reached runs code for anyone (module ray_auth)."""
    import sys

    from basevolve.sweep.ray_auth import requires_token, warning

    gcs = ray.get_runtime_context().gcs_address or address
    if protected is None:  # --address auto, or the first check failed: check the GCS found
        protected = requires_token(gcs)
    line = warning(address if address != "auto" else gcs, protected)
    if line is not None:
        print(line, file=sys.stderr, flush=True)


def default_scratch(store_path: str | Path) -> str:
    """Node-local scratch folder, one per sweep store (same path on every node)."""
    from platformdirs import user_cache_dir

    key = hashlib.sha256(str(Path(store_path).resolve()).encode()).hexdigest()[:16]
    return str(Path(user_cache_dir("basevolve")) / "sweep-scratch" / key)


def run_ray(sweep: SweepConfig, planned: list[PlannedRun], store_path: str | Path,
            progress: SweepProgress, *, session: RaySession,
            scratch_dir: str | Path | None = None) -> tuple[dict[str, dict[str, Any]],
                                                           dict[str, Any]]:
    """Drive every planned run on the cluster; import each into the store as it ends.

    An actor that dies mid-sweep (:mod:`basevolve.sweep.ray_fleet`) loses only the runs
    it was driving: they end "lost ... rerun to retry" and the others finish.
    """
    from basevolve.engine.summary import build_summary
    from basevolve.store import RunStore
    from basevolve.store.transfer import import_run
    from basevolve.sweep.locks import RunLocks
    from basevolve.sweep.ray_fleet import Fleet

    ray = session.ray
    stale = [p.run.run_id for p in planned if p.action == "resume"]
    if stale:
        raise ConfigError(
            f"{len(stale)} run(s) of this sweep were left unfinished in {str(store_path)!r} by "
            f"the local executor (e.g. {stale[0]}); finish them with `basevolve sweep "
            f"{sweep.source} --store {store_path}`, then rerun with --executor ray")
    scratch = str(scratch_dir or default_scratch(store_path))
    nodes = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1]
    if not nodes:
        raise ConfigError("the Ray cluster has no alive node with a CPU to run sweeps on")
    fleet = Fleet(ray, nodes, {ep: sweep.limit_of(ep) for ep in sweep.endpoints}, scratch,
                  sweep.sandbox_workers, sweep.name)
    home = _homes(ray, fleet)
    done = {p.run.run_id for p in planned if p.action == "done"}
    for rid in set(home) & done:  # imported, but the driver died before it said so
        runner = fleet.runners[home[rid]]
        if runner is not None:
            runner.forget.remote(rid)

    outcomes: dict[str, dict[str, Any]] = {}
    queue = [p for p in planned if p.action != "done"]
    busy: dict[str, float] = {}
    load = [0.0] * len(nodes)
    active: dict[Any, tuple[PlannedRun, int, Any]] = {}  # ref -> run, node, runner
    with RunStore(store_path) as store, RunLocks(store_path) as locks:
        idle: set[str] = set()

        def admit() -> None:
            live = fleet.live()
            for p in list(queue):
                if not live:  # every node given up: nothing can run this session
                    queue.remove(p)
                    _lost(p.run.run_id, "no node left to run it", outcomes, progress)
                    continue
                ep = p.run.endpoint
                if busy.get(ep) and not may_admit(busy[ep], sweep.limit_of(ep), False):
                    if not may_admit(busy[ep], sweep.limit_of(ep), ep in idle):
                        continue
                    idle.discard(ep)
                queue.remove(p)
                if not locks.try_lock(p.run.run_id):
                    outcomes[p.run.run_id] = {"status": "busy",
                                              "error": "driven by another process"}
                    progress.skipped(p.run.run_id, "another process drives it")
                    continue
                i = home.get(p.run.run_id)
                if i is None or i not in live:
                    i = min(live, key=load.__getitem__)
                w = width(p.run.config)
                busy[ep] = busy.get(ep, 0.0) + w
                load[i] += w
                runner = fleet.runners[i]
                ref = runner.run.remote(  # type: ignore[union-attr]
                    p.run.config.to_dict(), p.rank, fleet.limiters[ep], fleet.owners[i],
                    sweep.run_labels(p.run.config.task))
                active[ref] = (p, i, runner)
                progress.started_run(p.run.run_id)

        stats: dict[str, Any] = {}
        try:
            admit()
            while active or queue:
                ready, _ = ray.wait(list(active), num_returns=1, timeout=POLL_S) \
                    if active else ([], [])
                for ref in ready:
                    p, i, runner = active.pop(ref)
                    busy[p.run.endpoint] -= width(p.run.config)
                    load[i] -= width(p.run.config)
                    _collect(ray, ref, p, i, runner, fleet, store, outcomes, progress,
                             import_run, build_summary)
                    locks.unlock(p.run.run_id)
                for snap in fleet.snapshots():
                    progress.update(snap)
                now = fleet.stats()
                stats.update({ep: st for ep, st in now.items() if st is not None})
                idle = {ep for ep, st in now.items()
                        if st is not None and st["in_use"] < st["limit"] and not st["waiting"]}
                admit()
            stats.update({ep: st for ep, st in fleet.stats().items() if st is not None})
        finally:
            fleet.cancel(list(active))
    return outcomes, {ep: stats.get(ep, {}) for ep in fleet.limiters}


def _homes(ray: Any, fleet: Any) -> dict[str, int]:
    """Run id -> the node whose scratch store holds it (resumable there)."""
    home: dict[str, int] = {}
    for i in fleet.live():
        runner = fleet.runners[i]
        try:
            ids = ray.get(runner.held.remote())
        except ray.exceptions.RayActorError:
            fleet.runner_died(i, runner)
            continue
        home.update(dict.fromkeys(ids, i))
    return home


def _lost(rid: str, why: str, outcomes: dict[str, dict[str, Any]],
          progress: SweepProgress) -> None:
    outcomes[rid] = {"status": "lost", "error": f"lost: {why}; rerun to retry"}
    progress.failed(rid, outcomes[rid]["error"])


def _collect(ray: Any, ref: Any, p: PlannedRun, node: int, runner: Any, fleet: Any,
             store: Any, outcomes: dict[str, dict[str, Any]], progress: SweepProgress,
             import_run: Any, build_summary: Any) -> None:
    rid = p.run.run_id
    try:
        rows = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:  # the runner is alive; the run raised
        if fleet.dead(exc):  # an actor it used died under it (the endpoint's limiter)
            for ep, lim in list(fleet.limiters.items()):
                try:
                    ray.get(lim.stats.remote())
                except ray.exceptions.RayActorError:
                    fleet.limiter_died(ep, lim)
            _lost(rid, f"an actor it used died ({_first_line(exc.cause)})", outcomes,
                  progress)
            return
        cause = getattr(exc, "cause", None) or exc
        outcomes[rid] = {"status": "failed", "error": str(cause).splitlines()[-1]}
        progress.failed(rid, outcomes[rid]["error"])
        return
    except ray.exceptions.RayActorError as exc:  # its runner died: the run went with it
        fleet.runner_died(node, runner)
        _lost(rid, f"the node runner died ({_first_line(exc)})", outcomes, progress)
        return
    import_run(store, rows)
    summary = build_summary(store, p.run.config, None)
    summary["wall_s"] = rows.get("wall_s")
    summary.update({"best_program": None, "picture": None, "node": node})
    store.write_summary(rid, summary)
    runner.forget.remote(rid)
    outcomes[rid] = {"status": "finished", "summary": summary}
    progress.finished(rid, summary)


def _first_line(exc: BaseException | None) -> str:
    text = str(exc or "").strip()
    return (text.splitlines() or [type(exc).__name__])[0][:200]


__all__ = ["RaySession", "connect", "default_scratch", "run_ray"]
