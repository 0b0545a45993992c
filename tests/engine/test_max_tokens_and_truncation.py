"""Thinking models get room to think, and a cut reply is never silent (issue 23, item 8).

The paper's models run Qwen3 in thinking mode, where a reply often needs more than 4,096
tokens (the paper's code asks for 16,000): the catalog gives each model its default
``max_tokens``.  A reply cut at the cap (``finish_reason = "length"``) is counted in the
run summary (and its table), on the dashboard's run page and in a sweep's reliability
table.  Real test server (its ``length`` fault cuts a reply in half and says so), real
store, real sandbox, real CLI.
"""

from __future__ import annotations

import json

import pytest

from basevolve.cli import main
from basevolve.cli.run_cmd import summary_table
from basevolve.config import RunConfig
from basevolve.dashboard import run_data
from basevolve.dashboard.db import ReadOnlyStore
from basevolve.engine import start_run
from basevolve.llm.catalog import MODELS
from basevolve.testing import LLMTestServer
from basevolve.testing.faults import Fault
from basevolve.testing.replies import seeded_packing_reply


@pytest.mark.parametrize(("model", "given", "sent"), [
    ("qwen3-8b", None, 16000), ("Qwen/Qwen3-1.7B", None, 16000),  # by name or served id
    ("llama-3.1-8b", None, 4096), ("qwen3-14b", 2048, 2048)])  # --max-tokens wins
def test_the_catalog_chooses_max_tokens_per_model(pool, tmp_path, model, given, sent):
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", budget=2, model=model, base_url=srv.base_url,
                        max_in_flight=1, max_tokens=given, run_id="mt")
        start_run(cfg, tmp_path / "mt.sqlite", pool=pool, out_dir=None)
        assert [r["max_tokens"] for r in srv.requests] == [sent, sent]
    assert all(MODELS.get(f"qwen3-{s}").max_tokens == 16000 for s in ("1.7b", "4b", "8b", "14b"))


def test_truncated_replies_are_counted_in_the_summary_and_on_the_dashboard(pool, tmp_path):
    store = tmp_path / "cut.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        srv.inject(Fault.LENGTH, 3)  # the first three replies are cut at the cap
        cfg = RunConfig(task="circle_packing", budget=6, model="test-model", params=1e9,
                        base_url=srv.base_url, max_in_flight=1, run_id="cut")
        s = start_run(cfg, store, pool=pool, out_dir=None)
    assert s["calls_completed"] == 6 and s["calls_truncated"] == 3
    table = summary_table(s)
    assert "replies cut at max_tokens" in table and "3 of 6" in table
    page = run_data.run_page(ReadOnlyStore(store), "cut")
    assert page["totals"]["calls_truncated"] == 3


def test_the_reliability_table_shows_cut_replies(tmp_path, capsys):
    db = tmp_path / "sweep.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        srv.inject(Fault.LENGTH, 2)
        cfg = tmp_path / "cut.toml"
        cfg.write_text(f'''[sweep]
name = "cut"

[[endpoints]]
base_url = "{srv.base_url}"
limit = 1

[[grid]]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{srv.base_url}"
budget = 4
max_in_flight = 1
seeds = 1
''')
        assert main(["sweep", str(cfg), "--store", str(db), "--json"]) == 0
        out = capsys.readouterr().out
        assert main(["sweep", str(cfg), "--store", str(db)]) == 0  # done: the table again
        text = capsys.readouterr().out
        assert len(srv.requests) == 4
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["cells"][0]["truncated"] == 2 and doc["cells"][0]["replies"] == 4
    assert "cut" in text and "50.0%" in text
    assert "2 of 4 replies were cut at max_tokens" in text


def test_a_larger_cap_gets_proportionally_longer_default_timeouts():
    """The default request timeout (300 s) is 4,096 tokens at ~14 tokens/s; a thinking
    model's 16,000-token cap at the same rate needs ~1,170 s, and a call three attempts.
    Given timeouts are kept; the embedded model gets none by default."""
    from basevolve.engine.runner import llm_settings

    def settings(**kw):
        return llm_settings(RunConfig(task="circle_packing", budget=2, run_id="t", **kw))

    url = "http://127.0.0.1:9/v1"
    s = settings(model="qwen3-8b", base_url=url)
    assert s.max_tokens == 16000
    assert s.attempt_timeout_s == pytest.approx(300 * 16000 / 4096)
    assert s.call_deadline_s == pytest.approx(3 * 300 * 16000 / 4096)
    s = settings(model="llama-3.1-8b", base_url=url)
    assert (s.max_tokens, s.attempt_timeout_s, s.call_deadline_s) == (4096, 300.0, 900.0)
    s = settings(model="qwen3-8b", base_url=url, request_timeout=60, call_timeout=100)
    assert (s.attempt_timeout_s, s.call_deadline_s) == (60, 100)
    s = settings(model="qwen3-8b", base_url=url, max_tokens=1024)
    assert (s.max_tokens, s.attempt_timeout_s) == (1024, 300.0)
