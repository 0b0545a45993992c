"""Issue 37, item 5: the test server's candidates file may be a list of blocks or, as
``tests/data/function_example_blocks.json`` (the file docs/tasks.md names) is, an object
of task name -> blocks; and an HTTP error's whole reason (capped, sanitised) reaches the
terminal instead of being cut at 120 characters.

Real runs: the test server as a process, the CLI, the sandbox; the example tasks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.prompts import evolve_blocks
from basevolve.tasks import load_task
from basevolve.testing import LLMTestServer
from basevolve.testing.evolve_block import EvolveBlockReplies, parent_program
from basevolve.testing.process import server_process

ROOT = Path(__file__).resolve().parents[2]
BLOCKS_FILE = ROOT / "tests" / "data" / "function_example_blocks.json"
BLOCKS = json.loads(BLOCKS_FILE.read_text())


def _block(code: str) -> str:
    s, e = evolve_blocks(code)[0]
    return code[s:e]


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_dict_file_answers_each_task_from_its_own_list(name):
    replies = EvolveBlockReplies.from_file(BLOCKS_FILE)
    program = load_task(ROOT / "examples" / f"{name}.py").initial_program
    chosen = set()
    for seed in range(60):
        reply = replies({"seed": seed, "messages": [
            {"role": "user", "content": f"```python\n{program}```"}]}, 0)
        chosen.add(_block(parent_program([reply])[1]))
    assert chosen == {b.lstrip("\n").rstrip() + "\n" for b in BLOCKS[name]}


def test_a_dict_entry_is_found_by_the_task_name_when_no_block_name_matches():
    replies = EvolveBlockReplies({"alpha": ["y = 1\n"], "beta": ["y = 2\n"]})
    program = "# EVOLVE-BLOCK-START\nx = 0\n# EVOLVE-BLOCK-END\n"
    body = {"seed": 1, "messages": [
        {"role": "user", "content": f"Task beta.\n```python\n{program}```"}]}
    assert _block(parent_program([replies(body, 0)])[1]) == "y = 2\n"
    body["messages"][0]["content"] = f"```python\n{program}```"  # neither: a marker comment
    assert "# evolve-block reply" in _block(parent_program([replies(body, 0)])[1])


def test_the_documented_file_runs_a_function_example_end_to_end(tmp_path, monkeypatch, capsys):
    """What docs/tasks.md shows: BASEVOLVE_TEST_CANDIDATES naming the dict file."""
    monkeypatch.setenv("BASEVOLVE_TEST_CANDIDATES", str(BLOCKS_FILE))
    store = tmp_path / "s.sqlite"
    with server_process("--reply-function", "evolve-block", latency=0.0) as url:
        assert main(["run", "--task", str(ROOT / "examples" / "speed_sort.py"), "--budget",
                     "3", "--base-url", url, "--params", "1e9", "--store", str(store),
                     "--out", str(tmp_path / "o"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert s["calls_completed"] == 3 and s["calls_lost"] == 0
    import sqlite3

    con = sqlite3.connect(store)
    codes = [c for (c,) in con.execute("SELECT code FROM programs WHERE is_initial=0")]
    con.close()
    wanted = {b.lstrip("\n").rstrip() + "\n" for b in BLOCKS["speed_sort"]}
    assert len(codes) == 3 and all(_block(c) in wanted for c in codes)


def test_an_http_error_shows_its_whole_reason_capped_and_clean(capsys):
    """The server's explanation (here 400 characters with an escape sequence in it) is
    on the terminal whole: in the retry warning and in llm-check's error line."""
    reason = "the candidates file is wrong: " + "x" * 350 + " \x1b[31mEND-OF-REASON"

    def fails(body, index):
        raise ValueError(reason)

    with LLMTestServer(fails) as srv:
        assert main(["llm-check", "--model", "test-model", "--params", "1e9",
                     "--base-url", srv.base_url]) == 1
    captured = capsys.readouterr()
    warning = next(ln for ln in captured.err.splitlines() if "LLM attempt 0 failed" in ln)
    shown = "x" * 350 + " \\x1b[31mEND-OF-REASON"
    assert shown in warning and "\x1b" not in captured.err
    error = next(ln for ln in captured.out.splitlines() if ln.startswith("error"))
    assert shown in error and "\x1b" not in captured.out

    def fails_long(body, index):  # a longer reason is cut at the cap, not sent whole
        raise ValueError("y" * 5000)

    with LLMTestServer(fails_long) as srv:
        assert main(["llm-check", "--model", "test-model", "--params", "1e9",
                     "--base-url", srv.base_url, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["error"].startswith("HTTP 500: reply function raised") and len(out["error"]) <= 500
