"""prompt_optimization end to end against the real test server (issue 15).

The server plays both models (:mod:`basevolve.testing.qa_replies`): as the mutation
model it adds a marker phrase to the template, as the answering model it answers more
questions right the more markers the prompt holds, so a better prompt really scores
higher.  Checked: exactly C mutation calls, evaluation calls recorded per call and per
program and not charged, the answer cache, failing answer calls, ``--count-eval-calls``
never exceeding its budget, and the store as the ledger of all of it.
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from basevolve.config import RunConfig, budget_fields
from basevolve.engine.runner import start_run
from basevolve.engine.text_eval import TextEvaluator
from basevolve.llm import make_client
from basevolve.tasks import load_task
from basevolve.testing import LLMTestServer
from basevolve.testing.faults import Fault
from basevolve.testing.qa_replies import is_mutation_request, qa_reply

LIMIT = 6


def _config(url: str, run_id: str, *, budget=None, depth=None, budget_tokens=None,
            **kw) -> RunConfig:
    return RunConfig(task="prompt_optimization", model="qwen3-8b", base_url=url, run_id=run_id,
                     task_params={"limit": LIMIT, **kw.pop("task_params", {})},
                     **budget_fields(budget, None, budget_tokens, depth, None), **kw)


def _split(srv: LLMTestServer) -> tuple[int, int]:
    mutation = sum(1 for r in srv.requests if is_mutation_request(r))
    return mutation, len(srv.requests) - mutation


@pytest.mark.parametrize(("name", "kw"), [
    ("greedy", {"budget": 8, "depth": 4}),
    ("base", {"budget": 9, "allocator": "ucb", "arms": 3, "max_in_flight": 4}),
])
def test_exact_c_with_evaluation_calls_recorded_not_charged(tmp_path, name, kw):
    store = tmp_path / "lpo.sqlite"
    with LLMTestServer(qa_reply, latency_s=0.01) as srv:
        s = start_run(_config(srv.base_url, name, **kw), store, out_dir=tmp_path / "out")
        mutation, answers = _split(srv)
    assert mutation == kw["budget"] == s["calls_completed"] == s["budget_spent"]
    assert s["budget_left"] == 0 and s["status"] == "finished"
    assert answers == s["eval_calls"] > 0  # every answer request the server saw is stored
    assert s["best_score"] > 0.25  # the initial template answers 1 in 4; markers help
    con = sqlite3.connect(store)
    per_program = con.execute(
        "SELECT p.program_id, p.eval_flops, p.eval_tokens, p.valid, "
        "(SELECT count(*) FROM eval_calls e WHERE e.program_id = p.program_id), "
        "(SELECT coalesce(sum(flops), 0) FROM eval_calls e WHERE e.program_id = p.program_id),"
        "(SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM eval_calls e "
        " WHERE e.program_id = p.program_id) FROM programs p").fetchall()
    for _pid, flops, tokens, valid, rows, row_flops, row_tokens in per_program:
        assert rows == (LIMIT if valid else 0)  # an unusable template asks nothing
        assert flops == pytest.approx(row_flops) and tokens == row_tokens
    assert s["eval_flops"] == pytest.approx(sum(p[1] for p in per_program))
    assert s["eval_flops"] > 0
    assert s["eval_tokens"] == sum(p[2] for p in per_program)
    hits, sent = con.execute("SELECT sum(cache_hit), sum(cache_hit = 0) FROM eval_calls").fetchone()
    assert hits == s["eval_cache_hits"] > 0 and sent == answers
    # mutation calls are the only rows of `calls`; their FLOPs are the run's FLOPs
    assert con.execute("SELECT count(*) FROM calls").fetchone()[0] == kw["budget"]
    reasons = [r[0] for r in con.execute("SELECT error FROM programs WHERE valid = 0")]
    assert all("placeholder" in r for r in reasons)  # one reply in six drops {question}
    assert (tmp_path / "out" / "best_prompt.txt").read_text() == con.execute(
        "SELECT code FROM programs WHERE program_id = ?", (s["best_program_id"],)).fetchone()[0]


def test_rescoring_a_template_costs_nothing():
    task = load_task("prompt_optimization", {"limit": LIMIT})
    with LLMTestServer(qa_reply) as srv:
        client = make_client("qwen3-8b", srv.base_url)
        evaluator = TextEvaluator(task, client, own_client=True)

        async def twice():
            try:
                first = await evaluator.evaluate(task.initial_program)
                n = len(srv.requests)
                again, same = await asyncio.gather(evaluator.evaluate(task.initial_program),
                                                   evaluator.evaluate(task.initial_program))
                return first, n, again, same
            finally:
                await evaluator.aclose()

        first, n, again, same = asyncio.run(twice())
        assert n == LIMIT and len(srv.requests) == LIMIT  # nothing sent the second time
    assert first.score == again.score == same.score == 2 / LIMIT  # indexes 0 and 4 of 6
    assert again.eval_flops == 0 and again.eval_tokens == 0
    assert all(r["cache_hit"] == 1 and r["status"] == "cached" for r in again.eval_calls)
    assert first.eval_flops > 0 and first.eval_tokens > 0


def test_concurrent_identical_requests_share_one_call():
    task = load_task("prompt_optimization", {"limit": 2})
    with LLMTestServer(qa_reply, latency_s=0.2) as srv:
        evaluator = TextEvaluator(task, make_client("qwen3-8b", srv.base_url), own_client=True)

        async def together():
            try:
                return await asyncio.gather(*(evaluator.evaluate(task.initial_program)
                                              for _ in range(3)))
            finally:
                await evaluator.aclose()

        results = asyncio.run(together())
        assert len(srv.requests) == 2  # three evaluations, each question asked once
    assert sum(r["cache_hit"] == 0 for ev in results for r in ev.eval_calls) == 2


def test_failing_answer_calls_count_wrong_and_the_run_finishes(tmp_path):
    """A separate answering endpoint that refuses (400, not retried) some requests: those
    questions score 0, the failure is stored per call, nothing hangs."""
    with LLMTestServer(qa_reply) as mut, LLMTestServer(qa_reply) as ans:
        ans.inject(Fault.HTTP_400, times=4)
        cfg = _config(mut.base_url, "fail", budget=3, depth=3,
                      task_params={"answer_base_url": ans.base_url, "answer_params": "1B"})
        s = start_run(cfg, tmp_path / "s.sqlite")
        assert len(ans.requests) == s["eval_calls"] + 0 and _split(mut) == (3, 0)
    assert s["status"] == "finished" and s["calls_completed"] == 3
    con = sqlite3.connect(tmp_path / "s.sqlite")
    failed = con.execute("SELECT count(*), min(correct), max(attempts) FROM eval_calls "
                         "WHERE status = 'failed'").fetchone()
    assert failed[0] == 4 and failed[1] == 0.0 and failed[2] == 1
    err = con.execute("SELECT error FROM programs WHERE is_initial = 1").fetchone()[0]
    assert "4 of 6 answer calls failed and count as wrong" in err


@pytest.mark.parametrize(("name", "kw"), [
    ("calls", {"budget": 30, "depth": 30}),
    ("base", {"budget": 45, "allocator": "thompson", "arms": 3}),
    ("tokens", {"budget_tokens": 120_000, "max_tokens": 256,
                "task_params": {"max_template_chars": 400, "answer_max_tokens": 32}}),
])
def test_count_eval_calls_never_exceeds_the_budget(tmp_path, name, kw):
    with LLMTestServer(qa_reply) as srv:
        s = start_run(_config(srv.base_url, name, count_eval_calls=True, **kw),
                      tmp_path / "s.sqlite")
        mutation, answers = _split(srv)
    assert s["status"] == "finished" and answers == s["eval_calls"]
    task = load_task("prompt_optimization", {"limit": LIMIT, **kw.get("task_params", {})})
    if name == "tokens":
        con = sqlite3.connect(tmp_path / "s.sqlite")
        spent = con.execute("SELECT sum(prompt_tokens + completion_tokens) FROM calls").fetchone()[0]
        assert s["budget_spent"] == spent + s["eval_tokens"] <= 120_000
        return
    assert s["budget_spent"] == mutation + answers <= kw["budget"]
    assert mutation == s["calls_completed"]
    # ended only because one more call and its evaluation might not fit
    assert kw["budget"] - s["budget_spent"] < 1 + len(task.items)


def test_count_eval_calls_refuses_program_tasks_and_tiny_budgets(tmp_path):
    from basevolve.errors import ConfigError

    with LLMTestServer(qa_reply) as srv:
        with pytest.raises(ConfigError, match="--count-eval-calls charges"):
            start_run(RunConfig(task="min_max_distance", budget=4, model="qwen3-8b",
                                base_url=srv.base_url, count_eval_calls=True), tmp_path / "a.sqlite")
        with pytest.raises(ConfigError, match="need up to 13 calls"):
            start_run(_config(srv.base_url, "tiny", budget=12, depth=12, count_eval_calls=True),
                      tmp_path / "a.sqlite")
        assert srv.requests == []
    assert not (tmp_path / "a.sqlite").exists()


def test_analysis_reads_lpo_runs_unchanged(tmp_path):
    """Envelope, bilinear fit and gate run on prompt_optimization runs as on programs."""
    from basevolve.analysis import AnalysisConfig, analyze, load_tables

    store = tmp_path / "grid.sqlite"
    with LLMTestServer(qa_reply) as srv:
        for budget in (4, 8):
            for depth in (1, 2, budget):
                for seed in (0, 1):
                    start_run(_config(srv.base_url, f"c{budget}-t{depth}-s{seed}", budget=budget,
                                      depth=depth, seed=seed), store)
    tables = load_tables(store=store)
    result = analyze(tables, AnalysisConfig(thresholds=(0.5,), resamples=200, shuffles=200,
                                            gate_shuffles=200))
    summary = result.tables["summary"]
    assert set(summary["task"]) == {"prompt_optimization"} and len(summary) == 6
    assert len(result.tables["envelope"]) == 2  # one point per budget
    assert len(result.tables["bilinear"]) == 1 and len(result.tables["gate"]) > 0
    assert len(result.tables["thresholds"]) > 0


def test_sweep_runs_lpo_with_task_params(tmp_path):
    """`basevolve sweep` runs prompt_optimization unchanged: task_params in the grid."""
    from basevolve.sweep import run_sweep

    with LLMTestServer(qa_reply, latency_s=0.01) as srv:
        config = tmp_path / "lpo.toml"
        config.write_text(f"""
[sweep]
name = "lpo"
thresholds = [0.5]

[[endpoints]]
base_url = "{srv.base_url}"
limit = 4

[defaults]
task = "prompt_optimization"
task_params = {{ limit = 4 }}
model = "test-model"
params = 1e9
base_url = "{srv.base_url}"
seeds = 2

[[grid]]
budget = 4
depth = "powers-of-2"
""")
        result = run_sweep(config, tmp_path / "grid.sqlite", live=False)
        mutation, answers = _split(srv)
    assert not result.failed and len(result.outcomes) == 6  # T in {1, 2, 4} x 2 seeds
    assert mutation == 6 * 4
    con = sqlite3.connect(tmp_path / "grid.sqlite")
    assert con.execute("SELECT count(*) FROM eval_calls WHERE cache_hit = 0").fetchone()[0] == answers
    tasks = {r[0] for r in con.execute("SELECT task FROM runs")}
    assert tasks == {"prompt_optimization"}


@pytest.mark.parametrize(("protocol", "params"), [
    ("openevolve", {}), ("openevolve", {"mode": "diff"}), ("codeevolve", {}), ("shinkaevolve", {}),
])
def test_island_protocols_evolve_templates(tmp_path, protocol, params):
    """The island protocols run on text unchanged: their own prompts show the template
    in a text block, full rewrites / SEARCH/REPLACE edits / tagged replies apply to the
    whole template (it has no EVOLVE blocks), exactly C calls."""
    with LLMTestServer(qa_reply) as srv:
        s = start_run(_config(srv.base_url, protocol, budget=24, protocol=protocol,
                              protocol_params=params), tmp_path / "s.sqlite")
        mutation, answers = _split(srv)
    assert s["calls_completed"] == mutation == 24 and answers == s["eval_calls"] > 0
    con = sqlite3.connect(tmp_path / "s.sqlite")
    improved = con.execute("SELECT count(*) FROM programs WHERE valid = 1 AND is_initial = 0 "
                           "AND (code LIKE '%step by step%' OR code LIKE '%few words%' "
                           "OR code LIKE '%supports the answer%')").fetchone()[0]
    assert improved > 0 and s["best_score"] > 0.25
