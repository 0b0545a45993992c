"""Issue 37, item 3: the summary table, ``basevolve runs`` and ``runs --json`` show the
initial program's score beside the best (``start -> best``), so a run that found nothing
better says so; issue 32: a forged score of 1e308 prints as ``1e+308``, not 309 digits.

Real runs through the CLI against the repo's test server, a real SQLite store; the
oracle is the store's own ``programs`` rows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.cli.summary_table import summary_table
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply


def _run(url: str, store: Path, out: Path, run_id: str, *extra: str) -> int:
    return main(["run", "--task", "circle_packing", "--budget", "4", "--base-url", url,
                 "--model", "test-model", "--params", "1e9", "--store", str(store),
                 "--out", str(out / run_id), "--run-id", run_id, "--seed", "3", *extra])


def _scores(store: Path, run_id: str) -> tuple[float, float]:
    con = sqlite3.connect(store)
    try:
        start = con.execute("SELECT score FROM programs WHERE run_id=? AND is_initial=1",
                            (run_id,)).fetchone()[0]
        best = con.execute("SELECT max(score) FROM programs WHERE run_id=?",
                           (run_id,)).fetchone()[0]
    finally:
        con.close()
    return start, best


def _runs_json(capsys, store: Path) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    return {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}


def test_start_and_best_in_summary_table_runs_and_json(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        assert _run(srv.base_url, store, tmp_path, "up", "--json") == 0
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert _run(srv.base_url, store, tmp_path, "up2") == 0
        table = capsys.readouterr().out
    start, best = _scores(store, "up")
    assert best > start  # the seeded replies pack better than the initial program
    assert summary["start_score"] == start and summary["best_score"] == best
    start2, best2 = _scores(store, "up2")
    row = next(ln for ln in table.splitlines() if ln.startswith("start -> best score"))
    assert f"{start2:.6f} -> {best2:.6f} (+{best2 - start2:.6f})" in row
    runs = _runs_json(capsys, store)
    assert (runs["up"]["start_score"], runs["up"]["best_score"]) == (start, best)
    assert (runs["up2"]["start_score"], runs["up2"]["best_score"]) == (start2, best2)
    assert main(["runs", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert head[-2:] == ["start_score", "best_score"]
    cells = {ln.split()[0]: ln.split()[-2:] for ln in lines[1:]}
    assert cells["up"] == [f"{start:.6f}", f"{best:.6f}"]


def test_a_run_that_did_not_improve_says_so(tmp_path, capsys):
    """The test server's default reply echoes the parent: the best stays the start."""
    store = tmp_path / "s.sqlite"
    with LLMTestServer() as srv:
        assert _run(srv.base_url, store, tmp_path, "flat") == 0
    out = capsys.readouterr().out
    start, best = _scores(store, "flat")
    assert start == best
    row = next(ln for ln in out.splitlines() if ln.startswith("start -> best score"))
    assert row.endswith(f"{start:.6f} -> {best:.6f} (not improved)")
    assert _runs_json(capsys, store)["flat"]["start_score"] == start


def test_a_forged_huge_score_prints_readably(tmp_path, capsys):
    """Issue 32: a score of 1e308 (the largest a forged evaluator could report) reads
    ``1e+308`` in the summary table, the progress line and ``basevolve runs``."""
    from basevolve.cli.progress import progress_line

    store = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        assert _run(srv.base_url, store, tmp_path, "big", "--json") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    table = summary_table({**summary, "best_score": 1e308})
    assert "1e+308" in table and max(len(ln) for ln in table.splitlines()) < 200
    line = progress_line({**summary, "best_score": 1e308}, 3.0)
    assert "best 1e+308" in line and len(line) < 200
    con = sqlite3.connect(store)
    with con:
        con.execute("UPDATE programs SET score=1e308 WHERE run_id='big' AND is_initial=0")
    con.close()
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[-1] == "1e+308" and max(map(len, out.splitlines())) < 200


@pytest.mark.parametrize(("value", "text"), [
    (0.3, "0.300000"), (0.0, "0.000000"), (1.0, "1.000000"), (-2.5, "-2.500000"),
    (123456.0, "123456.000000"), (1e308, "1e+308"), (-1e308, "-1e+308"), (1e-9, "1e-09"),
    (float("inf"), "inf"), (float("nan"), "nan"), (None, "-"),
])
def test_score_text(value, text):
    from basevolve.cli.summary_table import score_text

    assert score_text(value) == text



def test_per_model_rows_agree_in_number(tmp_path, capsys) -> None:
    """Issue 37, item 8: a model with one improvement (and one call) printed "1
    improvements"."""
    from basevolve.cli.summary_table import counted

    assert [counted(n, "improvement") for n in (0, 1, 2)] == [
        "0 improvements", "1 improvement", "2 improvements"]
    with LLMTestServer(seeded_packing_reply) as srv:
        assert _run(srv.base_url, tmp_path / "s.sqlite", tmp_path, "m", "--json") == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    models = [{"model": "weak", "calls": 1, "prompt_tokens": 1, "completion_tokens": 0,
               "flops": 20.0, "cost_usd": None, "improvements": 1},
              {"model": "strong", "calls": 2, "prompt_tokens": 20, "completion_tokens": 10,
               "flops": 600.0, "cost_usd": 0.5, "improvements": 0}]
    lines = summary_table({**summary, "models": models}).splitlines()
    assert any(ln.split() == ["weak", "1", "call,", "1", "token,", "20", "FLOPs,", "1",
                              "improvement"] for ln in lines), lines
    assert any(ln.split() == ["strong", "2", "calls,", "30", "tokens,", "600", "FLOPs,",
                              "$0.5,", "0", "improvements"] for ln in lines), lines
