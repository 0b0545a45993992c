"""Sweep throughput benchmark (issue 11): a grid's wall time vs the server bound.

Grid: greedy, C = 32, T in {1, 2, 4, 8, 16, 32} (N = 32 ... 1), 10 seeds = 60 runs,
1920 calls, one endpoint with a 16-slot limit, the OpenAI-compatible test server (its
own process) answering every call after ``--latency`` seconds (0.5 s) with a valid
circle-packing program, so every child is parsed, sandboxed and scored.  No schedule
can beat

    server bound = total service time / slots = calls x latency / 16

Target (issue 11): sweep wall <= 1.15 x bound.  Printed beside it: the same runs one
after another (each run alone, ``max_in_flight`` 16 as ``basevolve run``), measured
for the first ``--sequential-seeds`` seeds and scaled to all seeds (runs of other seeds
cost the same: same C, T, N and latency), with the arithmetic bound of that schedule:
sum over runs of its sequential rounds x latency.

    python benchmarks/sweep_throughput.py [--latency 0.5] [--seeds 10] [--sequential-seeds 1]
        [--replies program|text]

The sweep's wall is measured from the first call sent to the last call completed (from
the store's call times; sandbox pool start-up and imports excluded, as for the bound),
and also end to end.  Prints a table and a JSON line.
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

from basevolve.testing.process import server_process
from basevolve.testing.replies import PACKING_PROGRAM

SLOTS = 16
BUDGET = 32


def replies_file(tmp: Path, text: bool) -> str:
    """The server's replies: valid packing programs, or (text) no program at all."""
    replies = ["```python\n" + PACKING_PROGRAM.format(scale=0.3 + 0.07 * i) + "```\n"
               for i in range(10)]
    if text:  # no program: nothing is sandboxed, the gap to the bound is scheduling + HTTP
        replies = [f"No program this time ({i})." for i in range(10)]
    (tmp / "replies.json").write_text(json.dumps(replies))
    return str(tmp / "replies.json")


def grid(url: str, seeds: int) -> str:
    return f"""
[sweep]
name = "throughput"
[[endpoints]]
base_url = "{url}"
limit = {SLOTS}
[[grid]]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
budget = {BUDGET}
depth = "powers-of-2"
seeds = {seeds}
"""


def call_span(db: Path) -> tuple[float, int, float]:
    """(first send -> last completion, calls, summed call latency) from the store.

    ``latency_s`` is measured inside the endpoint's slot, so the sum is the service time
    the server actually gave (HTTP and client overhead included).
    """
    con = sqlite3.connect(db)
    try:
        spans = con.execute("SELECT created_at, completed_at, latency_s FROM calls").fetchall()
    finally:
        con.close()
    span = max(e for _, e, _ in spans) - min(s for s, _, _ in spans)
    return span, len(spans), sum(x for _, _, x in spans if x)


def rounds(depth: int) -> int:
    """Sequential rounds of one run alone: T generations of ceil(N / 16) waves each."""
    n = BUDGET // depth
    return depth * -(-n // SLOTS)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--replies", choices=("program", "text"), default="program",
                    help="text: replies without a program (no sandbox work)")
    ap.add_argument("--sequential-seeds", type=int, default=1,
                    help="seeds whose runs are also run one after another (0 = skip)")
    args = ap.parse_args()
    from basevolve.config import RunConfig
    from basevolve.engine import start_run
    from basevolve.sweep import load_sweep, run_sweep

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        replies = replies_file(tmp, args.replies == "text")
        with server_process("--replies-file", replies, latency=args.latency) as url:
            cfg = tmp / "grid.toml"
            cfg.write_text(grid(url, args.seeds))
            sweep = load_sweep(cfg)
            t0 = time.perf_counter()
            res = run_sweep(cfg, tmp / "sweep.sqlite", live=False)
            end_to_end = time.perf_counter() - t0
            assert not res.failed, res.failed
            span, calls, service = call_span(tmp / "sweep.sqlite")
            peak = res.endpoints[url.rstrip("/")]["peak"]  # slots held = server in flight
            seq = None
            if args.sequential_seeds:
                t1 = time.perf_counter()
                for run in sweep.runs:
                    if run.config.seed >= args.sequential_seeds:
                        continue
                    c: RunConfig = run.config.with_(run_id=run.run_id + "-alone")
                    start_run(c, tmp / "alone.sqlite")
                seq = (time.perf_counter() - t1) * args.seeds / args.sequential_seeds
    bound = calls * args.latency / SLOTS
    seq_bound = sum(rounds(r.config.depth) for r in sweep.runs) * args.latency
    load = os.getloadavg()
    rows = [
        ("runs / calls", f"{len(sweep.runs)} / {calls}"),
        ("server bound (calls x latency / 16)", f"{bound:.1f} s"),
        ("sweep: first send -> last completion", f"{span:.1f} s  ({span / bound:.3f} x bound)"),
        ("sweep: end to end (pool start-up incl.)",
         f"{end_to_end:.1f} s  ({end_to_end / bound:.3f} x bound)"),
        ("sweep: peak calls in flight (limiter)", str(peak)),
        ("measured service time / 16 (slot busy)",
         f"{service / SLOTS:.1f} s  (mean call {service / calls:.3f} s; slots busy "
         f"{service / (SLOTS * span):.0%} of the span)"),
        ("one after another: arithmetic bound", f"{seq_bound:.1f} s  "
                                                 f"({seq_bound / bound:.2f} x bound)"),
    ]
    if seq is not None:
        rows.append((f"one after another: measured ({args.sequential_seeds} seed(s), "
                     f"scaled x{args.seeds / args.sequential_seeds:g})",
                     f"{seq:.1f} s  ({seq / span:.2f} x the sweep)"))
    rows.append(("load average (1/5/15 min)", " ".join(f"{x:.2f}" for x in load)))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(json.dumps({"replies": args.replies, "runs": len(sweep.runs), "calls": calls, "latency_s": args.latency,
                      "bound_s": round(bound, 2), "sweep_span_s": round(span, 2),
                      "sweep_end_to_end_s": round(end_to_end, 2),
                      "ratio": round(span / bound, 3), "peak_in_flight": peak,
                      "measured_service_bound_s": round(service / SLOTS, 2),
                      "sequential_bound_s": seq_bound,
                      "sequential_s": None if seq is None else round(seq, 1),
                      "loadavg": load}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
