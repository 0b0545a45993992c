"""Scripted replies for the LLM test server that vary by call but repeat exactly.

:func:`seeded_packing_reply` answers every request with a complete, valid circle-packing
program (26 equal circles on a grid) whose radius scale F in [0.3, 1] is a hash of the
request's ``seed``.  The engine derives each call's seed from the run seed and the call
index, so rewards differ between calls (bandits have something to learn) yet a repeated
sequential run with the same seed sees the same rewards (reproducibility tests).
Shared by the BaSE end-to-end tests, the replay tests and the BaSE benchmark.

:func:`island_reply` answers island-protocol requests in the format each asks for
(full rewrite, SEARCH/REPLACE, NAME/DESCRIPTION/DIFF or CODE, judge verdicts,
meta-prompt edits) on MinMaxDist programs, deterministically from the request's seed;
one request in six gets an unusable reply so retries and score-0 children occur.

:func:`seeded_points_reply` answers with a MinMaxDist program of 16 points drawn from a
hash of the request's messages and seed: the same request always gets the same program,
so two ``--deterministic`` runs (or a killed one and its resume) can be compared row by
row.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import numpy as np

PACKING_PROGRAM = '''import numpy as np


def construct_packing():
    g = np.linspace(0.1, 0.9, 6)
    centers = np.array([(x, y) for x in g for y in g])[:26]
    radii = np.full(26, 0.08 * {scale!r})
    return centers, radii, float(radii.sum())
'''


def seed_scale(seed: Any) -> float:
    """The radius scale F in [0.3, 1] that a request with this ``seed`` gets."""
    h = int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:4], "big")
    return round(0.3 + 0.7 * h / 2**32, 6)


def seeded_packing_reply(body: dict[str, Any], index: int) -> str:
    """A fenced, valid packing program whose score is determined by ``body["seed"]``."""
    return "```python\n" + PACKING_PROGRAM.format(scale=seed_scale(body.get("seed"))) + "```\n"


class ArmMarkedReplies:
    """Replies whose quality depends on the trajectory (issue 9's allocation test).

    Each of the K initial (``assign``) calls -- call indices 0..K-1 go to trajectories
    0..K-1 in order (paper, Algorithm 2) -- is answered with a packing program carrying
    the marker ``# arm: i``.  Every later request reads the marker from the parent program
    in its prompt (greedy's "Current Program" section; a trajectory's archive only holds
    its own programs), so the reply -- and its score -- depend on the trajectory that
    asked.  Arm ``best_arm`` draws its radius scale from ``good`` and the others from
    ``bad``; a request whose parent has no marker yet (asked before the trajectory's first
    child was told) gets scale ``unmarked``, below the initial program, so it is never
    accepted and every trajectory keeps its marker.  The call index is recovered from the
    request seed (the engine's :func:`~basevolve.engine.state.call_seed`).
    """

    def __init__(self, *, arms: int, run_seed: int, budget: int, best_arm: int = 0,
                 good: tuple[float, float] = (0.95, 1.0),
                 bad: tuple[float, float] = (0.47, 0.55), unmarked: float = 0.2) -> None:
        from basevolve.engine.state import call_seed

        self.arms, self.best_arm = arms, best_arm
        self.good, self.bad, self.unmarked = good, bad, unmarked
        self.index_of = {call_seed(run_seed, i): i for i in range(budget * 2)}

    def marker_of(self, body: dict[str, Any]) -> int | None:
        index = self.index_of.get(body.get("seed"))
        if index is not None and index < self.arms:
            return index
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        pos = text.find("# arm: ")
        if pos < 0:
            return None
        digits = text[pos + 7:].split("\n", 1)[0].strip()
        return int(digits) if digits.isdigit() else None

    def __call__(self, body: dict[str, Any], index: int) -> str:
        arm = self.marker_of(body)
        if arm is None:
            scale = self.unmarked
        else:
            lo, hi = self.good if arm == self.best_arm else self.bad
            scale = round(lo + (hi - lo) * (seed_scale(body.get("seed")) - 0.3) / 0.7, 6)
        program = PACKING_PROGRAM.format(scale=scale)
        if arm is not None:
            program = f"# arm: {arm}\n" + program
        return "```python\n" + program + "```\n"


_FENCED = re.compile(r"```python\n(.*?)```", re.S)
_REGION_START, _REGION_END = "    rng = np.random.default_rng(", "    return points"


def _h(seed: Any, salt: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{salt}:{seed}".encode()).digest()[:4], "big")


def island_reply(body: dict[str, Any], index: int) -> str:
    """A format-aware reply for island protocols on the ``min_max_distance`` task.

    Code replies rewrite the region from the ``rng = ...`` line to ``return points`` of
    the last MinMaxDist program in the prompt (the parent) with a new seed and scaling.
    AdaEvolve's paradigm call gets one idea as JSON, every third answer unreadable (so
    its re-ask is exercised).
    """
    msgs = body.get("messages") or []
    system = str(msgs[0].get("content", "")) if msgs else ""
    seed = body.get("seed")
    if "NOVEL or NOT NOVEL" in system:
        return "NOVEL: a different idea" if _h(seed, "judge") % 2 else "NOT NOVEL: same idea"
    if '{"ideas"' in system:  # AdaEvolve's paradigm call (every 3rd answer unreadable)
        return ("No idea." if _h(seed, "ideas") % 3 == 0 else
                '{"ideas": [{"idea": "reseed", "description": "try another seed", '
                '"what_to_optimize": "score", "cautions": "none", "approach_type": "numpy"}]}')
    users = [str(m.get("content", "")) for m in msgs if m.get("role") == "user"]
    if "prompt engineer" in system:
        line = users[-1].split("PROMPT-BLOCK-START\n", 1)[-1].split("\n", 1)[0]
        return f"<<<<<<< SEARCH\n{line}\n=======\n{line} Think step by step.\n>>>>>>> REPLACE"
    if _h(seed, "junk") % 6 == 0:
        return "I am not sure how to improve this program."
    programs = [c for u in users for c in _FENCED.findall(u) if "EVOLVE-BLOCK-START" in c]
    parent = programs[-1] if programs else ""
    start, end = parent.find(_REGION_START), parent.find(_REGION_END)
    if start < 0 or end < start:
        return "The program has no seed line to change."
    k = _h(seed, "new")
    region = (f"{_REGION_START}{k % 100000})\n    points = rng.normal(size=(16, 2))\n"
              f"    points = points * np.array([1.0, {0.5 + (k % 1000) / 1000:.3f}])  # v{k % 97}\n")
    new_code = parent[:start] + region + parent[end:]
    diff = f"<<<<<<< SEARCH\n{parent[start:end]}=======\n{region}>>>>>>> REPLACE\n"
    if "<DIFF>" in system:
        return f"<NAME>reseed</NAME>\n<DESCRIPTION>New seed.</DESCRIPTION>\n<DIFF>\n{diff}</DIFF>"
    if "<CODE>" in system:
        return (f"<NAME>reseed</NAME>\n<DESCRIPTION>New seed.</DESCRIPTION>\n<CODE>\n"
                f"```python\n{new_code}```\n</CODE>")
    if "<<<<<<< SEARCH" in system or "<<<<<<< SEARCH" in (users[-1] if users else ""):
        return diff
    return f"```python\n{new_code}```\n"


def seeded_points_reply(body: dict[str, Any], index: int) -> str:
    """A MinMaxDist program drawn from sha256(messages, seed)."""
    digest = hashlib.sha256((json.dumps(body["messages"]) + str(body.get("seed"))).encode())
    points = np.random.default_rng(int.from_bytes(digest.digest()[:8], "big")).uniform(
        0, 1, size=(16, 2))
    return ("Here it is.\n```python\nimport numpy as np\n\n\ndef min_max_dist_dim2_16():\n"
            f"    return np.array({points.tolist()!r})\n```\n")
