"""Shared constants and helpers of the dashboard tests (imported by conftest and tests).

A module with a unique name rather than ``conftest``: several test folders have a
conftest.py, and importing one by name would pick whichever was loaded first.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HOSTILE = ('</script><script>window.__pwned=1;alert("pwned")</script>'
           '<img src=x onerror="window.__pwned=2;alert(2)"><b>bold</b>&amp;')
HOSTILE_RUN = '<img src=x onerror=alert(7)>"\'</script>'
CONTROL = "\x1b[31mred\x07 \u202eevil"
HOSTILE_PROGRAM = f'''import numpy as np

NOTE = {HOSTILE!r}
MARK = "{CONTROL}"


def construct_packing():
    print(NOTE, MARK)
    g = np.linspace(0.1, 0.9, 6)
    centers = np.array([(x, y) for x in g for y in g])[:26]
    radii = np.full(26, 0.05)
    return centers, radii, float(radii.sum())
'''
SWEEP, SWEEP_RUNS = "mini", 4  # basevolve sweep: C = 2, T in {1, 2}, 2 seeds
SWEEP_TOML = """\
[sweep]
name = "mini"

[[endpoints]]
base_url = "{url}"
limit = 4

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 2

[[grid]]
budget = 2
depth = "powers-of-2"
"""
GRID = [(c, t, s) for c in (4, 8) for t in (1, c) for s in (0, 1)]
BASE = {"run_id": "base-ucb", "allocator": "ucb", "arms": 3, "budget": 12}


def hostile_reply(body: dict, index: int) -> str:
    return f"Here you go {HOSTILE}\n```python\n{HOSTILE_PROGRAM}```\n"


class Dashboard:
    """A running ``basevolve dashboard`` subprocess and its URL."""

    def __init__(self, store: Path, *args: str) -> None:
        cmd = [sys.executable, "-m", "basevolve", "dashboard", "--store", str(store),
               "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if line.startswith("basevolve dashboard:") or not line:
                break
        m = re.search(r"http://\S+", line)
        if m is None:
            self.close()
            raise RuntimeError(f"dashboard did not start: {line!r} {self.proc.stderr.read()!r}")
        self.url = m.group(0)
        self.base = re.sub(r"/(\?.*)?$", "", self.url)
        self.port = int(self.base.rsplit(":", 1)[1])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def get_json(d: Dashboard, path: str) -> dict:
    """GET ``path`` from the dashboard; asserts 200 and returns the JSON body."""
    con = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    try:
        con.request("GET", path)
        res = con.getresponse()
        assert res.status == 200, (path, res.status)
        return json.loads(res.read())
    finally:
        con.close()


def chromium_path() -> str | None:
    for candidate in (os.environ.get("BASEVOLVE_CHROMIUM"), shutil.which("chromium"),
                      "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


#: how long a browser test waits for one thing on a page
TIMEOUT_MS = 30_000


def chromium_browser() -> Iterator[object]:
    """Chromium via Playwright (Debian's chromium through ``executable_path``), yielded
    and closed; the test is skipped when Playwright or chromium is missing.  The body
    of every browser fixture: each one depends on its own store so that the runs
    (``asyncio.run``) happen before Playwright's sync API starts its loop."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need Playwright for Python (pip install playwright; the "
                    "dev extra has it)")
    exe = chromium_path()
    if exe is None:
        pytest.skip("browser tests need Debian's chromium (apt-get install -y chromium; "
                    ".ci/run installs it when root); none found")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser: Any, url: str, width: int = 1300, height: int = 900
              ) -> tuple[Any, list[str]]:
    """A new page at ``url`` and the list its uncaught JavaScript errors go to."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors

