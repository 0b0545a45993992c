"""Protocol overhead: engine-side CPU per call of each protocol at a population of
~1,000 programs (no LLM, no sandbox, no store).

What is timed, per call, with ``time.process_time()``: ``ask()`` (parent sampling,
inspirations, prompt building), ``parse_reply()`` (full-rewrite extraction or the strict
SEARCH/REPLACE applier, novelty check) and ``tell()`` / ``tell_text()`` (insertion,
MAP-Elites cell, archive, alive set, migration).  Replies are synthetic but realistic in
size: the circle-packing initial program (~2 KB) with a six-line region rewritten per
call (~190 characters, enough to pass ShinkaEvolve's novelty threshold), in the format
the proposal asks for; scores come from a seeded generator.

Phase 1 grows the population by ``--fill`` calls (untimed) and, where the protocol
kept fewer members than that, tops it up with distinct programs through the protocol's
own insertion; phase 2 times ``--calls`` more calls.  Target (issue 10): <= 5 ms per call for each protocol.

    python benchmarks/protocol_overhead.py [--fill 1000] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time

import numpy as np

from basevolve.protocols import PROTOCOLS, Child, Proposal, Protocol
from basevolve.tasks import load_task

# the edited region: the "n = 26" line plus, after the first edit, six generated lines
REGION = re.compile(r"^    n = 26\n(?:    # bench-start\n.*?    # bench-end\n)?", re.M | re.S)


def reply_for(p: Proposal, i: int, rng: np.random.Generator) -> str:
    if p.purpose == "judge":
        return "NOVEL" if i % 2 else "NOT NOVEL"
    if p.purpose == "meta_prompt":
        return "no change"
    if p.purpose == "paradigm":  # AdaEvolve: one readable idea
        return '{"ideas": [{"idea": "try a lattice", "approach_type": "numpy"}]}'
    fmt = p.meta.get("format", "full")
    old = REGION.search(p.parent_code)
    ops = ("np.cos", "np.sin", "np.tanh", "np.exp", "np.sqrt", "np.log1p", "abs", "float")
    body = "".join(f"    {'abcdefgh'[int(rng.integers(8))]}{k} = {float(rng.random()):.6f} * "
                   f"{ops[int(rng.integers(len(ops)))]}({k} + {i})\n" for k in range(6))
    new = f"    n = 26\n    # bench-start\n{body}    # bench-end\n"  # ~190 changed characters
    if fmt in ("diff", "tagged_diff") and old is not None:
        edit = f"<<<<<<< SEARCH\n{old.group(0)}=======\n{new}>>>>>>> REPLACE\n"
        return edit if fmt == "diff" else f"<NAME>v{i}</NAME><DESCRIPTION>d</DESCRIPTION><DIFF>\n{edit}</DIFF>"
    code = REGION.sub(new, p.parent_code, count=1)
    block = f"```python\n{code}```\n"
    return f"<NAME>v{i}</NAME><CODE>\n{block}</CODE>" if fmt.startswith("tagged") else block


def one_call(proto: Protocol, i: int, rng: np.random.Generator) -> None:
    p = proto.ask()
    text = reply_for(p, i, rng)
    if p.is_text:
        proto.tell_text(p, text)
        return
    proto.observe_reply(p, text)
    parsed = proto.parse_reply(p, text)
    score = float(rng.random())
    child = (Child(i, parsed.code, score, True, None) if parsed.code is not None
             else Child(i, None, 0.0, False, parsed.error))
    proto.tell(p, child)


def top_up(proto: Protocol, target: int, rng: np.random.Generator) -> int:
    """Insert distinct programs until ``target`` members exist (ShinkaEvolve's novelty
    filter rejects most synthetic edits, so calls alone grow its population slowly)."""
    pop = getattr(proto, "pop", None)
    # (adaevolve is not topped up: its islands keep at most 20 programs each, so its
    # per-call cost is bounded by that, not by the programs told)
    insert = getattr(proto, "insert", None) or getattr(proto, "place", None)
    if pop is None or insert is None:
        return 0
    base = proto.initial.code or ""
    added = 0
    while len(pop.members) < target:
        code = REGION.sub(f"    n = 26\n    # bench-start\n    q = {added}\n    # bench-end\n", base, 1)
        insert(Child(10**6 + added, code, float(rng.random()), True, None),
               int(rng.integers(pop.n_islands)))
        added += 1
    return added


def measure(name: str, fill: int, calls: int) -> dict[str, object]:
    task = load_task("circle_packing")
    proto = PROTOCOLS.get(name)(task=task, breadth=1, rng=np.random.default_rng(0))
    proto.set_initial(Child(0, task.initial_program, 0.3, True, None))
    rng = np.random.default_rng(1)
    for i in range(fill):
        one_call(proto, i + 1, rng)
    topped = top_up(proto, fill, rng)
    times = []
    for i in range(calls):
        t0 = time.process_time()
        one_call(proto, fill + i + 1, rng)
        times.append(time.process_time() - t0)
    ms = np.array(times) * 1000
    pop = getattr(proto, "pop", None)
    return {"protocol": name, "programs_told": proto.n_told,
            "on_islands": pop.size() if pop is not None else None,
            "members_incl_removed": len(pop.members) if pop is not None else None,
            "topped_up": topped, "mean_ms": round(float(ms.mean()), 3), "p90_ms": round(float(np.quantile(ms, 0.9)), 3),
            "max_ms": round(float(ms.max()), 3), "target_met": bool(ms.mean() <= 5.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fill", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--protocols", default="greedy,openevolve,codeevolve,shinkaevolve,adaevolve")
    args = ap.parse_args()
    print(json.dumps({"loadavg_1min": os.getloadavg()[0], "cpus": os.cpu_count()}))
    for name in args.protocols.split(","):
        print(json.dumps(measure(name, args.fill, args.calls)), flush=True)


if __name__ == "__main__":
    main()
