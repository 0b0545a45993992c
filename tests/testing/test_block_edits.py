"""``simulate-server`` for any task (issue 37, item 6): seeded edits of the parent's own
EVOLVE block, in every protocol's reply format, some broken on purpose.

End to end: the command as a process of its own (``python -m basevolve.cli.simulate_cmd``),
``basevolve run`` on the function-task examples and an OpenEvolve directory, the real
sandbox and a real SQLite store; the oracle is the store's rows and the server's count.
"""

from __future__ import annotations

import ast
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from basevolve.cli import main
from basevolve.prompts import evolve_blocks
from basevolve.tasks import load_task
from basevolve.testing.evolve_block import parent_program
from basevolve.testing.sim.block_edits import (
    BlockEditReplies,
    break_block,
    nudge_constant,
    swap_lines,
    swap_operator,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@contextmanager
def simulate_server(*args: str) -> Iterator[str]:
    """The real command in a process of its own; yields the URL it prints first."""
    proc = subprocess.Popen([sys.executable, "-m", "basevolve.cli.simulate_cmd", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise AssertionError(f"simulate-server did not start: {url!r} "
                                 f"{proc.stderr.read() if proc.stderr else ''}")
        yield url
    finally:
        proc.kill()
        proc.wait()
        for f in (proc.stdout, proc.stderr):
            if f is not None:
                f.close()


def _children(store: Path) -> list[dict]:
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(
            "SELECT c.code, c.valid, c.score, c.error, p.code AS parent_code FROM programs c "
            "JOIN programs p ON p.program_id = c.parent_id WHERE c.is_initial=0")]
    finally:
        con.close()


def _counted_calls(store: Path) -> int:
    con = sqlite3.connect(store)
    try:
        return con.execute("SELECT count(*) FROM calls WHERE counted=1").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize(("task", "protocol", "budget"), [
    ("speed_sort.py", "greedy", 10),
    ("symbolic_regression.py", "shinkaevolve", 10),
    ("openevolve_dir", "openevolve", 8),
])
def test_a_task_runs_end_to_end_against_simulate_server(tmp_path, capsys, task, protocol,
                                                        budget):
    store = tmp_path / "s.sqlite"
    spec = str(EXAMPLES / task)
    with simulate_server("--task", spec, "--broken-rate", "0.3") as url:
        assert main(["run", "--task", spec, "--budget", str(budget), "--protocol", protocol,
                     "--base-url", url, "--params", "1e9", "--store", str(store),
                     "--out", str(tmp_path / "o"), "--seed", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["calls_completed"] == budget and s["calls_lost"] == 0
    assert _counted_calls(store) == budget  # exactly C charged calls
    kids = _children(store)
    valid = [k for k in kids if k["valid"]]
    broken = [k for k in kids if not k["valid"]]
    assert valid and broken, [(k["valid"], k["error"]) for k in kids]
    assert len(kids) == budget  # one child per call (none of these protocols judges)
    assert all(k["code"] != k["parent_code"] for k in valid)  # each child is an edit


def test_edits_are_seeded_and_change_only_the_evolve_block():
    program = load_task(EXAMPLES / "symbolic_regression.py").initial_program
    replies = BlockEditReplies(broken_rate=0.0)
    s, e = evolve_blocks(program)[0]
    seen = set()
    for seed in range(30):
        body = {"seed": seed, "messages": [
            {"role": "user", "content": f"```python\n{program}```"}]}
        reply = replies(body, 0)
        assert reply == replies(body, 7)  # the seed decides, not the request count
        child = parent_program([reply])[1]
        cs, ce = evolve_blocks(child)[0]
        assert child[:cs] == program[:s] and child[ce:] == program[e:]
        assert child[cs:ce] != program[s:e]
        ast.parse(child)  # unbroken edits keep the program parseable
        seen.add(child)
    assert len(seen) > 10  # many different children, not one


def test_broken_replies_come_in_three_kinds():
    program = load_task(EXAMPLES / "speed_sort.py").initial_program
    replies = BlockEditReplies(broken_rate=0.99)
    kinds = set()
    for seed in range(60):
        reply = replies({"seed": seed, "messages": [
            {"role": "user", "content": f"```python\n{program}```"}]}, 0)
        found = parent_program([reply])
        if found is None:
            kinds.add("prose")
            continue
        try:
            ast.parse(found[1])
        except SyntaxError:
            kinds.add("syntax")
            continue
        if "raise RuntimeError('simulated broken edit')" in found[1]:
            kinds.add("raises")
    assert kinds == {"prose", "syntax", "raises"}


def test_each_edit():
    rng = np.random.default_rng(0)
    block = "def f(x):\n    a = 3\n    b = x + a\n    c = min(a, b)\n    return a * b < c\n"
    assert nudge_constant(block, rng) != block and "a = 3\n" not in nudge_constant(block, rng)
    assert swap_operator(block, rng) != block
    swapped = swap_lines(block, rng)
    assert swapped is not None and sorted(swapped.split("\n")) == sorted(block.split("\n"))
    assert nudge_constant("def f():\n    return x\n", rng) is None
    with pytest.raises(SyntaxError):
        ast.parse(break_block(block, "syntax"))
    assert "raise RuntimeError" in break_block(block, "raises")


def test_a_program_without_markers_evolves_whole():
    program = "def f(x):\n    return x * 2 + 1\n"
    reply = BlockEditReplies(broken_rate=0.0)({"seed": 3, "messages": [
        {"role": "user", "content": f"```python\n{program}```"}]}, 0)
    assert "```python\n" in reply and "def f(x):" in reply and program not in reply


@pytest.mark.parametrize(("argv", "needle"), [
    (["--task", str(EXAMPLES / "speed_sort.py"), "--capability", "2"], "--capability"),
    (["--task", "prompt_optimization"], "not a program"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    assert main(["simulate-server", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "Traceback" not in err and len(err.splitlines()) == 1
