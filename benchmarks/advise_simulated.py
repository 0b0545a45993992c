"""The budget advisor against a held-out budget on the simulated LLM (issue 16, item 1).

    python benchmarks/advise_simulated.py [--task min_max_distance] [--fit-budgets 8,16,32]
        [--held-out 64] [--seeds 3] [--capability 1] [--workers 2]

A greedy depth-breadth sweep (every power-of-2 depth at each budget) runs through the
real engine, sandbox, scorer and store against ``basevolve simulate-server``
(:mod:`basevolve.testing.sim`); the advisor sees only the ``--fit-budgets`` runs and is
asked for C = ``--held-out``, which is then measured at every depth too.  Printed: the
advice (T*, plateau, recommended depth, expected fitness with its CI) next to what was
measured at the held-out budget (every depth's mean, the best cell, and the measured
mean at the recommended depth).  The simulator is an instrument, not a real LLM; the
comparison is reported as it comes out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from basevolve.analysis.advise import AdviceConfig, advise, jsonable
from basevolve.analysis.tables import load_tables
from basevolve.testing.sim.grid import run_grid


def powers(c: int) -> list[int]:
    return [2**k for k in range(c.bit_length()) if 2**k <= c]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="min_max_distance")
    ap.add_argument("--fit-budgets", default="8,16,32")
    ap.add_argument("--held-out", type=int, default=64)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--capability", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None, help="write advice and measurements here")
    args = ap.parse_args()
    fit_budgets = [int(x) for x in args.fit_budgets.split(",")]
    model = f"sim-cap{args.capability:g}"
    jobs = []
    for c in [*fit_budgets, args.held_out]:
        for t in powers(c):
            for s in range(args.seeds):
                jobs.append({"config": {"task": args.task, "budget": c, "depth": t, "seed": s,
                                        "model": model, "params": 8e9, "max_in_flight": 16,
                                        "run_id": f"{args.task}-C{c}-T{t}-s{s}"},
                             "capability": args.capability,
                             "tags": {"budget": c, "depth": t}})
    calls = sum(j["config"]["budget"] for j in jobs)
    print(f"{len(jobs)} runs, {calls} LLM calls", file=sys.stderr)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_grid(jobs, Path(tmp), workers=args.workers)
    wall = time.perf_counter() - t0
    df = pd.DataFrame(rows)
    runs = pd.DataFrame({
        "run_id": df["run_id"], "task": args.task, "model": model, "protocol": "greedy",
        "allocator": "single", "arms": 1, "budget": df["budget"], "depth": df["depth"],
        "breadth": df["budget"] // df["depth"], "seed": df["seed"], "fitness": df["fitness"],
        "flops": float("nan")})
    seen = runs[runs["budget"] != args.held_out]
    a = advise(load_tables(input=seen), args.task, model, args.held_out, AdviceConfig())
    held = (runs[runs["budget"] == args.held_out].groupby("depth")["fitness"]
            .agg(["mean", "std", "size"]).reset_index())
    best = held.loc[held["mean"].idxmax()]
    print(f"\n{args.task}, simulated capability {args.capability:g}: advisor fitted on C in "
          f"{fit_budgets} x all depths x {args.seeds} seeds, asked for C = {args.held_out} "
          f"({len(jobs)} runs, {calls} calls, {wall:.0f} s)")
    out = {"advice": jsonable(a), "held_out": held.to_dict(orient="records"),
           "best_depth": int(best["depth"]), "best_mean": float(best["mean"]), "wall_s": wall}
    if a.get("fit"):
        f = a["fit"]
        print(f"  fit: a {f['a']:.3f}  b {f['b']:.3f}  c {f['c']:.3f}  R^2 {f['r2']:.3f}")
    if a.get("gate"):
        print(f"  gate at C={a['gate']['budget']}: p = {a['gate']['p']:.4f}")
    if not a["can_advise"]:
        print("  advisor REFUSED: " + "; ".join(r["message"] for r in a["refusals"]))
    else:
        d, e = a["depth"], a["expected_fitness"]
        rec = int(d["recommended_depth"])
        at_rec = held[held["depth"] == rec]["mean"]
        out["measured_at_recommended"] = float(at_rec.iloc[0]) if len(at_rec) else None
        print(f"  advice: T* {d['t_star']:.2f} ({d['location']}), plateau "
              f"[{d['plateau'][0]:.2f}, {d['plateau'][1]:.2f}], run T = {rec}; expected "
              f"{e['value']:.4f} [{e['ci_low']:.4f}, {e['ci_high']:.4f}]")
        print(f"  measured at C = {args.held_out}: T = {rec} -> {out['measured_at_recommended']:.4f};"
              f" best cell T = {int(best['depth'])} -> {best['mean']:.4f} "
              f"({'inside' if d['plateau'][0] <= best['depth'] <= d['plateau'][1] else 'outside'}"
              " the plateau)")
    print("  held-out cells: " + ", ".join(f"T={int(r.depth)} {r.mean:.4f}"
                                           for r in held.itertuples()))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
