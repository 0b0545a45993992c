"""Issue 12, item 9: ``basevolve tasks --show NAME`` prints what a run starts from, and the
example task of docs/tasks.md loads, scores and evaluates in the real sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.tasks import load_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spread_points.py"


def test_show_builtin(capsys):
    assert main(["tasks", "--show", "min_max_distance"]) == 0
    out = capsys.readouterr().out
    task = load_task("min_max_distance")
    assert "entry function  min_max_dist_dim2_16()" in out and "60 s wall clock" in out
    assert task.system_message.strip() in out and task.initial_program.strip() in out
    assert "--- system message ---" in out and "--- initial program ---" in out


def test_show_task_file_json(capsys):
    assert main(["tasks", "--show", str(EXAMPLE), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["name"] == "spread_points" and d["source"] == str(EXAMPLE)
    assert d["entry"] == "spread_points" and d["timeout_s"] == 10.0 and d["network"] is False
    assert "def spread_points" in d["initial_program"]


def test_show_unknown_is_one_line(capsys):
    assert main(["tasks", "--show", "nope"]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err


def test_example_task_scores_by_hand():
    task = load_task(str(EXAMPLE))
    grid = [[x / 3, y / 2] for x in range(4) for y in range(3)]  # spacing 1/3 and 1/2
    assert task.score_value(grid).score == pytest.approx(1.0)
    assert not task.score_value(grid[:11]).valid
    assert "outside" in task.score_value([[2.0, 0.0], *grid[1:]]).error


def test_example_task_evaluates_in_the_sandbox(tmp_path, capsys):
    prog = tmp_path / "grid.py"
    prog.write_text("def spread_points():\n"
                    "    return [[x / 3, y / 2] for x in range(4) for y in range(3)]\n")
    assert main(["evaluate", "--task", str(EXAMPLE), str(prog), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["valid"] and row["score"] == pytest.approx(1.0)
    initial = tmp_path / "initial.py"
    initial.write_text(load_task(str(EXAMPLE)).initial_program)
    assert main(["evaluate", "--task", str(EXAMPLE), str(initial), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["valid"] and 0 < row["score"] < 1.0  # random points: room to improve
