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

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: (the state to wait for, seconds after it): the points of a generation.  "pending": a
#: call row is written (it is written just before its request goes to llama.cpp);
#: "second": generation 1 answered and generation 2 sent.  With up to 256 tokens a reply,
#: the offsets fall while a prompt is read or while tokens are generated, depending on
#: the CPU; each must end the same way.
POINTS = [
    ("loading", 0.5),   # the model is being loaded
    ("pending", 0.2),   # generation 1 just sent: its prompt is being read
    ("pending", 1.5),   # (the old crash: ~1 s into the first call)
    ("pending", 4.0),   # ... tokens are being generated
    ("second", 0.0),    # a call just returned, generation 2 starting
]


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
    raise AssertionError(f"{point!r} not reached in {timeout_s} s:\n{err_path.read_text()}")


@pytest.mark.embedded
@pytest.mark.slow
@pytest.mark.parametrize(("point", "after_s"), POINTS)
def test_sigint_during_an_embedded_generation_exits_130(tmp_path, sigint_handled, point,
                                                        after_s):
    store = tmp_path / "s.sqlite"
    err_path = tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance",
           "--model", "embedded-small", "--budget", "4", "--depth", "2", "--max-tokens", "256",
           "--store", str(store), "--run-id", "emb", "--out", str(tmp_path / "o")]
    with err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path,
                                env=dict(os.environ, PYTHONPATH=SRC))
        try:
            # CPU-bound on a shared 2-core box: generous limits, never a tight one
            _wait_for(point, err_path, store, proc, timeout_s=900)
            time.sleep(after_s)
            assert proc.poll() is None, "the run ended before the interrupt: no point tested"
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=900)
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
