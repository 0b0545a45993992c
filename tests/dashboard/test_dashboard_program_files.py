"""The dashboard's program panel for a program of several files (issue 31, item 3): one
section per file and the diff against the parent per file, in a real browser (Debian's
chromium via Playwright), on a store written by a real run of the folder fixture
(tests/data/openevolve/mixed_folder) against the test server, with real sandboxed
evaluation.  File names and contents stay text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import Dashboard, chromium_browser, open_page

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer

MIXED = Path(__file__).resolve().parents[1] / "data" / "openevolve" / "mixed_folder"
HOSTILE = '<img src=x onerror="window.__pwned=1">'
REPLY = ("# === FILE: lib/weights.py ===\n```python\ndef weight(item):\n"
         f"    return item  # {HOSTILE}\n```\n# === FILE: notes.md ===\n```\nnew file\n```\n")


@pytest.fixture(scope="module")
def files_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("files") / "s.sqlite"
    with LLMTestServer([REPLY]) as srv:
        cfg = RunConfig(task=str(MIXED), base_url=srv.base_url, params=1e9, budget=1,
                        depth=1, run_id="files", max_in_flight=1)
        summary = start_run(cfg, store)
    assert summary["calls_completed"] == 1
    return store


@pytest.fixture(scope="module")
def files_dashboard(files_store: Path) -> Iterator[Dashboard]:
    d = Dashboard(files_store)
    yield d
    d.close()


@pytest.fixture(scope="module")
def files_browser(files_store: Path) -> Iterator[object]:
    yield from chromium_browser()


def test_program_panel_shows_each_file_and_per_file_diffs(files_browser, files_dashboard):
    page, errors = open_page(files_browser, files_dashboard.url)
    page.goto(files_dashboard.base + "/run?id=files#program=2")
    page.wait_for_selector("#program-title:has-text('Program 2')")
    listing = page.inner_text("#program-files")
    assert "lib/weights.py changed" in listing and "notes.md added" in listing
    assert "solver.py same" in listing and "params.json same" in listing
    diff = page.inner_text("#program-diff")
    assert "--- a/lib/weights.py (program 1)" in diff
    assert "+++ b/lib/weights.py (program 2)" in diff
    assert "+++ b/notes.md (program 2)" in diff and "=== solver.py: unchanged" in diff
    assert "def choose" not in diff  # an unchanged file's lines are not in the diff
    headings = page.locator("#program-detail h3").all_inner_texts()
    assert [h for h in headings if h.startswith("File ")] == [
        "File lib/__init__.py", "File lib/weights.py", "File notes.md", "File params.json",
        "File solver.py"]
    assert HOSTILE in page.inner_text("#program-detail")  # shown as text
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#program-detail img").count() == 0
    assert not errors, errors
    page.close()
