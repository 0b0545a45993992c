"""Engine overhead: wall time vs the server-imposed bound, and engine CPU per call.

Setup: the LLM test server runs as a *separate process* with a fixed reply latency
(default 0.2 s) and replies that are valid MinMaxDist programs, so every call is parsed,
run in the real sandbox pool (separate worker processes, pre-started) and scored.
The engine runs in this process via ``start_run`` (store on a real SQLite file, no
output files).

* bound = C * latency / min(N, max_in_flight): the fastest any client can get C replies
  out of a server that takes ``latency`` per request with that much concurrency
  (greedy: a generation of N calls is the unit of parallelism).
* CPU (after a warm-up run, so imports are not counted; the server and the sandbox
  workers are other processes and never counted):
  - ``proc ms``: ``time.process_time()`` of this process per call (everything);
  - ``sbx ms``: CPU of this process's worker threads (process minus event-loop thread,
    ``time.thread_time()``): the sandbox pool's client side (IPC, result decoding) and
    any other executor work, per call;
  - ``client ms``: event-loop-thread CPU of the same C calls through the bare LLM client
    (openai SDK + httpx), same waves, no engine;
  - ``engine ms`` = event-loop-thread CPU of the run minus ``client ms``: the asyncio
    loop, SQLite writes, protocol ask/tell + prompt building, reply parsing, trusted
    scoring, allocator.  This is the number the 2 ms target applies to.

Targets (issue 4): wall <= 1.10 x bound, engine CPU <= 2 ms per call.

    python benchmarks/engine_overhead.py [--latency 0.2] [--budget 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.llm import make_client
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.tasks import load_task


def replies(n: int) -> list[str]:
    task = load_task("min_max_distance")
    out = []
    for i in range(n):
        pts = np.random.default_rng(i).uniform(0, 1, size=(16, 2))
        assert task.score_value(pts).valid
        out.append("```python\nimport numpy as np\n\ndef min_max_dist_dim2_16():\n"
                   f"    return np.array({pts.tolist()!r})\n```\n")
    return out


def bare_client(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """(wall s, loop-thread CPU s) of ``calls`` bare client calls in waves of ``concurrency``.

    The waves mirror greedy's generation barrier; this is what the HTTP stack alone
    (openai SDK + httpx + the test server) costs, with no engine, store or sandbox.
    """
    messages = [{"role": "system", "content": "You are a mathematician."},
                {"role": "user", "content": "Improve this program:\n" + "x = 1\n" * 300}]

    async def go() -> tuple[float, float]:
        client = make_client("embedded", url)

        async def one(i: int) -> None:
            c = await client.complete(messages, seed=i, max_tokens=256)
            assert c.ok

        t0, w0 = time.thread_time(), time.perf_counter()
        for start in range(0, calls, concurrency):
            await asyncio.gather(*(one(i) for i in range(start, min(calls, start + concurrency))))
        wall, cpu = time.perf_counter() - w0, time.thread_time() - t0
        await client.aclose()
        return wall, cpu

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--budget", type=int, default=64)
    ap.add_argument("--depths", default="4,16,64", help="comma-separated T values (divide C)")
    ap.add_argument("--max-in-flight", type=int, default=16)
    ap.add_argument("--nagle", action="store_true", help="leave Nagle on in the test server")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bv-bench-"))
    (tmp / "replies.json").write_text(json.dumps(replies(64)))
    # TCP_NODELAY on the server (as uvicorn/vLLM do): the test server as shipped writes
    # headers and body in two sends with Nagle on, which stalls every keep-alive call
    # ~40 ms on the client's delayed ACK (see "BaSE concurrency"); --nagle keeps that.
    launcher = ("import socketserver, sys\n"
                f"socketserver.StreamRequestHandler.disable_nagle_algorithm = {not args.nagle}\n"
                "from basevolve.testing.llm_server import main\nsys.exit(main(sys.argv[1:]))\n")
    server = subprocess.Popen(
        [sys.executable, "-c", launcher, "--port", "0", "--latency",
         str(args.latency), "--replies-file", str(tmp / "replies.json"),
         # fixed usage: the server's prefix-cache emulation costs CPU that grows with
         # the number of earlier prompts, which would be charged to the engine's wall
         "--prompt-tokens", "1500", "--cached-tokens", "0", "--completion-tokens", "400"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        with SandboxPool(SandboxConfig()) as pool:
            warm = RunConfig(task="min_max_distance", budget=2, depth=1, base_url=url,
                             run_id=f"warmup-{time.time_ns()}")
            start_run(warm, tmp / "bench.sqlite", pool=pool, out_dir=None)  # imports, caches
            print(f"latency {args.latency} s, C = {args.budget}, max_in_flight = "
                  f"{args.max_in_flight}, sandbox workers = {pool.workers}, "
                  f"nagle {'on' if args.nagle else 'off'}")
            print(f"{'T':>4} {'N':>4} {'bound s':>8} {'client s':>8} {'wall s':>8} "
                  f"{'wall/bound':>10} {'wall/client':>11} {'proc ms':>8} {'sbx ms':>7} "
                  f"{'client ms':>9} {'engine ms':>9}")
            for depth in (int(d) for d in args.depths.split(",")):
                cfg = RunConfig(task="min_max_distance", budget=args.budget, depth=depth,
                                base_url=url, max_in_flight=args.max_in_flight,
                                run_id=f"bench-T{depth}-{time.time_ns()}")
                n = cfg.breadth
                bound = args.budget * args.latency / min(n, args.max_in_flight)
                cpu0, th0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
                s = start_run(cfg, tmp / "bench.sqlite", pool=pool, out_dir=None)
                wall = time.perf_counter() - t0
                cpu, thread = time.process_time() - cpu0, time.thread_time() - th0
                assert s["calls_completed"] == args.budget
                cwall, ccpu = bare_client(url, args.budget, min(n, args.max_in_flight))
                ms = 1000 / args.budget
                print(f"{depth:>4} {n:>4} {bound:>8.2f} {cwall:>8.2f} {wall:>8.2f} "
                      f"{wall / bound:>10.3f} {wall / cwall:>11.3f} {cpu * ms:>8.2f} "
                      f"{(cpu - thread) * ms:>7.2f} {ccpu * ms:>9.2f} "
                      f"{(thread - ccpu) * ms:>9.2f}")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
