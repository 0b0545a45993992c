"""Lone surrogates from programs and from the server never crash a run (issue 22, items 1-2).

Before: a program whose exception or output held ``"\\ud800"`` made the store raise
``UnicodeEncodeError`` (the run crashed, and again on every ``--resume``), and an escaped
lone surrogate in the server's reply JSON left the call ``pending`` and crashed the run.
Here a real ``basevolve run`` process talks to the real test server process and runs
every program in the real sandbox; the store is read with strict UTF-8 decoding.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from basevolve.safe_text import REPLACEMENT
from basevolve.tasks import load_task
from basevolve.testing.process import server_process

TASK = "min_max_distance"
ENTRY = "min_max_dist_dim2_16"
POINTS = "np.random.default_rng(0).uniform(0, 1, (16, 2))"


def _reply(body: str) -> str:
    return f"Here it is.\n```python\nimport numpy as np\n\n\ndef {ENTRY}():\n{body}\n```\n"


#: Replies, cycled: the program raises, prints, returns text holding lone surrogates
#: (made at run time, so the reply itself is clean), then a reply whose JSON holds
#: them escaped (json.dumps writes "\ud800" for a lone surrogate).
REPLIES = [
    _reply("    raise ValueError('bad ' + chr(0xD800) + ' value')"),
    _reply(f"    print('out', chr(0xDCFF))\n    return {POINTS}"),
    _reply("    return 'text ' + chr(0xD800)"),
    "Reply \ud800 with \ud83d\ude00\n" + _reply(f"    # \udcff\n    return {POINTS}"),
]


def _rows(store: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(store)  # strict UTF-8: any invalid stored text would raise here
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_run_fed_lone_surrogates_finishes_and_stores_them_replaced(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(REPLIES))
    assert "\\ud800" in replies.read_text()  # escaped in the JSON the server sends back
    store = tmp_path / "s.sqlite"
    with server_process("--replies-file", str(replies), latency=0.0) as url:
        run = subprocess.run(
            [sys.executable, "-m", "basevolve", "run", "--task", TASK, "--base-url", url,
             "--params", "1e9", "--budget", "4", "--max-in-flight", "1", "--store", str(store),
             "--run-id", "odd", "--out", str(tmp_path / "out"), "--json"],
            capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        summary = json.loads(run.stdout.strip().splitlines()[-1])
        assert summary["status"] == "finished" and summary["calls_completed"] == 4
        again = subprocess.run(
            [sys.executable, "-m", "basevolve", "run", "--resume", "odd", "--store",
             str(store), "--json"], capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
    assert _rows(store, "SELECT status, count(*) FROM calls GROUP BY status") == [("ok", 4)]
    assert _rows(store, "SELECT status, error FROM runs") == [("finished", None)]
    programs = _rows(store, "SELECT error, stdout, code FROM programs WHERE call_id IS NOT NULL "
                            "ORDER BY seq")
    assert len(programs) == 4
    assert f"bad {REPLACEMENT} value" in programs[0][0]
    assert f"out {REPLACEMENT}" in programs[1][1]
    assert programs[2][0]  # a str is not points: invalid with a reason, nothing crashed
    assert f"# {REPLACEMENT}" in programs[3][2]  # the code that ran is the code stored
    raw = _rows(store, "SELECT raw_text FROM calls ORDER BY seq")[3][0]
    assert raw.startswith(f"Reply {REPLACEMENT} with \U0001f600")


def test_the_sandbox_hands_back_program_text_already_storable(pool) -> None:
    """The in-memory path (prompts, budgets, terminal) gets the same rule as the store."""
    task = load_task(TASK)
    code = ("import sys\n\n\ndef f():\n    print('o', chr(0xDCFF))\n"
            "    print('e', chr(0xDC80), file=sys.stderr)\n"
            "    raise RuntimeError('r ' + chr(0xD800))\n")
    result = pool.run(code, "f", task.timeout_s)
    assert f"r {REPLACEMENT}" in (result.error or "")
    assert f"o {REPLACEMENT}" in result.stdout
    for text in (result.error, result.stdout, result.stderr):
        (text or "").encode("utf-8")  # no lone surrogate left
    evaluation = task.evaluate(result)
    (evaluation.error or "").encode("utf-8")
