"""A FLOPs/token budget against a server that charges every call its worst case
(issue 27, item 4).

Why: the default test server reports about a quarter of the prompt bound and short
replies, so a reservation that forgot ``max_tokens`` still covered every call and the
end-to-end budget tests passed.  Here the server's usage *is* the reservation's own
prompt bound, nothing cached, and every reply uses all of ``max_tokens``
(:func:`basevolve.testing.usage.worst_case_usage`): each call must cost exactly what was
reserved for it, and the run must still end within its budget with less than one call's
worst case left over.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from basevolve.cli import main
from basevolve.engine.budget import static_prompt_bound
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply
from basevolve.testing.usage import worst_case_usage

PARAMS = 1e9


def _rows(db, run_id):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        calls = con.execute("SELECT * FROM calls WHERE run_id=? ORDER BY call_index",
                            (run_id,)).fetchall()
        attempts = con.execute("SELECT a.* FROM attempts a JOIN calls c USING (call_id) "
                               "WHERE c.run_id=?", (run_id,)).fetchall()
        return calls, attempts
    finally:
        con.close()


def _cost(kind, attempts):
    """A call's cost from its raw attempt rows, independently of the engine's ledger."""
    if kind == "flops":
        return sum(a["flops"] for a in attempts)
    return sum(a["prompt_tokens"] + a["completion_tokens"] for a in attempts)


@pytest.mark.parametrize(("kind", "limit", "max_tokens", "extra"), [
    ("tokens", 30_000, 800, ["--max-in-flight", "1"]),
    ("flops", 2 * PARAMS * 40_000, 2000,
     ["--max-in-flight", "4", "--allocator", "ucb", "--arms", "3"]),
])
def test_a_run_charged_its_worst_case_stays_within_the_budget(tmp_path, capsys, kind, limit,
                                                              max_tokens, extra):
    db = tmp_path / "tight.sqlite"
    with LLMTestServer(seeded_packing_reply, usage=worst_case_usage) as srv:
        assert main(["run", "--task", "circle_packing", "--base-url", srv.base_url,
                     "--params", str(PARAMS), "--store", str(db), "--run-id", "tight",
                     f"--budget-{kind}", f"{limit:.0f}", "--max-tokens", str(max_tokens),
                     "--seed", "3", "--json", *extra]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    calls, attempts = _rows(db, "tight")
    assert s["status"] == "finished" and s["budget_kind"] == kind
    assert len(calls) >= 4 and all(c["status"] == "ok" for c in calls)
    for c in calls:  # the server really charged the worst case: no slack anywhere
        assert c["prompt_tokens"] == static_prompt_bound(json.loads(c["messages_json"]))
        assert (c["cached_tokens"], c["completion_tokens"]) == (0, max_tokens)
    spent = _cost(kind, attempts)
    assert s["budget_spent"] == pytest.approx(spent)
    assert spent <= limit, f"spent {spent:.6g} of a budget of {limit:.6g}"
    assert 0 <= limit - spent < s["budget_unfit_call"]
    for c in calls:  # so every reservation was exactly the call's cost
        reserved = json.loads(c["meta_json"])["budget_reserved"]
        cost = _cost(kind, [a for a in attempts if a["call_id"] == c["call_id"]])
        assert cost == pytest.approx(reserved), (
            f"call {c['call_index']} cost {cost:.6g} but {reserved:.6g} was reserved for it")
