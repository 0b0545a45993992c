"""How much of BaSE's edge over random allocation survives calls in flight? (issue 34, item 5,
a reduced study).

On the simulator (``--task``, MinMaxDist by default; greedy N = 1, K arms, C calls), for each seed the same
run is made by a bandit and by ``random`` in three settings:

* ``seq``: one call in flight (sequential Algorithm 2);
* ``arr16``: 16 in flight, results told in arrival order, the server's replies taking
  ``L * U[1 - J, 1 + J]`` seconds (so they overtake each other);
* ``det16``: 16 in flight under ``--deterministic`` (issue order, the default window).

The *edge* of a setting is the mean over seeds of (bandit best - random best), paired by
seed, with a 95% bootstrap CI (10,000 resamples of the seeds, seeded); the *kept* share
is edge(setting) / edge(seq), with its CI from the same resamples.  Every finished run
is appended to ``--out`` (JSON lines), so an interrupted study resumes where it stopped.

    python benchmarks/concurrency_edge.py [--seeds 20] [--budget 128] [--arms 10]
        [--allocators ucb,thompson_plain] [--capability 1] [--latency 0.2] [--jitter 0.5]
        [--out F]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.testing import LLMTestServer
from basevolve.testing.sim import SimulatedLLM

TASK = "min_max_distance"
SETTINGS = {"seq": (1, False), "arr16": (16, False), "det16": (16, True)}


def run_one(pool: SandboxPool, url: str, allocator: str, setting: str, seed: int,
            args: argparse.Namespace, tmp: Path) -> float:
    inflight, det = SETTINGS[setting]
    cfg = RunConfig(task=args.task, budget=args.budget, arms=args.arms, allocator=allocator,
                    seed=seed, base_url=url, model="sim", params=1e9, max_in_flight=inflight,
                    deterministic=det, run_id=f"{allocator}-{setting}-{seed}")
    s = start_run(cfg, tmp / f"{cfg.run_id}.sqlite", pool=pool, out_dir=None)
    return float(s["best_score"])


def edge_table(rows: list[dict[str, Any]], bandit: str) -> list[tuple[str, ...]]:
    """Per setting: n seeds, mean bandit, mean random, edge [CI], kept share [CI]."""
    best = {(r["allocator"], r["setting"], r["seed"]): r["best"] for r in rows}
    seeds = sorted({r["seed"] for r in rows if all(
        (a, s, r["seed"]) in best for a in (bandit, "random") for s in SETTINGS)})
    if not seeds:
        return []
    diff = {s: np.array([best[(bandit, s, k)] - best[("random", s, k)] for k in seeds])
            for s in SETTINGS}
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(seeds), size=(10_000, len(seeds)))
    boot = {s: d[idx].mean(axis=1) for s, d in diff.items()}
    out = []
    for s in SETTINGS:
        mb = np.mean([best[(bandit, s, k)] for k in seeds])
        mr = np.mean([best[("random", s, k)] for k in seeds])
        lo, hi = np.percentile(boot[s], [2.5, 97.5])
        with np.errstate(divide="ignore", invalid="ignore"):
            share = boot[s] / boot["seq"]
        kept = diff[s].mean() / diff["seq"].mean() if diff["seq"].mean() else float("nan")
        klo, khi = np.nanpercentile(share, [2.5, 97.5])
        out.append((s, str(len(seeds)), f"{mb:.4f}", f"{mr:.4f}",
                    f"{diff[s].mean():+.4f} [{lo:+.4f}, {hi:+.4f}]",
                    f"{kept:.0%} [{klo:.0%}, {khi:.0%}]"))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--task", default=TASK, help="a task the simulator serves")
    p.add_argument("--budget", type=int, default=128)
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--allocators", default="ucb")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--jitter", type=float, default=0.5)
    p.add_argument("--capability", type=float, default=1.0, help="the simulated model's")
    p.add_argument("--workers", type=int, default=2, help="sandbox workers")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/concurrency_edge.jsonl"))
    args = p.parse_args()
    bandits = [a for a in args.allocators.split(",") if a]
    done = set()
    rows: list[dict[str, Any]] = []
    if args.out.exists():
        rows = [json.loads(line) for line in args.out.read_text().splitlines() if line]
        rows = [r for r in rows if r.get("task", TASK) == args.task]  # one task per table
        done = {(r["allocator"], r["setting"], r["seed"]) for r in rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sim = SimulatedLLM(args.task, capability=args.capability)
    with SandboxPool(SandboxConfig(workers=args.workers)) as pool, \
            LLMTestServer(sim, record=False) as fast, \
            LLMTestServer(sim, record=False, latency_s=args.latency,
                          latency_jitter=args.jitter, jitter_seed=1) as slow, \
            tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for allocator in [*bandits, "random"]:
                for setting in SETTINGS:
                    if (allocator, setting, seed) in done:
                        continue
                    url = slow.base_url if setting == "arr16" else fast.base_url
                    t0 = time.monotonic()
                    b = run_one(pool, url, allocator, setting, seed, args, Path(tmp))
                    row = {"task": args.task, "allocator": allocator, "setting": setting,
                           "seed": seed, "best": b,
                           "wall_s": round(time.monotonic() - t0, 2)}
                    rows.append(row)
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
    for bandit in bandits:
        print(f"== {bandit} vs random ({args.task}, C={args.budget}, K={args.arms}, greedy N=1)")
        print("| setting | seeds | bandit | random | edge [95% CI] | kept of seq [95% CI] |")
        print("|---|---|---|---|---|---|")
        for r in edge_table(rows, bandit):
            print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
