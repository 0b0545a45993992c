"""`basevolve run --task prompt_optimization` from the command line (issue 15): bad input
is one clear line and exit 2 with the store untouched, `tasks --show` lists the task's
parameters, the summary shows the evaluation cost, and the embedded model can answer."""

from __future__ import annotations

import json
import sqlite3

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.qa_replies import qa_reply

TASK = ["--task", "prompt_optimization"]


@pytest.fixture()
def store(tmp_path):
    """A store holding one finished run, so 'untouched' is checked byte for byte."""
    path = tmp_path / "s.sqlite"
    with LLMTestServer(qa_reply) as srv:
        assert main(["run", *TASK, "--task-param", "limit=2", "--budget", "1", "--params", "1B",
                     "--base-url", srv.base_url, "--store", str(path), "--run-id", "first",
                     "--out", str(tmp_path / "out")]) == 0
    return path


def _bad(tmp_path, store, capsys, *args, server=True):
    before = store.read_bytes()
    capsys.readouterr()
    with LLMTestServer(qa_reply) as srv:
        url = ["--base-url", srv.base_url, "--params", "1B"] if server else []
        code = main(["run", *TASK, "--budget", "2", *url, "--store", str(store), *args])
        assert srv.requests == []  # nothing spent
    err = capsys.readouterr().err.strip()
    assert code == 2 and store.read_bytes() == before
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_missing_dataset(tmp_path, store, capsys):
    err = _bad(tmp_path, store, capsys, "--task-param", f"dataset={tmp_path}/none.jsonl")
    assert "none.jsonl does not exist" in err


def test_missing_columns(tmp_path, store, capsys):
    data = tmp_path / "qa.csv"
    data.write_text("question,reply\nWho?,Me\n")
    err = _bad(tmp_path, store, capsys, "--task-param", f"dataset={data}")
    assert "qa.csv" in err and "'answer'" in err


def test_empty_dataset(tmp_path, store, capsys):
    data = tmp_path / "qa.jsonl"
    data.write_text("\n")
    err = _bad(tmp_path, store, capsys, "--task-param", f"dataset={data}")
    assert ("qa.jsonl" in err and "no questions" in err.lower()) or "empty" in err.lower()


def test_template_without_question(tmp_path, store, capsys):
    template = tmp_path / "t.txt"
    template.write_text("Context: {context}\nAnswer:")
    err = _bad(tmp_path, store, capsys, "--task-param", f"template={template}")
    assert "lacks the placeholder(s) {question}" in err


def test_unreachable_answering_endpoint(tmp_path, store, capsys):
    err = _bad(tmp_path, store, capsys, "--task-param", "answer_base_url=http://127.0.0.1:9/v1")
    assert "cannot reach the answering endpoint" in err and "127.0.0.1:9" in err


def test_unknown_task_param_and_program_task(tmp_path, store, capsys):
    err = _bad(tmp_path, store, capsys, "--task-param", "limits=3")
    assert "unknown --task-param 'limits'" in err and "limit" in err
    before = store.read_bytes()
    assert main(["run", "--task", "circle_packing", "--task-param", "limit=3", "--budget", "2",
                 "--store", str(store)]) == 2
    assert "takes no --task-param" in capsys.readouterr().err and store.read_bytes() == before


def test_resume_refuses_task_params(tmp_path, store, capsys):
    assert main(["run", "--resume", "first", "--store", str(store),
                 "--task-param", "limit=5"]) == 2
    assert "--task-param" in capsys.readouterr().err


def test_tasks_show_lists_params(capsys):
    assert main(["tasks", "--show", "prompt_optimization"]) == 0
    out = capsys.readouterr().out
    assert "{question}" in out and "answer_base_url" in out and "limit" in out


def test_summary_shows_evaluation_cost(tmp_path, capsys):
    with LLMTestServer(qa_reply) as srv:
        assert main(["run", *TASK, "--task-param", "limit=3", "--budget", "2", "--params", "1B",
                     "--base-url", srv.base_url, "--store", str(tmp_path / "s.sqlite"),
                     "--out", str(tmp_path / "o"), "--json"]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["eval_calls"] > 0 and summary["eval_flops"] > 0
    assert summary["task_params"] == {"limit": 3} and summary["count_eval_calls"] is False
    assert "evaluation calls (cache hits)" in out and "not charged to the budget" in out
    assert summary["best_program"].endswith("best_prompt.txt")


#: The smoke run's size (issue 37, item 4: fewer tokens, so it holds on a loaded box):
#: QUESTIONS answered by the initial template and by each of 2 children, ANSWER_TOKENS each.
QUESTIONS, ANSWER_TOKENS, QA_PROMPT_TOKENS = 3, 8, 300


@pytest.mark.embedded
@pytest.mark.slow
@pytest.mark.embedded_work(waits=lambda r: r.limit(r.run_s(
    calls=3 * QUESTIONS, prompt_tokens=QA_PROMPT_TOKENS, completion_tokens=ANSWER_TOKENS)))
def test_embedded_small_model_answers(tmp_path, capsys):
    """The CI smoke run: 3 questions, C = 2, the embedded 0.5B model answering (the test
    server writes the templates).  Its answers are real model output, so only the
    plumbing is asserted: every question asked and scored, FLOPs at 0.5B parameters.
    Its time limit follows the measured rate (tests/cli/embedded_rate.py)."""
    from basevolve.llm.catalog import resolve_model

    store = tmp_path / "emb.sqlite"
    with LLMTestServer(qa_reply) as srv:
        code = main(["run", *TASK, "--budget", "2", "--params", "1B", "--base-url", srv.base_url,
                     "--task-param", f"limit={QUESTIONS}",
                     "--task-param", "answer_model=embedded-small",
                     "--task-param", f"answer_max_tokens={ANSWER_TOKENS}", "--store", str(store),
                     "--out", str(tmp_path / "out"), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 2 and summary["status"] == "finished"
    con = sqlite3.connect(store)
    rows = con.execute("SELECT status, prompt_tokens, cached_tokens, completion_tokens, flops, "
                       "correct FROM eval_calls WHERE cache_hit = 0").fetchall()
    assert len(rows) == summary["eval_calls"] >= QUESTIONS
    assert all(r[0] == "ok" and r[1] > 0 and 1 <= r[3] <= ANSWER_TOKENS and r[5] in (0.0, 1.0)
               for r in rows)
    params = resolve_model("embedded-small").active_params  # FLOPs of the answering model
    for _status, prompt, cached, completion, flops, _correct in rows:
        assert flops == pytest.approx(2 * params * (prompt - cached + completion))
    assert summary["eval_flops"] == pytest.approx(sum(r[4] for r in rows))
    assert 0.0 <= summary["best_score"] <= 1.0
