"""Dashboard latency benchmark (issue 14): run page of a C = 512, K = 10 run, runs list of
10,000 runs, and (issue 22, item 11) the run page of a 20,000-call run.

Targets: the run page served in <= 300 ms; the runs list stays fast with 10,000 runs.

Two stores, both real:

* **run store**: one BaSE run (UCB, K = 10 greedy N = 1 trajectories, C = 512) against
  the LLM test server (valid circle-packing replies, every child sandboxed and scored)
  through ``start_run``, exactly as ``basevolve run`` does;
* **long store**: one BaSE run (UCB, K = 10, C = ``--long-calls``, 20,000 by default)
  built the same way (a few minutes; ``--keep`` reuses it, ``--long-calls 0`` skips it).
  Its run page is timed twice: with the store unchanged between requests (the page is
  then served from the dashboard's per-store-version cache) and with a commit to the
  store before every request (waiting 0.3 s so the dashboard's watcher sees it), i.e.
  recomputed every time as while the run is live;
* **list store**: 10,000 finished runs written through :class:`basevolve.store.RunStore`
  (run row, K trajectories, initial program, summary; no LLM calls, so it builds in
  seconds), 1 in 4 tagged with a ``sweep`` key, 1 in 10 left ``running`` with 8 calls
  so the live-total subqueries are exercised.

The dashboard is the real ``basevolve dashboard`` command (uvicorn) in its own process;
times are HTTP round trips on loopback from this process (``http.client``, one kept-alive
connection), i.e. server time plus a small client cost, so they are upper bounds on the
server time.  "run page" = the HTML shell + ``/api/run`` (everything the page draws
first); call and program details are fetched on click and timed separately.  "first"
is the first request (cold caches; the sweep page is then cached until the store
changes), median/p95 over ``--repeat`` further requests.

"first view" of the long run (``--first-views N``, 5 by default): the run page requested
from N freshly started dashboards, one after another (each starts, prints its URL,
serves the shell + ``/api/run`` once, and stops); the median and the largest wall time,
and the median CPU time the dashboard process spent on those two requests (from
``/proc/PID/stat``, all its threads; 10 ms ticks), which a loaded machine inflates far
less than the wall time.  ``--only long`` times just the long run.

    python benchmarks/dashboard_latency.py [--runs 10000] [--budget 512] [--arms 10]
        [--long-calls 20000] [--repeat 30] [--first-views 5] [--only long] [--keep DIR]

Prints a table and a JSON line.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.store import RunStore
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply


def build_run_store(path: Path, budget: int, arms: int) -> str:
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                        params=8e9, budget=budget, allocator="ucb", arms=arms,
                        run_id=f"base-ucb-C{budget}-K{arms}", max_in_flight=16)
        start_run(cfg, path, out_dir=path.parent / "out")
    return cfg.run_id


def build_list_store(path: Path, n: int, arms: int = 10) -> None:
    rng = np.random.default_rng(0)
    with RunStore(path) as st:
        for i in range(n):
            run = f"run-{i:05d}"
            cfg = {"task": ["circle_packing", "min_max_distance", "heilbronn_triangle"][i % 3],
                   "model": f"model-{i % 4}", "protocol": "greedy",
                   "allocator": "single" if i % 2 else "ucb", "arms": 1 if i % 2 else arms,
                   "budget": 2 ** (3 + i % 7), "depth": 1, "breadth": 1, "seed": i % 10}
            if i % 4 == 0:
                cfg["sweep"] = f"sweep-{i % 12}"
            st.create_run(run, cfg, active_params=8e9)
            st.insert_program(run, code="x = 1", score=float(rng.uniform(0, 0.5)), valid=True,
                              generation=0, is_initial=1)
            if i % 10 == 0:  # a live run: totals come from its rows
                st.set_status(run, "running")
                for k in range(8):
                    cid = st.insert_call(run, call_index=k, seq=st.next_seq(run), trajectory=0,
                                         pull_id=k, generation=k + 1, slot=0, seed=k,
                                         messages=[{"role": "user", "content": "p"}])
                    st.finish_call(cid, status="ok", counted=True, fields={"flops": 1e12},
                                   attempts=[])
                continue
            st.write_summary(run, {"calls_completed": cfg["budget"], "calls_lost": 0,
                                   "best_score": float(rng.uniform(0.5, 1)),
                                   "best_program_id": None, "flops": 1e12 * cfg["budget"],
                                   "prompt_tokens": 0, "cached_tokens": 0,
                                   "completion_tokens": 0})
            st.set_status(run, "finished")


class Server:
    def __init__(self, store: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "basevolve", "dashboard", "--store", str(store), "--port", "0"],
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        port = re.search(r"http://[^:]+:(\d+)/", line)
        if port is None:
            raise SystemExit(f"dashboard did not start: {line!r}")
        self.con = http.client.HTTPConnection("127.0.0.1", int(port.group(1)), timeout=60)

    def cpu_ms(self) -> float:
        """CPU time (user + system, all threads) the dashboard process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return 1000 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def get(self, path: str) -> tuple[float, int]:
        t0 = time.perf_counter()
        self.con.request("GET", path)
        res = self.con.getresponse()
        body = res.read()
        ms = 1000 * (time.perf_counter() - t0)
        if res.status != 200:
            raise SystemExit(f"{path}: HTTP {res.status}: {body[:200]!r}")
        return ms, len(body)

    def close(self) -> None:
        self.con.close()
        self.proc.terminate()
        self.proc.wait(10)


def touch(store: Path, run_id: str) -> None:
    """Commit a write (the run's ``updated_at``, as a live run does), so the dashboard's
    next request sees a new store version.  (A write of an unchanged value commits no
    page, and SQLite's data_version then stays the same.)"""
    con = sqlite3.connect(store)
    with con:
        con.execute("UPDATE runs SET updated_at = ? WHERE run_id = ?", (time.time(), run_id))
    con.close()
    time.sleep(0.3)  # > the watcher's 0.25 s between data_version checks


def measure(srv: Server, paths: list[str], repeat: int,
            before: Callable[[], None] | None = None) -> dict[str, Any]:
    first = sum(srv.get(p)[0] for p in paths)  # cold: imports, connections, caches empty
    samples, size = [], 0
    for _ in range(repeat):
        if before is not None:
            before()
        total = 0.0
        for p in paths:
            ms, n = srv.get(p)
            total += ms
            size = max(size, n)
        samples.append(total)
    return {"first_ms": first, "median_ms": statistics.median(samples),
            "p95_ms": float(np.percentile(samples, 95)), "max_bytes": size}


def first_views(store: Path, paths: list[str], n: int) -> dict[str, Any]:
    """The run page from ``n`` freshly started dashboards (module doc, "first view")."""
    walls, cpus = [], []
    for _ in range(n):
        srv = Server(store)
        try:
            cpu0, t0 = srv.cpu_ms(), time.perf_counter()
            size = sum(srv.get(p)[1] for p in paths)
            walls.append(1000 * (time.perf_counter() - t0))
            cpus.append(srv.cpu_ms() - cpu0)
        finally:
            srv.close()
    return {"first_view_ms": statistics.median(walls), "first_view_max_ms": max(walls),
            "first_view_cpu_ms": statistics.median(cpus), "views": n, "bytes": size,
            "walls_ms": [round(w, 1) for w in walls]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--budget", type=int, default=512)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--long-calls", type=int, default=20_000,
                    help="C of the long run (0: skip it)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--first-views", type=int, default=5,
                    help="fresh dashboards whose first view of the long run is timed")
    ap.add_argument("--only", choices=["long"], help="time only the long run")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the stores in this folder")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bv-dash-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    run_db, list_db = folder / "run.sqlite", folder / "list.sqlite"
    run_id = f"base-ucb-C{args.budget}-K{args.arms}"
    if not run_db.exists():
        t0 = time.perf_counter()
        build_run_store(run_db, args.budget, args.arms)
        print(f"built the C={args.budget}, K={args.arms} run in {time.perf_counter() - t0:.1f} s")
    long_db, long_id = folder / f"long-{args.long_calls}.sqlite", f"base-ucb-C{args.long_calls}-K10"
    if args.long_calls and not long_db.exists():
        t0 = time.perf_counter()
        build_run_store(long_db, args.long_calls, 10)
        print(f"built the C={args.long_calls}, K=10 run in {time.perf_counter() - t0:.1f} s")
    if not list_db.exists() and args.only is None:
        t0 = time.perf_counter()
        build_list_store(list_db, args.runs)
        print(f"built {args.runs} runs in {time.perf_counter() - t0:.1f} s")

    rows: list[tuple[str, dict[str, Any], float | None]] = []
    views = None
    if args.long_calls and args.first_views:
        views = first_views(long_db, ["/run", f"/api/run?id={long_id}"], args.first_views)
    if args.only is None:
        srv = Server(run_db)
        try:
            rows.append((f"run page (shell + /api/run), C={args.budget} K={args.arms}",
                         measure(srv, ["/run", f"/api/run?id={run_id}"], args.repeat), 300.0))
            rows.append(("call detail (prompt + reply)",
                         measure(srv, [f"/api/call?run={run_id}&index=300"], args.repeat), None))
            rows.append(("program detail (code + diff)",
                         measure(srv, [f"/api/program?run={run_id}&id=400"], args.repeat), None))
        finally:
            srv.close()
    if args.long_calls:
        srv = Server(long_db)
        try:
            page = ["/run", f"/api/run?id={long_id}"]
            rows.append((f"run page, C={args.long_calls} K=10, store unchanged (cached)",
                         measure(srv, page, args.repeat), 300.0))
            rows.append((f"run page, C={args.long_calls} K=10, store changing (recomputed)",
                         measure(srv, page, args.repeat, lambda: touch(long_db, long_id)),
                         300.0))
            rows.append(("calls table, page 150 of 200 (/api/calls)",
                         measure(srv, [f"/api/calls?run={long_id}&page=150"], args.repeat), None))
            rows.append(("errors table, page 1 (/api/errors)",
                         measure(srv, [f"/api/errors?run={long_id}"], args.repeat), None))
        finally:
            srv.close()
    srv = Server(list_db) if args.only is None else None
    try:
        for label, path in [] if srv is None else [
            ("runs list, page 1 (newest first)", "/api/runs"),
            ("runs list, sorted by best", "/api/runs?sort=best&dir=desc"),
            ("runs list, sorted by calls, page 150", "/api/runs?sort=calls&page=150&size=50"),
            ("runs list, filtered 'model-3', status finished",
             "/api/runs?q=model-3&status=finished"),
            ("runs list, one sweep", "/api/runs?sweep=sweep-4"),
        ]:
            rows.append((f"{label}, {args.runs} runs", measure(srv, ["/", path], args.repeat),
                         300.0))
        if srv is not None:
            rows.append((f"sweep page 'all', {args.runs} runs",
                         measure(srv, ["/api/sweep?id=all"], max(3, args.repeat // 10)), None))
    finally:
        if srv is not None:
            srv.close()

    print(f"\n{'request':<62} {'first ms':>9} {'median ms':>10} {'p95 ms':>8} {'KiB':>7} "
          f"{'target':>8}")
    for label, m, target in rows:
        tgt = "-" if target is None else (f"<= {target:.0f}" + (" ok" if m["p95_ms"] <= target
                                                                   else " MISS"))
        print(f"{label:<62} {m['first_ms']:>9.1f} {m['median_ms']:>10.1f} {m['p95_ms']:>8.1f} "
              f"{m['max_bytes'] / 1024:>7.1f} {tgt:>8}")
    if views is not None:
        print(f"\nfirst view of the C={args.long_calls} run page ({views['views']} fresh "
              f"dashboards): median {views['first_view_ms']:.1f} ms, max "
              f"{views['first_view_max_ms']:.1f} ms, dashboard CPU (median) "
              f"{views['first_view_cpu_ms']:.0f} ms, {views['bytes'] / 1024:.1f} KiB; "
              f"target <= 300 ms: {'met' if views['first_view_ms'] <= 300 else 'MISS'} (median)")
    print(json.dumps({**{label: m for label, m, _ in rows},
                      **({"first view": views} if views is not None else {})}))


if __name__ == "__main__":
    main()
