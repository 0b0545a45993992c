"""Issue 12, item 2: FLOPs of unanswered attempts are a stated worst case, shown apart."""

from __future__ import annotations

import json
import sqlite3

import pytest

from basevolve.cli import main
from basevolve.testing import Fault, LLMTestServer


@pytest.mark.parametrize("charge", ["worst", "none"])
def test_unanswered_attempt_charged_by_flag_and_shown_apart(tmp_path, capsys, charge):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(latency_s=0.0) as srv:
        srv.inject(Fault.TRUNCATED)  # the request arrived; the answer was cut off
        code = main(["run", "--task", "min_max_distance", "--budget", "2", "--max-in-flight",
                     "1", "--model", "qwen3-1.7b", "--base-url", srv.base_url, "--max-tokens",
                     "50", "--store", str(store), "--run-id", "r", "--json",
                     "--charge-unanswered", charge, "--out", str(tmp_path / "o")])
    assert code == 0
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    con = sqlite3.connect(store)
    rows = con.execute("SELECT a.status, a.flops, c.prompt_tokens, c.flops FROM attempts a "
                       "JOIN calls c USING (call_id) ORDER BY a.call_id, a.attempt_index").fetchall()
    con.close()
    (status, cut_flops, prompt, _), *answered = rows
    assert status == "connection_error" and all(r[0] == "ok" for r in answered)
    worst = 2 * 1.72e9 * (prompt + 50)
    expected = worst if charge == "worst" else 0.0
    assert cut_flops == pytest.approx(expected)
    assert summary["flops_unmeasured"] == pytest.approx(expected)
    assert summary["flops"] == pytest.approx(sum(r[1] for r in rows))
    assert "of which unmeasured" in out
