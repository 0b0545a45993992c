"""The start line and the progress bar say a cost budget in its own unit (issue 32).

Before: ``--budget-usd 1`` started with "a budget of 1 tokens", named only the first of
two models, and the progress bar showed "calls 0/1000000" (the engine's call cap).
"""

from __future__ import annotations

from basevolve.cli import main
from basevolve.cli.progress import progress_line
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply


def test_a_usd_run_of_two_models_starts_in_dollars_naming_both(tmp_path, capsys) -> None:
    with LLMTestServer(seeded_packing_reply) as srv:
        assert main(["run", "--task", "circle_packing", "--budget-usd", "0.3",
                     "--max-tokens", "600", "--base-url", srv.base_url,
                     "--store", str(tmp_path / "u.sqlite"), "--run-id", "u",
                     "--model", "weak,params=1e9,price=1/10",
                     "--model", "strong,params=8e9,price=10/100"]) == 0
    err = capsys.readouterr().err
    start = next(line for line in err.splitlines() if "run u started:" in line)
    assert "a budget of $0.3 (USD" in start and "tokens" not in start, start
    assert "models weak, strong" in start, start


def test_the_progress_bar_shows_a_cost_budget_not_the_call_cap() -> None:
    s = {"run_id": "u", "calls_completed": 3, "budget": 1_000_000, "flops": 1e12,
         "valid_rate": None, "best_score": None, "in_flight": 1}
    usd = progress_line({**s, "budget_kind": "usd", "budget_spent": 0.0123,
                         "budget_limit": 1.0}, 5.0)
    assert "calls 3  $0.0123/$1" in usd and "1000000" not in usd, usd
    tokens = progress_line({**s, "budget_kind": "tokens", "budget_spent": 1500.0,
                            "budget_limit": 20000.0}, 5.0)
    assert "calls 3  tokens 1.5e+03/2e+04" in tokens and "1000000" not in tokens, tokens
    assert "calls 3/1000000" in progress_line({**s, "budget": 1_000_000}, 5.0)  # C budget
