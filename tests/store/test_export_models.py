"""`basevolve export` with several models (issue 25): ``calls`` carries ``model`` and
``cost_usd`` (a run from before: its own model, no price), ``models`` is the per-model
breakdown (one row per run and model, the summary's numbers), ``model_events`` the model
bandit's decisions; ``--for-analysis`` adds ``per_model`` only when a run mixed models.

Real runs through the CLI against the real test server; the "old" run has its
``calls.model``/``cost_usd`` set to NULL, as migration 7 leaves the rows of older runs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from basevolve.cli import main
from basevolve.store.export import MODEL_COLUMNS
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

OLD_NAMES = ["runs_raw", "calls", "attempts", "programs", "allocations", "trajectories_raw",
             "eval_calls"]


def _run(url: str, store: Path, out: Path, run_id: str, *models: str, extra=()) -> None:
    args = ["run", "--task", "circle_packing", "--budget", "12", "--base-url", url,
            "--store", str(store), "--out", str(out / run_id), "--run-id", run_id,
            "--seed", "5"]
    for m in models:
        args += ["--model", m]
    assert main([*args, *extra]) == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export_models")
    path = root / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        _run(srv.base_url, path, root, "two", "weak,params=1e9,price=1/10",
             "strong,params=8e9,price=10/100", extra=["--model-allocator", "ucb"])
        _run(srv.base_url, path, root, "old", "weak,params=1e9")
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE calls SET model=NULL, cost_usd=NULL WHERE run_id='old'")
    con.close()
    return path


def _sql(path: Path, sql: str, *args) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _export(capsys, store: Path, out: Path, *extra: str) -> list[str]:
    capsys.readouterr()
    assert main(["export", "--store", str(store), "--out", str(out), "--json", *extra]) == 0
    return [Path(p).name for p in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_models_and_model_events(store, tmp_path, capsys, fmt):
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    names = _export(capsys, store, tmp_path, "--format", fmt)
    assert names == [f"{n}.{fmt}" for n in (*OLD_NAMES, "model_events", "models")]
    # calls: the answering model of each call; an older run's calls name the run's model
    calls = read(tmp_path / f"calls.{fmt}")
    stored = dict(_sql(store, "SELECT call_id, model FROM calls WHERE run_id='two'"))
    two = calls[calls["run_id"] == "two"]
    assert dict(zip(two["call_id"], two["model"], strict=True)) == stored
    assert set(stored.values()) == {"weak", "strong"}
    old = calls[calls["run_id"] == "old"]
    assert len(old) == 12 and (old["model"] == "weak").all() and old["cost_usd"].isna().all()
    priced = dict(_sql(store, "SELECT call_id, cost_usd FROM calls WHERE run_id='two'"))
    assert two["cost_usd"].tolist() == pytest.approx([priced[c] for c in two["call_id"]])
    # models: one row per (run, model), equal to the stored rows' sums
    models = read(tmp_path / f"models.{fmt}")
    assert list(models.columns) == MODEL_COLUMNS
    assert sorted(zip(models["run_id"], models["model"], strict=True)) == [
        ("old", "weak"), ("two", "strong"), ("two", "weak")]
    for run_id, model, n, flops, p, c, o, usd in _sql(
            store, "SELECT c.run_id, coalesce(c.model, r.model), sum(c.counted), sum(c.flops), "
            "sum(prompt_tokens), sum(cached_tokens), sum(completion_tokens), sum(cost_usd) "
            "FROM calls c JOIN runs r USING (run_id) GROUP BY 1, 2"):
        row = models[(models["run_id"] == run_id) & (models["model"] == model)].iloc[0]
        assert (row["calls"], row["prompt_tokens"], row["cached_tokens"],
                row["completion_tokens"]) == (n, p, c, o)
        assert row["flops"] == pytest.approx(flops)
        assert (pd.isna(row["cost_usd"]) if usd is None else row["cost_usd"] == pytest.approx(usd))
    children = dict(_sql(store, "SELECT coalesce(c.model, 'weak'), count(*) FROM programs p "
                                "JOIN calls c USING (call_id) WHERE p.run_id='two' GROUP BY 1"))
    mine = models[models["run_id"] == "two"]
    assert dict(zip(mine["model"], mine["children"], strict=True)) == children
    # model_events: the bandit's rows as stored, one ask per call of the two-model run
    events = read(tmp_path / f"model_events.{fmt}")
    assert len(events) == _sql(store, "SELECT count(*) FROM model_events")[0][0]
    asks = events[events["kind"] == "ask"]
    assert len(asks) == 12 and set(asks["run_id"]) == {"two"}
    by_call = dict(_sql(store, "SELECT call_index, model FROM calls WHERE run_id='two'"))
    assert all(by_call[i] == m for i, m in zip(asks["call_index"], asks["model"], strict=True))


def test_models_table_is_the_summary_breakdown(store, tmp_path, capsys):
    """The same numbers as the run's summary (store/per_model.py, one function)."""
    _export(capsys, store, tmp_path)
    models = pd.read_csv(tmp_path / "models.csv")
    summary = json.loads(_sql(store, "SELECT summary_json FROM run_summary "
                                     "WHERE run_id='two'")[0][0])
    mine = models[models["run_id"] == "two"].drop(columns="run_id")
    rows = [{k: (None if pd.isna(v) else v) for k, v in r.items()}
            for r in mine.to_dict(orient="records")]
    assert rows == [pytest.approx(m) for m in summary["models"]]


def test_export_of_one_run(store, tmp_path, capsys):
    _export(capsys, store, tmp_path, "--run", "old")
    models = pd.read_csv(tmp_path / "models.csv")
    assert models[["run_id", "model", "calls"]].values.tolist() == [["old", "weak", 12]]
    assert pd.read_csv(tmp_path / "model_events.csv").empty
    assert (pd.read_csv(tmp_path / "calls.csv")["model"] == "weak").all()


def test_for_analysis_adds_per_model_only_for_several_models(store, tmp_path, capsys):
    names = _export(capsys, store, tmp_path / "a", "--for-analysis")
    assert names == ["runs.csv", "trajectories.csv", "children.csv", "per_model.csv"]
    per = pd.read_csv(tmp_path / "a" / "per_model.csv")
    assert set(per["run_id"]) == {"two"} and set(per["model"]) == {"weak", "strong"}
    assert per["calls"].sum() == 12
    # a store whose runs have one model each writes the three tables, as before
    names = _export(capsys, store, tmp_path / "b", "--for-analysis", "--run", "old")
    assert names == ["runs.csv", "trajectories.csv", "children.csv"]  # "old": one model
    one = tmp_path / "one.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        _run(srv.base_url, one, tmp_path, "solo", "weak,params=1e9")
    names = _export(capsys, one, tmp_path / "c", "--for-analysis")
    assert names == ["runs.csv", "trajectories.csv", "children.csv"]


def test_a_usd_budget_run_is_not_read_as_a_call_budget(tmp_path, capsys):
    """``--budget-usd`` (issue 25) sets ``budget`` to the engine's call cap only; the
    runs table names its kind, so ``analyze`` on calls leaves it out with a note instead
    of reading the cap as C."""
    from basevolve.store.export import runs_table

    path = tmp_path / "u.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        _run(srv.base_url, path, tmp_path, "c", "weak,params=1e9,price=1/10",
             "strong,params=8e9,price=10/100")
        args = ["run", "--task", "circle_packing", "--budget-usd", "0.3", "--max-tokens",
                "600", "--base-url", srv.base_url, "--store", str(path), "--out",
                str(tmp_path / "u"), "--run-id", "u", "--model", "weak,params=1e9,price=1/10",
                "--model", "strong,params=8e9,price=10/100"]
        assert main(args) == 0
    kinds = runs_table(path).set_index("run_id")["budget_kind"].to_dict()
    assert kinds == {"c": "calls", "u": "usd"}
    capsys.readouterr()
    assert main(["analyze", "--store", str(path), "--json", "--resamples", "20", "--shuffles",
                 "20", "--gate-shuffles", "20"]) == 0
    captured = capsys.readouterr()
    assert "left out 1 run(s) with a usd budget" in captured.err
    doc = json.loads(captured.out)
    assert [r["n"] for r in doc["summary"]] == [1]  # the call-budget run alone
    assert {(r["model"], r["runs"]) for r in doc["models"]} == {("weak", 1), ("strong", 1)}
