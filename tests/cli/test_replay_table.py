"""``basevolve replay``'s table stays in columns (issue 24, item 14).

The names of ``successive_halving`` and ``thompson_plain`` were longer than the 12
characters the first column had, and a fitness below -10 or above 100 was wider than its
column, so every later column of those rows moved right.
"""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.cli import main
from basevolve.cli.replay_cmd import aligned


def _store(path, scores: np.ndarray) -> None:
    """Greedy N = 1 runs written through the real store API, one per row of scores."""
    from basevolve.store.sqlite import RunStore

    with RunStore(path) as store:
        for i, row in enumerate(scores):
            rid = f"run{i}"
            store.create_run(rid, {"task": "circle_packing", "model": "m", "protocol": "greedy",
                                   "allocator": "single", "arms": 1, "budget": len(row),
                                   "depth": len(row), "breadth": 1, "seed": i},
                             active_params=1e9)
            store.insert_program(rid, code="init", score=float(row[0]) - 1, valid=True,
                                 generation=0, is_initial=1)
            for j, score in enumerate(row):
                cid = store.insert_call(rid, call_index=j, seq=store.next_seq(rid),
                                        trajectory=0, pull_id=j, generation=j + 1, slot=0,
                                        seed=j, messages=[])
                store.finish_call(cid, status="ok", counted=True, fields={"flops": 1.0},
                                  attempts=[])
                store.insert_program(rid, code=f"c{j}", score=float(score), valid=True,
                                     generation=j + 1, call_id=cid, seq=store.next_seq(rid),
                                     trajectory=0)


def _columns(header: str) -> list[int]:
    """Where each header column ends (all but the first are right-aligned)."""
    ends, i = [], 0
    for word in header.split("  "):
        if word:
            i = header.index(word, i) + len(word)
            ends.append(i)
    return ends


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (1000.0, -5000.0)])
def test_every_row_lines_up_under_its_header(tmp_path, capsys, scale, shift) -> None:
    rng = np.random.default_rng(0)
    scores = np.cumsum(rng.random((6, 16)), axis=1) * scale + shift  # -5000 .. +3000
    db = tmp_path / "runs.db"
    _store(db, scores)
    assert main(["replay", "--store", str(db), "--task", "circle_packing", "--arms", "3",
                 "--budget", "16", "--repeats", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[1], lines[2:-1]
    assert header.startswith("allocator ") and "successive_halving" in "\n".join(rows)
    assert len(rows) >= 10 and lines[-1].startswith("@n: ")
    ends = _columns(header)
    assert len(ends) == 4 + 4  # name, mean, IQM, CI + curve at 3, 4, 8, 16
    for row in rows:
        assert len(row) == len(header), (header, row)  # the last column ends together
        for end in (ends[1], ends[2], *ends[4:]):  # right-aligned numbers end together
            assert row[end - 1] != " " and (end == len(row) or row[end] == " "), (end, row)
        ci = row.index("[")
        assert ci == header.index("95% CI"), (header, row)


def test_aligned_widths_and_alignment() -> None:
    text = aligned([["name", "x", "ci"], ["a_very_long_allocator", "-12345.6789", "[1, 2]"],
                    ["b", "0.5", "[-1000.5, 3]"]], left=(0, 2))
    assert text.splitlines() == [
        "name                             x  ci",
        "a_very_long_allocator  -12345.6789  [1, 2]",
        "b                              0.5  [-1000.5, 3]",
    ]
