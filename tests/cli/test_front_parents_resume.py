"""Parents from the front survive a resume (issue 36, items 3 and 7): an interrupted
``--deterministic`` run with two objectives, resumed from its store, sends exactly the
prompts (parents on the trajectory's front, the objectives section with the parent's
vector) that the uninterrupted run sends.

A function task with deterministic objectives (``a`` max, ``b`` min, read from what the
program returns) and the simulator's seeded EVOLVE-block edits, served in process by the
repository's test server; BaSE with two greedy arms; the real sandbox and SQLite store.
``--window 2`` so that each call is decided after the tells before it (the default window
of 24 would decide all 12 calls before the first tell, and no parent could move).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_support import StopAfter, rows

from basevolve.config import RunConfig
from basevolve.engine import resume_run, start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.sim.block_edits import BlockEditReplies

TASK = '''\
import math

from basevolve.tasks.base import ScoreResult
from basevolve.tasks.function import FunctionTask

INITIAL = """\\
# EVOLVE-BLOCK-START
def f():
    a = 1.0
    b = 2.0
    c = 3.0
    return [a * c + 1.5, b + a * 0.5]
# EVOLVE-BLOCK-END
"""


class TwoObjectives(FunctionTask):
    name = "two_objectives"
    entry = "f"
    objectives = {"a": "max", "b": "min"}
    timeout_s = 30.0
    call_timeout_s = 10.0

    @property
    def initial_program(self):
        return INITIAL

    @property
    def system_message(self):
        return "Make a large and b small."

    def evaluate_program(self, program):
        r = program.call("f")
        if not r.ok:
            return ScoreResult(0.0, False, error=f"f() failed: {r.error}")
        try:
            a, b = (float(x) for x in r.value)
        except (TypeError, ValueError):
            return ScoreResult(0.0, False, error="f() must return two numbers")
        if not (math.isfinite(a) and math.isfinite(b)):
            return ScoreResult(0.0, False, error="not finite")
        return ScoreResult(a - b, True, metrics={"a": a, "b": b})
'''
BUDGET = 12


def _prompts(store: Path) -> dict[tuple[int, int, int], tuple[str, str]]:
    """(trajectory, generation, slot) -> (parent's code, messages) of every counted call."""
    return {(r["trajectory"], r["generation"], r["slot"]): (r["code"], r["messages_json"])
            for r in rows(store, "SELECT c.trajectory, c.generation, c.slot, c.messages_json, "
                                 "p.code FROM calls c JOIN programs p ON p.program_id = "
                                 "c.parent_id WHERE c.counted = 1")}


def test_resumed_run_sends_the_uninterrupted_runs_prompts(tmp_path):
    task = tmp_path / "two_objectives.py"
    task.write_text(TASK)
    with LLMTestServer(BlockEditReplies(broken_rate=0.0)) as srv:
        def cfg(run_id: str) -> RunConfig:
            return RunConfig(task=str(task), budget=BUDGET, allocator="ucb", arms=2,
                             base_url=srv.base_url, run_id=run_id, max_in_flight=2,
                             deterministic=True, window=2, seed=5, params=1e9)
        whole, parts = tmp_path / "whole.sqlite", tmp_path / "parts.sqlite"
        start_run(cfg("r"), whole)
        with pytest.raises(KeyboardInterrupt):
            start_run(cfg("r"), parts, progress=StopAfter(5))
        assert rows(parts, "SELECT count(*) AS n FROM calls WHERE counted = 1")[0]["n"] < BUDGET
        resume_run("r", parts)
    a, b = _prompts(whole), _prompts(parts)
    assert len(a) == BUDGET and a == b
    sections = [json.loads(m)[-1]["content"].split("## Objectives\n")[1] for _, m in a.values()]
    assert all(s.startswith("This task has 2 objectives: a (higher is better), b (lower is "
                            "better).") for s in sections)
    # the front moved: not every call shows the initial program's vector (a=4.5, b=2.5)
    assert any("vector: a=4.5, b=2.5." not in s for s in sections)
