"""Issue 22, item 11: the dashboard (and ``runs`` / ``export``) against hostile stores.

* ids and indexes beyond SQLite's 64-bit integers are a 400, not a 500;
* a store with invalid UTF-8 in text columns (a copy of the real test store, patched
  with raw bytes) still renders every page, with the bad bytes shown as U+FFFD, and
  ``basevolve runs`` / ``export`` work on it;
* a run's calls and errors come one page at a time (a real 130-call run whose odd
  calls write a failing program), and the pages together are exactly the store's rows;
  long runs' charts are thinned without changing the lines drawn.
"""

from __future__ import annotations

import http.client
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from dashboard_support import Dashboard
from test_dashboard_browser import open_page

from basevolve.config import RunConfig
from basevolve.dashboard import run_data, thinning
from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.run_cache import RunRows
from basevolve.engine import start_run
from basevolve.store import RunStore
from basevolve.sweep.stored import read_state
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

BAD = b"\xff\xfe bad \xc3("  # not UTF-8: two invalid bytes, text, a truncated sequence
SHOWN = "\ufffd\ufffd bad \ufffd("  # what a reader shows instead
CORRUPT = "grid-C4-T1-s0"
LONG, LONG_C = "long", 130
FAILING = "```python\ndef construct_packing():\n    raise ValueError('odd call %d')\n```\n"


def get(d: Dashboard, path: str) -> tuple[int, bytes]:
    con = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    try:
        con.request("GET", path)
        res = con.getresponse()
        return res.status, res.read()
    finally:
        con.close()


def api(d: Dashboard, path: str):
    status, body = get(d, path)
    assert status == 200, (path, body[:300])
    return json.loads(body)


@pytest.fixture(scope="module")
def bad_store(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shared store with raw non-UTF-8 bytes in many text columns."""
    db = tmp_path_factory.mktemp("bad-utf8") / "store.sqlite"
    src, dst = sqlite3.connect(store), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    raw = lambda text: text.encode() + BAD  # noqa: E731
    with dst:
        dst.execute("UPDATE runs SET model = CAST(? AS TEXT), error = CAST(? AS TEXT), "
                    "config_json = CAST(replace(config_json, '\"test-model\"', ?) AS TEXT) "
                    "WHERE run_id = ?", (raw("test-model"), BAD, b'"test-model' + BAD + b'"',
                                         CORRUPT))
        dst.execute("UPDATE calls SET raw_text = CAST(? AS TEXT), text = CAST(? AS TEXT), "
                    "error = CAST(? AS TEXT) WHERE run_id = ? AND call_index = 1",
                    (raw("reply"), raw("reply"), BAD, CORRUPT))
        dst.execute("UPDATE calls SET messages_json = CAST(replace(messages_json, 'system', ?) "
                    "AS TEXT) WHERE run_id = ? AND call_index = 1", (b"system" + BAD, CORRUPT))
        dst.execute("UPDATE programs SET code = CAST(? AS TEXT), stdout = CAST(? AS TEXT), "
                    "error = CAST(? AS TEXT) WHERE run_id = ? AND is_initial = 0",
                    (raw("x = 1  # "), raw("out"), raw("Traceback"), CORRUPT))
        dst.execute("UPDATE attempts SET error = CAST(? AS TEXT) WHERE call_id IN "
                    "(SELECT call_id FROM calls WHERE run_id = ?)", (BAD, CORRUPT))
    dst.close()
    with pytest.raises(sqlite3.OperationalError, match="decode"):  # the hazard is real
        sqlite3.connect(db).execute("SELECT model FROM runs").fetchall()
    return db


@pytest.fixture(scope="module")
def long_store(tmp_path_factory: pytest.TempPathFactory, pool) -> Path:
    """One real 130-call greedy run (T = 13 x N = 10); every other request's program
    raises."""
    db = tmp_path_factory.mktemp("long") / "store.sqlite"

    def reply(body: dict, index: int) -> str:
        return FAILING % index if index % 2 else seeded_packing_reply(body, index)

    with LLMTestServer(reply) as srv:
        cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                        params=1e9, budget=LONG_C, depth=13, run_id=LONG, max_in_flight=4)
        result = start_run(cfg, db, out_dir=db.parent / "out", pool=pool)
    assert result["calls_completed"] == LONG_C
    return db


@pytest.fixture(scope="module")
def long_dash(long_store: Path):
    d = Dashboard(long_store)
    yield d
    d.close()


def test_ids_beyond_64_bits_are_a_400(dashboard):
    run = "grid-C8-T8-s0"
    for path in (f"/api/call?run={run}&index={2**63}", f"/api/call?run={run}&index={-2**63 - 1}",
                 f"/api/program?run={run}&id={2**63}", f"/api/program?run={run}&id={10**30}",
                 f"/api/program?run={run}&id={-10**30}", f"/api/calls?run={run}&page={2**63}",
                 f"/api/calls?run={run}&size={2**64}", f"/api/errors?run={run}&page=0"):
        status, body = get(dashboard, path)
        assert status == 400, (path, status, body)
        assert b"range" in body or b"one of" in body
    assert get(dashboard, f"/api/call?run={run}&index={2**63 - 1}")[0] == 404  # in range


def test_invalid_utf8_is_shown_replaced_on_every_api(bad_store):
    d = Dashboard(bad_store)
    try:
        runs = {r["run_id"]: r for r in api(d, "/api/runs?size=100")["runs"]}
        assert runs[CORRUPT]["model"] == "test-model" + SHOWN
        page = api(d, f"/api/run?id={CORRUPT}")
        assert page["run"]["model"] == "test-model" + SHOWN
        assert page["run"]["config"]["model"] == "test-model" + SHOWN
        assert page["totals"]["calls_done"] == 4
        assert SHOWN in json.dumps(page["errors"]["rows"], ensure_ascii=False)
        call = api(d, f"/api/call?run={CORRUPT}&index=1")
        assert call["raw_text"]["text"] == "reply" + SHOWN and call["error"] == SHOWN
        assert call["messages"][0]["role"] == "system" + SHOWN
        assert call["attempts"][0]["error"] == SHOWN
        prog = api(d, f"/api/program?run={CORRUPT}&id={call['program']['program_id']}")
        assert prog["code"]["text"] == "x = 1  # " + SHOWN and prog["stdout"]["text"] == "out" + SHOWN
        assert prog["error"] == "Traceback" + SHOWN
        sweep = api(d, "/api/sweep?id=all")
        assert "test-model" + SHOWN in json.dumps(sweep, ensure_ascii=False)
        assert api(d, f"/api/calls?run={CORRUPT}&page=1")["total"] == 4
        assert get(d, f"/api/picture?run={CORRUPT}")[0] in (200, 404)
    finally:
        d.close()


def test_runs_and_export_work_on_invalid_utf8(bad_store, tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                              text=True, timeout=300)

    out = cli("runs", "--store", str(bad_store), "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    rows = {r["run_id"]: r for r in json.loads(out.stdout.splitlines()[-1])}
    assert rows[CORRUPT]["model"] == "test-model" + SHOWN
    assert rows[CORRUPT]["calls_completed"] == 4
    out = cli("runs", "--store", str(bad_store))
    assert out.returncode == 0 and CORRUPT in out.stdout, out.stderr
    out = cli("export", "--store", str(bad_store), "--out", str(tmp_path / "raw"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    text = (tmp_path / "raw" / "calls.csv").read_text(encoding="utf-8")
    assert "reply" + SHOWN in text
    assert "test-model" + SHOWN in (tmp_path / "raw" / "runs_raw.csv").read_text(encoding="utf-8")
    out = cli("export", "--store", str(bad_store), "--out", str(tmp_path / "tidy"),
              "--for-analysis")
    assert out.returncode == 0, out.stderr
    assert "test-model" + SHOWN in (tmp_path / "tidy" / "runs.csv").read_text(encoding="utf-8")
    assert read_state(bad_store)[CORRUPT]["error"] == SHOWN  # sweep --status reads it too


def test_calls_and_errors_are_paged_and_add_up_to_the_store(long_dash, long_store):
    con = sqlite3.connect(f"file:{long_store}?mode=ro", uri=True)
    calls = [r[0] for r in con.execute("SELECT call_index FROM calls WHERE run_id = ? "
                                       "ORDER BY call_index", (LONG,))]
    failed = [r[0] for r in con.execute(
        "SELECT c.call_index FROM programs p JOIN calls c USING (call_id) WHERE p.run_id = ? "
        "AND p.error IS NOT NULL ORDER BY p.seq", (LONG,))]  # in the order they were told
    con.close()
    bad = len(failed)
    assert len(calls) == LONG_C and bad == LONG_C // 2  # every other request failed
    page = api(long_dash, f"/api/run?id={LONG}")
    first = page["calls"]
    assert (first["total"], first["page"], first["size"], first["pages"]) == (LONG_C, 1, 100, 2)
    assert len(first["rows"]) == 100 and page["totals"]["calls_done"] == LONG_C
    assert len(page["scatter"]["x"]) == LONG_C  # the charts still see every call
    assert page["progress"]["thinned"] is False and len(page["progress"]["calls"]) == LONG_C + 1
    seen = []
    for n in range(1, 4):
        frame = api(long_dash, f"/api/calls?run={LONG}&page={n}&size=50")
        i = frame["columns"].index("call_index")
        seen += [r[i] for r in frame["rows"]]
        assert frame["pages"] == 3 and len(frame["rows"]) == (50 if n < 3 else LONG_C - 100)
    assert seen == calls
    assert api(long_dash, f"/api/calls?run={LONG}&page=9&size=50")["rows"] == []
    errors = []
    for n in (1, 2):
        frame = api(long_dash, f"/api/errors?run={LONG}&page={n}&size=50")
        assert frame["total"] == bad
        errors += frame["rows"]
    assert page["errors"]["rows"] == errors[:100][:len(page["errors"]["rows"])]
    assert len(errors) == bad and {e[0] for e in errors} == {"evaluation"}
    assert [e[1] for e in errors] == failed
    assert all("odd call" in e[4] for e in errors)
    assert get(long_dash, "/api/calls?run=nope")[0] == 404
    assert get(long_dash, f"/api/calls?run={LONG}&size=7")[0] == 400


def test_a_run_that_changes_is_rebuilt(long_store, tmp_path):
    """The run page is kept until the run itself changes (run_mark): a call inserted by
    the real writer, then a status change, each show up on the next requests."""
    db = tmp_path / "copy.sqlite"
    src, dst = sqlite3.connect(long_store), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    dst.close()
    d = Dashboard(db)
    try:
        before = api(d, f"/api/run?id={LONG}")
        assert before["totals"]["calls_pending"] == 0
        with RunStore(db) as st:
            st.create_run("other", {"task": "circle_packing", "model": "m", "protocol": "greedy",
                                    "allocator": "single", "arms": 1, "budget": 1, "depth": 1,
                                    "breadth": 1, "seed": 0},
                          active_params=1e9)  # another run moving: same page for LONG
        assert api(d, f"/api/run?id={LONG}") == before
        with RunStore(db) as st:
            st.insert_call(LONG, call_index=LONG_C, seq=st.next_seq(LONG), trajectory=0,
                           pull_id=LONG_C, generation=14, slot=0, seed=1,
                           messages=[{"role": "user", "content": "p"}])
        wait_for(lambda: api(d, f"/api/run?id={LONG}")["totals"]["calls_pending"] == 1)
        page = api(d, f"/api/run?id={LONG}")
        assert page["calls"]["total"] == LONG_C + 1
        with RunStore(db) as st:
            st.set_status(LONG, "interrupted", "stopped by the test")
        wait_for(lambda: api(d, f"/api/run?id={LONG}")["run"]["status"] == "interrupted")
    finally:
        d.close()


def test_rows_kept_between_requests_match_a_fresh_read_during_a_live_run(tmp_path, pool):
    """RunRows reads again only what can have changed (pending calls, rows after the last
    seq); during a real run, each incremental page equals a page read from scratch in the
    same snapshot of the store."""
    db = tmp_path / "live.sqlite"
    done: dict = {}
    with LLMTestServer(seeded_packing_reply, latency_s=0.05) as srv:
        cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                        params=1e9, budget=40, allocator="ucb", arms=2, run_id="live",
                        max_in_flight=4)
        worker = threading.Thread(target=lambda: done.update(
            start_run(cfg, db, out_dir=tmp_path / "out", pool=pool)), daemon=True)
        worker.start()
        while not db.exists():
            time.sleep(0.05)
        store = ReadOnlyStore(db) if _has_run(db) else None
        rows, seen, pending = RunRows("live"), 0, 0
        while worker.is_alive() or seen == 0:
            if store is None:
                store = ReadOnlyStore(db) if _has_run(db) else None
                continue
            store.db.execute("BEGIN")  # one snapshot for both reads
            try:
                rows.refresh(store)
                kept, fresh = run_data.run_page(store, "live", rows), run_data.run_page(store, "live")
            finally:
                store.db.execute("COMMIT")
            if kept is None:
                continue
            assert json.dumps(kept, sort_keys=True) == json.dumps(fresh, sort_keys=True)
            seen += 1
            pending += kept["totals"]["calls_pending"] > 0
        worker.join(60)
    print(f"compared {seen} pages, {pending} with calls in flight")
    assert done["calls_completed"] == 40 and seen >= 3 and pending >= 1, (seen, pending)
    rows.refresh(store)
    assert rows.refresh(store) is False  # nothing left to read: the page is kept
    assert run_data.run_page(store, "live", rows)["totals"]["calls_done"] == 40


def _has_run(db: Path) -> bool:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


def wait_for(check, timeout_s: float = 60.0) -> None:
    """Poll ``check`` (the dashboard notices a commit within about half a second)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "the dashboard never showed the change"
        time.sleep(0.1)


def test_long_runs_charts_are_thinned_to_the_same_lines(long_store, monkeypatch):
    """With the point limit at 20, the 130-call run's running best is sent thinned and,
    drawn as lines through the points sent, equals the full step function."""
    store = ReadOnlyStore(long_store)
    full = run_data.run_page(store, LONG)
    monkeypatch.setattr(thinning, "MAX_POINTS", 20)
    thin = run_data.run_page(store, LONG)
    p, q = full["progress"], thin["progress"]
    assert q["thinned"] is True and q["points"] == len(p["calls"]) == LONG_C + 1
    assert len(q["calls"]) <= 20 < len(p["calls"])
    for full_line, thin_line in [(p["overall"], q["overall"]),
                                 *zip(p["per_trajectory"], q["per_trajectory"], strict=True)]:
        drawn = np.interp(p["calls"], q["calls"], thin_line)
        assert np.allclose(drawn, full_line)  # every change kept: same lines
    assert np.allclose(np.interp(q["calls"], p["calls"], p["flops"]), q["flops"])
    assert q["calls"][0] == 0 and q["calls"][-1] == LONG_C
    pulls = thinning.even(LONG_C + 1, 20)
    assert len(pulls) == 20 and pulls[0] == 0 and pulls[-1] == LONG_C
    steps = np.array([[0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 2, 2]])  # changes at 3, 6
    assert thinning.thin_steps(steps, 6).tolist() == [0, 2, 3, 5, 6, 7]
    assert thinning.thin_steps(steps, 8).tolist() == list(range(8))  # under the limit
    store.db.close()


def test_browser_pages_through_calls_and_shows_replaced_bytes(long_dash, bad_store, browser):
    page, ev = open_page(browser, f"{long_dash.base}/run?id={LONG}")
    page.wait_for_selector("#calls table tbody tr")
    rows = page.locator("#calls table tbody tr")
    assert rows.count() == 100
    assert "1-100 of 130 calls" in page.inner_text("#calls-page-info")
    page.click("#calls-next")
    page.wait_for_selector("#calls-page-info:has-text('page 2 of 2')")
    assert rows.count() == LONG_C - 100
    assert rows.first.locator("td").first.inner_text() == "call 100"
    page.click("#calls table tbody tr:nth-child(3)")  # a row of page 2 opens its call
    page.wait_for_selector("#call-title:has-text('Call 102')")
    page.click("#calls-first")
    page.wait_for_selector("#calls-page-info:has-text('page 1 of 2')")
    assert page.locator("#errors table tbody tr").count() == LONG_C // 2
    assert "odd call" in page.inner_text("#errors")
    assert not ev["errors"] and not ev["dialogs"], ev
    d = Dashboard(bad_store)
    try:
        bad, ev = open_page(browser, f"{d.base}/run?id={CORRUPT}#call=1")
        bad.wait_for_selector("#call-title:has-text('Call 1')")
        bad.wait_for_selector("#calls-done")
        assert "test-model" + SHOWN in bad.inner_text("#totals")
        assert "reply" + SHOWN in bad.inner_text("#call-detail")
        bad.goto(d.base + "/")
        bad.wait_for_selector("table.runs tbody tr")
        assert "test-model" + SHOWN in bad.inner_text("table.runs")
        assert not ev["errors"], ev
    finally:
        d.close()
    page.close()


def test_a_run_id_that_is_not_utf8_still_lists(bad_store, tmp_path):
    """Even the key: a run id with invalid bytes lists (replaced) instead of failing."""
    db = tmp_path / "id.sqlite"
    src, dst = sqlite3.connect(bad_store), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    with dst:
        for (table,) in dst.execute(
                "SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c "
                "WHERE m.type = 'table' AND c.name = 'run_id'").fetchall():
            dst.execute(f"UPDATE {table} SET run_id = CAST(? AS TEXT) WHERE run_id = ?",
                        (b"id" + BAD, CORRUPT))
    dst.close()
    d = Dashboard(db)
    try:
        ids = [r["run_id"] for r in api(d, "/api/runs?size=100")["runs"]]
        assert "id" + SHOWN in ids
    finally:
        d.close()
    assert re.search("id\ufffd", subprocess.run(
        [sys.executable, "-m", "basevolve", "runs", "--store", str(db)], capture_output=True,
        text=True, timeout=300).stdout)
