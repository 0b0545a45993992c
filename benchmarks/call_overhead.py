"""Call overhead of function tasks (issue 21): one sandboxed call, and a 1,000-call evaluation.

A function task's trusted evaluator calls the sandboxed program once per instance (a
bin-packing heuristic: once per item), so the round trip of one call is what such a task
pays per instance.  Measured side by side in one run, as the caller sees it:

* ``in-process``: calling the same function directly in this process (the floor);
* ``session call``: ``ProgramSession.call`` on a warm session (median and p95 of single
  calls, a small argument and a 100-float numpy array);
* ``1,000-call evaluation``: open a session, make 1,000 calls, close it; the *marginal*
  per-call cost is (T(1,000 calls) - T(0 calls)) / 1,000, i.e. without the session's
  fixed open/close cost, which is reported separately;
* ``one-shot evaluation``: ``SandboxPool.run`` (one fork per evaluation) for scale.

Issue 21 target: <= 0.5 ms per call, marginal, warm.  No assertion (performance is not a
test)::

    python benchmarks/call_overhead.py [--calls 1000] [--repeats 5] [--isolation auto] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from basevolve.sandbox import SandboxConfig, SandboxPool

PROGRAM = """
import numpy as np

def ident(x):
    return x

def priority(item, bins):
    return -(bins - item)
"""
TARGET_MS = 0.5


def _evaluation_s(pool: SandboxPool, calls: int, arg: object) -> float:
    t0 = time.perf_counter()
    with pool.session(PROGRAM, timeout_s=600, call_timeout_s=10) as program:
        for _ in range(calls):
            r = program.call("ident", arg)
            assert r.ok, r
    return time.perf_counter() - t0


def _single_calls_ms(pool: SandboxPool, n: int, *args: object, fn: str = "ident") -> list[float]:
    with pool.session(PROGRAM, timeout_s=600, call_timeout_s=10) as program:
        for _ in range(50):  # warm-up: caches, branch predictors, the worker's first pages
            program.call(fn, *args)
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            r = program.call(fn, *args)
            out.append((time.perf_counter() - t0) * 1e3)
            assert r.ok, r
    return out


def _p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000, help="calls per evaluation")
    ap.add_argument("--repeats", type=int, default=5, help="evaluations per series (median)")
    ap.add_argument("--isolation", default="auto", choices=["auto", "bwrap", "rlimits"])
    ap.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    args = ap.parse_args()

    ns: dict = {}
    exec(compile(PROGRAM, "program.py", "exec"), ns)
    t0 = time.perf_counter()
    for i in range(args.calls):
        ns["ident"](i)
    in_process_ms = (time.perf_counter() - t0) * 1e3 / args.calls

    bins = np.linspace(10.0, 140.0, 100)
    with SandboxPool(SandboxConfig(workers=1, isolation=args.isolation)) as pool:
        _evaluation_s(pool, 10, 1)  # warm-up
        small = _single_calls_ms(pool, args.calls, 1)
        array = _single_calls_ms(pool, args.calls, 30.0, bins, fn="priority")
        empty = [_evaluation_s(pool, 0, 1) for _ in range(args.repeats)]
        full = [_evaluation_s(pool, args.calls, 1) for _ in range(args.repeats)]
        one_shot = []
        for _ in range(args.repeats):
            t1 = time.perf_counter()
            pool.run(PROGRAM + "\ndef main():\n    return 1\n", "main", timeout_s=10)
            one_shot.append((time.perf_counter() - t1) * 1e3)
        isolation = pool.isolation.value
    open_close_ms = statistics.median(empty) * 1e3
    evaluation_ms = statistics.median(full) * 1e3
    marginal_ms = (evaluation_ms - open_close_ms) / args.calls
    rows = {
        "isolation": isolation,
        "calls": args.calls,
        "in_process_call_ms": in_process_ms,
        "session_call_median_ms": statistics.median(small),
        "session_call_p95_ms": _p95(small),
        "session_call_100_floats_median_ms": statistics.median(array),
        "session_call_100_floats_p95_ms": _p95(array),
        "session_open_close_ms": open_close_ms,
        f"evaluation_{args.calls}_calls_ms": evaluation_ms,
        "marginal_call_ms": marginal_ms,
        "one_shot_evaluation_ms": statistics.median(one_shot),
        "call_over_in_process": statistics.median(small) / in_process_ms,
        "target_marginal_ms": TARGET_MS,
        "meets_target": marginal_ms <= TARGET_MS,
        "cpus": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"call overhead, isolation {isolation}, {args.calls} calls, {args.repeats} repeats, "
          f"load {rows['load_avg_1min']:.2f} on {rows['cpus']} cpus")
    print(f"  {'in-process call':42s} {in_process_ms:9.4f} ms")
    print(f"  {'session call, int (median / p95)':42s} {rows['session_call_median_ms']:9.4f} ms"
          f" / {rows['session_call_p95_ms']:.4f} ms   {rows['call_over_in_process']:.0f}x in-process")
    print(f"  {'session call, 100-float array (med / p95)':42s} "
          f"{rows['session_call_100_floats_median_ms']:9.4f} ms"
          f" / {rows['session_call_100_floats_p95_ms']:.4f} ms")
    print(f"  {'session open + close (0 calls)':42s} {open_close_ms:9.2f} ms")
    print(f"  {f'evaluation of {args.calls} calls':42s} {evaluation_ms:9.2f} ms")
    print(f"  {'marginal per call':42s} {marginal_ms:9.4f} ms   target {TARGET_MS} ms: "
          f"{'met' if rows['meets_target'] else 'NOT met'}")
    print(f"  {'one-shot evaluation (pool.run)':42s} {rows['one_shot_evaluation_ms']:9.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
