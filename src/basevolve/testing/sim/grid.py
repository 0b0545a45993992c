"""Simulated LLM servers as processes, and many engine runs against them (issue 13).

:func:`simulators` starts ``basevolve simulate-server`` processes, one per (task,
capability), and yields their URLs: the endpoints of a ``basevolve sweep`` over the
simulator (``benchmarks/allocation_quality.py`` writes its grid as a sweep file) or of
the example report.  :func:`run_grid` predates the sweep command and drives
:func:`basevolve.engine.runner.start_run` directly -- the real engine, real sandbox
pool, real SQLite store, real OpenAI client talking HTTP to the simulators; it remains
for ``benchmarks/advise_simulated.py``.  A job is a plain ``RunConfig`` dict plus tags.

Layout of :func:`run_grid`: one simulator *process* per (task, capability) (like a real
inference server, and off this process's GIL); ``workers`` worker processes, each with
one warm sandbox pool and its own store file ``runs-<pid>.sqlite`` in ``out_dir`` (one
writer per SQLite file), each running its share of the jobs one after another.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

_POOL: Any = None


@contextlib.contextmanager
def simulators(specs: Sequence[tuple[str, float]], latency: str = "0") -> Iterator[list[str]]:
    """``basevolve simulate-server`` processes for (task, capability) pairs, started
    together (each imports numpy and the task modules: seconds on a loaded box); yields
    their base URLs in order."""
    procs = [subprocess.Popen(
        [sys.executable, "-m", "basevolve.cli.simulate_cmd", "--task", task,
         "--capability", str(cap), "--latency", latency],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for task, cap in specs]
    try:
        urls = []
        for p in procs:
            assert p.stdout is not None
            url = p.stdout.readline().strip()
            if not url.startswith("http"):
                raise RuntimeError(f"simulate-server did not start (printed {url!r})")
            urls.append(url)
        yield urls
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=20)


@contextlib.contextmanager
def simulator(task: str, capability: float, latency: str = "0") -> Iterator[str]:
    """One ``basevolve simulate-server`` process; yields its base URL."""
    with simulators([(task, capability)], latency) as urls:
        yield urls[0]


def _close_pool() -> None:
    if _POOL is not None:
        _POOL.close()


def _run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One run in a worker process (the worker keeps one warm sandbox pool)."""
    global _POOL
    from basevolve.config import RunConfig
    from basevolve.engine.runner import resume_run, start_run
    from basevolve.sandbox import SandboxConfig, SandboxPool

    if _POOL is None:
        _POOL = SandboxPool(SandboxConfig(workers=1))
        # multiprocessing children skip atexit; a Finalize runs at their exit, so the
        # sandbox workers are closed and waited for (and their CPU is accounted)
        Finalize(None, _close_pool, exitpriority=10)
    cfg = RunConfig(**job["config"])
    store = Path(job["out_dir"]) / f"runs-{os.getpid()}.sqlite"
    t0 = time.perf_counter()
    resumed = ""
    try:
        summary = start_run(cfg, store, pool=_POOL)
    except Exception as exc:  # a crashed run is resumed once, as a user would
        resumed = f"{type(exc).__name__}: {exc}"
        summary = resume_run(cfg.run_id, store, pool=_POOL)
    return {**job["tags"], "run_id": cfg.run_id, "seed": cfg.seed,
            "fitness": float(summary["best_score"]), "wall_s": time.perf_counter() - t0,
            "store": str(store), "resumed_after": resumed}


def run_grid(jobs: Sequence[dict[str, Any]], out_dir: Path, *, workers: int = 3,
             latency: str = "0", progress: bool = True) -> list[dict[str, Any]]:
    """Run every job (``{"config": RunConfig kwargs without base_url, "tags": {...},
    "task", "capability"}``); one simulator per (task, capability) at a time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for j in jobs:
        groups.setdefault((j["config"]["task"], float(j["capability"])), []).append(j)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as ex:
        for (task, cap), group in groups.items():
            with simulator(task, cap, latency) as url:
                futs = [ex.submit(_run_job, {**j, "out_dir": str(out_dir),
                                             "config": {**j["config"], "base_url": url}})
                        for j in group]
                for i, f in enumerate(as_completed(futs), 1):
                    rows.append(f.result())
                    if progress and (i % 10 == 0 or i == len(futs)):
                        print(f"  {task} capability {cap}: {i}/{len(futs)} runs "
                              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return rows
