"""Drive an island protocol without an engine: a deterministic fake LLM and scorer.

The fake LLM answers in the format the proposal asks for (``proposal.meta["format"]``),
changing the returned constant of the parent's ``make()``; ``junk_every`` makes every
k-th code reply unusable so retries happen.  The scorer reads the constant back.  Text
purposes (judge, meta_prompt) get a scripted answer.  Used by the protocol unit tests
and the overhead benchmark's sanity check.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from basevolve.protocols import Child, Proposal, Protocol

_RET = re.compile(r"return (-?[0-9.]+)")


def value_of(code: str | None) -> float | None:
    m = _RET.search(code or "")
    return float(m.group(1)) if m else None


def fake_reply(p: Proposal, rng: np.random.Generator, junk: bool = False) -> str:
    if p.purpose == "judge":
        return "NOVEL: it differs" if rng.random() < 0.5 else "NOT NOVEL"
    if p.purpose == "paradigm":  # AdaEvolve's breakthrough ideas (junk: unreadable)
        return "no ideas today" if junk else (
            '{"ideas": [{"idea": "try a lattice", "description": "d", "what_to_optimize": "s",'
            ' "cautions": "c", "approach_type": "numpy.linalg"}]}')
    if p.purpose == "meta_prompt":
        return ("<<<<<<< SEARCH\nPROMPT-BLOCK-START\n=======\nx\n>>>>>>> REPLACE" if junk else
                "no edits")  # both fail: markers may not change; no blocks
    if junk:
        return "I am not sure what to change."
    old = value_of(p.parent_code) or 0.0
    new = round(float(rng.uniform(0, 1)), 4)
    fmt = p.meta.get("format", "full")
    if fmt in ("diff", "tagged_diff"):
        edit = f"<<<<<<< SEARCH\n    return {old!r}\n=======\n    return {new!r}\n>>>>>>> REPLACE\n"
        return edit if fmt == "diff" else f"<NAME>n</NAME>\n<DESCRIPTION>d</DESCRIPTION>\n<DIFF>\n{edit}</DIFF>"
    code = f"def make():\n    return {new!r}\n"
    if fmt == "tagged_code":
        return f"<NAME>n</NAME>\n<DESCRIPTION>d</DESCRIPTION>\n<CODE>\n```python\n{code}```\n</CODE>"
    return f"```python\n{code}```"


def drive(proto: Protocol, calls: int, *, seed: int = 0, in_flight: int = 1,
          junk_every: int = 0, on_call: Callable[[Proposal, str], None] | None = None
          ) -> list[Proposal]:
    """Run ``calls`` calls with up to ``in_flight`` outstanding (oldest told first)."""
    rng = np.random.default_rng(seed)
    asked: list[Proposal] = []
    pending: list[Proposal] = []
    pid = 1000
    while len(asked) < calls or pending:
        while len(asked) < calls and len(pending) < in_flight and proto.can_ask():
            p = proto.ask()
            asked.append(p)
            pending.append(p)
        p = pending.pop(0)
        junk = bool(junk_every) and len(asked) % junk_every == 0
        reply = fake_reply(p, rng, junk)
        if on_call is not None:
            on_call(p, reply)
        if p.is_text:
            proto.tell_text(p, reply)
            continue
        proto.observe_reply(p, reply)
        parsed = proto.parse_reply(p, reply)
        pid += 1
        v = value_of(parsed.code)
        if parsed.code is None or v is None:
            proto.tell(p, Child(pid, None, 0.0, False, parsed.error or "no value"))
        else:
            proto.tell(p, Child(pid, parsed.code, v, True, None))
    return asked
