"""Budgets in FLOPs or tokens (issue 16, item 3): the worst case is reserved before each
call, a run never exceeds its budget (also after SIGKILL and resume), and the unused
remainder is smaller than one worst-case call."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from basevolve.cli import main
from basevolve.engine.budget import (
    TOKENS_PER_MESSAGE,
    TOKENS_PER_PROMPT,
    CostLedger,
    parse_amount,
    static_prompt_bound,
)
from basevolve.llm.flops import NoUsagePolicy
from basevolve.records import Attempt, AttemptStatus, Completion, Usage
from basevolve.testing import LLMTestServer
from basevolve.testing.process import server_process
from basevolve.testing.replies import seeded_packing_reply

MSGS = [{"role": "system", "content": "abc"}, {"role": "user", "content": "héllo"}]  # 3 + 6 bytes


def _completion(*attempts: Attempt) -> Completion:
    last = attempts[-1]
    return Completion("x", "x", "stop", last.usage or Usage(), 0.1, tuple(attempts))


def test_worst_case_and_settling_by_hand():
    assert static_prompt_bound(MSGS) == 9 + 2 * TOKENS_PER_MESSAGE + TOKENS_PER_PROMPT == 105
    tokens = CostLedger("tokens", 1000, 2e9, max_tokens=100)
    assert tokens.worst_case(MSGS) == 205
    flops = CostLedger("flops", 1e15, 2e9, max_tokens=100)
    assert flops.worst_case(MSGS) == 2 * 2e9 * 205
    # 3 reservations of 205 fit in 1000, a 4th does not (820 > 1000 - 615 ... = 1025)
    for k in range(3):
        assert tokens.fits(205)
        tokens.reserve(k, 205)
    assert tokens.fits(1000 - 615) and not tokens.fits(1000 - 615 + 1)
    # settling: prompt 40 (12 cached) + completion 30 = 70 tokens; FLOPs count uncached only
    ok = Attempt(0, AttemptStatus.OK, 0.1, Usage(40, 12, 30))
    assert tokens.settle(0, _completion(ok), MSGS) == 70
    assert tokens.spent == 70 and 0 not in tokens.reserved
    assert flops.settle(9, _completion(ok), MSGS) == 2 * 2e9 * (40 - 12 + 30)
    # a 500 without usage then an answer: worst case (prompt hint 40 + max 100) + 70
    failed = Attempt(0, AttemptStatus.HTTP_ERROR, 0.1)
    assert tokens.cost_of(_completion(failed, Attempt(1, AttemptStatus.OK, 0.1, Usage(40, 0, 30)))) == 210
    # never sent: free; under --charge-unanswered none: free
    assert tokens.cost_of(_completion(Attempt(0, AttemptStatus.NOT_SENT, 0.0))) == 0
    lenient = CostLedger("tokens", 1000, 2e9, max_tokens=100, no_usage=NoUsagePolicy.EXCLUDE)
    assert lenient.cost_of(_completion(failed)) == 0


def test_a_template_longer_than_the_bound_raises_later_bounds():
    ledger = CostLedger("tokens", 10_000, 1e9, max_tokens=100)
    ledger.settle(0, _completion(Attempt(0, AttemptStatus.OK, 0.1, Usage(105 + 50, 0, 5))), MSGS)
    assert ledger.excess == 50 and ledger.worst_case(MSGS) == 255


def test_restore_charges_lost_calls_what_was_reserved():
    calls = [
        {"status": "ok", "messages_json": json.dumps(MSGS), "meta_json": None, "prompt_tokens": 40},
        {"status": "lost", "messages_json": json.dumps(MSGS),
         "meta_json": json.dumps({"budget_reserved": 333.0}), "prompt_tokens": None},
    ]
    attempts = [{"prompt_tokens": 40, "completion_tokens": 30, "flops": 2 * 1e9 * 58},
                {"prompt_tokens": None, "completion_tokens": None, "flops": 2 * 1e9 * 140}]
    ledger = CostLedger("tokens", 10_000, 1e9, max_tokens=100)
    ledger.restore(calls, attempts)
    assert ledger.spent == 70 + 140 + 333
    none = CostLedger("tokens", 10_000, 1e9, max_tokens=100, no_usage=NoUsagePolicy.EXCLUDE)
    none.restore(calls, attempts)
    assert none.spent == 70 + 140
    flops = CostLedger("flops", 1e15, 1e9, max_tokens=100)
    flops.restore(calls, attempts)
    assert flops.spent == 2 * 1e9 * (58 + 140) + 333


@pytest.mark.parametrize(("text", "value"), [("3e15", 3e15), ("3.5P", 3.5e15), ("200k", 2e5),
                                             ("2M", 2e6), ("1_000", 1000.0), (7, 7.0)])
def test_amounts(text, value):
    assert parse_amount(text, "--budget-flops") == value


@pytest.mark.parametrize("text", ["0", "-1", "lots", "nan", "inf", "", "1Q"])
def test_bad_amounts_name_the_flag(text):
    with pytest.raises(ValueError, match="--budget-tokens"):
        parse_amount(text, "--budget-tokens")


def _reply(body: dict, index: int) -> str:
    """Every third reply is prose (score-0 child, no sandbox); the rest valid packings."""
    if body.get("seed", 0) % 3 == 0:
        return "I would rather not write code today."
    return seeded_packing_reply(body, index)


def _stored(db, run_id):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        calls = con.execute("SELECT * FROM calls WHERE run_id=?", (run_id,)).fetchall()
        attempts = con.execute("SELECT a.* FROM attempts a JOIN calls c USING (call_id) "
                               "WHERE c.run_id=?", (run_id,)).fetchall()
        return calls, attempts
    finally:
        con.close()


def _spent(kind, calls, attempts, params):
    """The cost recomputed from the raw rows, independently of the engine's ledger."""
    if kind == "flops":
        return sum(a["flops"] or 0.0 for a in attempts)
    return sum((a["prompt_tokens"] + a["completion_tokens"]) if a["prompt_tokens"] is not None
               else (a["flops"] or 0.0) / (2 * params) for a in attempts)


@pytest.mark.slow
def test_randomised_runs_never_exceed_and_leave_less_than_one_call(tmp_path, capsys):
    rng = np.random.default_rng(2026)
    with LLMTestServer(_reply, latency_s=0.01) as srv:
        for i in range(10):
            kind = ("flops", "tokens")[i % 2]
            max_tokens = int(rng.choice([300, 800, 2000]))
            arms = int(rng.choice([1, 3]))
            flight = int(rng.choice([1, 3, 8]))
            breadth = int(rng.choice([1, 2])) if arms == 1 else 1
            params = 1e9
            per_call = 2 * params * 3000 if kind == "flops" else 3000  # roughly one call
            limit = float(round(float(rng.uniform(6, 25)) * per_call))
            if i == 4:
                srv.inject("http_500", times=2)  # failed calls are charged, then re-sent
            argv = ["run", "--task", "circle_packing", "--base-url", srv.base_url,
                    "--params", str(params), "--store", str(tmp_path / "c.sqlite"),
                    "--run-id", f"r{i}", f"--budget-{kind}", f"{limit:.0f}",
                    "--max-tokens", str(max_tokens), "--max-in-flight", str(flight),
                    "--breadth", str(breadth), "--seed", str(i), "--json"]
            if arms > 1:
                argv += ["--allocator", str(rng.choice(["ucb", "thompson", "exp3p"])),
                         "--arms", str(arms)]
            assert main(argv) == 0
            s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
            calls, attempts = _stored(tmp_path / "c.sqlite", f"r{i}")
            spent = _spent(kind, calls, attempts, params)
            assert s["budget_kind"] == kind and s["budget"] is None and s["status"] == "finished"
            assert s["budget_spent"] == pytest.approx(spent)
            assert spent <= limit, (i, spent, limit)
            assert 0 <= limit - spent < s["budget_unfit_call"], (i, limit - spent)
            assert s["calls_completed"] == sum(c["counted"] for c in calls) >= arms
            # every call's reservation was its worst case, and a call never cost more
            for c in calls:
                reserved = json.loads(c["meta_json"])["budget_reserved"]
                cost = _spent(kind, [], [a for a in attempts if a["call_id"] == c["call_id"]],
                              params)
                assert cost <= reserved


def test_the_run_listing_and_export_show_the_budget(tmp_path, capsys):
    db = tmp_path / "l.sqlite"
    with LLMTestServer(_reply) as srv:
        assert main(["run", "--task", "circle_packing", "--base-url", srv.base_url,
                     "--params", "1e9", "--store", str(db), "--run-id", "tok",
                     "--budget-tokens", "20k", "--max-tokens", "500", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["runs", "--store", str(db), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["budget"] is None and row["depth"] is None
    assert (row["budget_kind"], row["budget_tokens"]) == ("tokens", 20000)
    assert row["budget_spent"] == summary["budget_spent"] <= 20000
    assert 20000 < row["budget_spent"] + summary["budget_unfit_call"]
    assert main(["runs", "--store", str(db)]) == 0
    assert "2e+04 tokens" in capsys.readouterr().out
    assert main(["export", "--store", str(db), "--out", str(tmp_path / "raw")]) == 0
    assert '""budget_tokens"": 20000' in (tmp_path / "raw" / "runs_raw.csv").read_text()
    assert main(["export", "--store", str(db), "--for-analysis", "--budget-axis", "tokens",
                 "--out", str(tmp_path / "ex")]) == 0
    runs = pd.read_csv(tmp_path / "ex" / "runs.csv")
    assert runs[["budget_kind", "budget_tokens", "budget"]].values.tolist() == [
        ["tokens", 20000, 20000]]
    capsys.readouterr()
    assert main(["analyze", "--input", str(tmp_path / "ex" / "runs.csv"), "--budget-axis",
                 "tokens", "--resamples", "50", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["budget"], r["method"]) for r in doc["summary"]] == [(20000, "greedy N=1")]
    assert doc["bilinear"] == [] and doc["gate"] == []  # no fixed T on a token axis


def _hash(path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.parametrize(("extra", "message"), [
    (["--budget", "8", "--budget-flops", "1e15"], "give one budget"),
    (["--budget-tokens", "1k", "--budget-flops", "1e15"], "give one budget"),
    (["--budget-flops", "1e15", "--depth", "4"], "drop --depth"),
    (["--budget-tokens", "100"], "smaller than one call's worst case"),
    (["--budget-tokens", "9000", "--allocator", "ucb", "--arms", "5"], "smaller than 5 x"),
    (["--budget-flops", "1e9"], "smaller than one call's worst case"),
    (["--budget-tokens", "lots"], "--budget-tokens must be a number"),
    (["--budget-flops", "-3"], "--budget-flops must be a finite number > 0"),
])
def test_bad_budgets_exit_2_and_leave_the_store_untouched(tmp_path, capsys, extra, message):
    db = tmp_path / "bad.sqlite"
    with LLMTestServer(_reply) as srv:
        assert main(["run", "--task", "circle_packing", "--base-url", srv.base_url,
                     "--params", "1e9", "--store", str(db), "--run-id", "first", "--budget", "2"]) == 0
        before = _hash(db)
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_:
            rc = main(["run", "--task", "circle_packing", "--base-url", srv.base_url,
                       "--params", "1e9", "--store", str(db), "--max-tokens", "2000", *extra])
            raise SystemExit(rc)
        assert len(srv.requests) == 2  # nothing was sent for the refused run
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert _hash(db) == before


@pytest.mark.slow
def test_sigkill_and_resume_stay_within_the_budget(tmp_path, kill_mid_run):
    with server_process("--reply-function", "packing") as url:
        db = tmp_path / "kill.sqlite"
        limit = 60_000
        kill_mid_run([sys.executable, "-m", "basevolve", "run", "--task", "circle_packing",
                      "--base-url", url, "--params", "1e9", "--store", str(db), "--run-id", "v",
                      "--budget-tokens", str(limit), "--max-tokens", "800",
                      "--allocator", "ucb", "--arms", "3", "--max-in-flight", "4"], db, 4)
        calls, attempts = _stored(db, "v")
        assert any(c["status"] == "pending" for c in calls)  # killed with calls in flight
        done = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "v",
                               "--store", str(db), "--json"], capture_output=True, text=True,
                              timeout=180, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        s = json.loads(done.stdout.strip().splitlines()[-1])
    calls, attempts = _stored(db, "v")
    lost = [c for c in calls if c["status"] == "lost"]
    assert lost and all(c["reissue_of"] is None for c in lost)
    charged_lost = sum(json.loads(c["meta_json"])["budget_reserved"] for c in lost)
    spent = _spent("tokens", calls, attempts, 1e9) + charged_lost
    assert s["status"] == "finished" and s["budget_spent"] == pytest.approx(spent)
    assert spent <= limit and limit - spent < s["budget_unfit_call"]
    reissued = {c["reissue_of"] for c in calls if c["reissue_of"] is not None}
    assert {c["call_id"] for c in lost} <= reissued  # each lost call sent again once
