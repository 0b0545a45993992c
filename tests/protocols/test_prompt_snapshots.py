"""Prompt snapshots: every island template and mode, rendered from fixed scenarios
(:mod:`basevolve.protocols.examples`), must equal the committed files.

Two sets: ``tests/protocols/snapshots/`` (the small fake task) and the documentation
examples ``docs/protocols/`` (circle packing), so the docs always show what is sent.
Regenerate after a deliberate wording change with
``BASEVOLVE_UPDATE_SNAPSHOTS=1 pytest tests/protocols/test_prompt_snapshots.py`` and
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from protocol_fakes import IslandTask

from basevolve.protocols.examples import EXAMPLES, render
from basevolve.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
SETS = {"fake": (ROOT / "tests/protocols/snapshots", IslandTask),
        "circle_packing": (ROOT / "docs/protocols", lambda: load_task("circle_packing"))}
UPDATE = os.environ.get("BASEVOLVE_UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("which", sorted(SETS))
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_prompt_snapshot(which, name):
    folder, make_task = SETS[which]
    text = render(EXAMPLES[name](make_task()))
    path = folder / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing snapshot {path}; run with BASEVOLVE_UPDATE_SNAPSHOTS=1"
    assert path.read_text(encoding="utf-8") == text


def test_every_snapshot_file_has_a_scenario():
    for folder, _ in SETS.values():
        stale = {p.stem for p in folder.glob("*.txt")} - set(EXAMPLES)
        assert not stale, f"snapshot files without a scenario in {folder}: {sorted(stale)}"
