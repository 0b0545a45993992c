"""Several models in one run on the dashboard (issue 25, part 1).

A real two-model run (weak + a model whose name is HTML, priced, a UCB model bandit)
against the LLM test server with sandboxed scoring, next to a single-model run: the run
page's ``models`` section must equal :func:`~basevolve.store.per_model.model_breakdown`
and the stored rows (counted here row by row), the bandit's decisions the stored
``model_events``, the calls table each call's model and dollars; the runs list names the
models.  A single-model run keeps the page it had (no section), and a store from before
several models (schema 6, no ``calls.model``) still opens.  In Debian's chromium, the
section renders and the hostile name is text: no element, no script, no dialog.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from dashboard_support import Dashboard, get_json
from test_run_page_reads import WIDTH, Recording, outer_table

from basevolve.config import RunConfig
from basevolve.dashboard import run_data
from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.run_cache import RunRows
from basevolve.dashboard.run_models import LAST_DECISIONS
from basevolve.engine import start_run
from basevolve.store.per_model import model_breakdown
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

EVIL = "<img src=x onerror=alert(1)>"
PRICE_WEAK, PRICE_EVIL = (1.0, 0.5, 2.0), (2.0, 1.0, 10.0)  # USD per M prompt/cached/completion
TWO, ONE, BUDGET = "two", "one", 14


@pytest.fixture(scope="module")
def models_store(tmp_path_factory, pool) -> Path:
    db = tmp_path_factory.mktemp("models") / "store.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        common = {"task": "circle_packing", "base_url": srv.base_url, "seed": 4,
                  "max_in_flight": 3}
        start_run(RunConfig(
            run_id=TWO, model="weak", budget=BUDGET, allocator="ucb", arms=2,
            models=({"name": "weak", "params": 1e9, "price": "/".join(map(str, PRICE_WEAK))},
                    {"name": EVIL, "params": 8e9, "price": "/".join(map(str, PRICE_EVIL))}),
            model_allocator="ucb", **common), db, pool=pool, out_dir=None)
        start_run(RunConfig(run_id=ONE, model="test-model", params=1e9, budget=4, **common),
                  db, pool=pool, out_dir=None)
    return db


@pytest.fixture(scope="module")
def models_dash(models_store):
    d = Dashboard(models_store)
    yield d
    d.close()


def _rows(db: Path, sql: str, *args) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_the_models_section_equals_the_stored_rows(models_store, models_dash):
    page = get_json(models_dash, f"/api/run?id={TWO}")
    section = page["models"]
    con = sqlite3.connect(models_store)
    con.row_factory = sqlite3.Row
    try:  # the breakdown every other surface reads, from its own connection
        expected = model_breakdown(lambda sql, args: con.execute(sql, args).fetchall(), TWO, "weak")
    finally:
        con.close()
    assert section["models"] == expected
    assert [m["model"] for m in section["models"]] == ["weak", EVIL] or \
        [m["model"] for m in section["models"]] == [EVIL, "weak"]
    # and the breakdown against the rows themselves, model by model
    for m in section["models"]:
        calls, sent, flops, usd, p, c, o = _rows(
            models_store, "SELECT sum(counted), count(*), sum(flops), sum(cost_usd), "
            "sum(prompt_tokens), sum(cached_tokens), sum(completion_tokens) FROM calls "
            "WHERE run_id=? AND model=?", TWO, m["model"])[0]
        price = PRICE_WEAK if m["model"] == "weak" else PRICE_EVIL
        assert (m["calls"], m["calls_sent"]) == (calls, sent) and calls >= 1
        assert (m["prompt_tokens"], m["cached_tokens"], m["completion_tokens"]) == (p, c, o)
        assert m["flops"] == pytest.approx(flops)
        assert m["cost_usd"] == pytest.approx(usd)
        assert m["cost_usd"] == pytest.approx(((p - c) * price[0] + c * price[1]
                                               + o * price[2]) / 1e6)
        children = _rows(models_store, "SELECT count(*), sum(p.valid) FROM programs p JOIN "
                         "calls c ON c.call_id = p.call_id WHERE p.run_id=? AND c.model=?",
                         TWO, m["model"])[0]
        assert (m["children"], m["valid_children"]) == children
    assert sum(m["calls"] for m in section["models"]) == page["totals"]["calls_done"] == BUDGET
    assert sum(m["improvements"] for m in section["models"]) >= 1
    assert section["cost_usd"] == pytest.approx(
        _rows(models_store, "SELECT sum(cost_usd) FROM calls WHERE run_id=?", TWO)[0][0])
    assert section["configured"] == ["weak", EVIL]
    assert (section["model_allocator"], section["model_reward"]) == ("ucb", "improvement")


def test_the_bandits_decisions_equal_model_events(models_store, models_dash):
    b = get_json(models_dash, f"/api/run?id={TWO}")["models"]["bandit"]
    asks = _rows(models_store, "SELECT arm, model, call_index FROM model_events WHERE run_id=? "
                 "AND kind='ask' ORDER BY seq", TWO)
    assert b["asks"] == len(asks) == BUDGET  # every call of a program task is a decision
    assert (b["tells"], b["cancels"]) == tuple(_rows(
        models_store, "SELECT sum(kind='tell'), sum(kind='cancel') FROM model_events "
        "WHERE run_id=?", TWO)[0])
    names = {arm: model for arm, model, _ in asks}
    assert b["models"] == [names[i] for i in range(len(b["models"]))]
    assert not b["thinned"] and b["x"] == list(range(len(asks) + 1))
    for arm, series in enumerate(b["per_model"]):  # cumulative decisions, one by one
        assert series == [sum(a == arm for a, _, _ in asks[:n]) for n in range(len(asks) + 1)]
    for arm in range(len(b["models"])):
        rewards = [r for (r,) in _rows(models_store, "SELECT reward FROM model_events WHERE "
                                       "run_id=? AND kind='tell' AND arm=?", TWO, arm)]
        assert b["rewards"][arm] == len(rewards)
        assert b["mean_reward"][arm] == (pytest.approx(sum(rewards) / len(rewards))
                                         if rewards else None)
    last = asks[::-1][:LAST_DECISIONS]
    assert [(d["call_index"], d["model"]) for d in b["last"]] == [(i, m) for _, m, i in last]
    for d in b["last"]:
        told = _rows(models_store, "SELECT kind, reward FROM model_events WHERE run_id=? AND "
                     "call_index=? AND kind != 'ask'", TWO, d["call_index"])
        assert (d["outcome"], d["reward"]) == (told[0] if told else ("open", None))
        assert set(d["eligible"]) <= {"weak", EVIL} and d["model"] in d["eligible"]
    summary = _rows(models_store, "SELECT summary_json FROM model_events WHERE run_id=? AND "
                    "kind='ask' ORDER BY seq DESC LIMIT 1", TWO)[0][0]
    assert b["summary"] == json.loads(summary)


def test_calls_table_and_runs_list_name_each_model(models_store, models_dash):
    frame = get_json(models_dash, f"/api/calls?run={TWO}&size=50")
    calls = [dict(zip(frame["columns"], row, strict=True)) for row in frame["rows"]]
    stored = {i: (m, usd) for i, m, usd in _rows(
        models_store, "SELECT call_index, model, cost_usd FROM calls WHERE run_id=?", TWO)}
    assert len(calls) == len(stored) == BUDGET
    assert {c["call_index"]: (c["model"], c["cost_usd"]) for c in calls} == stored
    detail = get_json(models_dash, f"/api/call?run={TWO}&index=1")
    assert (detail["model"], detail["cost_usd"]) == stored[1]
    runs = {r["run_id"]: r for r in get_json(models_dash, "/api/runs")["runs"]}
    assert runs[TWO]["models"] == ["weak", EVIL] and runs[TWO]["model"] == "weak"
    assert runs[ONE]["models"] is None


def test_a_single_model_run_has_no_models_section(models_store, models_dash):
    page = get_json(models_dash, f"/api/run?id={ONE}")
    assert "models" not in page
    assert set(page) == {"run", "totals", "trajectories", "progress", "scatter", "pulls",
                         "lineage", "calls", "errors", "picture"}
    # its calls still say which model answered (NULL cost: unpriced)
    assert {(r[page["calls"]["columns"].index("model")],
             r[page["calls"]["columns"].index("cost_usd")]) for r in page["calls"]["rows"]} \
        == {("test-model", None)}


def test_an_older_run_and_an_older_store(models_store, tmp_path):
    """A run from before several models (its calls' model NULL, as migration 7 leaves
    them) has no section and its calls show the run's model; a schema-6 store (no
    ``calls.model``, no ``model_events``) opens with the page it always had."""
    old = tmp_path / "old.sqlite"
    shutil.copy(models_store, old)
    con = sqlite3.connect(old)
    with con:
        con.execute("UPDATE calls SET model=NULL, cost_usd=NULL WHERE run_id=?", (ONE,))
    con.close()
    d = Dashboard(old)
    try:
        page = get_json(d, f"/api/run?id={ONE}")
        assert "models" not in page
        col = page["calls"]["columns"].index("model")
        assert {r[col] for r in page["calls"]["rows"]} == {"test-model"}
    finally:
        d.close()
    con = sqlite3.connect(old)
    with con:
        con.execute("DROP TABLE model_events")
        con.execute("DROP INDEX calls_per_model")  # migration 8's, over those columns
        con.execute("ALTER TABLE calls DROP COLUMN cost_usd")
        con.execute("ALTER TABLE calls DROP COLUMN model")
        con.execute("PRAGMA user_version = 6")
    con.close()
    d = Dashboard(old)
    try:
        for run in (ONE, TWO):
            page = get_json(d, f"/api/run?id={run}")
            assert "models" not in page and "model" not in page["calls"]["columns"]
            assert page["totals"]["calls_done"] == (4 if run == ONE else BUDGET)
        assert "model" not in get_json(d, f"/api/call?run={TWO}&index=0")
        assert {r["run_id"]: r["models"] for r in get_json(d, "/api/runs")["runs"]}[TWO] \
            == ["weak", EVIL]  # the config still names them
    finally:
        d.close()


def test_the_run_page_reads_stay_narrow_with_several_models(models_store):
    """The section's reads: the calls scan keeps its width (the two new bits ride in the
    flags), events are read two values each, long text only for the last decisions."""
    rec = Recording(models_store)
    page = run_data.run_page(rec, TWO)
    assert page is not None and "models" in page
    for sql, rows in rec.seen:
        flat = " ".join(sql.split())
        table = outer_table(flat)
        if table in WIDTH and "LIMIT" not in flat and "GROUP BY" not in flat and rows:
            assert len(rows[0]) <= WIDTH[table], (table, len(rows[0]), flat)
        if table == "model_events" and len(rows) > LAST_DECISIONS:
            assert len(rows[0]) <= 2 and "json" not in flat, flat
        if "eligible_json" in flat:
            assert flat.endswith(f"LIMIT {LAST_DECISIONS}"), flat


def test_a_changing_run_recomputes_its_section_only_when_its_rows_changed(models_store,
                                                                          tmp_path):
    """The section is kept with the run's rows: a commit that touches only the run row
    reuses it; a new call (a live run) recomputes it, equal to the breakdown."""
    db = tmp_path / "live.sqlite"
    shutil.copy(models_store, db)
    store = ReadOnlyStore(db)
    rows = RunRows(TWO)
    rows.refresh(store)
    first = run_data.run_page(store, TWO, rows)["models"]
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE runs SET updated_at = updated_at + 1 WHERE run_id = ?", (TWO,))
    assert rows.refresh(store)
    assert run_data.run_page(store, TWO, rows)["models"] is first  # reused, not regrouped
    with con:
        seq = con.execute("SELECT max(seq) FROM calls WHERE run_id=?", (TWO,)).fetchone()[0]
        con.execute("INSERT INTO calls (run_id, call_index, seq, trajectory, pull_id, "
                    "generation, slot, seed, messages_json, status, counted, prompt_tokens, "
                    "cached_tokens, completion_tokens, flops, created_at, model, cost_usd) "
                    "VALUES (?, ?, ?, 0, 0, 1, 0, 0, '[]', 'ok', 1, 10, 0, 5, 1e12, 0, ?, 0.5)",
                    (TWO, BUDGET, seq + 1, EVIL))
    con.row_factory = sqlite3.Row
    expected = model_breakdown(lambda sql, args: con.execute(sql, args).fetchall(), TWO, "weak")
    con.close()
    assert rows.refresh(store)
    again = run_data.run_page(store, TWO, rows)["models"]
    assert again["models"] == expected
    evil = {m["model"]: m for m in again["models"]}[EVIL]
    before = {m["model"]: m for m in first["models"]}[EVIL]
    assert evil["calls"] == before["calls"] + 1
    assert evil["cost_usd"] == pytest.approx(before["cost_usd"] + 0.5)


def test_models_section_renders_and_a_hostile_name_is_text(models_store, models_dash, browser,
                                                          shots):
    from test_dashboard_browser import open_page, points

    page, ev = open_page(browser, f"{models_dash.base}/run?id={TWO}")
    page.wait_for_selector("#models-section tr.model-row")
    assert page.is_visible("#models-section")
    rows = page.locator("#models-section tr.model-row")
    assert rows.count() == 2
    names = [rows.nth(i).locator("td").first.text_content() for i in range(2)]
    assert set(names) == {"weak", EVIL}  # every character of the markup, as text
    assert page.text_content("#models-spend").startswith("$")
    assert points(page, "chart-models") == 2 * (BUDGET + 1)
    assert page.locator("#models-section tr.decision-row").count() == min(BUDGET, LAST_DECISIONS)
    assert EVIL in page.inner_text("#model-bandit")
    calls = page.inner_text("#calls")
    assert EVIL in calls and "weak" in calls and "USD" in calls
    assert f"weak+{EVIL}" in page.inner_text("#totals")
    assert EVIL in page.inner_text("#chart-models")  # the chart's legend, as text too
    assert page.locator("img[src='x']").count() == 0
    page.screenshot(path=str(shots / "models.png"), full_page=True)
    page.goto(f"{models_dash.base}/run?id={TWO}#call=1")
    page.wait_for_selector("#call-model")
    assert page.text_content("#call-model") in {"weak", EVIL}
    page.goto(models_dash.base + "/")
    page.wait_for_selector("table.runs tbody tr")
    assert f"weak+{EVIL}" in page.inner_text("table.runs")
    assert page.locator("img[src='x'], main img").count() == 0
    page.goto(f"{models_dash.base}/run?id={ONE}")
    page.wait_for_selector("#calls-done")
    page.wait_for_selector("#calls tbody tr")
    assert not page.is_visible("#models-section")
    assert "model" not in [t.strip() for t in page.locator("#calls th").all_text_contents()]
    assert page.locator("img[src='x']").count() == 0
    assert ev["dialogs"] == [] and ev["errors"] == [], ev
    page.close()

