"""The run store's contract (basevolve.store docstring), checked on real SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from basevolve.errors import StoreError
from basevolve.store import SCHEMA_VERSION, RunStore
from basevolve.store.schema import MARKER_VALUE

CONFIG = {"task": "min_max_distance", "model": "embedded", "protocol": "greedy",
          "allocator": "single", "arms": 1, "budget": 2, "depth": 1, "breadth": 2, "seed": 0}


def _new(path: Path, run_id: str = "r") -> RunStore:
    store = RunStore(path)
    store.create_run(run_id, CONFIG, active_params=1e9)
    return store


def test_migrations_marker_and_wal(tmp_path):
    path = tmp_path / "s.sqlite"
    _new(path).close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT value FROM basevolve_meta WHERE key='format'").fetchone()[0] == MARKER_VALUE
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "trajectories", "calls", "attempts", "programs", "allocations",
            "run_summary"} <= tables
    con.close()
    # reopening runs no migration twice and keeps the data
    with RunStore(path) as store:
        assert store.get_run("r")["status"] == "created"
        assert store.get_run("r")["python_version"]


def test_foreign_sqlite_file_refused_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a basevolve store"):
        RunStore(path)
    assert path.read_bytes() == before
    assert not Path(str(path) + "-wal").exists()


def test_non_sqlite_file_refused_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some text, definitely not SQLite\n")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite file"):
        RunStore(path)
    assert path.read_bytes() == before


def test_newer_schema_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _new(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer"):
        RunStore(path)


def test_missing_store_not_created_when_reading(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        RunStore(tmp_path / "nope.sqlite", create=False)
    assert not (tmp_path / "nope.sqlite").exists()


def _call(store: RunStore, index: int, **kw) -> int:
    return store.insert_call("r", call_index=index, seq=store.next_seq("r"), trajectory=0,
                             pull_id=0, generation=1, slot=index, parent_id=None, seed=index,
                             messages=[{"role": "user", "content": "hi"}], **kw)


def test_uniqueness_makes_duplicates_impossible(tmp_path):
    store = _new(tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="already exists"):
        store.create_run("r", CONFIG, active_params=1e9)
    cid = _call(store, 0)
    with pytest.raises(StoreError):  # same call index twice
        store.insert_call("r", call_index=0, seq=store.next_seq("r"), trajectory=0, pull_id=0,
                          generation=1, slot=0, parent_id=None, seed=0, messages=[])
    store.insert_program("r", code="x = 1", score=0.5, valid=True, generation=1, call_id=cid,
                         seq=store.next_seq("r"))
    with pytest.raises(StoreError):  # one program per call
        store.insert_program("r", code="x = 2", score=0.6, valid=True, generation=1,
                             call_id=cid, seq=store.next_seq("r"))
    store.insert_program("r", code="y", score=0.1, valid=True, generation=0, is_initial=1)
    with pytest.raises(StoreError):  # one initial program per run
        store.insert_program("r", code="z", score=0.1, valid=True, generation=0, is_initial=1)
    assert store.query("SELECT count(*) FROM programs")[0][0] == 2


def test_call_finishes_once_and_pending_becomes_lost(tmp_path):
    store = _new(tmp_path / "s.sqlite")
    done, pending = _call(store, 0), _call(store, 1)
    attempt = {"attempt_index": 0, "status": "ok", "latency_s": 0.1, "prompt_tokens": 10,
               "cached_tokens": 2, "completion_tokens": 5, "flops": 26e9}
    fields = {"text": "t", "prompt_tokens": 10, "cached_tokens": 2, "completion_tokens": 5,
              "flops": 26e9}
    store.finish_call(done, status="ok", counted=True, fields=fields, attempts=[attempt])
    with pytest.raises(StoreError, match="not pending"):
        store.finish_call(done, status="ok", counted=True, fields=fields, attempts=[])
    assert store.mark_lost("r") == [pending]
    totals = store.totals("r")
    assert totals == {"calls_completed": 1, "calls_lost": 1, "calls_truncated": 0,
                      "calls_lost_charged": 0, "flops_lost": 0.0,
                      "prompt_tokens": 10,
                      "cached_tokens": 2, "completion_tokens": 5, "flops": 26e9,
                      "flops_unmeasured": 0.0, "usage_impossible": 0,
                      "bandit_decisions": 0, "decisions_with_choice": None,
                      # a program task makes no evaluation calls (issue 15)
                      "eval_calls": 0, "eval_cache_hits": 0, "eval_flops": 0.0, "eval_tokens": 0}


def test_lost_calls_are_charged_what_the_rule_gives(tmp_path):
    """mark_lost(charge=...) stores each lost call's charge (issue 24, item 3): part of
    flops, of the unmeasured estimate, and counted as charged when > 0."""
    store = _new(tmp_path / "s.sqlite")
    a, b = _call(store, 0), _call(store, 1)
    seen = []

    def charge(row):
        seen.append(row["call_id"])
        return 7e9 if row["call_id"] == a else 0.0

    assert store.mark_lost("r", charge) == [a, b] and seen == [a, b]
    assert store.mark_lost("r", charge) == []  # only pending calls; a charge is kept
    t = store.totals("r")
    assert (t["calls_lost"], t["calls_lost_charged"], t["flops_lost"]) == (2, 1, 7e9)
    assert t["flops"] == 7e9 and t["flops_unmeasured"] == 7e9


def test_seq_counter_recovers_after_reopen(tmp_path):
    path = tmp_path / "s.sqlite"
    store = _new(path)
    _call(store, 0)
    _call(store, 1)
    store.close()
    with RunStore(path) as again:
        assert again.next_seq("r") == 2


def test_two_runs_share_one_file(tmp_path):
    path = tmp_path / "s.sqlite"
    _new(path, "a").close()
    _new(path, "b").close()
    with RunStore(path) as store:
        assert [r["run_id"] for r in store.list_runs()] == ["a", "b"]


def test_a_version_4_store_gains_evaluation_cost_columns(tmp_path):
    """Migration 5 (issue 15): an older store opens with eval columns defaulting to 0."""
    import sqlite3

    from basevolve.store.schema import MIGRATIONS

    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    for number, migration in enumerate(MIGRATIONS[:4]):
        con.executescript(f"BEGIN;\n{migration()}\nPRAGMA user_version = {number + 1};\nCOMMIT;")
    con.execute("INSERT INTO runs (run_id, task, model, protocol, allocator, arms, budget, depth, "
                "breadth, seed, config_json, status, created_at, updated_at) VALUES "
                "('old', 't', 'm', 'greedy', 'single', 1, 1, 1, 1, 0, '{}', 'finished', 0, 0)")
    con.execute("INSERT INTO programs (run_id, is_initial, generation, score, valid, created_at) "
                "VALUES ('old', 1, 0, 0.5, 1, 0)")
    con.close()
    with RunStore(path, create=False) as store:
        assert store.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
        row = store.query("SELECT eval_flops, eval_tokens FROM programs")[0]
        assert (row[0], row[1]) == (0.0, 0)
        assert store.eval_totals("old") == {"eval_flops": 0.0, "eval_tokens": 0,
                                            "eval_calls": 0, "eval_cache_hits": 0}
