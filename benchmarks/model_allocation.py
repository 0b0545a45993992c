"""Model allocation under one FLOPs budget (issue 25, part 5): strong only, weak only, a
fixed 80/20 ensemble and the model bandit, on a simulator serving two models at once.

Every method spends the *same* effective-FLOPs budget (``budget_flops``: FLOPs are
``2 P`` per uncached token at the answering model's own size, paper Appendix "Effective
FLOPs"; the engine reserves each call's worst case at the dearest model it may go to, so
no run exceeds the budget).  Methods, one ``[[grid]]`` block each:

* ``strong``: every call to the strong model;
* ``weak``: every call to the weak model (about 8.7x the calls for the same FLOPs);
* ``fixed-80/20``: a seeded draw per call, weak 0.8 / strong 0.2 (the anchors' ensembles);
* ``ucb``, ``ucb/flop``, ``thompson/flop``: the model bandit (``model_allocator``) with
  reward ``improvement`` (ShinkaEvolve's) or ``improvement_per_flop`` (the gain per
  effective FLOP relative to the weak model: fair under a FLOPs budget).

The trajectory side is the paper's greedy single trajectory (T = C, N = 1), so the only
decision that differs is which model answers.  The models (``--weak``/``--strong``,
``NAME=CAPABILITY:PARAMS``) default to ``weak=0.5:1.7e9`` and ``strong=2:14.8e9``:
the simulator's capability scale has 1 as "the paper's model"; 0.5 and 2 are one step
below and above it, and the sizes are those of Qwen3-1.7B and Qwen3-14B, the paper's
family, so FLOPs per token differ by their real ratio (8.7x).  These were chosen before
any run and not changed after: the simulator is an instrument, never tuned toward a
result.

The grid is one ``basevolve sweep`` file (``model-allocation.toml`` in ``--out``;
issue 25's sweep ``models`` key), one simulator per task serving both models on one
port; the final best fitness per run, calls per model and FLOPs spent are read from the
runs' summaries.  Per (task, method) it prints the mean with its 95% bootstrap CI, the
IQM with its 95% bootstrap CI (``basevolve.analysis.cell_stats`` / ``bootstrap_estimate``
with the cell's own seeded generator), calls per model and the FLOPs spent.

    python benchmarks/model_allocation.py --quick   # 1 task, 3 seeds, 1e15 FLOPs
    python benchmarks/model_allocation.py           # circle_packing + min_max_distance,
                                                    # 10 seeds, 3e15 FLOPs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from basevolve.analysis.stats import bootstrap_estimate, cell_generator, cell_stats
from basevolve.sweep import load_sweep, run_sweep
from basevolve.testing.sim import simulated_server
from basevolve.testing.sim.served import ServedModel

#: method -> (how its models are given, model_allocator, model_reward)
METHODS: dict[str, tuple[str, str | None, str | None]] = {
    "strong": ("strong", None, None),
    "weak": ("weak", None, None),
    "fixed-80/20": ("both-80/20", None, None),
    "ucb": ("both", "ucb", "improvement"),
    "ucb/flop": ("both", "ucb", "improvement_per_flop"),
    "thompson/flop": ("both", "thompson", "improvement_per_flop"),
}


def parse_model(spec: str) -> tuple[str, float, float]:
    name, _, rest = spec.partition("=")
    cap, _, params = rest.partition(":")
    return name, float(cap), float(params)


def sweep_file(tasks: list[str], urls: list[str], weak: tuple[str, float, float],
               strong: tuple[str, float, float], flops: float, seeds: int,
               max_tokens: int, methods: list[str]) -> str:
    w = f"{weak[0]},params={weak[2]:g}"
    s = f"{strong[0]},params={strong[2]:g}"
    sets = {weak[0]: [w], strong[0]: [s], "weak": [w], "strong": [s],
            "both-80/20": [f"{w},weight=0.8", f"{s},weight=0.2"], "both": [w, s]}
    lines = ['[sweep]', 'name = "model-allocation"', "", "[defaults]",
             f"task = {json.dumps(tasks)}", f"base_url = {json.dumps(urls)}",
             f"budget_flops = {flops:g}", "breadth = 1", f"max_tokens = {max_tokens}",
             f"seeds = {seeds}", ""]
    for m in methods:
        which, alloc, reward = METHODS[m]
        lines += ["[[grid]]", f"# {m}", f"models = {json.dumps(sets[which])}",
                  'zip = [["task", "base_url"]]']
        if alloc:
            lines += [f'model_allocator = "{alloc}"', f'model_reward = "{reward}"']
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tasks", nargs="+")
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--budget-flops", type=float)
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--weak", default="weak=0.5:1.7e9")
    ap.add_argument("--strong", default="strong=2:14.8e9")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--out", help="folder for the sweep file and store (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="also print one JSON line")
    a = ap.parse_args(argv)
    tasks = a.tasks or (["circle_packing"] if a.quick else ["circle_packing",
                                                            "min_max_distance"])
    seeds = a.seeds or (3 if a.quick else 10)
    flops = a.budget_flops or (1e15 if a.quick else 3e15)
    weak, strong = parse_model(a.weak), parse_model(a.strong)
    out = Path(a.out or tempfile.mkdtemp(prefix="model-allocation-"))
    out.mkdir(parents=True, exist_ok=True)
    store = out / "model-allocation.sqlite"
    load0, t0 = os.getloadavg(), time.monotonic()
    with ExitStack() as stack:
        urls = [stack.enter_context(simulated_server(t, models={
            weak[0]: ServedModel(weak[1], weak[2]),
            strong[0]: ServedModel(strong[1], strong[2])}).start()).base_url for t in tasks]
        cfg = out / "model-allocation.toml"
        cfg.write_text(sweep_file(tasks, urls, weak, strong, flops, seeds, a.max_tokens,
                                  a.methods))
        result = run_sweep(load_sweep(cfg), store, live=False)
    wall, load1 = time.monotonic() - t0, os.getloadavg()
    if result.failed:
        print(f"failed runs: {result.failed}", file=sys.stderr)
        return 1
    rows = table(result, a.methods)
    print(f"# budget_flops {flops:g} per run, greedy T = C (N = 1), {seeds} seeds; "
          f"weak {a.weak}, strong {a.strong}; max_tokens {a.max_tokens}")
    print(f"# wall {wall:.0f} s; load average before {load0[0]:.2f}, after {load1[0]:.2f}; "
          f"store {store}")
    print("| task | method | n | mean [95% CI] | IQM [95% CI] | calls weak / strong | "
          "FLOPs spent (of budget) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['method']} | {r['n']} | {r['mean']:.4f} "
              f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}] | {r['iqm']:.4f} "
              f"[{r['iqm_low']:.4f}, {r['iqm_high']:.4f}] | "
              f"{r['calls'].get(weak[0], 0):.1f} / {r['calls'].get(strong[0], 0):.1f} | "
              f"{r['flops']:.3g} ({r['flops'] / flops:.0%}) |")
    if a.json:
        print(json.dumps({"budget_flops": flops, "seeds": seeds, "wall_s": wall,
                          "load": [load0[0], load1[0]], "rows": rows}))
    return 0


def table(result: Any, methods: list[str]) -> list[dict[str, Any]]:
    """Per (task, method): the final best fitness's mean/IQM with CIs, mean calls per
    model and mean FLOPs spent, from each run's summary."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in result.sweep.runs:
        summary = result.outcomes[run.run_id]["summary"]
        cells.setdefault((run.config.task, methods[run.block]), []).append(summary)
    rows = []
    for (task, method), summaries in cells.items():
        best = np.array([float(s["best_score"]) for s in summaries])
        st = cell_stats(best)
        iqm = bootstrap_estimate(best, "iqm", cell_generator(best))
        calls: dict[str, float] = {}
        for s in summaries:
            for m in s["models"]:
                calls[m["model"]] = calls.get(m["model"], 0.0) + m["calls"] / len(summaries)
        rows.append({"task": task, "method": method, "n": len(best), "mean": st["mean"],
                     "ci_low": st["ci_low"], "ci_high": st["ci_high"], "iqm": st["iqm"],
                     "iqm_low": iqm.ci_low, "iqm_high": iqm.ci_high, "calls": calls,
                     "flops": float(np.mean([s["flops"] for s in summaries])),
                     "scores": best.tolist()})
    return rows


if __name__ == "__main__":
    sys.exit(main())
