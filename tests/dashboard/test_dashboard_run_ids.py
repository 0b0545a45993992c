"""Run ids with ``+`` typed into the address bar (issue 24, item 15), in a real browser.

Run ids may hold ``+`` (``check_run_id``).  A ``+`` in a query string is a space in
form encoding, so ``/run?id=a+b`` pasted raw became the id ``a b``: the page said "no
such run" above empty sections.  The page now reads its id as typed (``+`` kept, %-escapes
decoded), and an id the store does not hold is one message with a link to the runs page,
without the empty sections.  Debian's chromium through Playwright, as the other browser
tests; a real run (test server, sandboxed evaluation) in the store.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import TIMEOUT_MS, Dashboard, chromium_browser, open_page

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

RUN = "lpo+run+1"


@pytest.fixture(scope="module")
def plus_store(tmp_path_factory: pytest.TempPathFactory, pool) -> Path:
    db = tmp_path_factory.mktemp("plus") / "store.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                        params=1e9, budget=3, run_id=RUN)
        start_run(cfg, db, out_dir=db.parent / "out", pool=pool)
    return db


@pytest.fixture(scope="module")
def plus_dashboard(plus_store: Path) -> Iterator[Dashboard]:
    d = Dashboard(plus_store)
    yield d
    d.close()


@pytest.fixture(scope="module")
def plus_browser(plus_store: Path) -> Iterator[object]:
    """As tests/dashboard/conftest.py's ``browser``, after this module's run."""
    yield from chromium_browser()


def _open(browser, url: str):
    return open_page(browser, url, 1200)


def _settled(page) -> None:
    """The first refresh has finished: the run's title or the missing message shows."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not page.evaluate("() => Boolean(document.querySelector('#run-title') || "
                            "!document.querySelector('#missing').hidden)"):
        assert time.monotonic() < deadline, "the run page did not load"
        page.wait_for_timeout(100)


@pytest.mark.parametrize("typed", [RUN, "lpo%2Brun%2B1", "lpo+run%2B1"])
def test_a_run_id_with_plus_opens_however_it_is_typed(plus_browser, plus_dashboard,
                                                      typed: str) -> None:
    page, errors = _open(plus_browser, f"{plus_dashboard.base}/run?id={typed}")
    try:
        _settled(page)
        assert page.inner_text("#run-title") == RUN
        page.wait_for_selector("#calls table tbody tr")
        assert page.locator("#calls table tbody tr").count() == 3
        assert page.is_hidden("#missing") and page.is_hidden("#banner")
        assert not errors, errors
    finally:
        page.close()


def test_an_unknown_run_is_one_message_without_empty_sections(plus_browser,
                                                              plus_dashboard) -> None:
    page, errors = _open(plus_browser, f"{plus_dashboard.base}/run?id=no+such+run")
    try:
        _settled(page)
        text = page.inner_text("#missing")
        assert "No such run" in text and "no+such+run" in text and "%2B" in text
        assert page.is_hidden("#run-content")  # no empty sections below the message
        assert page.locator("#run-content").count() == 1
        page.click("#missing a")  # the runs page lists the real id, linked
        page.wait_for_selector("table.runs tbody tr")
        page.click(f"table.runs a.runid:has-text('{RUN}')")
        page.wait_for_selector("#run-title")
        assert page.inner_text("#run-title") == RUN
        assert "%2B" in page.url  # the runs page's links encode the "+"
        assert not errors, errors
    finally:
        page.close()


def test_the_api_still_takes_the_id_encoded(plus_dashboard) -> None:
    """The page asks /api/run with the id escaped; a raw "+" there is a space (HTTP
    form encoding, what every client sends), so the API answers 404 for it."""
    with urllib.request.urlopen(f"{plus_dashboard.base}/api/run?id=lpo%2Brun%2B1") as r:
        assert r.status == 200
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{plus_dashboard.base}/api/run?id=lpo+run+1")
    assert err.value.code == 404
