"""Sandbox overhead: warm fork-server pool vs a fresh ``python3`` vs a bare in-process call.

Issue 2 target: median <= 15 ms per isolated evaluation (a fresh subprocess that imports
numpy + scipy.optimize costs ~500 ms on these machines).  All three ways evaluate the
same small program, measured in one run, round trip as the caller sees it::

    python benchmarks/sandbox_overhead.py [--n 60] [--n-fresh 10] [--json]

Prints the medians and ratios; no assertion (performance is not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxConfig, SandboxPool

PROGRAM = """
import numpy as np
import scipy.optimize

def main():
    root = scipy.optimize.brentq(lambda x: x * x - 2.0, 0.0, 2.0)
    pts = np.random.default_rng(0).random((26, 2))
    d = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=-1)
    return pts, float(root) + float(d.max())
"""
FRESH = PROGRAM + "\nmain()\n"


def _median_ms(fn, n: int, gap_s: float = 0.0) -> float:
    samples = []
    for _ in range(n):
        time.sleep(
            gap_s
        )  # not timed: lets a worker pre-fork its next child, as between LLM replies
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _in_process() -> None:
    ns: dict = {"__name__": "program"}
    exec(compile(PROGRAM, "program.py", "exec"), ns)
    ns["main"]()


def _fresh() -> None:
    subprocess.run(
        [sys.executable, "-c", FRESH], check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    )


def _pool_median(isolation: str, n: int) -> tuple[float, float, str, float]:
    t0 = time.perf_counter()
    with SandboxPool(SandboxConfig(workers=1, isolation=isolation)) as pool:
        startup = time.perf_counter() - t0
        for _ in range(3):  # warm-up
            assert pool.run(PROGRAM, "main", timeout_s=10).status is ExecStatus.OK

        def one() -> None:
            r = pool.run(PROGRAM, "main", timeout_s=10)
            assert r.status is ExecStatus.OK, r

        return _median_ms(one, n), _median_ms(one, n, gap_s=0.02), pool.isolation.value, startup


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60, help="evaluations per pooled/in-process series")
    ap.add_argument(
        "--n-fresh", type=int, default=10, help="fresh subprocesses (slow: ~0.5 s each)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args()

    _in_process()  # imports numpy/scipy once, as a warm worker has
    bare = _median_ms(_in_process, args.n)
    default_ms, default_gap_ms, default_iso, default_start = _pool_median("auto", args.n)
    rl_ms, rl_gap_ms, _, rl_start = _pool_median("rlimits", args.n)
    fresh = _median_ms(_fresh, args.n_fresh)
    rows = {
        "in_process_ms": bare,
        f"sandbox_{default_iso}_ms": default_ms,
        f"sandbox_{default_iso}_spaced_ms": default_gap_ms,
        "sandbox_rlimits_ms": rl_ms,
        "sandbox_rlimits_spaced_ms": rl_gap_ms,
        "fresh_python3_ms": fresh,
        f"sandbox_{default_iso}_startup_s": default_start,
        "sandbox_rlimits_startup_s": rl_start,
        "fresh_over_sandbox": fresh / default_ms,
        "sandbox_over_in_process": default_ms / bare,
        "target_ms": 15.0,
        "meets_target": default_ms <= 15.0,
        "cpus": os.cpu_count(),
        "load_avg_1min": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(rows))
        return 0
    print(
        f"median latency of one evaluation (numpy + scipy.optimize program), n={args.n}, fresh n={args.n_fresh}"
    )
    print(f"  {'bare in-process call':30s} {bare:9.2f} ms   1.0x")
    table = [
        (f"sandbox {default_iso}, back to back", default_ms),
        (f"sandbox {default_iso}, 20 ms apart", default_gap_ms),
        ("sandbox rlimits, back to back", rl_ms),
        ("sandbox rlimits, 20 ms apart", rl_gap_ms),
    ]
    for label, ms in table:
        print(f"  {label:30s} {ms:9.2f} ms   {ms / bare:.1f}x in-process")
    print(
        f"  {'fresh python3 subprocess':30s} {fresh:9.2f} ms   {fresh / bare:.1f}x in-process, "
        f"{fresh / default_ms:.1f}x the {default_iso} sandbox"
    )
    print(
        f"  pool start-up (1 worker): {default_iso} {default_start:.2f} s, rlimits {rl_start:.2f} s"
    )
    print(f"  machine: {os.cpu_count()} cpus, 1-min load average {os.getloadavg()[0]:.2f}")
    verdict = "meets" if default_ms <= 15.0 else "MISSES"
    print(f"  target <= 15 ms per isolated evaluation: {verdict} ({default_ms:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
