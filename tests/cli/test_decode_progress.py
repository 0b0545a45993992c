"""The live line shows the embedded model's token progress (issue 24, item 9).

Under CPU load one embedded call takes minutes; a line whose only moving part was its
clock looked hung.  The meter counts the tokens of the requests in flight (the real
llama.cpp streams register with it: tests/llm/test_embedded_decode_meter.py); here the
meter and both displays are driven with streams whose token counts the test sets, and
the phase a new run shows before its first call is checked on the real engine runner.
"""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from rich.console import Console

from basevolve.cli.progress import WAITING, PlainProgress, RichProgress
from basevolve.llm.decode_meter import METER, DecodeMeter, DecodeRate, DecodeReading, decode_words

SNAP = {"run_id": "r", "calls_completed": 0, "budget": 4, "best_score": 0.3, "flops": 0.0,
        "valid_rate": None, "children": 0, "elapsed_s": 5.0, "in_flight": 2}


class Tokens:
    """A stream as the meter sees it: an integer ``tokens`` that grows."""

    def __init__(self, tokens: int = 0) -> None:
        self.tokens = tokens


def test_meter_counts_live_and_finished_requests() -> None:
    meter = DecodeMeter()
    assert meter.read().requests == 0 and meter.read().total == 0
    a, b = Tokens(3), Tokens()
    with meter.tracking(a):
        with meter.tracking(b):
            b.tokens = 5
            r = meter.read()
            assert (r.requests, r.tokens, r.total) == (2, 8, 8)
        a.tokens = 10
        r = meter.read()
        assert (r.requests, r.tokens, r.total) == (1, 10, 15)  # b's 5 stay in the total
    r = meter.read()
    assert (r.requests, r.tokens, r.total) == (0, 0, 15)


def test_meter_survives_a_stream_that_cannot_be_read_and_an_exception() -> None:
    class Broken:
        @property
        def tokens(self) -> int:
            raise RuntimeError("dictionary changed size during iteration")

    meter = DecodeMeter()
    with pytest.raises(ValueError), meter.tracking(Tokens(4)):
        assert meter.read().tokens == 4
        raise ValueError("the request failed")
    with meter.tracking(Broken()):
        assert meter.read().requests == 1 and meter.read().tokens == 0
    assert meter.read().requests == 0 and meter.read().total == 4


def test_rate_over_a_window() -> None:
    rate = DecodeRate(window_s=10.0, min_span_s=1.0)
    assert rate.update(DecodeReading(1, 0, 100, at=0.0)) is None
    assert rate.update(DecodeReading(1, 5, 105, at=0.5)) is None  # too short a span
    assert rate.update(DecodeReading(1, 20, 120, at=5.0)) == pytest.approx(4.0)
    # the oldest reading kept is the newest one at least 10 s old: 5 .. 15 s
    assert rate.update(DecodeReading(1, 60, 160, at=15.0)) == pytest.approx(4.0)
    # the window slides: only the last ~10 s count
    assert rate.update(DecodeReading(1, 60, 160, at=30.0)) == pytest.approx(0.0)


def test_words() -> None:
    assert decode_words(DecodeReading(0, 0, 50, 0.0), 3.0) == ""
    assert decode_words(DecodeReading(1, 7, 50, 0.0), None) == "decoding 1 request: 7 tokens"
    assert (decode_words(DecodeReading(2, 137, 500, 0.0), 4.123)
            == "decoding 2 requests: 137 tokens, 4.1 tok/s")


def _feed(stream: Tokens, stop: threading.Event, per_s: float = 50.0) -> None:
    while not stop.wait(1 / per_s):
        stream.tokens += 1


def test_rich_line_shows_tokens_of_the_calls_in_flight() -> None:
    p = RichProgress(Console(file=io.StringIO(), force_terminal=True, width=200))
    stream, stop = Tokens(), threading.Event()
    feeder = threading.Thread(target=_feed, args=(stream, stop))
    try:
        assert p.__rich__().plain.startswith(WAITING)  # nothing decodes: no token part
        p.phase("evaluating the initial program (10 answering calls)")
        with METER.tracking(stream):
            feeder.start()
            first = p.__rich__().plain
            assert first.startswith("evaluating the initial program (10 answering calls) … 0:0")
            assert "decoding 1 request: " in first
            time.sleep(1.5)
            p(SNAP)
            line = p.__rich__().plain
            # the display's own clock, not the snapshot's elapsed_s (issue 37, item 8)
            assert re.match(r"\[r\] \d+:\d\d  in flight 2  calls 0/4", line), line
            assert "decoding 1 request: " in line and "tok/s" in line, line
            tokens = int(line.split("decoding 1 request: ")[1].split(" tokens")[0])
            assert tokens >= 1 and tokens <= stream.tokens
        assert "decoding" not in p.__rich__().plain  # the request ended
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join()
        p.done()


def test_plain_progress_writes_the_phase_and_its_progress() -> None:
    out = io.StringIO()
    p = PlainProgress(out, every_s=1.0)
    stream, stop = Tokens(), threading.Event()
    feeder = threading.Thread(target=_feed, args=(stream, stop))
    try:
        with METER.tracking(stream):
            feeder.start()
            p.phase("evaluating the initial program (3 answering calls)")
            assert out.getvalue().startswith("evaluating the initial program (3 answering "
                                             "calls) … 0:00")
            time.sleep(2.6)  # the clock writes the phase line again, with tokens
            lines = out.getvalue().splitlines()
            assert len(lines) >= 2 and all(line.startswith("evaluating") for line in lines)
            assert "decoding 1 request: " in lines[-1] and "tok/s" in lines[-1], lines
            p(SNAP | {"calls_completed": 1})
            assert "calls 1/4" in out.getvalue().splitlines()[-1]
    finally:
        stop.set()
        feeder.join()
        p.done()
    assert "\x1b" not in out.getvalue()


def test_plain_progress_without_a_call_writes_no_final_line() -> None:
    out = io.StringIO()
    p = PlainProgress(out, every_s=60.0)
    p.done()
    assert out.getvalue() == ""


def test_a_new_run_tells_the_display_what_it_does_first() -> None:
    from basevolve.engine.runner import initial_phase, show_phase
    from basevolve.tasks import load_task

    assert initial_phase(load_task("min_max_distance")) == "evaluating the initial program"
    text = load_task("prompt_optimization", {"limit": "7"})
    assert initial_phase(text) == "evaluating the initial program (7 answering calls)"
    seen: list[str] = []

    class Display:
        def __call__(self, s: dict) -> None:
            pass

        def phase(self, words: str) -> None:
            seen.append(words)

    show_phase(Display(), "x")
    show_phase(lambda s: None, "y")  # a plain callable: left alone
    show_phase(None, "z")
    assert seen == ["x"]


def test_plain_progress_is_quiet_until_it_has_something_to_say() -> None:
    """While the model loads (its own lines say so) the clock writes nothing."""
    out = io.StringIO()
    p = PlainProgress(out, every_s=1.0)
    try:
        time.sleep(2.5)
        assert out.getvalue() == ""
        p.phase("evaluating the initial program")
        assert out.getvalue().startswith("evaluating the initial program … 0:0")
    finally:
        p.done()
