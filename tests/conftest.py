"""Fixtures shared by every test directory."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

#: the repository root: tests must leave it as they found it (issue 24, item 12)
ROOT = Path(__file__).resolve().parents[1]
#: folders the CLI writes into the working directory by default (run, export)
DEFAULT_OUTPUT_DIRS = ("basevolve-out", "basevolve-export")
_ROOT_BEFORE = pytest.StashKey[set[str]]()


@pytest.fixture(autouse=True)
def _cwd_outside_the_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test starts in a temporary folder of its own (issue 24, item 12).

    Why: the CLI's defaults are relative (``basevolve-out/RUN_ID``, ``basevolve-export``,
    ``basevolve.sqlite``), and tests that start a run without ``--out`` wrote
    ``basevolve-out/`` into the repository root.  Paths a test builds from ``__file__``
    or ``tmp_path`` are unaffected; a test's own ``monkeypatch.chdir`` still wins.
    """
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(before)


def _root_snapshot() -> set[str]:
    """The repository root's top-level entries, and every file under its default output
    folders with its modification time (a rerun that rewrites old files counts too)."""
    names = {p.name for p in ROOT.iterdir()}
    for folder in DEFAULT_OUTPUT_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file():
                names.add(f"{path.relative_to(ROOT)} (written {path.stat().st_mtime_ns})")
    return names


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_ROOT_BEFORE] = _root_snapshot()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when the tests left files in the repository root (issue 24,
    item 12).  Caches are allowed; anything else new is named.  (Another process writing
    into the root during the session would be named too.)"""
    before = session.config.stash.get(_ROOT_BEFORE, None)
    if before is None:
        return
    caches = {".pytest_cache", "__pycache__", ".ruff_cache", ".mypy_cache", ".coverage"}
    gained = sorted(n.split(" (written")[0] for n in _root_snapshot() - before - caches)
    if gained:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        line = (f"TESTS WROTE INTO THE REPOSITORY ROOT {ROOT}: {', '.join(gained)} "
                "(write into tmp_path instead)")
        if reporter is not None:
            reporter.write_sep("!", line, red=True, bold=True)
        else:
            print(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


#: skips a user must not miss: (kind, words in the skip reason, what to do)
LOUD_SKIPS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("real-browser dashboard", ("chromium", "playwright"),
     "apt-get install -y chromium (scripts/test.sh does it when root)"),
    ("bubblewrap sandbox", ("bubblewrap", "bwrap"),
     "apt-get install -y bubblewrap (scripts/test.sh does it when root)"),
)


def skipped_kinds(reasons: list[str]) -> list[str]:
    """One loud line per kind of important skip among ``reasons`` (issue 24, item 11)."""
    lines = []
    for kind, words, fix in LOUD_SKIPS:
        hits = [r for r in reasons if any(w in r.lower() for w in words)]
        if hits:
            lines.append(f"{len(hits)} {kind} test(s) SKIPPED, not run: {hits[0]}; fix: {fix}")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly when the browser or bubblewrap tests did not run: with ``-q`` a skip
    is one ``s`` among hundreds of dots, and on a fresh machine without chromium the
    dashboard's real-browser tests skipped silently (issue 24, item 11)."""
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reasons.append(str(longrepr[2] if isinstance(longrepr, tuple) else longrepr))
    for line in skipped_kinds(reasons):
        terminalreporter.write_sep("!", line, yellow=True, bold=True)


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """Catch SIGINT in this process for the test (Python's KeyboardInterrupt handler).

    Why: a shell starts a background job (``cmd &`` without job control) with SIGINT
    *ignored*; pytest then inherits SIG_IGN, ``_thread.interrupt_main`` does nothing and
    every child process inherits the ignore too, so the Ctrl-C tests fail although the
    code is right.  A caught signal is reset to the default at exec, so children started
    during the test get Python's own KeyboardInterrupt handler again.
    """
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
