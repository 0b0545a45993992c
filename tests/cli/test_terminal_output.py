"""Text from outside never reaches the terminal raw (issue 22, item 12).

A program's exception, a model id a server lists and an HTTP error message used to be
printed as they came: an ANSI escape cleared the screen, a line break forged a line
such as ``best 1.000000``.  Each test drives the real CLI in a subprocess against a real
server on 127.0.0.1 and reads the bytes it wrote: no control character but the line
breaks basevolve writes itself, no forged line, and the hostile text still shown, as
visible escapes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from basevolve.terminal import clean, clean_lines
from basevolve.testing import LLMTestServer

#: Clears the screen, homes the cursor, an 8-bit CSI, a bidi override, a forged line.
EVIL = "\x1b[2J\x1b[H\x9b31m\u202e\nbest 1.000000\r\x07"
SHOWN = r"\x1b[2J\x1b[H\x9b31m\u202e\nbest 1.000000\r\x07"  # what must be printed
UNSAFE = {chr(c) for c in (*range(0x00, 0x20), *range(0x7f, 0xa0))} - {"\n"}
UNSAFE |= {"\u061c", "\u200e", "\u200f", "\u2028", "\u2029", *map(chr, range(0x202a, 0x202f)),
           *map(chr, range(0x2066, 0x206a))}


def _assert_terminal_safe(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in UNSAFE})
    assert not bad, f"raw control characters reached the terminal: {bad}"
    forged = [ln for ln in text.splitlines() if ln.startswith("best 1.000000")]
    assert not forged, f"a line was forged: {forged}"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "basevolve", *args], capture_output=True,
                          text=True, cwd=cwd, encoding="utf-8", errors="surrogateescape")


# ------------------------------------------------------------------ the helper itself
@pytest.mark.parametrize("ch", sorted(UNSAFE | {"\n", chr(0xD800), chr(0xDFFF)}))
def test_clean_escapes_every_control_character(ch: str) -> None:
    out = clean(f"a{ch}b")
    assert out.startswith("a\\") and out.endswith("b") and ch not in out
    assert out.isascii() and out.isprintable()


def test_clean_keeps_ordinary_text_and_lines_keep_line_breaks() -> None:
    text = "circle_packing / Qwen3-8B é 日本 ✓ [bold]x[/bold] 0.95"
    assert clean(text) == text and clean(3.5) == "3.5"
    assert clean(EVIL) == SHOWN
    assert clean_lines("a\tb\nc" + EVIL) == "a\tb\nc" + SHOWN.replace(r"\n", "\n")


# ------------------------------------------------------------------ a hostile server
class _HostileErrors(BaseHTTPRequestHandler):
    """Lists model ``m`` and refuses every completion with a hostile error message:
    429 with ``Retry-After: 0`` (logged retries), then 400 (no retry)."""

    calls = 0

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, obj: object, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).calls += 1
        if type(self).calls % 2:
            self._send(429, {"error": {"message": EVIL}}, {"Retry-After": "0"})
        else:
            self._send(400, {"error": {"message": EVIL, "type": "invalid_request_error"}})


@pytest.fixture()
def hostile_url() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _HostileErrors)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()


def test_an_http_error_message_is_printed_clean(tmp_path: Path, hostile_url: str) -> None:
    proc = _cli("run", "--task", "min_max_distance", "--budget", "2", "--params", "1e9",
                "--base-url", hostile_url, "--store", "s.sqlite", "--run-id", "r",
                "--out", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    _assert_terminal_safe(proc.stdout + proc.stderr)
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("basevolve: error: 3 LLM calls in a row failed") and SHOWN in error
    retries = [ln for ln in proc.stderr.splitlines() if ln.startswith("LLM attempt")]
    assert retries and all(SHOWN in ln for ln in retries)  # the logged retries, clean too

    # the failed run's stored error goes through `runs` and `sweep --status` as well
    assert _cli("runs", "--store", "s.sqlite", cwd=tmp_path).returncode == 0


def test_a_sweep_prints_a_failed_runs_error_clean(tmp_path: Path, hostile_url: str) -> None:
    (tmp_path / "sweep.toml").write_text(
        f'[[grid]]\ntask = "min_max_distance"\nmodel = "m"\nparams = 1e9\n'
        f'base_url = "{hostile_url}"\nbudget = 2\n', encoding="utf-8")
    proc = _cli("sweep", "sweep.toml", "--store", "s.sqlite", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    _assert_terminal_safe(proc.stdout + proc.stderr)
    assert SHOWN in proc.stderr  # "run ... failed: ..." and "did not finish (...)"
    status = _cli("sweep", "sweep.toml", "--store", "s.sqlite", "--status", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    _assert_terminal_safe(status.stdout + status.stderr)
    assert "failed: " in status.stdout and SHOWN in status.stdout


def test_a_hostile_model_id_is_printed_clean(tmp_path: Path) -> None:
    """The server lists one model; without --model the run takes its id as given."""
    with LLMTestServer(latency_s=0.0, model_ids=(EVIL,)) as srv:
        proc = _cli("run", "--task", "min_max_distance", "--budget", "2", "--params", "1e9",
                    "--base-url", srv.base_url, "--store", "s.sqlite", "--run-id", "r",
                    "--out", "out", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    _assert_terminal_safe(proc.stdout + proc.stderr)
    model_row = [ln for ln in proc.stdout.splitlines() if ln.startswith("model ")]
    assert model_row and model_row[0].endswith(SHOWN)  # the summary table
    assert f"model {SHOWN}" in proc.stderr  # the "run r started: ..." notify line
    assert json.loads(proc.stdout.strip().splitlines()[-1])["model"] == EVIL  # data intact
    for args in (["runs", "--store", "s.sqlite"],
                 ["analyze", "--store", "s.sqlite", "--resamples", "20", "--shuffles", "20",
                  "--gate-shuffles", "20"]):
        shown = _cli(*args, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr[-2000:]
        _assert_terminal_safe(shown.stdout + shown.stderr)


def test_a_programs_error_is_printed_clean(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(f"def min_max_dist_dim2_16():\n    raise RuntimeError({EVIL!r})\n",
                       encoding="utf-8")
    proc = _cli("evaluate", "--task", "min_max_distance", str(program), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    _assert_terminal_safe(proc.stdout + proc.stderr)
    assert SHOWN in proc.stdout  # the error column keeps the text, as escapes
