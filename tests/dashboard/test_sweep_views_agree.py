"""Issue 24, items 4 and 5: one sweep cell, one interval and one set of thresholds,
wherever the sweep is shown.

Before: ``analyze`` and the end-of-sweep summary gave a cell [0.2486, 0.7720] and the
dashboard [0.2485, 0.7185] -- every view drew its cells' bootstrap resamples from one
generator shared across cells, in its own cell order -- and the sweep file's
``thresholds`` reached only the end-of-sweep summary (the dashboard used 0.9/0.95/0.99,
``analyze`` its own defaults).  Here a real sweep (test server, sandbox, store) is shown
by all four views -- the sweep's summary, ``sweep --status``, ``analyze`` and a running
dashboard -- with a run outside the sweep in the same store, and the numbers must agree.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request

import numpy as np
import pandas as pd
import pytest
from dashboard_support import Dashboard

from basevolve.analysis.grouped import summary
from basevolve.analysis.stats import cell_stats
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

GRID = """\
[sweep]
name = "agree"
thresholds = [0.5, 0.6]
resamples = 500

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 4

[[grid]]
budget = [2, 4]
depth = "powers-of-2"
"""
TAUS = [0.5, 0.6]


def _cli(*argv: str, cwd) -> str:
    done = subprocess.run([sys.executable, "-m", "basevolve", *argv], capture_output=True,
                          text=True, cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _key(label: str) -> tuple[int, int]:
    c, t = re.search(r"C=(\d+)", label), re.search(r"T=(\d+)", label)
    assert c and t, label
    return int(c.group(1)), int(t.group(1))


@pytest.fixture(scope="module")
def sweep_store(tmp_path_factory):
    """A real sweep of 5 cells x 4 seeds, plus one run outside it (another cell)."""
    root = tmp_path_factory.mktemp("agree")
    with LLMTestServer(seeded_packing_reply) as srv:
        (root / "g.toml").write_text(GRID.format(url=srv.base_url))
        end = json.loads(_cli("sweep", "g.toml", "--store", "s.sqlite", "--json",
                              cwd=root).strip().splitlines()[-1])
        _cli("run", "--task", "circle_packing", "--budget", "3", "--base-url", srv.base_url,
             "--params", "1e9", "--store", "s.sqlite", "--run-id", "outside", "--out",
             str(root / "o"), cwd=root)
    return root, end


def test_every_view_gives_a_cell_one_interval_and_the_sweeps_thresholds(sweep_store):
    root, end = sweep_store
    assert end["finished"] == 20
    summary_cells = {_key(c["cell"]): c for c in end["cells"]}
    status = json.loads(_cli("sweep", "g.toml", "--store", "s.sqlite", "--status", "--json",
                             cwd=root))
    status_cells = {_key(c["cell"]): c for c in status["reliability"]}
    analyzed = json.loads(_cli("analyze", "--store", "s.sqlite", "--json", "--shuffles", "50",
                               "--gate-shuffles", "50", cwd=root))
    analyze_cells = {(r["budget"], r["depth"]): r for r in analyzed["summary"]
                     if r["method"].startswith("greedy") and r["n"] == 4}
    d = Dashboard(root / "s.sqlite")
    try:
        pages = {sweep: json.loads(urllib.request.urlopen(
            f"{d.base}/api/sweep?id={sweep}", timeout=120).read()) for sweep in ("agree", "all")}
    finally:
        d.close()
    dash = {sweep: {(r["budget"], r["depth"]): r for r in page["reliability"]}
            for sweep, page in pages.items()}

    assert set(summary_cells) == set(status_cells) == set(analyze_cells) == set(dash["agree"])
    assert len(summary_cells) == 5 and (3, 3) in dash["all"]  # the run outside the sweep
    for cell, s in summary_cells.items():
        ci = (s["ci_low"], s["ci_high"])
        for view in (status_cells[cell], analyze_cells[cell], dash["agree"][cell],
                     dash["all"][cell]):  # another cell beside it changes nothing
            assert (view["ci_low"], view["ci_high"]) == ci, (cell, view)
            assert view["mean"] == s["mean"] and view["iqm"] == s["iqm"]
        # the sweep file's thresholds, not the dashboard's 0.9/0.95/0.99
        assert list(s["p_reach"]) == list(status_cells[cell]["p_reach"]) == ["0.5", "0.6"]
        assert dash["agree"][cell]["p_ge"] == [s["p_reach"]["0.5"], s["p_reach"]["0.6"]]
    assert pages["agree"]["taus"] == TAUS
    # "all": the outside run's cell keeps the defaults; the sweep's cells show no P there
    assert pages["all"]["taus"] == [0.5, 0.6, 0.9, 0.95, 0.99]
    assert dash["all"][(2, 1)]["p_ge"][2:] == [None, None, None]
    # analyze: the sweep's resamples and its thresholds (Table 3), without flags
    assert analyzed["config"]["resamples"] == 500
    assert {r["tau"] for r in analyzed["thresholds"]} == set(TAUS)
    # explicit choices still win
    again = json.loads(_cli("analyze", "--store", "s.sqlite", "--json", "--shuffles", "50",
                            "--gate-shuffles", "50", "--thresholds", "0.7", "--resamples",
                            "200", cwd=root))
    assert {r["tau"] for r in again["thresholds"]} == {0.7}
    assert again["config"]["resamples"] == 200


def test_a_cells_interval_depends_on_its_runs_only():
    """The one function behind every view: the order of the runs and the cells beside
    it do not move a cell's interval (a shared generator did)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.2, 0.8, 6)
    a, b = cell_stats(x, 0, 400), cell_stats(x[::-1].copy(), 0, 400)
    assert (a["ci_low"], a["ci_high"]) == (b["ci_low"], b["ci_high"])
    assert cell_stats(x, 1, 400) != a  # the seed still matters
    runs = pd.DataFrame({"task": "t", "model": "m", "budget": 8, "protocol": "greedy",
                         "allocator": "single", "arms": 1, "depth": 2, "breadth": 4,
                         "fitness": x, "method": "greedy T=2"})
    other = runs.assign(budget=4, method="greedy T=1", depth=1, breadth=4,
                        fitness=rng.uniform(0, 1, 6))
    alone = summary(runs, 0, 400).iloc[0]
    beside = summary(pd.concat([other, runs]), 0, 400)
    row = beside[beside["budget"] == 8].iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (alone["ci_low"], alone["ci_high"])
    assert (alone["ci_low"], alone["ci_high"]) == (a["ci_low"], a["ci_high"])
