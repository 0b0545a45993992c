"""Allocation-quality benchmark (issue 13): the paper's comparisons through the whole stack.

Greedy at T in {1, ~sqrt(C), C}, BaSE (random, round_robin, ucb, exp3p, the paper's plain
Thompson sampling thompson_plain, our discounted thompson, and AdaEvolve's island rule as
an allocator, adaptive_ucb; K = 10 trajectories of greedy N = 1, one call per pull) and the
island protocols (openevolve, codeevolve, shinkaevolve, adaevolve; each alone, one
population, and under plain Thompson with K = 10 populations: "openevolve+thompson_plain",
paper Table 1; adaevolve also under UCB and adaptive_ucb, the
AdaEvolve block of the pairwise table, issue 26) run as one ``basevolve sweep``
(docs/sweeps.md) through the real engine, sandbox, scorer and SQLite store against the
simulated mutation LLM (``basevolve simulate-server``, :mod:`basevolve.testing.sim`,
which answers each protocol in its own reply format).  The grid is written as a sweep
file (``allocation-quality.toml`` in ``--out``, rerunnable with ``basevolve sweep FILE
--store FILE`` while the simulators run), one simulator process per (task, capability)
is one endpoint, and fitness per run is read back from the store
(:func:`basevolve.store.export.runs_table`).

Per (task, capability, C, method) it prints the mean with a 95% bootstrap CI, the IQM
and P(fitness >= tau) for the paper's thresholds (Table 3: CP 0.95/0.99, MMD
0.80/0.90/0.95, HT 0.50/0.70), and the paper's two-step decomposition (Section 5.3):
the *pool effect* single trajectory (greedy T = C) -> BaSE random, and the *allocation
effect* random -> each bandit; plus, per island protocol, the effect of running it under
Thompson (protocol -> protocol+thompson_plain, and +ucb / +adaptive_ucb for adaevolve), the
closest rival head to head ("rival": adaevolve and base adaptive_ucb -> base ucb / base
thompson_plain), and the paper's pairwise table (protocol alone vs BaSE over its trajectories).  Each effect is a difference of means with a
95% CI from independent stratified bootstraps (``basevolve.analysis.stratified_bootstrap``).

    python benchmarks/allocation_quality.py --quick     # C = 128, 10 seeds, capability 1
    python benchmarks/allocation_quality.py             # C in {128, 512}, capabilities 0.5, 1
    python benchmarks/allocation_quality.py --tasks min_max_distance --budgets 16 --seeds 1
    python benchmarks/allocation_quality.py --quick --deterministic  # same tables every time

``--deterministic`` runs every run of the sweep with ``deterministic = true`` (issue 23):
results are told in issue order, and the simulator answers a request by its messages and
seed, so two invocations print the same tables (benchmarks/README.md records one pair).
The simulator is an instrument, not a claim about real LLMs: whatever ordering of
methods comes out is reported as is.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from basevolve.analysis import describe, stratified_bootstrap
from basevolve.store.export import runs_table
from basevolve.sweep import load_sweep, run_sweep
from basevolve.testing.sim.grid import simulators

TASKS = ("circle_packing", "min_max_distance", "heilbronn_triangle")
THRESHOLDS = {"circle_packing": (0.95, 0.99), "min_max_distance": (0.80, 0.90, 0.95),
              "heilbronn_triangle": (0.50, 0.70)}
#: The paper's Thompson sampling is the plain one (issue 23, item 1): its columns use
#: ``thompson_plain``; the discounted ``thompson`` is ours and runs as its own BaSE row.
PAPER_THOMPSON = "thompson_plain"
BANDITS = ("random", "round_robin", "ucb", "exp3p", PAPER_THOMPSON, "thompson", "adaptive_ucb")
PROTOCOLS = ("openevolve", "codeevolve", "shinkaevolve", "adaevolve")
#: Protocols run under UCB and adaptive_ucb as well (Thompson runs for every protocol):
#: the AdaEvolve block of the paper's pairwise table, protocol alone vs BaSE (issue 26).
PAIRWISE = ("adaevolve",)
PAIRWISE_EXTRA = ("ucb", "adaptive_ucb")
#: The closest rival head to head: AdaEvolve alone, and its island rule as an allocator,
#: against BaSE over greedy trajectories (issue 26).
RIVALS = (("adaevolve", "base ucb"), ("adaevolve", f"base {PAPER_THOMPSON}"),
          ("base adaptive_ucb", "base ucb"), ("base adaptive_ucb", f"base {PAPER_THOMPSON}"))
#: Rows of the pairwise table: (row, allocator); the greedy column's BaSE rows are the
#: "base ..." methods (K = 10 trajectories of greedy N = 1), its baseline greedy T = C.
PAIRWISE_ROWS = (("Baseline", None), ("UCB", "ucb"), ("EXP3.P", "exp3p"),
                 ("Thompson", PAPER_THOMPSON), ("adaptive_ucb", "adaptive_ucb"))
ARMS = 10
ENDPOINT_LIMIT = 16  # requests a simulator takes at once (the paper: vLLM, 16 in flight)
SWEEP_NAME = "allocation-quality"


def sqrt_depth(c: int) -> int:
    """The divisor of C nearest to sqrt(C) on a log scale (ties: the smaller)."""
    divs = [d for d in range(1, c + 1) if c % d == 0]
    return min(divs, key=lambda d: (abs(math.log(d) - 0.5 * math.log(c)), d))


def methods(c: int, bandits: tuple[str, ...] = BANDITS,
            protocols: tuple[str, ...] = PROTOCOLS) -> list[tuple[str, dict[str, Any]]]:
    """(name, sweep keys) of every method at budget C, in report order."""
    out: list[tuple[str, dict[str, Any]]] = [
        (f"greedy T={t}", {"depth": t}) for t in sorted({1, sqrt_depth(c), c})]
    out += [(f"base {b}", {"allocator": b, "arms": ARMS}) for b in bandits]
    out += [(p, {"protocol": p}) for p in protocols]
    out += [(f"{p}+{PAPER_THOMPSON}", {"protocol": p, "allocator": PAPER_THOMPSON, "arms": ARMS})
            for p in protocols]
    out += [(f"{p}+{a}", {"protocol": p, "allocator": a, "arms": ARMS})
            for p in protocols if p in PAIRWISE for a in PAIRWISE_EXTRA]
    return out


def method_of(row: Any) -> str:
    """The method name of a stored run (inverse of :func:`methods`)."""
    if row.protocol == "greedy":
        return f"greedy T={row.depth}" if row.allocator == "single" else f"base {row.allocator}"
    return row.protocol if row.allocator == "single" else f"{row.protocol}+{row.allocator}"


def model_name(cap: float) -> str:
    return f"sim-cap{cap:g}"


def sweep_data(specs: list[tuple[str, float]], urls: list[str], budgets: list[int], seeds: int,
               bandits: tuple[str, ...] = BANDITS, protocols: tuple[str, ...] = PROTOCOLS,
               sandbox_workers: int | None = None, deterministic: bool = False) -> dict[str, Any]:
    """The grid as a sweep document (the TOML file's content): one endpoint per
    (task, capability) simulator, ``task``/``model``/``base_url`` advanced together."""
    head: dict[str, Any] = {"name": SWEEP_NAME,
                            "thresholds": {t: list(THRESHOLDS[t]) for t, _ in specs}}
    if sandbox_workers:
        head["sandbox_workers"] = sandbox_workers
    servers = {"task": [t for t, _ in specs], "model": [model_name(c) for _, c in specs],
               "base_url": list(urls), "zip": [["task", "model", "base_url"]]}
    grid: list[dict[str, Any]] = []
    for c in budgets:
        grid.append({**servers, "budget": c, "depth": sorted({1, sqrt_depth(c), c})})
    if bandits:
        grid.append({**servers, "budget": budgets, "allocator": list(bandits), "arms": ARMS})
    if protocols:
        grid.append({**servers, "budget": budgets, "protocol": list(protocols)})
        grid.append({**servers, "budget": budgets, "protocol": list(protocols),
                     "allocator": PAPER_THOMPSON, "arms": ARMS})
    if [p for p in protocols if p in PAIRWISE]:
        grid.append({**servers, "budget": budgets, "arms": ARMS,
                     "protocol": [p for p in protocols if p in PAIRWISE],
                     "allocator": list(PAIRWISE_EXTRA)})
    return {"sweep": head,
            "endpoints": [{"base_url": u, "limit": ENDPOINT_LIMIT} for u in urls],
            "defaults": {"params": 8e9, "max_in_flight": 16, "seeds": seeds,
                         **({"deterministic": True} if deterministic else {})},
            "grid": grid}


def to_toml(data: dict[str, Any]) -> str:
    """TOML text of a sweep document: tables, arrays of tables, and values that JSON
    writes as valid TOML (strings, numbers, booleans and arrays of them)."""
    lines = [f"# {SWEEP_NAME}: written by benchmarks/allocation_quality.py; run with",
             "# basevolve sweep THIS_FILE --store FILE while the simulators listed under",
             "# [[endpoints]] are serving (basevolve simulate-server --task T --capability X)."]

    def table(header: str, body: dict[str, Any]) -> None:
        lines.extend(["", header])
        subs = {k: v for k, v in body.items() if isinstance(v, dict)}
        lines.extend(f"{k} = {json.dumps(v)}" for k, v in body.items() if k not in subs)
        for k, v in subs.items():
            table(f"[{header.strip('[]')}.{k}]", v)

    for key, value in data.items():
        for item in value if isinstance(value, list) else [value]:
            table(f"[[{key}]]" if isinstance(value, list) else f"[{key}]", item)
    return "\n".join(lines) + "\n"


def _diff_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """mean(b) - mean(a) with a 95% percentile CI (independent bootstraps of each group)."""
    ra = stratified_bootstrap(a, "mean", rng)
    rb = stratified_bootstrap(b, "mean", rng)
    lo, hi = np.percentile(rb - ra, [2.5, 97.5])
    return float(b.mean() - a.mean()), float(lo), float(hi)


def report(df: pd.DataFrame, rng: np.random.Generator, bandits: tuple[str, ...] = BANDITS,
           protocols: tuple[str, ...] = PROTOCOLS) -> dict[str, Any]:
    out: dict[str, Any] = {"cells": [], "decomposition": []}
    for (task, cap, c), g in df.groupby(["task", "capability", "budget"], sort=True):
        taus = THRESHOLDS[task]
        print(f"\n== {task}  capability {cap:g}  C = {c}  ({g['seed'].nunique()} seeds)")
        head = f"{'method':<22} {'mean':>7} {'95% CI':>17} {'IQM':>7}"
        print(head + "".join(f" {'P>=' + format(t, 'g'):>8}" for t in taus))
        by = {m: gg["fitness"].to_numpy(float) for m, gg in g.groupby("method")}
        for name, _ in methods(int(c), bandits, protocols):
            if name not in by:
                continue
            x = by[name]
            d = describe(x, rng)
            p = [float((x >= t).mean()) for t in taus]
            print(f"{name:<22} {d['mean']:>7.4f} [{d['ci_low']:.4f}, {d['ci_high']:.4f}] "
                  f"{d['iqm']:>7.4f}" + "".join(f" {v:>8.2f}" for v in p))
            out["cells"].append({"task": task, "capability": cap, "budget": int(c),
                                 "method": name, **d,
                                 "p_reach": {format(t, "g"): v for t, v in zip(taus, p, strict=True)}})

        single, rand = f"greedy T={c}", "base random"
        steps: list[tuple[str, str, str, str]] = []
        if single in by and rand in by:
            steps.append(("pool", single, rand, f"greedy T={c} -> random"))
            steps += [("allocation", rand, f"base {b}", f"random -> {b:<11}") for b in bandits
                      if b != "random" and f"base {b}" in by]
        steps += [("base", p, f"{p}+{a}", f"{p} -> {p}+{a}") for p in protocols
                  for a in (PAPER_THOMPSON, *PAIRWISE_EXTRA) if p in by and f"{p}+{a}" in by]
        steps += [("rival", a, b, f"{a} -> {b}") for a, b in RIVALS if a in by and b in by]
        for step, a, b, label in steps:
            eff, lo, hi = _diff_ci(by[a], by[b], rng)
            print(f"{step:<12} {label}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}]")
            out["decomposition"].append({"task": task, "capability": cap, "budget": int(c),
                                         "step": step, "from": a, "to": b, "effect": eff,
                                         "ci_low": lo, "ci_high": hi})
        out.setdefault("pairwise", []).extend(
            pairwise(by, int(c), protocols, rng, {"task": task, "capability": cap,
                                                  "budget": int(c)}))
    return out


def pairwise(by: dict[str, np.ndarray], c: int, protocols: tuple[str, ...],
             rng: np.random.Generator, cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's pairwise table for one cell (its Table "Pairwise best-fitness
    comparisons"): per column (greedy N = 1, each protocol) the protocol alone and BaSE
    over K = 10 of its trajectories; printed as mean [95% CI], a blank where not run."""
    cols = {"greedy N=1": {None: f"greedy T={c}", **{a: f"base {a}" for _, a in PAIRWISE_ROWS
                                                     if a}}}
    for p in protocols:
        cols[p] = {None: p, **{a: f"{p}+{a}" for _, a in PAIRWISE_ROWS if a}}
    rows: list[dict[str, Any]] = []
    print(f"pairwise     {'':<13}" + "".join(f" {k:>23}" for k in cols))
    for row, alloc in PAIRWISE_ROWS:
        line = f"pairwise     {row:<13}"
        for col, names in cols.items():
            x = by.get(names[alloc])
            if x is None:
                line += f" {'':>23}"
                continue
            d = describe(x, rng)
            line += f" {d['mean']:.4f} [{d['ci_low']:.3f},{d['ci_high']:.3f}]"
            rows.append({**cell, "column": col, "row": row, "method": names[alloc],
                         "mean": d["mean"], "ci_low": d["ci_low"], "ci_high": d["ci_high"]})
        print(line)
    return rows


def simulator_cpu_ms(store: Path, n: int = 150) -> dict[str, float]:
    """CPU ms per reply of the simulated LLM alone, on prompts the runs really sent (read
    back from the store; a fixed pseudo-random sample of n per task and protocol, since
    the request formats differ), capability 1: what the simulator costs inside a call."""
    from basevolve.testing.sim import SimulatedLLM

    con = sqlite3.connect(store)
    try:
        groups = con.execute("SELECT DISTINCT task, protocol FROM runs ORDER BY task, protocol"
                             ).fetchall()
        out = {}
        for task, protocol in groups:
            prompts = con.execute(
                "SELECT c.messages_json, c.seed FROM calls c JOIN runs r USING (run_id) "
                "WHERE r.task = ? AND r.protocol = ? "
                "ORDER BY (c.call_id * 2654435761) % 4294967296 LIMIT ?", (task, protocol, n)).fetchall()
            if not prompts:
                continue
            sim = SimulatedLLM(task)
            sim({"messages": json.loads(prompts[0][0]), "seed": 0}, 0)  # warm the caches
            t0 = time.process_time()
            for msgs, seed in prompts:
                sim({"messages": json.loads(msgs), "seed": seed}, 0)
            out[f"{task}/{protocol}"] = 1000 * (time.process_time() - t0) / len(prompts)
    finally:
        con.close()
    return out


def run_walls(store: Path) -> float:
    """Mean wall seconds of a finished run (created -> last update), as stored."""
    con = sqlite3.connect(store)
    try:
        (mean,) = con.execute("SELECT avg(updated_at - created_at) FROM runs "
                              "WHERE status = 'finished'").fetchone()
    finally:
        con.close()
    return float(mean or 0.0)


def calls_answered(store: Path) -> int:
    """Calls already answered in ``store`` (0 for a new one): a rerun into the same
    ``--out`` resumes, and its wall and CPU per call must count only the calls it made."""
    if not store.exists():
        return 0
    con = sqlite3.connect(store)
    try:
        (n,) = con.execute("SELECT count(*) FROM calls WHERE counted = 1").fetchone()
    finally:
        con.close()
    return int(n)


def _cpu_s() -> float:
    """CPU seconds of this process and every waited-for descendant (simulator servers and
    sandbox workers, with their forks)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _names(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split(",") if x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="C = 128, 10 seeds, capability 1")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--budgets", default=None, help="comma list (default 128,512; quick 128); "
                    f"each at least K = {ARMS} when bandits or +thompson methods run")
    ap.add_argument("--capabilities", default=None, help="comma list (default 0.5,1; quick 1)")
    ap.add_argument("--sandbox-workers", type=int, default=None,
                    help="sandbox pool size of the sweep (default: the CPU count)")
    ap.add_argument("--out", default=None,
                    help="keep the sweep file and store (allocation-quality.sqlite) here")
    ap.add_argument("--json", default=None, help="write the results as JSON to this file")
    ap.add_argument("--deterministic", action="store_true",
                    help="every run told in issue order (deterministic = true in the sweep "
                         "file): the same tables on every invocation")
    ap.add_argument("--bandits", default=",".join(BANDITS),
                    help="BaSE allocators over greedy, comma list (default: the paper's five; "
                         "any registered name, e.g. successive_halving,sw_ucb; empty to skip)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS),
                    help="island protocols, each alone and under Thompson with K = 10, comma "
                         "list (default: all three; empty to skip)")
    args = ap.parse_args()
    bandits, protocols = _names(args.bandits), _names(args.protocols)
    budgets = [int(x) for x in (args.budgets or ("128" if args.quick else "128,512")).split(",")]
    caps = [float(x) for x in (args.capabilities or ("1" if args.quick else "0.5,1")).split(",")]
    specs = [(t, cap) for t in _names(args.tasks) for cap in caps]
    t0, cpu0 = time.perf_counter(), _cpu_s()
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(args.out) if args.out else Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        sweep_file, store = out_dir / f"{SWEEP_NAME}.toml", out_dir / f"{SWEEP_NAME}.sqlite"
        with simulators(specs) as urls:
            data = sweep_data(specs, urls, budgets, args.seeds, bandits, protocols,
                              args.sandbox_workers, args.deterministic)
            sweep_file.write_text(to_toml(data), encoding="utf-8")
            sweep = load_sweep(sweep_file)
            calls = sum(r.config.budget for r in sweep.runs)
            before = calls_answered(store)
            print(f"{len(sweep.runs)} runs, {calls} LLM calls: tasks {list(_names(args.tasks))}, "
                  f"C {budgets}, capability {caps}, {args.seeds} seeds; sweep {sweep_file}",
                  file=sys.stderr, flush=True)
            result = run_sweep(sweep, store, live=False)
            resumed = list(result.failed)
            if resumed:  # a failed run is resumed once, as a user would (rerun the sweep)
                for rid in resumed:
                    print(f"run {rid} failed ({result.outcomes[rid].get('error')}); resuming",
                          file=sys.stderr)
                result = run_sweep(sweep, store, live=False)
        wall = time.perf_counter() - t0
        cpu = _cpu_s() - cpu0
        df = runs_table(store)
        df = df[df["run_id"].isin({r.run_id for r in sweep.runs})].copy()  # this grid only
        sim_ms = simulator_cpu_ms(store)
        run_wall = run_walls(store)
    if result.failed:
        print(f"{len(result.failed)} runs failed twice: {', '.join(result.failed)}",
              file=sys.stderr)
    df["capability"] = df["model"].str.removeprefix("sim-cap").astype(float)
    df["method"] = [method_of(r) for r in df.itertuples()]
    made = calls - before
    resumed_note = f" ({before} answered before this invocation)" if before else ""
    per_call = (f" ({1000 * wall / made:.1f} ms per call, one sweep process); CPU {cpu:.0f} s "
                f"= {1000 * cpu / made:.1f} ms per call over every process (sweep, simulators, "
                f"sandbox), i.e. >= {cpu / (os.cpu_count() or 1):.0f} s of wall on this box's "
                f"{os.cpu_count()} cores if nothing else ran" if made else "")
    print(f"\n{len(df)} runs, {calls} LLM calls{resumed_note}; this invocation made {made} "
          f"in {wall:.0f} s wall{per_call}; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print("simulator CPU per reply (ms, on stored prompts): "
          + ", ".join(f"{k} {v:.2f}" for k, v in sim_ms.items()))
    res = report(df, np.random.default_rng(0), bandits, protocols)
    res.update({"wall_s": wall, "cpu_s": cpu, "resumed_runs": len(resumed),
                "failed_runs": list(result.failed), "simulator_cpu_ms_per_reply": sim_ms,
                "runs": len(df), "calls": calls, "calls_before": before,
                "load_average_end": os.getloadavg()[0],
                "run_wall_s_mean": run_wall})
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
