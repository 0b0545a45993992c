"""Contract point 10: whatever text a store writes is valid UTF-8 (issue 22, items 1-2).

A lone surrogate in a reply, an error or a program's output used to make ``sqlite3``
raise ``UnicodeEncodeError`` inside the write: the call stayed ``pending`` and the run
crashed again on every resume.  Each write path is checked on a real SQLite file, read
back by a plain ``sqlite3`` connection (strict UTF-8 decoding) after reopening.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from basevolve.safe_text import REPLACEMENT
from basevolve.store import RunStore

CONFIG = {"task": "min_max_distance", "model": "embedded", "protocol": "greedy",
          "allocator": "single", "arms": 1, "budget": 2, "depth": 1, "breadth": 2, "seed": 0}
BAD = "bad \ud800 text \udcff, pair \ud83d\ude00"
CLEAN = f"bad {REPLACEMENT} text {REPLACEMENT}, pair \U0001f600"


#: An ``eval_calls`` row (a text task's answering call) with outside text in it.
EVAL_CALL = {"idx": 0, "cache_key": "k", "cache_hit": 0, "status": "ok", "reply": BAD,
             "answer": BAD, "error": BAD, "prompt_tokens": 1, "cached_tokens": 0,
             "completion_tokens": 1, "flops": 1.0, "attempts": 1}


def _read(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)  # the default strict UTF-8 decoding: fails on bad bytes
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_every_write_path_stores_lone_surrogates_replaced(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        store.create_run("r", CONFIG, active_params=1e9)
        call = store.insert_call("r", call_index=0, seq=store.next_seq("r"), trajectory=0,
                                 pull_id=0, generation=1, slot=0, seed=1,
                                 messages=[{"role": "user", "content": BAD}], meta={"why": BAD})
        store.finish_call(call, status="ok", counted=True,
                          fields={"raw_text": BAD, "text": BAD, "finish_reason": BAD,
                                  "error": BAD},
                          attempts=[{"attempt_index": 0, "status": "ok", "error": BAD}])
        store.insert_program("r", code=BAD, score=0.0, valid=False, generation=1,
                             call_id=call, seq=store.next_seq("r"), error=BAD, stdout=BAD,
                             stderr=BAD, eval_calls=[EVAL_CALL])
        store.set_status("r", "failed", BAD)
        # a table no insert_* method knows (a new channel): covered by the connection
        store.db.execute("CREATE TABLE channel (a TEXT, b TEXT)")
        store.db.execute("INSERT INTO channel VALUES (?, ?)", (BAD, "ok"))
        store.db.execute("INSERT INTO channel VALUES (:a, :b)", {"a": BAD, "b": "named"})
        store.db.executemany("INSERT INTO channel VALUES (?, ?)", iter([(BAD, "many")]))
        store.db.cursor().execute("INSERT INTO channel VALUES (?, ?)", [BAD, "cursor"])
        store.write_summary("r", {"calls_completed": 1, "calls_lost": 0, "flops": 0.0,
                                  "prompt_tokens": 0, "cached_tokens": 0,
                                  "completion_tokens": 0, "best_code": BAD})
    stored = [
        *_read(path, "SELECT raw_text, text, finish_reason, error FROM calls")[0],
        *_read(path, "SELECT error FROM attempts")[0],
        *_read(path, "SELECT code, error, stdout, stderr FROM programs")[0],
        *_read(path, "SELECT reply, answer, error FROM eval_calls")[0],
        *_read(path, "SELECT error FROM runs")[0],
        *(r[0] for r in _read(path, "SELECT a FROM channel")),
    ]
    assert stored == [CLEAN] * 17
    assert [r[0] for r in _read(path, "SELECT b FROM channel")] == ["ok", "named", "many",
                                                                   "cursor"]
    # JSON columns keep the escapes (lossless, ASCII): they read back as written
    with RunStore(path, create=False) as store:
        row = store.query("SELECT messages_json, meta_json FROM calls")[0]
        assert "\\ud800" in row["messages_json"] and "\\ud800" in row["meta_json"]
        assert store.get_run("r")["error"] == CLEAN
        sha = store.query("SELECT code_sha256 FROM programs")[0][0]
    assert sha is not None  # hashing the code did not fail either


def test_a_clean_text_is_stored_unchanged(tmp_path: Path) -> None:
    text = "é ü 漢字 \U0001f600 \ufffd \x00 tab\tend"
    with RunStore(tmp_path / "s.sqlite") as store:
        store.db.execute("CREATE TABLE t (a TEXT)")
        store.db.execute("INSERT INTO t VALUES (?)", (text,))
        assert store.query("SELECT a FROM t")[0][0] == text
