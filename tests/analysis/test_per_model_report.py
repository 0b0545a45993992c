"""`basevolve analyze` / `report` with runs of several models (issue 25): a ``models``
result table (calls, tokens, FLOPs, USD, improvements, gain, gain per 1e15 FLOPs per
model) in the JSON, the printed tables, tables.md and tables.tex -- with model names from
outside escaped -- and nothing new for runs of one model.

Real runs through the CLI against the real test server.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from basevolve.cli import main
from basevolve.errors import ConfigError
from basevolve.report import OPTIONAL_TABLES
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

#: a name no report may choke on: Markdown/LaTeX/terminal specials, and a mathtext
#: fragment matplotlib would fail to parse in a figure title
EVIL = "ev|l\x1b[2J**x**\\input{/etc/passwd}%_$&#~^$\\frac{$x$"
FAST = ["--resamples", "20", "--shuffles", "20", "--gate-shuffles", "20"]


def _run(url: str, store: Path, out: Path, run_id: str, seed: int, *models: str,
         extra=()) -> None:
    args = ["run", "--task", "circle_packing", "--budget", "12", "--base-url", url,
            "--store", str(store), "--out", str(out / run_id), "--run-id", run_id,
            "--seed", str(seed)]
    for m in models:
        args += ["--model", m]
    assert main([*args, *extra]) == 0


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """``mixed``: two weak+strong runs (priced, model bandit), one run of a hostile-named
    model and strong, one single-model run; ``single``: that single-model run alone."""
    root = tmp_path_factory.mktemp("per_model_report")
    mixed, single = root / "mixed.sqlite", root / "single.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        for seed in (1, 2):
            _run(srv.base_url, mixed, root, f"two{seed}", seed, "weak,params=1e9,price=1/10",
                 "strong,params=8e9,price=10/100", extra=["--model-allocator", "ucb"])
        _run(srv.base_url, mixed, root, "evil", 3, f"{EVIL},params=1e9,weight=2",
             "strong,params=8e9")
        for path in (mixed, single):
            _run(srv.base_url, path, root / path.stem, "solo", 4, "weak,params=1e9")
    return {"mixed": mixed, "single": single}


def _analyze(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["analyze", *args, *FAST, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _sql(path: Path, sql: str, *args) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_analyze_json_has_the_per_model_table(stores, capsys):
    doc = _analyze(capsys, "--store", str(stores["mixed"]))
    rows = {(r["ensemble"], r["model"]): r for r in doc["models"]}
    assert set(rows) == {("strong+weak", "strong"), ("strong+weak", "weak"),
                         (EVIL + "+strong", "strong"),
                         (EVIL + "+strong", EVIL)}
    # the two weak+strong runs pooled: each number the sum of the stored rows
    for model in ("weak", "strong"):
        r = rows[("strong+weak", model)]
        n, flops, p, c, o, usd = _sql(
            stores["mixed"], "SELECT sum(counted), sum(flops), sum(prompt_tokens), "
            "sum(cached_tokens), sum(completion_tokens), sum(cost_usd) FROM calls "
            "WHERE run_id IN ('two1', 'two2') AND model=?", model)[0]
        assert r["runs"] == 2 and r["budget"] == 12 and r["method"] == "greedy T=12"
        assert (r["calls"], r["prompt_tokens"], r["cached_tokens"],
                r["completion_tokens"]) == (n, p, c, o)
        assert r["flops"] == pytest.approx(flops) and r["cost_usd"] == pytest.approx(usd)
        assert r["calls_share"] == pytest.approx(n / 24)
        assert r["gain_per_1e15_flops"] == pytest.approx(r["gain"] / flops * 1e15)
    # gain and improvements: the summaries' per-model numbers, summed over the runs
    per_run = [json.loads(s)["models"] for (s,) in _sql(
        stores["mixed"], "SELECT summary_json FROM run_summary WHERE run_id LIKE 'two%'")]
    for model in ("weak", "strong"):
        mine = [m for ms in per_run for m in ms if m["model"] == model]
        assert rows[("strong+weak", model)]["improvements"] == sum(
            m["improvements"] for m in mine)
        assert rows[("strong+weak", model)]["gain"] == pytest.approx(sum(m["gain"] for m in mine))
    assert sum(r["improvements"] for r in doc["models"]) >= 2  # something was bought
    # unpriced models: null dollars
    assert rows[(EVIL + "+strong", EVIL)]["cost_usd"] is None
    assert "solo" not in json.dumps(doc["models"])


def test_single_model_runs_add_nothing(stores, capsys, tmp_path):
    doc = _analyze(capsys, "--store", str(stores["single"]))
    assert "models" not in doc
    capsys.readouterr()
    assert main(["analyze", "--store", str(stores["single"]), *FAST]) == 0
    assert "Per model" not in capsys.readouterr().out
    assert main(["report", "--store", str(stores["single"]), *FAST, "--out",
                 str(tmp_path / "r")]) == 0
    caption = OPTIONAL_TABLES[0].caption
    assert caption not in (tmp_path / "r" / "tables.md").read_text()
    assert caption not in (tmp_path / "r" / "tables.tex").read_text()


def test_report_escapes_model_names(stores, capsys, tmp_path):
    assert main(["report", "--store", str(stores["mixed"]), *FAST, "--out",
                 str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "tables.md").read_text()
    tex = (tmp_path / "r" / "tables.tex").read_text()
    page = (tmp_path / "r" / "index.html").read_text()
    caption = OPTIONAL_TABLES[0].caption
    section = md[md.index(caption):].split("\n\n")[1].splitlines()
    header, rows = section[0], section[2:]
    assert header.startswith("| task / ensemble / budget / method / model | runs |")
    assert len(rows) == 4  # two models of each ensemble: no row split or forged by a name
    # the name's "|" cannot split a row: every row has as many cells as the header
    assert all(r.replace("\\|", "").count("|") == header.count("|") for r in rows)
    assert sum("ev\\|l" in r for r in rows) == 2
    assert "\x1b" not in md and "\x1b" not in tex and "\x1b" not in page
    assert "\\input{" not in tex and r"\textbackslash{}input\{/etc/passwd\}" in tex
    assert r"\%\_\$\&\#\textasciitilde{}\textasciicircum{}" in tex
    assert "<b>" not in page.split("<h1>")[0]


def test_printed_tables_are_clean(stores, capsys):
    capsys.readouterr()
    assert main(["analyze", "--store", str(stores["mixed"]), *FAST]) == 0
    out = capsys.readouterr().out
    assert "== Per model (runs with several models)" in out
    assert "\x1b" not in out and "\\x1b[2J" in out


def test_per_model_round_trips_through_export(stores, capsys, tmp_path):
    direct = _analyze(capsys, "--store", str(stores["mixed"]))
    assert main(["export", "--store", str(stores["mixed"]), "--for-analysis", "--out",
                 str(tmp_path)]) == 0
    again = _analyze(capsys, "--input", str(tmp_path / "runs.csv"), "--trajectories",
                     str(tmp_path / "trajectories.csv"), "--children",
                     str(tmp_path / "children.csv"), "--per-model",
                     str(tmp_path / "per_model.csv"))
    assert again["models"] == direct["models"]
    # the raw export's models table reads the same (its single-model rows are left out)
    assert main(["export", "--store", str(stores["mixed"]), "--out", str(tmp_path / "raw")]) == 0
    raw = _analyze(capsys, "--input", str(tmp_path / "runs.csv"), "--per-model",
                   str(tmp_path / "raw" / "models.csv"))
    assert raw["models"] == direct["models"]


def test_bad_per_model_table_is_one_line(stores, capsys, tmp_path):
    assert main(["export", "--store", str(stores["mixed"]), "--for-analysis", "--out",
                 str(tmp_path)]) == 0
    bad = pd.read_csv(tmp_path / "per_model.csv")
    bad["flops"] = bad["flops"].astype(object)
    bad.loc[0, "flops"] = "lots"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    capsys.readouterr()
    code = main(["analyze", "--input", str(tmp_path / "runs.csv"), "--per-model",
                 str(tmp_path / "bad.csv"), *FAST])
    err = capsys.readouterr().err
    assert code == 2 and "per-model table" in err and "'flops'" in err and "'lots'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    from basevolve.analysis.per_model import several_models

    good = pd.read_csv(tmp_path / "per_model.csv")
    assert several_models(good) is not None
    with pytest.raises(ConfigError, match="missing column"):
        several_models(good.drop(columns="gain"))
    with pytest.raises(ConfigError, match="two rows for model"):
        several_models(pd.concat([good, good.iloc[:1]]))
