"""The committed example report (docs/example-report) is the one its script writes from
its sweep file, and it says that its data are simulated.

Cheap checks only: the sweep itself (~15 min) is not rerun here.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from basevolve.sweep.config import load_sweep

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "docs" / "example-report"


def _make_example():
    spec = importlib.util.spec_from_file_location("make_example", HERE / "make_example.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sweep_file_matches_the_script():
    sweep = load_sweep(HERE / "sweep.toml")
    me = _make_example()
    assert {r.config.base_url for r in sweep.runs} == set(me.SERVERS)
    assert {r.config.model for r in sweep.runs} == {"sim-weak", "sim-strong"}
    assert {r.config.task for r in sweep.runs} == {s[0] for s in me.SERVERS.values()}
    assert {r.config.allocator for r in sweep.runs} == {"single", "thompson", "ucb"}


def test_report_is_marked_simulated_and_complete():
    names = {p.name for p in HERE.iterdir()}
    assert {"index.html", "tables.md", "tables.tex", "README.md", "sweep.toml",
            "make_example.py", "figures"} <= names
    assert "truth.md" not in names  # the synthetic ground truth is gone
    index = (HERE / "index.html").read_text(encoding="utf-8")
    assert "Simulated data." in index.split("<h2>", 1)[0]  # the banner, above every table
    assert "Simulated data." in (HERE / "tables.md").read_text(encoding="utf-8")[:400]
    assert "Simulated data." in (HERE / "tables.tex").read_text(encoding="utf-8")[:400]
    assert "simulated" in (HERE / "README.md").read_text(encoding="utf-8").lower()
    shown = set(re.findall(r'src="figures/([\w-]+\.png)"', index))
    on_disk = {p.name for p in (HERE / "figures").iterdir()}
    assert shown and shown == on_disk  # every figure shown exists; no stray or PDF files
    for model in ("sim-weak", "sim-strong"):
        assert model in index
