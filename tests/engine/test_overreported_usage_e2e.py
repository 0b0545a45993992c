"""No call is ever charged more than was reserved for it, in any unit (issue 32, item 1).

Before: an endpoint answering ``prompt_tokens = completion_tokens = 2**31 - 1`` to a
request for ``max_tokens`` 1024 took a $1 budget to $4,294.97 and a 20,000-token budget
to 4,294,967,294 tokens in one call, and ``usage_impossible`` stayed 0: usage was checked
against 2**31 - 1 and the reply's bytes, never against what the request allowed.  Now
completion tokens above ``max_tokens`` and prompt tokens above what the sent prompt can
hold are impossible (flagged, counted, the call charged its reserved worst case), and the ledger cuts any charge left
above a call's reservation (a server template longer than the excess learned so far),
live and on resume alike.  Each test runs the real test server and the real CLI, once
per budget unit.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from basevolve.cli import main
from basevolve.engine.budget import static_prompt_bound
from basevolve.llm.usage import MAX_USAGE_TOKENS
from basevolve.records import IMPOSSIBLE_USAGE
from basevolve.testing import LLMTestServer
from basevolve.testing.llm_server import default_reply

PARAMS = 1e9
MAX_TOKENS = 1024
BUDGETS = {"usd": ["--budget-usd", "0.1"], "tokens": ["--budget-tokens", "20000"],
           "flops": ["--budget-flops", f"{2 * PARAMS * 20000:.0f}"]}
LIMITS = {"usd": 0.1, "tokens": 20000.0, "flops": 2 * PARAMS * 20000}
GUARD = 60  # requests after which the server fails: a run the lie fools ends, failed


def _guarded(body: dict, index: int) -> str:
    if index >= GUARD:
        raise RuntimeError("more calls than the budget pays for")
    return default_reply(body, index)


def _huge(body: dict[str, Any], reply: str) -> dict[str, Any]:
    """The break as reported: both counts at the 32-bit ceiling."""
    return {"prompt_tokens": MAX_USAGE_TOKENS, "completion_tokens": MAX_USAGE_TOKENS}


def _template(body: dict[str, Any], reply: str) -> dict[str, Any]:
    """A server whose own template adds 4,000 prompt tokens: possible (within the
    slack), but above what the first call reserved, before any excess was learned."""
    return {"prompt_tokens": static_prompt_bound(body["messages"]) + 4000,
            "completion_tokens": int(body["max_tokens"])}


def _run(tmp_path, capsys, unit: str, usage) -> tuple[dict, list[tuple[float, float]], int]:
    """Run under ``unit``'s budget; the summary, each call's (raw charge, reserved) and
    the number of attempts flagged impossible."""
    db = tmp_path / f"{unit}.sqlite"
    with LLMTestServer(_guarded, usage=usage) as srv:
        assert main(["run", "--task", "min_max_distance", "--base-url", srv.base_url,
                     "--model", f"m,params={PARAMS:.0f},price=1/10", "--store", str(db),
                     "--run-id", "lie", "--max-tokens", str(MAX_TOKENS),
                     "--max-in-flight", "1", *BUDGETS[unit], "--json"]) == 0
    s = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT c.meta_json, c.cost_usd, SUM(a.flops), "
            "SUM(COALESCE(a.prompt_tokens, 0) + COALESCE(a.completion_tokens, 0)), "
            "SUM(a.prompt_tokens IS NULL) FROM calls c JOIN attempts a USING (call_id) "
            "GROUP BY c.call_id ORDER BY c.call_index").fetchall()
        flagged = con.execute("SELECT COUNT(*) FROM attempts WHERE error LIKE ?",
                              (f"{IMPOSSIBLE_USAGE}%",)).fetchone()[0]
    finally:
        con.close()
    charges = []
    for meta, usd, flops, tokens, unmeasured in rows:
        raw = {"usd": usd, "flops": flops,
               "tokens": tokens + (flops / (2 * PARAMS) if unmeasured else 0)}[unit]
        charges.append((float(raw), float(json.loads(meta)["budget_reserved"])))
    return s, charges, flagged


def _spent_on_resume(capsys, tmp_path, unit: str) -> float:
    """``runs --json`` rebuilds the spend from the store, as a resume does."""
    assert main(["runs", "--store", str(tmp_path / f"{unit}.sqlite"), "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])[0]["budget_spent"]


@pytest.mark.parametrize("unit", ["usd", "tokens", "flops"])
def test_usage_above_what_the_request_allowed_is_impossible(tmp_path, capsys, unit) -> None:
    s, charges, flagged = _run(tmp_path, capsys, unit, _huge)
    assert s["status"] == "finished" and 1 <= len(charges) < GUARD
    assert s["budget_spent"] <= LIMITS[unit]
    assert all(raw <= reserved * (1 + 1e-9) for raw, reserved in charges)
    assert s["usage_impossible"] == flagged == len(charges)  # every lie flagged, counted
    # the lying call is charged its reserved worst case, not a smaller guess
    assert s["budget_spent"] == pytest.approx(sum(reserved for _, reserved in charges))
    assert _spent_on_resume(capsys, tmp_path, unit) == pytest.approx(s["budget_spent"])


@pytest.mark.parametrize("unit", ["usd", "tokens", "flops"])
def test_no_call_is_charged_more_than_was_reserved(tmp_path, capsys, unit) -> None:
    s, charges, flagged = _run(tmp_path, capsys, unit, _template)
    assert flagged == 0 and s["usage_impossible"] == 0  # possible usage, measured
    if unit == "usd":  # the stored dollars are the charge: already cut to the reservation
        assert charges[0][0] == pytest.approx(charges[0][1])
    else:
        assert charges[0][0] > charges[0][1]  # the server claimed more than was set aside
    charged = [min(raw, reserved) for raw, reserved in charges]
    assert s["budget_spent"] == pytest.approx(sum(charged))
    assert s["budget_spent"] <= LIMITS[unit]
    assert _spent_on_resume(capsys, tmp_path, unit) == pytest.approx(s["budget_spent"])
