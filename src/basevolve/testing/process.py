"""The LLM test server as a process of its own, for tests and benchmarks.

Why a process: a test that SIGKILLs a ``basevolve run`` and resumes it needs a server
that outlives the killed run, and a benchmark wants the server's CPU off its own
process.  One helper instead of a copy in every such test.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def server_process(*args: str, latency: float = 0.3) -> Iterator[str]:
    """``python -m basevolve.testing.llm_server --port 0 --latency L ARGS`` (e.g.
    ``"--reply-function", "qa"`` or ``"--replies-file", path``); yields the base URL it
    prints, and kills it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "basevolve.testing.llm_server", "--port", "0", "--latency",
         str(latency), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the test server did not start (it printed {url!r})")
        yield url
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


__all__ = ["server_process"]
