"""BaSE concurrency benchmark (issues 5 and 9): wall time vs the saturated-server bound,
and whether the bandit still chooses.

BaSE with K trajectories, greedy N = 1, budget C, against the local OpenAI-compatible
test server with a fixed reply latency L.  Since issue 9 the trajectories are
asynchronous and share the slots (every free slot is an allocator decision over all K
arms), so the goal is a saturated server:

    bound = C * L / max_in_flight        (issue 9; the old goal was C*L / min(K, 16))

Targets (issue 9): wall <= 1.10 x bound at L = 1 s and <= 1.20 x at L = 0.25 s, for
max_in_flight = 16; issue 23 (the LLM slot freed when the reply arrives): <= 1.10 x at
L = 0.25 s with ``programs`` replies, ``decisions_with_choice`` >= 0.9, UCB's share on the
best arm (``marked``) no lower than before, and with ``--deterministic`` (issue order)
wall <= 1.15 x the arrival order's at 16 slots with jittered latency.  The same run with max_in_flight = 1 (sequential Algorithm 2) has the
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
        [--allocator ucb] [--skip-sequential] [--latency-jitter J] [--deterministic]
        [--compare-orders] [--baseline-src DIR --repeat N]

Issue 23 adds: ``--latency-jitter J`` (each reply after ``L * U[1-J, 1+J]``, so replies
overtake each other), ``--deterministic`` (results told in issue order) and
``--compare-orders`` (every row in arrival *and* issue order: the price of head-of-line
waiting), and ``--baseline-src DIR``: every row also with the engine of another source
tree (``git archive COMMIT src | tar -x -C DIR``), alternating with this one ``--repeat``
times in fresh processes, so a before/after is measured in one invocation on the same
load.

Prints one row per configuration and a JSON line at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socketserver
import sqlite3
import statistics
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
    jitter = {"latency_jitter": args.latency_jitter} if args.latency_jitter else {}
    if args.server == "thread":
        fn = {"marked": ArmMarkedReplies(arms=args.arms, run_seed=0, budget=args.budget),
              "programs": reply, "text": text_reply}[args.replies]
        with LLMTestServer(fn, latency_s=args.latency, **jitter) as srv:
            yield srv.base_url, lambda: len(srv.requests)
        return
    expr = REPLY_EXPR[args.replies].format(arms=args.arms, budget=args.budget)
    extra = f", latency_jitter={args.latency_jitter}" if args.latency_jitter else ""
    boot = ("import socketserver, sys\n"
            f"socketserver.StreamRequestHandler.disable_nagle_algorithm = {not args.nagle}\n"
            "from basevolve.testing import LLMTestServer\n"
            "from basevolve.testing.replies import ArmMarkedReplies, seeded_packing_reply\n"
            f"with LLMTestServer({expr}, latency_s={args.latency}, record=False{extra}) as s:\n"
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


def one_run(tmp: Path, args: argparse.Namespace, max_in_flight: int,
            deterministic: bool = False) -> dict[str, Any]:
    run_id = f"mif{max_in_flight}" + ("-det" if deterministic else "")
    db = tmp / "bench.db"
    with server(args, tmp) as (base_url, n_requests):
        argv = ["run", "--task", "circle_packing", "--budget", str(args.budget),
                "--allocator", args.allocator, "--arms", str(args.arms),
                "--model", "bench-model", "--params", "1e9", "--base-url", base_url,
                "--store", str(db), "--max-in-flight", str(max_in_flight),
                "--seed", "0", "--run-id", run_id, "--out", str(tmp / run_id), "--json",
                *(["--deterministic"] if deterministic else [])]
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
    return {"max_in_flight": max_in_flight, "order": "issue" if deterministic else "arrival",
            "requests": summary["calls_completed"] if requests < 0 else requests,
            "peak_in_flight": peak, "wall_s": round(wall, 3), "outer_s": round(outer, 3),
            "calls_span_s": round(span, 3), "mean_call_s": round(mean_call, 3),
            "bound_s": round(bound, 3), "wall_over_bound": round(wall / bound, 3),
            "span_over_bound": round(span / bound, 3), "best_score": summary["best_score"],
            "calls_per_arm": calls, "top_arm_share": round(max(shares), 3),
            "best_arm_share": round(shares[0], 3),  # marked replies: arm 0 is the best
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
    p.add_argument("--latency-jitter", type=float, default=0.0, metavar="J",
                   help="each reply after latency x U[1-J, 1+J] (replies overtake each other)")
    p.add_argument("--deterministic", action="store_true",
                   help="run with --deterministic (results told in issue order)")
    p.add_argument("--compare-orders", action="store_true",
                   help="every row in arrival order and in issue order (--deterministic)")
    p.add_argument("--baseline-src", type=Path, metavar="DIR",
                   help="also run every row with the engine of DIR/src, alternating with this "
                        "tree's, in fresh processes (a before/after on the same load)")
    p.add_argument("--repeat", type=int, default=1, help="with --baseline-src: alternations")
    p.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.compare_orders:  # each order in a fresh process: the same imports and pool start
        rows = []
        for det in (False, True):
            child = argparse.Namespace(**{**vars(args), "compare_orders": False,
                                          "deterministic": det})
            done = subprocess.run([sys.executable, __file__, *child_argv(child)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"run failed: {done.stderr.strip()[-2000:]}")
            rows += json.loads(done.stdout.strip().splitlines()[-1])
        return sorted(rows, key=lambda r: -r["max_in_flight"])
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for mif in (16,) if args.skip_sequential else (16, 1):
            rows.append(one_run(Path(d), args, mif, args.deterministic))
    return rows


def child_argv(args: argparse.Namespace) -> list[str]:
    """This invocation's row options, for a fresh process (``--baseline-src``)."""
    argv = ["--arms", str(args.arms), "--budget", str(args.budget), "--latency",
            str(args.latency), "--allocator", args.allocator, "--replies", args.replies,
            "--server", args.server, "--rows-only"]
    flags = [("--nagle", args.nagle), ("--skip-sequential", args.skip_sequential),
             ("--deterministic", args.deterministic), ("--compare-orders", args.compare_orders)]
    argv += [f for f, on in flags if on]
    return argv + (["--latency-jitter", str(args.latency_jitter)] if args.latency_jitter else [])


def before_after(args: argparse.Namespace) -> int:
    """Rows of the engine in ``--baseline-src`` and of this tree, alternating."""
    trees = [("before", args.baseline_src.resolve() / "src"),
             ("after", Path(__file__).resolve().parents[1] / "src")]
    rows: list[dict[str, Any]] = []
    for rep in range(args.repeat):
        for label, src in trees:
            env = {**os.environ, "PYTHONPATH": str(src)}
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, __file__, *child_argv(args)], env=env,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{label} run failed: {done.stderr.strip()[-2000:]}")
            for r in json.loads(done.stdout.strip().splitlines()[-1]):
                rows.append({"engine": label, "rep": rep, "load": round(load, 2), **r})
    print(f"BaSE K={args.arms} N=1 C={args.budget} latency={args.latency}s jitter="
          f"{args.latency_jitter} allocator={args.allocator} replies={args.replies}; "
          f"before = {args.baseline_src}, after = this tree; {args.repeat} alternations")
    print(f"{'engine':>6} {'rep':>3} {'load':>5} {'mif':>3} {'order':>7} {'peak':>4} "
          f"{'wall/bound':>10} {'span/bound':>10} {'choice':>6} {'best':>5}  calls per arm")
    for r in rows:
        dwc = r["decisions_with_choice"]
        print(f"{r['engine']:>6} {r['rep']:>3} {r['load']:>5.2f} {r['max_in_flight']:>3} "
              f"{r.get('order', 'arrival'):>7} {r['peak_in_flight']:>4} "
              f"{r['wall_over_bound']:>10.3f} {r['span_over_bound']:>10.3f} "
              f"{'-' if dwc is None else f'{dwc:.2f}':>6} {r['best_arm_share']:>5.2f}  "
              f"{r['calls_per_arm']}")
    medians = {}
    for key in sorted({(r["engine"], r["max_in_flight"], r.get("order", "arrival"))
                       for r in rows}):
        group = [r for r in rows if (r["engine"], r["max_in_flight"],
                                     r.get("order", "arrival")) == key]
        medians["/".join(map(str, key))] = {
            k: statistics.median(r[k] for r in group)
            for k in ("wall_over_bound", "span_over_bound", "best_arm_share")}
        print("median", key, medians["/".join(map(str, key))])
    print(json.dumps({"rows": rows, "medians": medians}))
    return 0


def main_bench() -> int:
    args = parse()
    if args.baseline_src is not None:
        return before_after(args)
    rows = measure(args)
    if args.rows_only:
        print(json.dumps(rows))
        return 0
    print(f"BaSE K={args.arms} N=1 C={args.budget} latency={args.latency}s "
          f"jitter={args.latency_jitter} "
          f"allocator={args.allocator} replies={args.replies} server={args.server} "
          f"nagle={'on' if args.nagle else 'off'}")
    print(f"{'max_in_flight':>13} {'order':>7} {'requests':>8} {'peak':>5} {'wall_s':>8} {'span_s':>8} "
          f"{'call_s':>7} {'bound_s':>8} {'wall/bound':>10} {'span/bound':>10} "
          f"{'choice':>6} {'top':>5} {'HHI':>5}  calls per arm")
    for r in rows:
        dwc = r["decisions_with_choice"]
        print(f"{r['max_in_flight']:>13} {r['order']:>7} {r['requests']:>8} {r['peak_in_flight']:>5} "
              f"{r['wall_s']:>8.3f} {r['calls_span_s']:>8.3f} {r['mean_call_s']:>7.3f} "
              f"{r['bound_s']:>8.3f} {r['wall_over_bound']:>10.3f} {r['span_over_bound']:>10.3f} "
              f"{'-' if dwc is None else f'{dwc:.2f}':>6} {r['top_arm_share']:>5.2f} "
              f"{r['herfindahl']:>5.2f}  {r['calls_per_arm']}")
    print("wall = the engine's run time (incl. setup and the initial program's evaluation); "
          "span = first call sent -> last call completed; call_s = mean send -> completion")
    target = 1.10  # issue 9 at 1 s; issue 23 at 0.25 s (was 1.20)
    result: dict[str, Any] = {"arms": args.arms, "budget": args.budget, "latency_s": args.latency,
                              "latency_jitter": args.latency_jitter,
                              "allocator": args.allocator, "replies": args.replies,
                              "server": args.server, "nagle": args.nagle, "runs": rows,
                              "target": target,
                              "target_met": rows[0]["wall_over_bound"] <= target}
    seq = [r for r in rows if r["max_in_flight"] == 1]
    if seq:
        result["sequential_over_concurrent"] = round(seq[0]["wall_s"] / rows[0]["wall_s"], 2)
        print(f"one arm at a time (max_in_flight=1) is {result['sequential_over_concurrent']}x "
              f"slower than max_in_flight=16")
    by_order = {r["order"]: r for r in rows if r["max_in_flight"] == 16}
    if len(by_order) == 2:  # issue 23: the price of head-of-line waiting
        result["issue_over_arrival"] = round(
            by_order["issue"]["wall_over_bound"] / by_order["arrival"]["wall_over_bound"], 3)
        print(f"told in issue order (--deterministic): wall/bound "
              f"{by_order['issue']['wall_over_bound']:.3f} = {result['issue_over_arrival']}x "
              f"the arrival order's {by_order['arrival']['wall_over_bound']:.3f}")
    result["allocator_cpu_us_per_pull"] = allocator_cpu_us(args.arms)
    print("allocator CPU per pull (ask + tell + 2 summaries), us:",
          ", ".join(f"{k} {v}" for k, v in result["allocator_cpu_us_per_pull"].items()))
    print(f"target wall <= {target:.2f} x bound: {'met' if result['target_met'] else 'NOT met'}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
