"""Several objectives under a fixed budget (issue 36, item 6): does BaSE rewarded by
hypervolume push the Pareto front out further than round-robin, or than BaSE on a
scalarised single objective, at equal C?

Task: ``examples/pareto_bin_packing/task.py`` (quality max, CPU ms of ``pack`` min, the
CPU time measured by the sandbox worker).  Methods, each with K greedy trajectories (N =
1, one call per pull) and the same C, the same seeds, the same simulator:

* ``base-hv``: BaSE (``--allocator ucb``) on the task's two objectives; a pull's reward
  is its trajectory's hypervolume (``--reward best`` on fronts, engine/front_credit.py);
  parents are front members (protocols/front_parents.py); prompts show the vectors.
* ``round-robin``: the same two-objective run with ``--allocator round_robin``: the
  budget split evenly, whatever the fronts do.
* ``scalarised``: BaSE (ucb) on ONE score, ``quality - LAMBDA * cpu_ms`` (a weight
  guessed before the run -- what the issue says users do today), no objectives: greedy's
  parent is the best score, prompts are the single-objective ones.

The LLM is the offline simulator's EVOLVE-block edits (``basevolve simulate-server``'s
replies, :class:`basevolve.testing.sim.block_edits.BlockEditReplies`, served in process
by the repository's OpenAI-protocol test server): seeded edits of constants and operators,
a plumbing check, not a model of search quality.  Edits of ``restarts`` or ``noise``
trade CPU for bins, so fronts do move.

Every run is judged the same way, from its store: the run's final front over all its
valid programs' (quality, cpu_ms) and its hypervolume against ONE reference point for all
runs -- (``REF_QUALITY``, ``REF_CPU_FACTOR`` x the median CPU ms of the runs' initial
programs), fixed after the runs since CPU ms depends on the machine.  Per method: the mean
final hypervolume with a 95% stratified-bootstrap CI and the IQM over seeds
(:func:`basevolve.analysis.describe`), and the differences of means between methods with
CIs from independent bootstraps (:func:`basevolve.analysis.stratified_bootstrap`).

    nice python benchmarks/objectives_bandit.py --budget 24 --arms 4 --seeds 5

CPU times are measured on a shared machine, so a program's vector is noisy; the load
average is printed with the results.  Whatever ordering comes out is reported as is.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from basevolve import run
from basevolve.analysis import bootstrap_estimate, describe, stratified_bootstrap
from basevolve.fronts import hypervolume, nondominated_mask
from basevolve.objectives import parse_objectives
from basevolve.sandbox.session import ProgramSession
from basevolve.tasks import load_task
from basevolve.tasks.base import ScoreResult
from basevolve.testing import LLMTestServer
from basevolve.testing.sim.block_edits import BlockEditReplies

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pareto_bin_packing" / "task.py"
OBJS = parse_objectives({"quality": "max", "cpu_ms": "min"})
LAMBDA = 0.001  # scalarised: 1 ms of CPU is worth 0.001 of quality (a guess, as users make)
REF_QUALITY = 0.90
REF_CPU_FACTOR = 3.0
METHODS = ("base-hv", "round-robin", "scalarised")


def scalarised_task() -> Any:
    """The example with one score, ``quality - LAMBDA * cpu_ms``, and no objectives."""
    base = type(load_task(str(EXAMPLE)))

    class Scalarised(base):  # type: ignore[misc, valid-type]
        name = "pareto_bin_packing_scalarised"
        objectives: ClassVar[dict[str, str]] = {}

        def evaluate_program(self, program: ProgramSession) -> ScoreResult:
            r = super().evaluate_program(program)
            if not r.valid:
                return r
            return ScoreResult(r.metrics["quality"] - LAMBDA * r.metrics["cpu_ms"], True,
                               metrics=r.metrics)

    return Scalarised()


def one_run(method: str, seed: int, args: argparse.Namespace, url: str, store: Path) -> str:
    run_id = f"{method}-s{seed}"
    task = scalarised_task() if method == "scalarised" else str(EXAMPLE)
    allocator = "round_robin" if method == "round-robin" else "ucb"
    run(task, args.budget, allocator=allocator, arms=args.arms, base_url=url, store=store,
        seed=seed + 1, run_id=run_id, progress=False, params=1e9,
        max_in_flight=args.max_in_flight)
    return run_id


def vectors(store: Path, run_id: str) -> tuple[list[tuple[float, ...]], tuple[float, ...]]:
    """(vectors of the run's valid programs, the initial program's vector)."""
    con = sqlite3.connect(store)
    try:
        rows = con.execute("SELECT metrics_json, is_initial FROM programs WHERE run_id=? AND "
                           "valid=1", (run_id,)).fetchall()
    finally:
        con.close()
    assert OBJS is not None
    vecs, initial = [], None
    for metrics, is_initial in rows:
        v = OBJS.vector(json.loads(metrics or "{}"))
        if v is not None:
            vecs.append(v)
            if is_initial:
                initial = v
    assert initial is not None, f"{run_id}: the initial program has no vector"
    return vecs, initial


def calls_per_arm(store: Path, run_id: str) -> list[int]:
    con = sqlite3.connect(store)
    try:
        rows = con.execute("SELECT trajectory, count(*) FROM calls WHERE run_id=? AND counted=1 "
                           "GROUP BY trajectory ORDER BY trajectory", (run_id,)).fetchall()
    finally:
        con.close()
    return [n for _, n in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--arms", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-in-flight", type=int, default=2)
    ap.add_argument("--broken-rate", type=float, default=0.08)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--store", type=Path, default=None, help="keep the runs in this store")
    args = ap.parse_args(argv)
    assert OBJS is not None
    store = args.store or Path(tempfile.mkdtemp(prefix="objectives-bandit-")) / "runs.sqlite"
    load0, t0 = os.getloadavg(), time.monotonic()
    ids: dict[str, list[str]] = {m: [] for m in METHODS}
    with LLMTestServer(BlockEditReplies(broken_rate=args.broken_rate)) as srv:
        for seed in range(args.seeds):
            for m in METHODS:
                ids[m].append(one_run(m, seed, args, srv.base_url, store))
                print(f"  {m} seed {seed} done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    wall, load1 = time.monotonic() - t0, os.getloadavg()
    data = {m: [vectors(store, r) for r in ids[m]] for m in METHODS}
    ref = (REF_QUALITY, REF_CPU_FACTOR * float(np.median(
        [init[1] for runs in data.values() for _, init in runs])))
    hv = {m: np.array([hypervolume(v, ref, OBJS) for v, _ in data[m]]) for m in METHODS}
    hv0 = np.array([hypervolume([init], ref, OBJS) for runs in data.values() for _, init in runs])
    front = {m: [sum(nondominated_mask(v, OBJS)) for v, _ in data[m]] for m in METHODS}
    print(f"C = {args.budget}, K = {args.arms} greedy arms (N = 1), {args.seeds} seeds, "
          f"max_in_flight {args.max_in_flight}, simulator broken rate {args.broken_rate}; "
          f"wall {wall:.0f} s, load average {load0[0]:.1f} -> {load1[0]:.1f} "
          f"({os.cpu_count()} CPUs); store {store}")
    print(f"reference point (quality, cpu_ms) = ({ref[0]:g}, {ref[1]:.3f}); the initial "
          f"program alone: hypervolume {hv0.mean():.5f} (mean over runs)")
    arms = {m: [calls_per_arm(store, r) for r in ids[m]] for m in METHODS}
    print("| method | final HV mean [95% CI] | IQM [95% CI] | front size (mean) | "
          "busiest arm's calls (mean) |")
    print("|---|---|---|---|---|")
    for m in METHODS:
        d = describe(hv[m], rng=np.random.default_rng(0), reps=args.resamples)
        q = bootstrap_estimate(hv[m], "iqm", rng=np.random.default_rng(0), reps=args.resamples)
        print(f"| {m} | {d['mean']:.5f} [{d['ci_low']:.5f}, {d['ci_high']:.5f}] | "
              f"{q.value:.5f} [{q.ci_low:.5f}, {q.ci_high:.5f}] | {np.mean(front[m]):.1f} | "
              f"{np.mean([max(a) for a in arms[m]]):.1f} of {args.budget} |")
    for m in METHODS:
        print(f"calls per arm, {m}: {' '.join(map(str, arms[m]))}")
    print("\n| difference of means | estimate [95% CI] |\n|---|---|")
    for a, b in (("base-hv", "round-robin"), ("base-hv", "scalarised"),
                 ("round-robin", "scalarised")):
        rng = np.random.default_rng(1)
        ra = stratified_bootstrap(hv[a], "mean", rng, args.resamples)
        rb = stratified_bootstrap(hv[b], "mean", rng, args.resamples)
        diff = ra - rb
        lo, hi = np.percentile(diff, [2.5, 97.5])
        print(f"| {a} - {b} | {hv[a].mean() - hv[b].mean():+.5f} [{lo:+.5f}, {hi:+.5f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
