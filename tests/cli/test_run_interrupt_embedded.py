"""Issue 24, item 7: Ctrl-C during an embedded-model run exits 130, never with a crash.

Before, SIGINT segfaulted in xllamacpp in 2 of 4 tries (exit 139 / -11 after the
"interrupted -- continue with ..." line): llama.cpp's threads still ran while the
process tore down.  Here real `basevolve run` processes on the embedded-small model get
SIGINT at several points of a generation -- while the model loads, while a prompt is
read, while tokens are generated, just after a call returned -- and each must exit 130
with the resume line, no traceback, and a store that says `interrupted`.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from embedded_rate import RUN_OVERHEAD_S, RUN_PROMPT_TOKENS, Rate, rate

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: (the state to wait for, seconds after it): the points of a generation.  "pending": a
#: call row is written (it is written just before its request goes to llama.cpp);
#: "second": generation 1 answered and generation 2 sent.  A reply has as many tokens
#: as the model decodes in GENERATION_S at the measured rate (16..256), so the offsets
#: fall while a prompt is read or while tokens are generated, depending on the CPU;
#: each must end the same way.
POINTS = [
    ("loading", 0.5),   # the model is being loaded
    ("pending", 0.2),   # generation 1 just sent: its prompt is being read
    ("pending", 1.5),   # (the old crash: ~1 s into the first call)
    ("pending", 4.0),   # ... tokens are being generated
    ("second", 0.0),    # a call just returned, generation 2 starting
]


GENERATION_S = 8.0
#: Calls answered before each point is reached (the waits follow from them).
CALLS_BEFORE = {"loading": 0, "pending": 0, "second": 2}


def _tokens(rate: Rate) -> int:
    return rate.tokens_lasting(GENERATION_S, 16, 256)


def _waits(rate: Rate, point: str) -> tuple[float, float]:
    """(the longest wait for ``point``, the longest wait for the exit after SIGINT), both
    from the measured rate (issue 37, item 4: a fixed 900 s wait sat inside a 300 s
    pytest-timeout).  The exit may wait for the generation in flight to stop."""
    call = rate.call_s(RUN_PROMPT_TOKENS, _tokens(rate))
    reach = rate.start_s + (RUN_OVERHEAD_S + CALLS_BEFORE[point] * call if point != "loading"
                            else 0.0)
    return rate.limit(reach), rate.limit(call + RUN_OVERHEAD_S)


def _all_waits(rate: Rate) -> float:
    """The test's pytest-timeout basis: its waits at the slowest point, and the sleep."""
    return max(sum(_waits(rate, p)) + after for p, after in POINTS)


def _state(store: Path) -> tuple[int, int]:
    """(counted calls, calls in flight) as the store has them (read-only)."""
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute("SELECT coalesce(sum(counted), 0), "
                               "coalesce(sum(status = 'pending'), 0) FROM calls").fetchone()
        finally:
            con.close()
    except sqlite3.Error:  # not created yet
        return (0, 0)


def _reached(point: str, err_path: Path, store: Path) -> bool:
    if point == "loading":
        return "loading the embedded model" in err_path.read_text()
    counted, pending = _state(store)
    return pending >= 1 and (counted >= 2 if point == "second" else True)


def _wait_for(point: str, err_path: Path, store: Path, proc: subprocess.Popen,
              timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _reached(point, err_path, store):
            return
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before {point!r}:\n"
                                 f"{err_path.read_text()}")
        time.sleep(0.02)
    raise AssertionError(f"{point!r} not reached in {timeout_s:.0f} s ({rate().describe()}):"
                         f"\n{err_path.read_text()}")


@pytest.mark.embedded
@pytest.mark.slow
@pytest.mark.embedded_work(waits=_all_waits)
@pytest.mark.parametrize(("point", "after_s"), POINTS)
def test_sigint_during_an_embedded_generation_exits_130(tmp_path, sigint_handled, point,
                                                        after_s):
    measured = rate()  # the session's measurement, which set this test's timeout
    reach_s, exit_s = _waits(measured, point)
    store = tmp_path / "s.sqlite"
    err_path = tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance",
           "--model", "embedded-small", "--budget", "4", "--depth", "2", "--max-tokens",
           str(_tokens(measured)), "--store", str(store), "--run-id", "emb",
           "--out", str(tmp_path / "o")]
    with err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path,
                                env=dict(os.environ, PYTHONPATH=SRC))
        try:
            # CPU-bound on a shared 2-core box: waits from the measured rate, each inside
            # the test's pytest-timeout (tests/cli/conftest.py)
            _wait_for(point, err_path, store, proc, timeout_s=reach_s)
            time.sleep(after_s)
            assert proc.poll() is None, "the run ended before the interrupt: no point tested"
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=exit_s)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"no exit {exit_s:.0f} s after SIGINT ("
                                     f"{measured.describe()}):\n{err_path.read_text()}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = err_path.read_text()
    assert proc.returncode == 130, text[-3000:]  # not -11 / 139 (a crash)
    assert "Traceback" not in text and "Segmentation" not in text and "Fatal" not in text
    if point == "loading":  # no run row yet: nothing to resume
        assert "nothing to resume" in text or "continue with" in text
        return
    assert f"interrupted — continue with `basevolve run --resume emb --store {store}`" in text
    con = sqlite3.connect(store)
    try:
        status = con.execute("SELECT status FROM runs WHERE run_id='emb'").fetchone()[0]
        pending = con.execute("SELECT count(*) FROM calls WHERE status='pending'").fetchone()[0]
    finally:
        con.close()
    assert status == "interrupted" and pending == 0  # calls in flight are recorded as lost
