"""basevolve.analyze / report over runs made with basevolve.run (real store, real pipeline)."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

import basevolve
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

FAST = {"resamples": 50, "shuffles": 50, "gate_shuffles": 50}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Greedy T=1 and T=2 (two seeds each) and one BaSE run: every call's reply is a
    valid packing whose score depends on the call's seed, so runs differ."""
    store = tmp_path_factory.mktemp("an") / "s.sqlite"
    with LLMTestServer(seeded_packing_reply, latency_s=0.0) as srv:
        common = {"base_url": srv.base_url, "params": 1e9, "store": store, "progress": False}
        results = [basevolve.run("circle_packing", 4, depth=d, seed=s, **common)
                   for d in (1, 2) for s in (0, 1)]
        results.append(basevolve.run("circle_packing", 4, allocator="ucb", arms=2, **common))
    return store, results


@pytest.mark.parametrize("in_loop", [False, True])
def test_analyze_store_and_frames_agree(runs, in_loop):
    store, results = runs

    async def cell():
        return basevolve.analyze(store=store, **FAST)

    from_store = asyncio.run(cell()) if in_loop else basevolve.analyze(store=store, **FAST)
    frame = pd.DataFrame([r.run_row() for r in results])
    traj = pd.concat([r.trajectories() for r in results], ignore_index=True)
    from_frames = basevolve.analyze(runs=frame, trajectories=traj, **FAST)
    summary = from_store["summary"]
    assert set(summary["method"]) == {"greedy T=1", "greedy T=2", "base-ucb K=2"}
    assert summary["n"].sum() == 5
    pd.testing.assert_frame_equal(summary, from_frames["summary"])
    pd.testing.assert_frame_equal(from_store["thresholds"], from_frames["thresholds"])
    best = max(r.best_score for r in results)
    assert summary["mean"].max() <= best + 1e-12
    with pytest.raises(basevolve.ConfigError, match="no result table 'nope'; known: summary"):
        from_store["nope"]


def test_report_writes_the_folder(runs, tmp_path):
    store, _ = runs
    index = basevolve.report(tmp_path / "rep", store=store, pdf=False, **FAST)
    assert index == tmp_path / "rep" / "index.html" and index.is_file()
    assert (tmp_path / "rep" / "tables.md").read_text().count("|") > 10
    assert list((tmp_path / "rep" / "figures").glob("*.png"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(basevolve.ConfigError, match="cannot write the report"):
        basevolve.report(blocker / "sub", store=store, pdf=False, **FAST)
