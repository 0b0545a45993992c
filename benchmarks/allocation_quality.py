"""Allocation-quality benchmark (issue 13): the paper's comparisons through the whole stack.

Greedy at T in {1, ~sqrt(C), C} and BaSE (random, round_robin, ucb, exp3p, thompson;
K = 10 trajectories of greedy N = 1, one call per pull) run through the real engine,
sandbox, scorer and SQLite store against the simulated mutation LLM
(``basevolve simulate-server``, :mod:`basevolve.testing.sim`).  Island protocols are not
on main yet, so they are not in the grid (add them to ``methods`` when they land).

Per (task, capability, C, method) it prints the mean with a 95% bootstrap CI, the IQM
and P(fitness >= tau) for the paper's thresholds (Table 3: CP 0.95/0.99, MMD
0.80/0.90/0.95, HT 0.50/0.70), and the paper's two-step decomposition (Section 5.3):
the *pool effect* single trajectory (greedy T = C) -> BaSE random, and the *allocation
effect* random -> each bandit, each a difference of means with a 95% CI from
independent stratified bootstraps (``basevolve.analysis.stratified_bootstrap``).

    python benchmarks/allocation_quality.py --quick     # C = 128, 10 seeds, capability 1
    python benchmarks/allocation_quality.py             # C in {128, 512}, capabilities 0.5, 1

The simulator is an instrument, not a claim about real LLMs: whatever ordering of
methods comes out is reported as is.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from basevolve.analysis import describe, stratified_bootstrap
from basevolve.testing.sim.grid import run_grid

TASKS = ("circle_packing", "min_max_distance", "heilbronn_triangle")
THRESHOLDS = {"circle_packing": (0.95, 0.99), "min_max_distance": (0.80, 0.90, 0.95),
              "heilbronn_triangle": (0.50, 0.70)}
BANDITS = ("random", "round_robin", "ucb", "exp3p", "thompson")
ARMS = 10


def sqrt_depth(c: int) -> int:
    """The divisor of C nearest to sqrt(C) on a log scale (ties: the smaller)."""
    divs = [d for d in range(1, c + 1) if c % d == 0]
    return min(divs, key=lambda d: (abs(math.log(d) - 0.5 * math.log(c)), d))


def methods(c: int, bandits: tuple[str, ...] = BANDITS) -> list[tuple[str, dict[str, Any]]]:
    out = [(f"greedy T={t}", {"depth": t, "allocator": "single", "arms": 1})
           for t in sorted({1, sqrt_depth(c), c})]
    out += [(f"base {b}", {"depth": c, "allocator": b, "arms": ARMS}) for b in bandits]
    return out


def jobs(tasks: list[str], budgets: list[int], caps: list[float], seeds: int,
         bandits: tuple[str, ...] = BANDITS) -> list[dict]:
    out = []
    for task in tasks:
        for cap in caps:
            for c in budgets:
                for name, over in methods(c, bandits):
                    for s in range(seeds):
                        cfg = {"task": task, "budget": c, "model": f"sim-cap{cap:g}",
                               "params": 8e9, "seed": s, "max_in_flight": 16,
                               "run_id": f"{task}-cap{cap:g}-C{c}-{name.replace(' ', '_')}-s{s}",
                               **over}
                        out.append({"config": cfg, "capability": cap,
                                    "tags": {"task": task, "capability": cap, "budget": c,
                                             "method": name}})
    return out


def _diff_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """mean(b) - mean(a) with a 95% percentile CI (independent bootstraps of each group)."""
    ra = stratified_bootstrap(a, "mean", rng)
    rb = stratified_bootstrap(b, "mean", rng)
    lo, hi = np.percentile(rb - ra, [2.5, 97.5])
    return float(b.mean() - a.mean()), float(lo), float(hi)


def report(df: pd.DataFrame, rng: np.random.Generator,
           bandits: tuple[str, ...] = BANDITS) -> dict[str, Any]:
    out: dict[str, Any] = {"cells": [], "decomposition": []}
    for (task, cap, c), g in df.groupby(["task", "capability", "budget"], sort=True):
        taus = THRESHOLDS[task]
        print(f"\n== {task}  capability {cap:g}  C = {c}  ({g['seed'].nunique()} seeds)")
        head = f"{'method':<18} {'mean':>7} {'95% CI':>17} {'IQM':>7}"
        print(head + "".join(f" {'P>=' + format(t, 'g'):>8}" for t in taus))
        by = {m: gg["fitness"].to_numpy(float) for m, gg in g.groupby("method")}
        for name, _ in methods(int(c), bandits):
            if name not in by:
                continue
            x = by[name]
            d = describe(x, rng)
            p = [float((x >= t).mean()) for t in taus]
            print(f"{name:<18} {d['mean']:>7.4f} [{d['ci_low']:.4f}, {d['ci_high']:.4f}] "
                  f"{d['iqm']:>7.4f}" + "".join(f" {v:>8.2f}" for v in p))
            out["cells"].append({"task": task, "capability": cap, "budget": int(c),
                                 "method": name, **d,
                                 "p_reach": {format(t, "g"): v for t, v in zip(taus, p, strict=True)}})
        single, rand = by.get(f"greedy T={c}"), by.get("base random")
        if single is None or rand is None:
            continue
        eff, lo, hi = _diff_ci(single, rand, rng)
        print(f"pool effect  greedy T={c} -> random: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}]")
        out["decomposition"].append({"task": task, "capability": cap, "budget": int(c),
                                     "step": "pool", "to": "random", "effect": eff,
                                     "ci_low": lo, "ci_high": hi})
        for b in bandits:
            if b == "random" or f"base {b}" not in by:
                continue
            eff, lo, hi = _diff_ci(rand, by[f"base {b}"], rng)
            print(f"allocation   random -> {b:<11}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}]")
            out["decomposition"].append({"task": task, "capability": cap, "budget": int(c),
                                         "step": "allocation", "to": b, "effect": eff,
                                         "ci_low": lo, "ci_high": hi})
    return out


def simulator_cpu_ms(stores: list[Path], n: int = 150) -> dict[str, float]:
    """CPU ms per reply of the simulated LLM alone, on prompts the runs really sent
    (read back from the stores), per task: what the simulator costs inside a call."""
    import sqlite3

    from basevolve.testing.sim import SimulatedLLM

    out = {}
    for task in TASKS:
        prompts = []
        for s in stores:
            con = sqlite3.connect(s)
            try:
                prompts += con.execute(
                    "SELECT c.messages_json, c.seed FROM calls c JOIN runs r USING (run_id) "
                    "WHERE r.task = ? ORDER BY c.call_id LIMIT ?", (task, n)).fetchall()
            finally:
                con.close()
        if not prompts:
            continue
        sim = SimulatedLLM(task)
        sim({"messages": json.loads(prompts[0][0]), "seed": 0}, 0)  # warm the caches
        t0 = time.process_time()
        for msgs, seed in prompts:
            sim({"messages": json.loads(msgs), "seed": seed}, 0)
        out[task] = 1000 * (time.process_time() - t0) / len(prompts)
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and every waited-for descendant (worker processes,
    simulator servers and, through them, sandbox workers and their forks)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="C = 128, 10 seeds, capability 1")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default=None, help="comma list (default 128,512; quick 128)")
    ap.add_argument("--capabilities", default=None, help="comma list (default 0.5,1; quick 1)")
    ap.add_argument("--workers", type=int, default=3, help="runs at a time (processes)")
    ap.add_argument("--out", default=None, help="keep stores and results here")
    ap.add_argument("--json", default=None, help="write the results as JSON to this file")
    ap.add_argument("--bandits", default=",".join(BANDITS),
                    help="BaSE allocators, comma list (default: the paper's five; any registered "
                         "name, e.g. successive_halving,sw_ucb)")
    args = ap.parse_args()
    bandits = tuple(b for b in args.bandits.split(",") if b)
    budgets = [int(x) for x in (args.budgets or ("128" if args.quick else "128,512")).split(",")]
    caps = [float(x) for x in (args.capabilities or ("1" if args.quick else "0.5,1")).split(",")]
    tasks = [t for t in args.tasks.split(",") if t]
    grid = jobs(tasks, budgets, caps, args.seeds, bandits)
    print(f"{len(grid)} runs: tasks {tasks}, C {budgets}, capability {caps}, "
          f"{args.seeds} seeds, {args.workers} at a time", file=sys.stderr)
    t0, cpu0 = time.perf_counter(), _cpu_s()
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(args.out) if args.out else Path(tmp)
        rows = run_grid(grid, out_dir, workers=args.workers)
        wall = time.perf_counter() - t0
        cpu = _cpu_s() - cpu0
        sim_ms = simulator_cpu_ms(sorted(out_dir.glob("runs-*.sqlite")))
    df = pd.DataFrame(rows)
    calls = int(sum(j["config"]["budget"] for j in grid))
    print(f"\n{len(df)} runs, {calls} LLM calls in {wall:.0f} s wall "
          f"({1000 * wall / calls:.1f} ms per call, {args.workers} runs at a time); "
          f"CPU {cpu:.0f} s = {1000 * cpu / calls:.1f} ms per call over every process "
          f"(runs, simulator, sandbox), i.e. >= {cpu / (os.cpu_count() or 1):.0f} s of wall "
          f"on this box's {os.cpu_count()} cores if nothing else ran; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print("simulator CPU per reply (ms, on stored prompts): "
          + ", ".join(f"{k} {v:.2f}" for k, v in sim_ms.items()))
    crashed = df[df["resumed_after"] != ""]
    for r in crashed.itertuples():
        print(f"run {r.run_id} crashed ({r.resumed_after}) and was resumed to its budget")
    res = report(df, np.random.default_rng(0), bandits)
    res.update({"wall_s": wall, "cpu_s": cpu, "resumed_runs": len(crashed),
                "simulator_cpu_ms_per_reply": sim_ms, "runs": len(df), "calls": calls,
                "load_average_end": os.getloadavg()[0],
                "run_wall_s_mean": float(df["wall_s"].mean())})
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
