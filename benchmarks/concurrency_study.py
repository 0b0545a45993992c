"""BaSE's edge over random against the number of calls in flight (issue 34, item 5).

A fast allocation-level study.  The whole-stack study (``concurrency_edge.py``: the real
engine, the simulated LLM server, real sandboxes) costs ~6 s a run on a 2-core box, too
slow for the grid the issue asks for (3 tasks x 12 concurrency settings x 4 allocators x
candidate rules x hundreds of seeds).  Here each call is decided by the *same reply
model* the simulated server uses (``SimulatedLLM.decide``: the task's algorithmic
families, their anchoring, ceilings and broken replies; a child's fitness is what the
real scorer gives the program the server would render) and allocated by the *real*
registered allocators, while the engine's two scheduling rules
(``basevolve.engine.ordering``) are replayed in a discrete-event loop:

* **arrival order** with ``m`` LLM slots: a call is decided whenever a slot is free and
  told when its reply arrives (``m = 1``: sequential Algorithm 2);
* **issue order** (``--deterministic``) with window ``W``: calls are decided while a slot
  is free and fewer than ``W`` are decided-untold; they are told oldest first.

What the loop leaves out: evaluation time (children are scored at once, so the untold
pulls are the calls in flight) and prompt content (the reply model reads only the
parent's family and fitness, as the simulated server does).  BaSE as the engine runs it:
K greedy trajectories (N = 1, asynchronous: a child's parent is its trajectory's best at
ask time, accepted when usable and strictly better than the best at tell time), K
assigned initial calls, C - K bandit asks, reward = the trajectory's best at tell time
(``--reward best``, Algorithm 2).  Every reply draws from ``rng([seed, call index])`` and
every latency from ``rng([seed, call index, 1])``, so the allocators of one seed see the
same stream (common random numbers) and the edge is paired by seed.

Candidate rules for pending pulls (issue 34, item 5), all benchmark-local wrappers of the
registered policies: ``mean`` (today: a pending pull is a provisional observation at the
arm's mean), ``none`` (pending pulls ignored; Thompson's own sampling is then the only
diversity), ``zero`` (a pending pull counts as a reward of 0 until told: pessimistic),
``cap`` (an arm may hold at most ceil(2m/K) pending pulls), ``wait`` (an arm whose best
has not changed since a pending ask of it is not eligible -- its child would be that
call's sibling; when no arm is eligible the decision waits for a tell, idling a slot).

    python benchmarks/concurrency_study.py [--seeds 200] [--budget 128] [--arms 10]
        [--tasks min_max_distance,circle_packing,heilbronn_triangle] [--capability 1]
        [--allocators ucb,thompson_plain,exp3p] [--rules mean,none,zero,cap,wait]
        [--out benchmarks/results/concurrency_study.jsonl.gz]

Prints, per task and bandit, the edge over random [95% paired bootstrap CI] in each
setting and the share of the sequential edge kept; then the rules at 16 in flight.
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import json
import math
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from basevolve.allocators import ALLOCATORS
from basevolve.testing.sim import SimulatedLLM

LATENCY_JITTER = 0.5  # a reply takes U[1 - J, 1 + J] time units, so replies overtake
PROGRAMS = Path(__file__).resolve().parents[1] / "src/basevolve/tasks/programs"


def settings() -> dict[str, tuple[int, int | None]]:
    """name -> (calls in flight m, window W or None for arrival order)."""
    out: dict[str, tuple[int, int | None]] = {"seq": (1, None)}
    for m in (2, 4, 8, 16):
        out[f"arr{m}"] = (m, None)
    for m in (2, 4, 8, 16):
        out[f"det{m}"] = (m, max(24, m + 8))  # RunConfig.decision_window's default
    for w in (16, 20, 32):
        out[f"det16w{w}"] = (16, w)
    return out


SETTINGS = settings()
RULE_SETTINGS = ("arr16", "det16")


def initial_score(task: str) -> tuple[float, bool]:
    """The task's initial program scored by basevolve's own trusted evaluator (CLI)."""
    out = subprocess.run(
        [sys.executable, "-m", "basevolve", "evaluate", str(PROGRAMS / f"{task}.py.txt"),
         "--task", task, "--json"], capture_output=True, text=True, check=True)
    rec = json.loads(out.stdout)[0]
    return float(rec["score"]), bool(rec["valid"])


def make_allocator(name: str, rule: str, k: int, horizon: int, seed: int, m: int) -> Any:
    """The registered policy ``name`` wrapped by pending-pull rule ``rule``."""
    base = ALLOCATORS.get(name)
    cap = math.ceil(2 * m / k)

    class Ruled(base):  # type: ignore[misc, valid-type]
        def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
            if rule == "cap" and (eligible & (self.pending < cap)).any():
                eligible = eligible & (self.pending < cap)
            if rule not in ("none", "zero"):
                return super()._ask(eligible)
            # what the policy sees while it chooses: pending pulls hidden, and for
            # ``zero`` counted as told pulls of reward 0 (UCB) or as failures (Thompson)
            seen = {"pending": np.zeros_like(self.pending)}
            if rule == "zero" and hasattr(self, "indices"):  # UCB
                seen["pulls"] = self.pulls + self.pending
            elif rule == "zero" and hasattr(self, "posterior_mean"):  # Thompson
                seen["F"] = self.F + self.pending
            saved = {name: getattr(self, name) for name in seen}
            self.__dict__.update(seen)
            try:
                return super()._ask(eligible)
            finally:
                self.__dict__.update(saved)

    return Ruled(n_arms=k, rng=np.random.default_rng(seed), horizon=horizon,
                 reward_mode="best")


class Trajectories:
    """K greedy N = 1 asynchronous trajectories over the simulated reply model."""

    def __init__(self, sim: SimulatedLLM, k: int, start: tuple[float, bool]) -> None:
        self.sim = sim
        fam = sim.model.initial
        self.best = [(start[0], start[1], fam)] * k  # (fitness, usable, family)
        self.version = [0] * k  # bumps when the best changes

    def child(self, arm: int, seed: int, call: int) -> tuple[float, bool, str]:
        fit, _, fam = self.best[arm]
        d = self.sim.decide(fam, fit, np.random.default_rng([seed, call]))
        usable = d.kind == "program" and d.valid
        return (d.fitness if usable else 0.0), usable, d.family

    def tell(self, arm: int, child: tuple[float, bool, str]) -> float:
        fit, usable, _ = self.best[arm]
        if child[1] and (not usable or child[0] > fit):
            self.best[arm] = child
            self.version[arm] += 1
        return self.best[arm][0] if self.best[arm][1] else 0.0

    def final(self) -> float:
        return max((f if u else 0.0) for f, u, _ in self.best)


def run_one(sim: SimulatedLLM, start: tuple[float, bool], alloc_name: str, rule: str,
            setting: str, seed: int, k: int, budget: int) -> dict[str, Any]:
    """One run; returns the best fitness, the sim-time makespan and the mean untold
    pulls per bandit decision."""
    m, window = SETTINGS[setting]
    traj = Trajectories(sim, k, start)
    alloc = make_allocator(alloc_name, rule, k, budget - k, seed, m)
    clock, issued = 0.0, 0
    flight: list[tuple[float, int]] = []  # heap of (arrival time, call)
    arrived: set[int] = set()
    open_calls: deque[int] = deque()  # decided, untold, in issue order
    info: dict[int, tuple[int, tuple[float, bool, str], int]] = {}  # call -> arm, child, ver
    untold_at_ask: list[int] = []

    def can_decide() -> bool:
        if issued >= budget or len(flight) >= m:
            return False
        return window is None or len(open_calls) < window

    def tell(call: int) -> None:
        arm, child, _ = info.pop(call)
        alloc.tell(arm, traj.tell(arm, child), ticket=call)

    while issued < budget or open_calls:
        while can_decide():
            if issued < k:
                arm = alloc.assign(issued, ticket=issued)
            else:
                mask = np.ones(k, dtype=bool)
                if rule == "wait":
                    stale = {info[c][0] for c in open_calls if info[c][2] == traj.version[info[c][0]]}
                    mask = np.array([a not in stale for a in range(k)])
                    if not mask.any():
                        break  # every arm's next child would be a sibling: wait for a tell
                untold_at_ask.append(len(open_calls))
                arm = alloc.ask(mask, ticket=issued)
            info[issued] = (arm, traj.child(arm, seed, issued), traj.version[arm])
            lat = float(np.random.default_rng([seed, issued, 1]).uniform(
                1 - LATENCY_JITTER, 1 + LATENCY_JITTER))
            heapq.heappush(flight, (clock + lat, issued))
            open_calls.append(issued)
            issued += 1
        if window is not None and open_calls and open_calls[0] in arrived:
            arrived.discard(call := open_calls.popleft())
            tell(call)
            continue
        clock, call = heapq.heappop(flight)
        if window is None:
            open_calls.remove(call)
            tell(call)
        else:
            arrived.add(call)
    return {"best": traj.final(), "makespan": clock,
            "untold": float(np.mean(untold_at_ask)) if untold_at_ask else 0.0}


def bootstrap(diffs: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    idx = np.random.default_rng(0).integers(0, n, size=(10_000, n))
    return idx, {s: d[idx].mean(axis=1) for s, d in diffs.items()}


def edge_rows(rows: list[dict[str, Any]], task: str, bandit: str, rule: str,
              names: list[str]) -> list[tuple[str, ...]]:
    """Per setting: mean best of bandit and random, edge [CI], kept share of seq [CI], and
    the bandit's mean makespan in units of the mean latency (what a smaller window costs)."""
    best = {(r["allocator"], r["rule"], r["setting"], r["seed"]): r["best"]
            for r in rows if r["task"] == task}
    span = {(r["setting"], r["seed"]): r["makespan"] for r in rows if r["task"] == task
            and r["allocator"] == bandit and r["rule"] == rule}
    need = [(bandit, rule, st) for st in names] + [("random", "mean", st) for st in names]
    need += [(bandit, "mean", "seq"), ("random", "mean", "seq")]
    seeds = sorted({s for (*_, s) in best if all((*n, s) in best for n in need)})
    if not seeds:
        return []
    seq = np.array([best[(bandit, "mean", "seq", s)] - best[("random", "mean", "seq", s)]
                    for s in seeds])
    diffs = {st: np.array([best[(bandit, rule, st, s)] - best[("random", "mean", st, s)]
                           for s in seeds]) for st in names}
    diffs["seq"] = seq
    _, boot = bootstrap(diffs, len(seeds))
    out = []
    for st in names:
        mb = np.mean([best[(bandit, rule, st, s)] for s in seeds])
        mr = np.mean([best[("random", "mean", st, s)] for s in seeds])
        lo, hi = np.percentile(boot[st], [2.5, 97.5])
        kept = "-"
        if seq.mean() > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                share = boot[st] / boot["seq"]
            klo, khi = np.nanpercentile(share, [2.5, 97.5])
            kept = f"{diffs[st].mean() / seq.mean():.0%} [{klo:.0%}, {khi:.0%}]"
        out.append((st, str(len(seeds)), f"{mb:.4f}", f"{mr:.4f}",
                    f"{diffs[st].mean():+.4f} [{lo:+.4f}, {hi:+.4f}]", kept,
                    f"{np.mean([span[(st, s)] for s in seeds]):.1f}"))
    return out


def paired_rows(rows: list[dict[str, Any]], task: str, bandit: str,
                variants: list[tuple[str, str]], base: tuple[str, str]) -> list[tuple[str, ...]]:
    """Each (rule, setting) variant of ``bandit`` against ``base``, paired by seed: the
    difference of mean best [95% CI], the makespan ratio and the untold pulls at a
    decision (rules: against ``mean`` at one setting; windows: against the default)."""
    runs = {(r["rule"], r["setting"], r["seed"]): r for r in rows
            if r["task"] == task and r["allocator"] == bandit}
    out = []
    for rule, st in variants:
        seeds = sorted(s for (ru, se, s) in runs if (ru, se) == (rule, st)
                       and (*base, s) in runs)
        if not seeds:
            continue
        pairs = [(runs[(rule, st, s)], runs[(*base, s)]) for s in seeds]
        d = np.array([a["best"] - b["best"] for a, b in pairs])
        _, boot = bootstrap({"d": d}, len(seeds))
        lo, hi = np.percentile(boot["d"], [2.5, 97.5])
        span = np.mean([a["makespan"] / b["makespan"] for a, b in pairs])
        out.append((rule if st == base[1] else st, str(len(seeds)),
                    f"{np.mean([a['best'] for a, _ in pairs]):.4f}",
                    f"{d.mean():+.4f} [{lo:+.4f}, {hi:+.4f}]", f"{span:.2f}",
                    f"{np.mean([a['untold'] for a, _ in pairs]):.1f}"))
    return out


def table(head: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--budget", type=int, default=128)
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--capability", type=float, default=1.0, help="the simulated model's")
    p.add_argument("--tasks", default="min_max_distance,circle_packing,heilbronn_triangle")
    p.add_argument("--allocators", default="ucb,thompson_plain,exp3p")
    p.add_argument("--rules", default="mean,none,zero,cap,wait")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/concurrency_study.jsonl.gz"),
                   help="JSON lines, gzip when it ends in .gz; appended, so a rerun resumes")
    args = p.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    bandits = [a for a in args.allocators.split(",") if a]
    rules = [r for r in args.rules.split(",") if r]
    rows: list[dict[str, Any]] = []
    opener: Any = gzip.open if args.out.suffix == ".gz" else open
    if args.out.exists():
        with opener(args.out, "rt") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
    key = ("task", "allocator", "rule", "setting", "seed", "budget", "arms", "capability")
    done = {tuple(r[k] for k in key) for r in rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with opener(args.out, "at") as fh:
        for task in tasks:
            sim, start = SimulatedLLM(task, capability=args.capability), initial_score(task)
            jobs = [("random", "mean", st) for st in SETTINGS]
            jobs += [(b, "mean", st) for b in bandits for st in SETTINGS]
            jobs += [(b, r, st) for b in bandits for r in rules if r != "mean"
                     for st in RULE_SETTINGS]
            for seed in range(args.seeds):
                for alloc, rule, st in jobs:
                    k = (task, alloc, rule, st, seed, args.budget, args.arms, args.capability)
                    if k in done:
                        continue
                    res = run_one(sim, start, alloc, rule, st, seed, args.arms, args.budget)
                    row = dict(zip(key, k, strict=True)) | res
                    rows.append(row)
                    fh.write(json.dumps(row) + "\n")
    print(f"{len(rows)} runs in {args.out} ({time.time() - t0:.0f} s this call)\n")
    sel = [r for r in rows if r["budget"] == args.budget and r["arms"] == args.arms
           and r["capability"] == args.capability]
    head = ("setting", "seeds", "bandit mean best", "random mean best", "edge [95% CI]",
            "kept of seq [95% CI]", "makespan (latencies)")
    rhead = ("rule", "seeds", "mean best", "vs mean [95% CI]", "makespan / mean's",
             "untold at a decision")
    for task in tasks:
        for b in bandits:
            print(f"### {task}, {b}, rule mean\n")
            print(table(head, edge_rows(sel, task, b, "mean", list(SETTINGS))) + "\n")
            windows = [("mean", st) for st in SETTINGS if st.startswith("det16w")]
            print(f"#### {task}, {b}: windows at 16 in flight against the default (24)\n")
            whead = ("window", "seeds", "mean best", "vs W = 24 [95% CI]",
                     "makespan / W = 24's", "untold at a decision")
            print(table(whead, paired_rows(sel, task, b, windows,
                                                           ("mean", "det16"))) + "\n")
            for st in RULE_SETTINGS:
                print(f"#### {task}, {b}: rules at {st}\n")
                print(table(rhead, paired_rows(sel, task, b, [(r, st) for r in rules],
                                               ("mean", st))) + "\n")
                print(table(head, [r for ru in rules if ru != "mean" for r in
                                   [(f"{ru}: " + x[0], *x[1:]) for x in
                                    edge_rows(sel, task, b, ru, [st])]]) + "\n")


if __name__ == "__main__":
    main()
