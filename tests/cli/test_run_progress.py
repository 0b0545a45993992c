"""Issue 12, item 6: the progress display ticks between engine events."""

from __future__ import annotations

import io
import time

from rich.console import Console

from basevolve.cli.progress import PlainProgress, RichProgress, make_progress, progress_line

SNAP = {"run_id": "r", "calls_completed": 1, "budget": 4, "best_score": 0.5, "flops": 2e12,
        "valid_rate": 0.5, "children": 2, "elapsed_s": 61.0, "in_flight": 2}


def test_line_has_every_field():
    line = progress_line(SNAP, 61.0)
    assert line == ("[r] 1:01  in flight 2  calls 1/4  best 0.5000  valid 50%  FLOPs 2e+12")
    assert "best -" in progress_line(SNAP | {"best_score": None, "valid_rate": None}, 0)


def test_plain_progress_ticks_without_events():
    out = io.StringIO()
    p = PlainProgress(out, every_s=1.0)
    try:
        p(SNAP)  # a call-count change writes at once
        assert out.getvalue().count("\n") == 1 and "calls 1/4" in out.getvalue()
        p(SNAP)  # same count: no new line from the event itself
        assert out.getvalue().count("\n") == 1
        time.sleep(2.6)  # no events: the clock still writes lines, elapsed moving on
    finally:
        p.done()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and lines[-1] != lines[0] and "\x1b" not in out.getvalue()


def test_plain_progress_ends_with_the_final_state():
    """The last children are scored after the last call returned: their best score
    changes no call count, so the final line comes from done() (once, however often it
    is called)."""
    out = io.StringIO()
    p = PlainProgress(out, every_s=60.0)
    p(SNAP | {"calls_completed": 4})
    p(SNAP | {"calls_completed": 4, "best_score": 0.7})  # the last child was scored
    assert "best 0.7000" not in out.getvalue()
    p.done()
    p.done()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "calls 4/4  best 0.7000" in lines[-1]


def test_rich_progress_redraws_its_clock():
    buf = io.StringIO()
    p = RichProgress(Console(file=buf, force_terminal=True, width=120))
    try:
        assert "waiting for the first LLM call" in p.__rich__().plain
        p(SNAP)
        first = p.__rich__().plain
        time.sleep(1.1)
        assert p.__rich__().plain != first and "in flight 2" in first
    finally:
        p.done()
    assert "calls 1/4" in buf.getvalue()


def test_not_a_terminal_gets_plain_lines():
    p = make_progress(io.StringIO())
    try:
        assert isinstance(p, PlainProgress)
    finally:
        p.done()


def test_one_clock_from_waiting_to_running(monkeypatch):
    """Issue 37, item 8: the waiting line counted from the command's start (model
    loading included) and the run line from the engine's start, so 4:11 was followed by
    2:58.  The run line goes on from the waiting line's clock."""
    now = [1000.0]
    monkeypatch.setattr("basevolve.cli.progress.time.monotonic", lambda: now[0])
    out = io.StringIO()
    p = PlainProgress(out, every_s=3600.0)
    try:
        now[0] += 251.0  # loading the model, scoring the initial program
        assert "4:11" in p.clock.waiting_line()
        p(SNAP | {"elapsed_s": 178.0})  # the engine's own clock says 2:58
        now[0] += 1.0
        assert "[r] 4:12  " in p.clock.line()
    finally:
        p.done()
