"""Moving a run between stores (the Ray executor's merge): whole, once, ids shifted."""

from __future__ import annotations

import pytest

from basevolve.errors import StoreError
from basevolve.store import RunStore
from basevolve.store.transfer import export_run, import_run

CONFIG = {"task": "t", "model": "m", "protocol": "greedy", "allocator": "single", "arms": 1,
          "budget": 2, "depth": 2, "breadth": 1, "seed": 0}


def _fill(store: RunStore, run_id: str) -> None:
    store.create_run(run_id, CONFIG, active_params=1e9)
    init = store.insert_program(run_id, code="x=0", score=0.1, valid=True, generation=0,
                                is_initial=1)
    parent = init
    for i in range(2):
        cid = store.insert_call(run_id, call_index=i, seq=store.next_seq(run_id), trajectory=0,
                                pull_id=i, generation=i + 1, slot=0, parent_id=parent,
                                seed=i, messages=[{"role": "user", "content": "hi"}])
        store.finish_call(cid, status="ok", counted=True, fields={"text": "x", "flops": 1.0},
                          attempts=[{"attempt_index": 0, "status": "ok"}])
        parent = store.insert_program(run_id, code=f"x={i + 1}", score=0.2 + i, valid=True,
                                      generation=i + 1, call_id=cid, parent_id=parent,
                                      seq=store.next_seq(run_id), trajectory=0)
    store.set_status(run_id, "finished")


def test_export_import_roundtrip_shifts_ids_and_keeps_links(tmp_path):
    with RunStore(tmp_path / "node.sqlite") as node, RunStore(tmp_path / "main.sqlite") as main:
        _fill(main, "already-there")  # ids 1.. are taken in the target
        _fill(node, "r")
        rows = export_run(node, "r")
        assert import_run(main, rows) == "r"
        calls = main.query("SELECT * FROM calls WHERE run_id='r' ORDER BY call_index")
        progs = main.query("SELECT * FROM programs WHERE run_id='r' ORDER BY generation")
        assert [c["call_id"] for c in calls] != [c["call_id"] for c in rows["calls"]]
        by_id = {p["program_id"]: p for p in progs}
        for c, p in zip(calls, progs[1:], strict=True):
            assert p["call_id"] == c["call_id"]  # program -> its call
            assert c["parent_id"] in by_id  # call -> its parent program, in this run
            assert by_id[p["parent_id"]]["generation"] == p["generation"] - 1
        att = main.query("SELECT a.* FROM attempts a JOIN calls c USING (call_id) "
                         "WHERE c.run_id='r'")
        assert len(att) == 2
        assert main.totals("r") == node.totals("r")
        assert main.get_run("r")["status"] == "finished"
        with pytest.raises(StoreError, match="already in"):
            import_run(main, rows)  # never twice
        assert main.db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_import_refuses_unknown_columns_and_writes_nothing(tmp_path):
    with RunStore(tmp_path / "node.sqlite") as node, RunStore(tmp_path / "main.sqlite") as main:
        _fill(node, "r")
        rows = export_run(node, "r")
        rows["calls"][0]["from_the_future"] = 1
        with pytest.raises(StoreError, match="from_the_future"):
            import_run(main, rows)
        assert main.get_run("r") is None
        assert main.query("SELECT count(*) n FROM calls")[0]["n"] == 0
