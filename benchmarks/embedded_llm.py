"""Embedded LLM throughput: prompt and generation tokens/s, 1 vs 4 parallel requests.

Issue 3, "What it must show".  Runs the in-process xllamacpp backend through the same
``LLMClient.complete`` the engine uses (so client overhead is included):

1. prompt tokens/s: a fresh prompt (unique prefix, so the prefix cache misses) with
   ``max_tokens=1``; ``prompt_tokens / latency``;
2. generation tokens/s: the same prompt again (now cached: ``cached_tokens`` shows
   it) with ``--max-tokens`` of output; ``completion_tokens / latency``;
3. four distinct requests one after another vs. four at once (``n_parallel=4``):
   wall time and total tokens/s for both, and their ratio.

CPU heavy (about a minute for the 1.5B model on 2 cores).  Usage::

    python benchmarks/embedded_llm.py [--model embedded|embedded-small] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid

from basevolve.llm import LLMSettings, make_client

FILLER = (
    "def pack(n):\n    # place n circles in the unit square, maximise the sum of radii\n"
    "    centers = [(0.1 * i % 1.0, 0.1 * (i // 10)) for i in range(n)]\n"
)
TASK = "Count upward from 1, separated by commas, and do not stop: 1, 2, 3,"


def _messages(tag: str, filler_repeats: int) -> list[dict[str, str]]:
    body = f"[{tag}]\n" + FILLER * filler_repeats + "\n" + TASK
    return [{"role": "user", "content": body}]


async def bench(model: str, max_tokens: int, filler_repeats: int, threads: int) -> dict:
    settings = LLMSettings(
        embedded_n_ctx=4 * 1024,
        embedded_n_parallel=4,
        embedded_threads=threads,
        max_tokens=max_tokens,
    )
    client = make_client(model, settings=settings)
    t0 = time.perf_counter()
    await client.load()
    load_s = time.perf_counter() - t0

    msgs = _messages(uuid.uuid4().hex, filler_repeats)
    pre = await client.complete(msgs, max_tokens=1, seed=0)
    gen = await client.complete(msgs, max_tokens=max_tokens, seed=0)
    assert pre.ok and gen.ok, (pre.attempts, gen.attempts)

    batch = [_messages(uuid.uuid4().hex, filler_repeats) for _ in range(8)]
    t0 = time.perf_counter()
    seq = [await client.complete(m, max_tokens=max_tokens, seed=i) for i, m in enumerate(batch[:4])]
    seq_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    par = await asyncio.gather(
        *(client.complete(m, max_tokens=max_tokens, seed=i) for i, m in enumerate(batch[4:]))
    )
    par_s = time.perf_counter() - t0

    def totals(cs: list) -> tuple[int, int]:
        return (
            sum(c.usage.prompt_tokens - c.usage.cached_tokens for c in cs),
            sum(c.usage.completion_tokens for c in cs),
        )

    seq_p, seq_g = totals(seq)
    par_p, par_g = totals(list(par))
    return {
        "model": client.model_spec.name,
        "threads": threads,
        "load_s": round(load_s, 2),
        "prompt_tokens": pre.usage.prompt_tokens,
        "prompt_tok_per_s": round(pre.usage.prompt_tokens / pre.latency_s, 1),
        "gen_cached_tokens": gen.usage.cached_tokens,
        "gen_tokens": gen.usage.completion_tokens,
        "gen_tok_per_s": round(gen.usage.completion_tokens / gen.latency_s, 1),
        "seq4_wall_s": round(seq_s, 2),
        "par4_wall_s": round(par_s, 2),
        "seq4_tokens": [seq_p, seq_g],
        "par4_tokens": [par_p, par_g],
        "seq4_total_tok_per_s": round((seq_p + seq_g) / seq_s, 1),
        "par4_total_tok_per_s": round((par_p + par_g) / par_s, 1),
        "seq4_gen_tok_per_s": round(seq_g / seq_s, 1),
        "par4_gen_tok_per_s": round(par_g / par_s, 1),
        "par4_speedup_vs_seq4": round(seq_s / par_s, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="embedded", choices=["embedded", "embedded-small"])
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--filler", type=int, default=4, help="prompt size knob (~45 tokens each)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(bench(args.model, args.max_tokens, args.filler, args.threads))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:24s} {value}")


if __name__ == "__main__":
    main()
