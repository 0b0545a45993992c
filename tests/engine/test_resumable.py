"""Runs stored in an order this version does not replay are refused on --resume with one
line, the store untouched (engine/resumable.py, issue 23): ShinkaEvolve judge-mode runs
from before the judge decided ahead of evaluation."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import island_reply

JUDGE = {"migration_interval": 3, "novelty": "judge", "novelty_threshold": 0.6}


def _judge_run(pool, store: Path, url: str) -> None:
    cfg = RunConfig(task="min_max_distance", budget=18, base_url=url, run_id="old", seed=3,
                    protocol="shinkaevolve", protocol_params=JUDGE, max_in_flight=4)
    summary = start_run(cfg, store, pool=pool)
    assert summary["calls_completed"] == 18
    con = sqlite3.connect(store)
    with con:  # as if killed: resume must run again
        con.execute("UPDATE runs SET status='interrupted'")
    judges = con.execute("SELECT count(*) FROM calls WHERE purpose='judge'").fetchone()[0]
    con.close()
    assert judges >= 1  # similar children went to the novelty judge


def test_a_judge_run_of_the_old_order_is_refused_and_left_as_it_was(
        pool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    with LLMTestServer(island_reply) as srv:
        _judge_run(pool, store, srv.base_url)
        con = sqlite3.connect(store)
        with con:  # the old order stored no gate mark on its judge calls
            for call_id, meta in con.execute(
                    "SELECT call_id, meta_json FROM calls WHERE purpose='judge'").fetchall():
                m = json.loads(meta)
                m.pop("gates_program")
                con.execute("UPDATE calls SET meta_json=? WHERE call_id=?",
                            (json.dumps(m), call_id))
        con.close()
        before = store.read_bytes()
        code = main(["run", "--resume", "old", "--store", str(store)])
        n_requests = len(srv.requests)
    err = capsys.readouterr().err
    assert code == 2 and n_requests == 18  # nothing was sent
    assert "cannot be resumed" in err and "start a new run" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert store.read_bytes() == before


def test_a_judge_run_of_this_order_resumes(pool, tmp_path: Path) -> None:
    """The control: the same run with its gate marks resumes and finishes."""
    store = tmp_path / "s.sqlite"
    with LLMTestServer(island_reply) as srv:
        _judge_run(pool, store, srv.base_url)
        assert main(["run", "--resume", "old", "--store", str(store)]) == 0
    con = sqlite3.connect(store)
    assert con.execute("SELECT status, (SELECT sum(counted) FROM calls) FROM runs"
                       ).fetchone() == ("finished", 18)
