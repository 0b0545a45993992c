"""BaSE concurrency benchmark (issues 5 and 9): wall time vs the saturated-server bound,
and whether the bandit still chooses.

BaSE with K trajectories, greedy N = 1, budget C, against the local OpenAI-compatible
test server with a fixed reply latency L.  Since issue 9 the trajectories are
asynchronous and share the slots (every free slot is an allocator decision over all K
arms), so the goal is a saturated server:

    bound = C * L / max_in_flight        (issue 9; the old goal was C*L / min(K, 16))

Targets (issue 9): wall <= 1.10 x bound at L = 1 s and <= 1.20 x at L = 0.25 s, for
max_in_flight = 16.  The same run with max_in_flight = 1 (sequential Algorithm 2) has the
bound C * L.  Printed besides: the peak calls in flight, ``decisions_with_choice`` (the
fraction of bandit decisions with >= 2 eligible arms), and how concentrated the
allocation is (share of calls on the most-pulled arm, Herfindahl index) next to the same
seed at max_in_flight = 1.

Replies (``--replies``): ``marked`` (default) -- valid circle-packing programs whose
quality depends on the trajectory (:class:`~basevolve.testing.replies.ArmMarkedReplies`:
arm 0 is clearly best), so concentration means something; ``programs`` -- valid packings
with a per-call random radius scale (no best arm); ``text`` -- no program, nothing
sandboxed (engine + allocator overhead only).

    python benchmarks/base_concurrency.py [--arms 10] [--budget 128] [--latency 0.25]
        [--allocator ucb] [--skip-sequential]

Prints one row per configuration and a JSON line at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import socketserver
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import ArmMarkedReplies, seeded_packing_reply

reply = seeded_packing_reply  # valid packings, score = hash of the call's seed


def text_reply(body: dict[str, Any], index: int) -> str:
    return f"No program this time (reply {index})."


def call_timing(db: Path, run_id: str) -> tuple[int, float, float]:
    """(peak calls outstanding, span first send -> last completion, mean call duration),
    from the stored send/complete times of each call."""
    con = sqlite3.connect(db)
    try:
        spans = con.execute("SELECT created_at, completed_at FROM calls WHERE run_id=?",
                            (run_id,)).fetchall()
    finally:
        con.close()
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans if b is not None],
                   key=lambda e: (e[0], e[1]))
    peak = cur = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    mean_call = sum(b - a for a, b in spans) / len(spans)
    return peak, span, mean_call


REPLY_EXPR = {  # built inside the server process, so replies may read the request
    "marked": "ArmMarkedReplies(arms={arms}, run_seed=0, budget={budget})",
    "programs": "seeded_packing_reply",
    "text": "lambda body, i: f'No program this time (reply {{i}}).'",
}


@contextlib.contextmanager
def server(args: argparse.Namespace, tmp: Path) -> Iterator[tuple[str, Callable[[], int]]]:
    """The test server in-process (thread) or as its own process (like a real vLLM)."""
    socketserver.StreamRequestHandler.disable_nagle_algorithm = not args.nagle
    if args.server == "thread":
        fn = {"marked": ArmMarkedReplies(arms=args.arms, run_seed=0, budget=args.budget),
              "programs": reply, "text": text_reply}[args.replies]
        with LLMTestServer(fn, latency_s=args.latency) as srv:
            yield srv.base_url, lambda: len(srv.requests)
        return
    expr = REPLY_EXPR[args.replies].format(arms=args.arms, budget=args.budget)
    boot = ("import socketserver, sys\n"
            f"socketserver.StreamRequestHandler.disable_nagle_algorithm = {not args.nagle}\n"
            "from basevolve.testing import LLMTestServer\n"
            "from basevolve.testing.replies import ArmMarkedReplies, seeded_packing_reply\n"
            f"with LLMTestServer({expr}, latency_s={args.latency}, record=False) as s:\n"
            "    print(s.base_url, flush=True)\n"
            "    sys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", boot], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip(), lambda: -1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def one_run(tmp: Path, args: argparse.Namespace, max_in_flight: int) -> dict[str, Any]:
    run_id = f"mif{max_in_flight}"
    db = tmp / "bench.db"
    with server(args, tmp) as (base_url, n_requests):
        argv = ["run", "--task", "circle_packing", "--budget", str(args.budget),
                "--allocator", args.allocator, "--arms", str(args.arms),
                "--model", "bench-model", "--params", "1e9", "--base-url", base_url,
                "--store", str(db), "--max-in-flight", str(max_in_flight),
                "--seed", "0", "--run-id", run_id, "--out", str(tmp / run_id), "--json"]
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        outer = time.perf_counter() - t0
        if rc != 0:
            sys.exit(f"run failed (rc={rc}): {err.getvalue().strip()}")
        summary = json.loads(out.getvalue().strip().splitlines()[-1])
        requests = n_requests()
    bound = args.budget * args.latency / max_in_flight  # saturated server (issue 9)
    wall = float(summary.get("wall_s", outer))
    peak, span, mean_call = call_timing(db, run_id)
    calls = summary["calls_per_arm"]
    shares = [c / sum(calls) for c in calls]
    return {"max_in_flight": max_in_flight,
            "requests": summary["calls_completed"] if requests < 0 else requests,
            "peak_in_flight": peak, "wall_s": round(wall, 3), "outer_s": round(outer, 3),
            "calls_span_s": round(span, 3), "mean_call_s": round(mean_call, 3),
            "bound_s": round(bound, 3), "wall_over_bound": round(wall / bound, 3),
            "span_over_bound": round(span / bound, 3), "best_score": summary["best_score"],
            "calls_per_arm": calls, "top_arm_share": round(max(shares), 3),
            "herfindahl": round(sum(x * x for x in shares), 3),
            "decisions_with_choice": summary["decisions_with_choice"]}


def allocator_cpu_us(arms: int, pulls: int = 2000) -> dict[str, float]:
    """CPU microseconds per pull (ask + summary + tell, as the engine calls them) per policy."""
    import numpy as np

    from basevolve.allocators import ALLOCATORS

    out = {}
    for name in ALLOCATORS.names():
        k = 1 if name == "single" else arms
        alloc = ALLOCATORS.get(name)(n_arms=k, rng=np.random.default_rng(0), horizon=pulls)
        t0 = time.process_time()
        for i in range(pulls):
            arm = alloc.ask()
            alloc.summary()
            alloc.tell(arm, 0.5 + 0.4 * ((i * 7919) % 13) / 13)
            alloc.summary()
        out[name] = round(1e6 * (time.process_time() - t0) / pulls, 1)
    return out


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", type=int, default=10)
    p.add_argument("--budget", type=int, default=128)
    p.add_argument("--latency", type=float, default=0.25)
    p.add_argument("--allocator", default="ucb")
    p.add_argument("--replies", choices=("marked", "programs", "text"), default="marked",
                   help="marked: packings whose quality depends on the trajectory (arm 0 "
                        "best); programs: valid packings, each sandboxed and scored; "
                        "text: no program, so no sandbox (engine + allocator overhead only)")
    p.add_argument("--server", choices=("process", "thread"), default="process",
                   help="test server as its own process (default, like a real vLLM) or a "
                        "thread of the benchmark process (shares its GIL)")
    p.add_argument("--nagle", action="store_true",
                   help="leave Nagle's algorithm on in the test server (its default; adds a "
                        "~40 ms delayed-ACK stall per keep-alive call); by default the server "
                        "sets TCP_NODELAY like production servers (uvicorn/vLLM) do")
    p.add_argument("--skip-sequential", action="store_true",
                   help="skip the max_in_flight = 1 comparison (C x latency seconds)")
    return p.parse_args()


def main_bench() -> int:
    args = parse()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for mif in (16,) if args.skip_sequential else (16, 1):
            rows.append(one_run(Path(d), args, mif))
    print(f"BaSE K={args.arms} N=1 C={args.budget} latency={args.latency}s "
          f"allocator={args.allocator} replies={args.replies} server={args.server} "
          f"nagle={'on' if args.nagle else 'off'}")
    print(f"{'max_in_flight':>13} {'requests':>8} {'peak':>5} {'wall_s':>8} {'span_s':>8} "
          f"{'call_s':>7} {'bound_s':>8} {'wall/bound':>10} {'span/bound':>10} "
          f"{'choice':>6} {'top':>5} {'HHI':>5}  calls per arm")
    for r in rows:
        dwc = r["decisions_with_choice"]
        print(f"{r['max_in_flight']:>13} {r['requests']:>8} {r['peak_in_flight']:>5} "
              f"{r['wall_s']:>8.3f} {r['calls_span_s']:>8.3f} {r['mean_call_s']:>7.3f} "
              f"{r['bound_s']:>8.3f} {r['wall_over_bound']:>10.3f} {r['span_over_bound']:>10.3f} "
              f"{'-' if dwc is None else f'{dwc:.2f}':>6} {r['top_arm_share']:>5.2f} "
              f"{r['herfindahl']:>5.2f}  {r['calls_per_arm']}")
    print("wall = the engine's run time (incl. setup and the initial program's evaluation); "
          "span = first call sent -> last call completed; call_s = mean send -> completion")
    target = 1.10 if args.latency >= 1.0 else 1.20  # issue 9: 1 s -> 1.10, 0.25 s -> 1.20
    result: dict[str, Any] = {"arms": args.arms, "budget": args.budget, "latency_s": args.latency,
                              "allocator": args.allocator, "replies": args.replies, "server": args.server, "nagle": args.nagle, "runs": rows,
                              "target": target,
                              "target_met": rows[0]["wall_over_bound"] <= target}
    if len(rows) == 2:
        result["sequential_over_concurrent"] = round(rows[1]["wall_s"] / rows[0]["wall_s"], 2)
        print(f"one arm at a time (max_in_flight=1) is {result['sequential_over_concurrent']}x "
              f"slower than max_in_flight=16")
    result["allocator_cpu_us_per_pull"] = allocator_cpu_us(args.arms)
    print("allocator CPU per pull (ask + tell + 2 summaries), us:",
          ", ".join(f"{k} {v}" for k, v in result["allocator_cpu_us_per_pull"].items()))
    print(f"target wall <= {target:.2f} x bound: {'met' if result['target_met'] else 'NOT met'}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
